"""Every engine reproduces the spec's 17 reference checksums through the real runner."""

from __future__ import annotations

import pytest
from conftest import REFERENCE_PLAN, mysql_configured

from asyncbench.engine import EngineUnavailable
from engines import engine_class
from workloads.reference import REFERENCE_CHECKSUMS


def _available(name: str) -> bool:
    try:
        engine_class(name)
    except EngineUnavailable:
        return False
    return True


def _engine_params():
    for name in ("memory", "lsm", "rocksdb", "sqlite", "mysql"):
        marks = []
        if name == "mysql" and not mysql_configured():
            marks.append(
                pytest.mark.skip(
                    reason="no MySQL server: set MYSQL_HOST/MYSQL_PORT (scripts/mysql-server start)"
                )
            )
        elif not _available(name):
            marks.append(pytest.mark.skip(reason=f"engine {name} is not importable in this build"))
        yield pytest.param(name, marks=marks, id=name)


@pytest.mark.parametrize("engine", list(_engine_params()))
def test_reference_checksums_through_runner(engine: str, run_cli) -> None:
    code, results, output = run_cli(str(REFERENCE_PLAN), "--engine", engine)
    assert code == 0, output
    (run,) = results
    (er,) = run["engines"]
    assert er["status"] == "ok", er["status"]
    got = {p["name"]: p["checksum"] for p in er["phases"] if p["checksum"]}
    assert got == REFERENCE_CHECKSUMS
    # Reopen happened before verify and the final checksum came from the reopened store.
    roles = [p["role"] for p in er["phases"]]
    assert roles.index("reopen") < roles.index("verify")
