"""Every engine reproduces the spec's 17 reference checksums through the real runner."""

from __future__ import annotations

import pytest
from conftest import REFERENCE_PLAN, mysql_configured, postgres_expected, status_line

from asyncbench.workloads.profile_store.reference import REFERENCE_CHECKSUMS


def _engine_params() -> list:
    """Every shipped engine must run; only MySQL and PostgreSQL may be absent (they need a
    server; under CI a missing PostgreSQL fails)."""
    params = []
    for name in ("memory", "lsm", "rocksdb", "sqlite", "mysql", "postgres"):
        marks = []
        if name == "mysql" and not mysql_configured():
            marks.append(
                pytest.mark.skip(
                    reason="no MySQL server: set MYSQL_HOST/MYSQL_PORT (scripts/mysql-server start)"
                )
            )
        if name == "postgres" and not postgres_expected():
            marks.append(
                pytest.mark.skip(reason="no PostgreSQL server: set PGHOST/PGPORT/... (scripts/postgres-server start)")
            )
        params.append(pytest.param(name, marks=marks, id=name))
    return params


@pytest.mark.parametrize("engine", _engine_params())
def test_reference_checksums_through_runner(engine: str, run_cli) -> None:
    code, results, output = run_cli(str(REFERENCE_PLAN), "--engine", engine)
    assert code == 0, output
    (run,) = results
    (er,) = run["engines"]
    assert status_line(er) == "ok", status_line(er)
    got = {p["name"]: p["checksum"] for p in er["phases"] if p["checksum"]}
    assert got == REFERENCE_CHECKSUMS
    # Reopen happened before verify and the final checksum came from the reopened store.
    roles = [p["action"] for p in er["phases"]]
    assert roles.index("reopen") < roles.index("verify")
