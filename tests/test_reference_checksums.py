"""Every engine reproduces the spec's 17 reference checksums through the real runner."""

from __future__ import annotations

import pytest
from conftest import mysql_configured, postgres_expected, redis_expected, status_line

from asyncbench.workloads.profile_store.reference import REFERENCE_CHECKSUMS


def _engine_params() -> list:
    """Every shipped engine must run; only MySQL, PostgreSQL and Redis may be absent (they
    need a server; under CI a missing PostgreSQL or Redis fails)."""
    params = []
    for name in ("memory", "lsm", "rocksdb", "leveldb", "lmdb", "sqlite", "mysql", "postgres", "redis"):
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
        if name == "redis" and not redis_expected():
            marks.append(pytest.mark.skip(reason='no Redis server: set REDIS_HOST/REDIS_PORT (eval "$(scripts/redis-server start)")'))
        params.append(pytest.param(name, marks=marks, id=name))
    return params


@pytest.mark.parametrize("engine", _engine_params())
def test_reference_checksums_through_runner(engine: str, reference_run_p1: tuple[int, list[dict], str]) -> None:
    """The engine's part of the one reference run of every engine (conftest's
    ``reference_run_p1``, shared with tests/test_parallel.py)."""
    code, results, output = reference_run_p1
    assert code == 0, output
    (run,) = results
    (er,) = [e for e in run["engines"] if e["engine"] == engine]
    assert status_line(er) == "ok", status_line(er)
    got = {p["name"]: p["checksum"] for p in er["phases"] if p["checksum"]}
    assert got == REFERENCE_CHECKSUMS
    # Reopen happened before verify and the final checksum came from the reopened store.
    roles = [p["action"] for p in er["phases"]]
    assert roles.index("reopen") < roles.index("verify")
