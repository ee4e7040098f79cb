"""Retrying conflicting writes, spreading workers over endpoints, and how both are reported.

No server needed: the shared SQL store runs over a scripted session that fails the way a
cluster does (a write that loses certification), and the runner runs an engine from
``engines_for_tests`` that reports retries and a pretend cluster.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from conftest import REFERENCE_PLAN, status_line, unescaped

from asyncbench import engines
from asyncbench.engines.client_server import (
    Endpoint,
    assign,
    parse_endpoint,
    parse_endpoints,
    summarize,
    worker_map,
)
from asyncbench.engines.mysql import DIALECT as MYSQL_DIALECT
from asyncbench.engines.mysql import resolve_endpoints
from asyncbench.engines.mysql import retryable as mysql_retryable
from asyncbench.engines.sql_retry import MAX_ATTEMPTS, Retrier
from asyncbench.result import EngineResult, PhaseResult
from asyncbench.run.phase.phase_loop import bucket_by_uid
from asyncbench.store import SqlPrimitives
from asyncbench.workloads.profile_store.generate import create
from asyncbench.workloads.profile_store.phases import PHASES, Action, Group
from asyncbench.workloads.profile_store.plan import Counts, draw_plan
from asyncbench.workloads.profile_store.profiles import update
from asyncbench.workloads.profile_store.sql_store import SqlProfileStore, Statements

SEED = 570123434
pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


class Conflict(Exception):
    """What a cluster raises for a write that lost a conflict."""


class ScriptedSession:
    """An in-memory table behind the SqlSession protocol; ``fail`` lists, per statement
    text, how many of its next executions raise (Conflict unless told otherwise)."""

    def __init__(self, sql: Statements, error: type[Exception] = Conflict) -> None:
        self.sql, self.error = sql, error
        self.rows: dict[int, tuple] = {}
        self.fail: dict[str, int] = {}
        self.log: list[str] = []

    def _maybe_fail(self, statement: str) -> None:
        self.log.append(statement)
        if self.fail.get(statement, 0) > 0:
            self.fail[statement] -= 1
            raise self.error("lost a conflict")

    async def fetch_one(self, statement: str, args: Sequence[Any]) -> Sequence[Any] | None:
        self._maybe_fail(statement)
        assert statement == self.sql.by_id
        return self.rows.get(args[0])

    async def fetch_all(self, statement: str, args: Sequence[Any]) -> Sequence[Sequence[Any]]:
        raise AssertionError("not used here")

    async def execute(self, statement: str, args: Sequence[Any]) -> None:
        self._maybe_fail(statement)
        if statement == self.sql.insert:
            self.rows[args[0]] = tuple(args)
        else:
            assert statement == self.sql.update
            uid = args[-1]
            old = self.rows[uid]
            self.rows[uid] = (uid, old[1], args[0], args[1], old[4], args[2], args[3], args[4], args[5])


async def _scripted_table(table: object) -> None:
    """The scripted session is its table already: nothing to make (and nothing logged)."""


class Counted(SqlProfileStore):
    """The profile store over a scripted session, with the engine's retry (its count)."""

    def __init__(self, session: ScriptedSession, retrier: Retrier) -> None:
        super().__init__(SqlPrimitives(session, MYSQL_DIALECT, retry=retrier, make_table=_scripted_table), 5)
        self.retrier = retrier

    @property
    def retries(self) -> int:
        return self.retrier.retries


def store_over(error: type[Exception] = Conflict) -> tuple[Counted, ScriptedSession]:
    sql = Statements.build(MYSQL_DIALECT, 5)
    session = ScriptedSession(sql, error)
    return Counted(session, Retrier(lambda exc: isinstance(exc, Conflict))), session


def transform(p):  # type: ignore[no-untyped-def]
    return update(p, SEED)


async def test_an_insert_is_retried_as_the_same_single_statement() -> None:
    store, session = store_over()
    session.fail[store.sql.insert] = 2
    marks: list[int] = []
    await store.insert([create(1, SEED), create(2, SEED)], marks)
    assert session.rows == {1: create(1, SEED), 2: create(2, SEED)}
    assert session.log == [store.sql.insert] * 4  # 1 failed twice, then ran; 2 ran once
    assert store.retries == 2 and len(marks) == 3  # a start stamp + one per operation, not per attempt


async def test_an_update_is_retried_as_its_select_plus_update_unit() -> None:
    store, session = store_over()
    session.rows[7] = create(7, SEED)
    session.fail[store.sql.update] = 1
    got = await store.update([7], transform, [])
    assert got == [transform(create(7, SEED))]
    assert session.rows[7] == transform(create(7, SEED))  # transformed once, not twice
    sql = store.sql
    assert session.log == [sql.by_id, sql.update, sql.by_id, sql.update]  # the row is read again
    assert store.retries == 1


