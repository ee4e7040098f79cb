"""YCSB's workloads A-F on MySQL/MariaDB and PostgreSQL: the checksums of every other engine.

Needs the servers (``source /tmp/mysql.env; source /tmp/pg.env`` here, CI starts them);
skipped without them, as the other server tests. Each runs in a database of its own
(``asyncbench_ycsb_test``), claimed and marked by the engine as any; the run deletes its
tables at the end. The mixed phase's checksum must equal the dict reference store's
(``tests/test_ycsb_mix.py``) at P = 1 and 4, and with the workers in two client processes.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import mysql_configured, postgres_expected
from test_ycsb_mix import run as reference_run
from test_ycsb_run import phase_checksums, small_plan

TEST_DB = "asyncbench_ycsb_test"
SERVERS = [
    pytest.param(
        "mysql", marks=pytest.mark.skipif(not mysql_configured(), reason="no MySQL server: set MYSQL_HOST/MYSQL_PORT")
    ),
    pytest.param(
        "postgres", marks=pytest.mark.skipif(not postgres_expected(), reason="no PostgreSQL server: set PGHOST")
    ),
]


def server_plan(tmp_path: Path, letter: str, engine: str) -> tuple[Path, dict]:
    path, doc = small_plan(tmp_path, letter, records=200, ops=800)
    path.write_text(path.read_text() + f'\n[engines.{engine}]\ndatabase = "{TEST_DB}"\n')
    return path, doc


@pytest.mark.parametrize("engine", SERVERS)
@pytest.mark.parametrize("letter", "abcdef")
def test_each_workload_on_a_server_gives_the_reference_checksums(letter: str, engine: str, tmp_path: Path, run_cli) -> None:
    plan, doc = server_plan(tmp_path, letter, engine)
    code, results, output = run_cli(str(plan), "--engine", f"memory,{engine}", "--parallelism", "1,4", "--yes")
    assert code == 0, output
    sums = phase_checksums(results)
    assert {e for e, _, _ in sums} == {"memory", engine}
    for phase in ("load", "mixed"):
        assert len({c for (_, _, n), cs in sums.items() if n == phase for c in cs}) == 1, sums
    assert {c for (_, _, n), cs in sums.items() if n == "mixed" for c in cs} == {reference_run(doc, 1, schedule=0)[0]}


@pytest.mark.parametrize("engine", SERVERS)
@pytest.mark.parametrize("letter", "ae")
def test_two_client_processes_give_the_same_checksums(letter: str, engine: str, tmp_path: Path, run_cli) -> None:
    plan, doc = server_plan(tmp_path, letter, engine)
    code, results, output = run_cli(str(plan), "--engine", engine, "--parallelism", "4", "--processes", "2", "--yes")
    assert code == 0, output
    (run,) = results
    (result,) = run["engines"]
    assert len(result["client_processes"]) == 2
    assert result["phases"][1]["checksum"] == reference_run(doc, 1, schedule=0)[0]
    mix = result["phases"][1]["mix"]  # drawn from the plan: the kinds' counts and the skew
    assert sum(k["ops"] for k in mix["kinds"].values()) == 800 and set(mix["hot_shares"]) == {"0.1%", "1%", "10%"}
    # each kind's latency: measured in the processes that ran it, their histograms merged
    assert all(k["latency"] is not None and k["latency"]["count"] == k["ops"] for k in mix["kinds"].values()), mix


class FlakySession:
    """A SQL session whose first write fails as a Galera certification conflict does."""

    def __init__(self) -> None:
        self.failed = False
        self.rows: dict[str, tuple] = {}

    async def fetch_one(self, statement, args):  # type: ignore[no-untyped-def]
        return None

    async def fetch_all(self, statement, args):  # type: ignore[no-untyped-def]
        return []

    async def execute(self, statement, args):  # type: ignore[no-untyped-def]
        if statement.startswith("INSERT") and not self.failed:
            self.failed = True
            raise RuntimeError("(1213, 'Deadlock found when trying to get lock; try restarting transaction')")
        if statement.startswith("INSERT"):
            self.rows[args[0]] = tuple(args[1:])


def test_a_transient_write_conflict_is_retried_and_counted() -> None:
    """Galera aborts a write its DDL or another node's write set conflicts with (error 1213):
    the YCSB writes are retried as the profile store's are, and counted as retries."""
    import anyio

    from asyncbench.engines.sql_retry import Retrier
    from asyncbench.store import Dialect, SqlPrimitives
    from asyncbench.workloads.ycsb.record import encode
    from asyncbench.workloads.ycsb.stores import ycsb_store

    session = FlakySession()
    retrier = Retrier(lambda e: "1213" in str(e))
    dialect = Dialect(placeholder=lambda i: "?")
    store = ycsb_store(SqlPrimitives(session, dialect, retry=retrier))
    marks: list[int] = []
    records = [(b"user1", encode([b"a", b"b"])), (b"user2", encode([b"c", b"d"]))]
    anyio.run(store.load, records, marks)
    assert session.rows == {"user1": (b"a", b"b"), "user2": (b"c", b"d")} and retrier.retries == 1
    assert len(marks) == 3