async def test_other_errors_are_not_retried_and_retries_are_bounded() -> None:
    store, session = store_over(error=ValueError)
    session.fail[store.sql.insert] = 1
    with pytest.raises(ValueError):
        await store.insert([create(1, SEED)], [])
    assert store.retries == 0 and session.log == [store.sql.insert]
    store, session = store_over()
    session.fail[store.sql.insert] = MAX_ATTEMPTS  # never succeeds within the budget
    with pytest.raises(Conflict):
        await store.insert([create(1, SEED)], [])
    assert store.retries == MAX_ATTEMPTS - 1 and len(session.log) == MAX_ATTEMPTS
    no_policy = SqlProfileStore(SqlPrimitives(session, MYSQL_DIALECT, make_table=_scripted_table), 5)  # an engine without a retry rule
    session.fail[store.sql.insert] = 1
    with pytest.raises(Conflict):
        await no_policy.insert([create(1, SEED)], [])


def test_mysql_retries_error_1213_only() -> None:
    from asyncmy.errors import IntegrityError, OperationalError

    assert mysql_retryable(OperationalError(1213, "Deadlock found when trying to get lock"))
    assert not mysql_retryable(OperationalError(2013, "Lost connection"))
    assert not mysql_retryable(IntegrityError(1062, "Duplicate entry"))
    assert not mysql_retryable(Conflict())


def test_endpoints_parse_and_workers_go_round_robin() -> None:
    assert parse_endpoint("db:3307", 1) == Endpoint("db", 3307)
    assert parse_endpoint("db", 3306) == Endpoint("db", 3306)
    assert parse_endpoint("[::1]:5", 1) == Endpoint("::1", 5) and str(Endpoint("::1", 5)) == "[::1]:5"
    for bad in ("db:x", "db:0", ":5", "[::1", ""):
        with pytest.raises(ValueError):
            parse_endpoint(bad, 1)
    three = parse_endpoints("a:1, b:2 ,c", 9)
    assert three == [Endpoint("a", 1), Endpoint("b", 2), Endpoint("c", 9)]
    assert assign(5, 3) == [0, 1, 2, 0, 1] and assign(2, 3) == [0, 1]
    assert worker_map(4, three) == "workers 0, 3 -> a:1; worker 1 -> b:2; worker 2 -> c:9"
    assert worker_map(1, three[:2]) == "worker 0 -> a:1; no worker -> b:2"
    assert summarize({"a": "2", "b": "2"}) == "2"
    assert summarize({"a": "2", "b": "1", "c": None}) == "2 (a), 1 (b), unknown (c)"


def test_mysql_endpoint_precedence() -> None:
    env = {"MYSQL_HOSTS": "n1:1,n2:2", "MYSQL_HOST": "single", "MYSQL_PORT": "3"}
    assert resolve_endpoints({}, env) == [Endpoint("n1", 1), Endpoint("n2", 2)]
    assert resolve_endpoints({"host": "toml"}, env) == [Endpoint("toml", 3)]  # a TOML host beats the env
    assert resolve_endpoints({"hosts": ["t1", "t2:9"]}, env) == [Endpoint("t1", 3), Endpoint("t2", 9)]
    assert resolve_endpoints({}, {"MYSQL_HOST": "single", "MYSQL_PORT": "3"}) == [Endpoint("single", 3)]
    assert resolve_endpoints({}, {}) == [Endpoint("127.0.0.1", 3306)]
    with pytest.raises(ValueError, match="MySQL hosts"):
        resolve_endpoints({}, {"MYSQL_HOSTS": "n1:nope"})


def test_old_phase_results_load_without_retries() -> None:
    doc = EngineResult(engine="x", phases=[PhaseResult(0, "p", PHASES["insert"], Action.OPERATIONS, Group.WRITE, 1, 1.0)]).to_dict()
    del doc["phases"][0]["retries"]  # a result file written before the field existed
    assert EngineResult.from_dict(doc, "profile_store").phases[0].retries == 0


def test_runner_stores_retries_per_phase_and_report_notes_the_cluster(
    run_cli, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setitem(engines.REGISTRY, "retrying", "engines_for_tests:RetryingEngine")
    monkeypatch.setenv("ASYNCBENCH_ENGINES", "retrying=engines_for_tests:RetryingEngine")
    monkeypatch.setenv("PYTHONPATH", str(Path(__file__).parent))
    code, results, output = run_cli(str(REFERENCE_PLAN), "--engine", "retrying", "--parallelism", "2")
    assert code == 0, output
    (er,) = results[0]["engines"]
    assert status_line(er) == "ok"
    retries = {p["name"]: p["retries"] for p in er["phases"]}
    # One per update batch: the plan's updates split over two workers by uid % 2, in 1_000s.
    updates = draw_plan(Counts.for_profiles(10_000, queries=2_500, post_queries=2_500), SEED).stream("updates")
    batches = sum(-(-len(bucket) // 1_000) for bucket in bucket_by_uid(updates, 2))
    assert batches > 10 and retries["update profiles"] == batches
    assert {n for n, r in retries.items() if r} == {"update profiles"}
    assert er["facts"]["endpoints"] == ["node-a:1", "node-b:2"]
    md = unescaped(next((tmp_path / "out").glob("profiles-10000-p*/asyncbench-*.md")).read_text())
    assert (
        "- Cluster (retrying): nodes: 2 pretend nodes; workers: worker 0 -> node-a:1; "
        f"writes retried after a conflict: update profiles {batches}." in md
    )
