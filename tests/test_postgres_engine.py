"""Unit tests of the PostgreSQL adapter.

Without a server only the settings, SQL and "no server" behaviour are tested; with
``PGHOST`` set (``eval "$(scripts/postgres-server start)"``, CI does it) the adapter runs
against it: schema, byte collation and index plans, autocommit (a transaction per write),
prepared statements (one execution per operation), results equal to the reference
in-memory engine, reopen, reset, CHECKPOINT, storage (measured after settle, then cached),
durability read back, several endpoints. The tests use their own database (``asyncbench_test``), created by the adapter.
Under CI (``CI`` set) the server tests run even without ``PGHOST``, so a missing server
fails instead of skipping.
"""

from __future__ import annotations

import os
import socket
from pathlib import Path

import asyncpg
import pytest
from conftest import REFERENCE_PLAN, postgres_expected, status_line, store_of
from sql_engine_checks import (
    an_endpoint_no_worker_uses_is_probed_and_closed,
    reopen_keeps_data_and_reset_wipes_it,
    results_equal_the_memory_engine,
    storage_is_measured_then_cached,
)

from asyncbench import engines
from asyncbench.config import ConfigError, load
from asyncbench.engine import EngineConfig, EngineUnavailable
from asyncbench.engines.client_server import Endpoint
from asyncbench.engines.postgres import DIALECT, PostgresEngine, resolve_settings, validate_settings
from asyncbench.facts import MemoryScope, StorageMethod
from asyncbench.workloads.profile_store.generate import create, create_many
from asyncbench.workloads.profile_store.kv_store import STORE_NAMES as PROFILE_STORES
from asyncbench.workloads.profile_store.profiles import update
from asyncbench.workloads.profile_store.sql_store import Statements

SEED = 570123434
LIMIT = 7
N = 400
TEST_DB = "asyncbench_test"

pytestmark = pytest.mark.anyio
needs_server = pytest.mark.skipif(
    not postgres_expected(),
    reason='no PostgreSQL server: set PGHOST/PGPORT/... (eval "$(scripts/postgres-server start)")',
)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # asyncpg is an asyncio driver


def make(tmp_path: Path, limit: int = LIMIT, workers: int = 1, **settings: object) -> PostgresEngine:
    settings.setdefault("database", TEST_DB)
    return PostgresEngine(EngineConfig("postgres", tmp_path / "pg", settings, limit, SEED, workers, stores=PROFILE_STORES))


def transform(p):  # type: ignore[no-untyped-def]
    return update(p, SEED)


async def other_connection() -> asyncpg.Connection:
    """An independent client: it only sees what the engine committed."""
    s = resolve_settings({"database": TEST_DB})
    e = s["endpoints"][0]
    return await asyncpg.connect(
        host=e.host, port=e.port, user=s["user"], password=s["password"], database=s["database"]
    )


@pytest.fixture
async def loaded(tmp_path: Path):  # type: ignore[no-untyped-def]
    engine = make(tmp_path)
    await engine.open(reset=True)
    await store_of(engine).insert(create_many(1, N, SEED), [])
    yield engine
    await engine.close()


# --- without a server -------------------------------------------------------------------------


def test_settings_toml_then_libpq_env_then_default() -> None:
    env = {"PGHOST": "db.local", "PGPORT": "5433", "PGUSER": "bench", "PGPASSWORD": "pw"}
    got = resolve_settings({"host": "", "port": 0, "database": "", "user": "me", "password": ""}, env)
    assert got == {
        "endpoints": [Endpoint("db.local", 5433)],
        "database": "asyncbench",
        "user": "me",
        "password": "pw",
        "synchronous_commit": "off",
        "schema": "asyncbench",
    }
    assert resolve_settings({}, {}) == {
        "endpoints": [Endpoint("127.0.0.1", 5432)],
        "database": "asyncbench",
        "user": "postgres",
        "password": "",
        "synchronous_commit": "off",
        "schema": "asyncbench",
    }
    toml = resolve_settings({"host": "h", "port": 6000, "synchronous_commit": "ON"}, env)
    assert toml["endpoints"] == [Endpoint("h", 6000)] and toml["synchronous_commit"] == "on"


def test_several_endpoints_follow_libpq_lists_or_the_hosts_setting() -> None:
    one_port = resolve_settings({}, {"PGHOST": "a,b,c", "PGPORT": "5440"})["endpoints"]
    assert one_port == [Endpoint("a", 5440), Endpoint("b", 5440), Endpoint("c", 5440)]
    ports = resolve_settings({}, {"PGHOST": "a,b", "PGPORT": "1,2"})["endpoints"]
    assert ports == [Endpoint("a", 1), Endpoint("b", 2)]
    default_port = resolve_settings({}, {"PGHOST": "a,b"})["endpoints"]
    assert default_port == [Endpoint("a", 5432), Endpoint("b", 5432)]
    with pytest.raises(ValueError, match="2 hosts .* but 3 ports"):
        resolve_settings({}, {"PGHOST": "a,b", "PGPORT": "1,2,3"})
    hosts = resolve_settings({"hosts": ["x:1", "[::1]:2", "y"]}, {"PGHOST": "ignored"})["endpoints"]
    assert hosts == [Endpoint("x", 1), Endpoint("::1", 2), Endpoint("y", 5432)]
    assert [str(e) for e in hosts] == ["x:1", "[::1]:2", "y:5432"]


def test_invalid_settings_are_refused_before_anything_runs(tmp_path: Path) -> None:
    validate_settings({"synchronous_commit": "remote_apply", "hosts": ["a:1"]})
    with pytest.raises(ValueError, match="synchronous_commit must be one of"):
        validate_settings({"synchronous_commit": "sometimes"})
    with pytest.raises(ValueError, match="hosts: .*port must be an integer"):
        validate_settings({"hosts": ["a:b"]})
    plan = tmp_path / "plan.toml"
    plan.write_text(
        (Path(__file__).parent.parent / "benchmarks" / "reference.toml").read_text()
        + '\n[engines.postgres]\nsynchronous_commit = "never"\n'
    )
    with pytest.raises(ConfigError) as info:
        load(plan)
    assert info.value.key == "engines.postgres.synchronous_commit"


def test_statements_use_numbered_placeholders_and_the_reference_order() -> None:
    sql = Statements.build(DIALECT, 13)
    assert sql.scan_country_status == (
        "SELECT user_id FROM profiles WHERE country = $1 AND status = $2 ORDER BY user_id LIMIT 13"
    )
    assert sql.query_created_at.endswith(
        "WHERE created_at BETWEEN $1 AND $2 ORDER BY created_at, user_id LIMIT 13"
    )
    assert sql.scan_top_reputation.endswith("ORDER BY reputation DESC, user_id LIMIT 13")
    assert sql.update.endswith("bio = $6 WHERE user_id = $7")
    assert sql.insert.endswith("VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)")
    assert " IN (" not in " ".join(sql.texts())


def test_class_metadata_before_open() -> None:
    assert PostgresEngine.name == "postgres" and PostgresEngine.persistent
    assert not PostgresEngine.needs_stabilization
    facts = PostgresEngine(EngineConfig("postgres", Path("unused"), {"host": "127.0.0.1", "port": 1}, stores=PROFILE_STORES)).facts()
    assert facts.memory_scope is MemoryScope.CLIENT_ONLY
    assert facts.storage_method is StorageMethod.SERVER_ESTIMATE
    assert facts.endpoints == ["127.0.0.1:1"] and facts.cluster == {}
    assert set(PostgresEngine.library_versions()) == {"asyncpg"}


def test_postgres_is_in_all_after_mysql() -> None:
    from asyncbench.engines import ALL_ENGINES, DEFAULT_ENGINES, engine_class

    assert ALL_ENGINES.index("postgres") == ALL_ENGINES.index("mysql") + 1
    assert "postgres" not in DEFAULT_ENGINES  # it needs a server
    assert engine_class("postgres") is PostgresEngine


async def test_unreachable_server_raises_engine_unavailable(tmp_path: Path) -> None:
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    engine = make(tmp_path, host="127.0.0.1", port=port)
    with pytest.raises(EngineUnavailable) as info:
        await engine.open(reset=True)
    message = str(info.value)
    assert message.startswith(f"no PostgreSQL server reachable at 127.0.0.1:{port} (")
    assert "scripts/postgres-server" in message
    await engine.close()  # closing a never-opened engine is harmless


async def test_a_user_without_checkpoint_rights_fails_at_open(tmp_path: Path) -> None:
    class NoRights:
        async def fetchval(self, sql: str) -> bool:
            assert "pg_checkpoint" in sql and "rolsuper" in sql
            return False

    engine = make(tmp_path, user="reader")
    with pytest.raises(RuntimeError, match=r"may not run CHECKPOINT .*GRANT pg_checkpoint TO reader"):
        await engine._check_checkpoint_allowed(NoRights())  # type: ignore[arg-type]


# --- against the server -------------------------------------------------------------------------


@needs_server
async def test_schema_indexes_and_byte_collation(loaded: PostgresEngine) -> None:
    conn = await other_connection()
    try:
        indexes = dict(
            await conn.fetch("SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'profiles'")
        )
        collations = dict(
            await conn.fetch(
                "SELECT a.attname, c.collname FROM pg_attribute a JOIN pg_collation c ON c.oid = a.attcollation "
                "WHERE a.attrelid = 'profiles'::regclass AND a.attnum > 0"
            )
        )
        types = dict(
            await conn.fetch(
                "SELECT column_name, data_type FROM information_schema.columns WHERE table_name = 'profiles'"
            )
        )
    finally:
        await conn.close()
    assert {name: d.split(" USING btree ")[1] for name, d in indexes.items()} == {
        "profiles_pkey": "(user_id)",
        "idx_profiles_email": "(email)",
        "idx_profiles_country_status": "(country, status, user_id)",
        "idx_profiles_created_at": "(created_at, user_id)",
        "idx_profiles_reputation": "(reputation DESC, user_id)",
    }
    assert "UNIQUE" in indexes["idx_profiles_email"]
    assert collations == dict.fromkeys(("email", "country", "status", "display_name", "bio"), "C")
    assert types["user_id"] == types["created_at"] == types["last_login"] == "bigint"


@needs_server
async def test_index_queries_read_their_index_in_order(loaded: PostgresEngine) -> None:
    """No sort and no sequential scan, with or without statistics (the table was just
    loaded: autovacuum may or may not have analyzed it yet)."""
    sql = store_of(loaded).sql  # the profile store's statements over the engine's dialect
    cases = [
        (sql.scan_country_status, ("US", "active"), "idx_profiles_country_status"),
        (sql.query_country_status, ("US", "active"), "idx_profiles_country_status"),
        (sql.scan_created_at, (0, 2**62), "idx_profiles_created_at"),
        (sql.query_created_at, (0, 2**62), "idx_profiles_created_at"),
        (sql.scan_top_reputation, (), "idx_profiles_reputation"),
        (sql.query_top_reputation, (), "idx_profiles_reputation"),
        (sql.by_email, ("x",), "idx_profiles_email"),
    ]
    conn = loaded._db.conn
    for text, args, index in cases:
        plan = "\n".join(r[0] for r in await conn.fetch("EXPLAIN " + text, *args))
        assert f"using {index} on profiles" in plan, plan
        assert "Sort" not in plan and "Seq Scan" not in plan, plan


@needs_server
async def test_strings_compare_as_bytes(loaded: PostgresEngine) -> None:
    p = create(N + 1, SEED)
    upper = (N + 2, p[1].upper(), p[2].lower(), *p[3:])  # same letters, other case
    padded = (N + 3, p[1] + " ", *p[2:])  # trailing space: a different byte key
    await store_of(loaded).insert([p, upper, padded], [])
    assert await store_of(loaded).lookup_by_email([p[1], p[1].upper(), p[1] + " "], []) == [p, upper, padded]
    assert await store_of(loaded).lookup_by_email([p[1].title()], []) == []
    assert await store_of(loaded).scan_country_status([(p[2].lower(), p[3])], []) == [N + 2]
    # The column's own order is code point order ("USER..." before "user...", which a
    # linguistic collation such as en_US would reverse), as Python's str order is.
    got = await loaded._db.conn.fetchval(
        "SELECT array_agg(email ORDER BY email) FROM profiles WHERE user_id IN ($1, $2, $3)",
        p[0], upper[0], padded[0],
    )  # fmt: skip
    assert got == sorted([p[1], upper[1], padded[1]]) == [upper[1], p[1], padded[1]]


@needs_server
async def test_rows_are_python_ints_and_strs(loaded: PostgresEngine) -> None:
    (row,) = await store_of(loaded).read_by_id([5], [])
    assert row == create(5, SEED)
    assert [type(v) for v in row] == [int, str, str, str, int, int, int, str, str]
    top = await store_of(loaded).query_top_reputation(1, [])
    assert len(top) == LIMIT and all(type(r) is tuple and type(r[6]) is int for r in top)


@needs_server
async def test_every_write_is_its_own_committed_transaction(loaded: PostgresEngine) -> None:
    await store_of(loaded).insert(create_many(N + 1, 5, SEED), [])
    updated = await store_of(loaded).update([N + 1, N + 3, 10**9], transform, [])
    assert updated == [transform(create(N + 1, SEED)), transform(create(N + 3, SEED))]
    conn = await other_connection()  # sees them without any explicit commit
    try:
        rows = await conn.fetch(
            "SELECT user_id, xmin::text::bigint AS xid FROM profiles WHERE user_id > $1 ORDER BY user_id", N
        )
        assert await conn.fetchval("SELECT count(*) FROM profiles") == N + 5
        (row,) = await conn.fetch(Statements.build(DIALECT, 1).by_id, N + 3)
    finally:
        await conn.close()
    assert tuple(row) == updated[1]
    xids = [r["xid"] for r in rows]
    # 5 inserts, then 2 updates that gave rows N+1 and N+3 new versions: 7 distinct transactions
    # in this order (ids N+1 and N+3 carry the two newest).
    assert len(set(xids)) == 5
    assert xids[0] > max(xids[1], xids[3], xids[4]) and xids[2] > xids[0]
    assert sorted(xids)[-2:] == [xids[0], xids[2]]


@needs_server
async def test_one_prepared_execution_per_operation(loaded: PostgresEngine) -> None:
    session = loaded._db
    calls: list[str] = []
    for table in (session._fetchrow, session._fetch, session._fetchval):
        for text, fn in list(table.items()):

            async def counted(*args, _fn=fn, _text=text):  # type: ignore[no-untyped-def]
                calls.append(_text)
                return await _fn(*args)

            table[text] = counted
    sql = store_of(loaded).sql  # the profile store's statements over the engine's dialect
    cases = [
        (store_of(loaded).read_by_id, [1, 2, 10**9, 3], [sql.by_id] * 4),
        (store_of(loaded).lookup_by_email, [create(7, SEED)[1], "nobody@example.com"], [sql.by_email] * 2),
        (store_of(loaded).scan_country_status, [("US", "active"), ("DE", "pending")], [sql.scan_country_status] * 2),
        (store_of(loaded).query_created_at, [(create(1, SEED)[4], create(30, SEED)[4])], [sql.query_created_at]),
        (store_of(loaded).scan_top_reputation, 4, [sql.scan_top_reputation] * 4),
        (store_of(loaded).insert, create_many(N + 1, 2, SEED), [sql.insert] * 2),
        (lambda ids, m: store_of(loaded).update(ids, transform, m), [1, 10**9], [sql.by_id, sql.update, sql.by_id]),
    ]
    for method, arg, statements in cases:
        calls.clear()
        await method(arg, [])
        assert calls == statements


@needs_server
async def test_results_equal_the_reference_engine(loaded: PostgresEngine, tmp_path: Path) -> None:
    await results_equal_the_memory_engine(loaded, tmp_path / "mem", profiles=N, limit=LIMIT, seed=SEED)


@needs_server
async def test_reopen_keeps_data_and_reset_wipes_it(loaded: PostgresEngine, tmp_path: Path) -> None:
    await reopen_keeps_data_and_reset_wipes_it(loaded, lambda: make(tmp_path), profiles=N, seed=SEED)


@needs_server
async def test_settle_checkpoints_and_storage_is_the_relation_size(loaded: PostgresEngine) -> None:
    conn = loaded._db.conn
    assert loaded.storage_bytes() == 0  # nothing measured before settle
    before = await conn.fetchval("SELECT pg_current_wal_insert_lsn()::text")
    await loaded.settle()  # timed: CHECKPOINT
    redo = await conn.fetchval("SELECT redo_lsn::text FROM pg_control_checkpoint()")

    def lsn(text: str) -> int:
        hi, lo = text.split("/")
        return (int(hi, 16) << 32) | int(lo, 16)

    assert lsn(redo) >= lsn(before)  # a checkpoint started after the writes
    stored = await storage_is_measured_then_cached(loaded)  # untimed, after settle, as the runner
    assert stored == await conn.fetchval("SELECT pg_total_relation_size('profiles')")
    assert stored > await conn.fetchval("SELECT pg_relation_size('profiles')") > 0  # indexes count


@needs_server
async def test_durability_and_versions_are_read_back(loaded: PostgresEngine, tmp_path: Path) -> None:
    facts = loaded.facts()
    assert facts.durability.parameters["synchronous_commit"] == "off"
    assert facts.durability.parameters["fsync"] == "on"
    assert "WAL writer every" in facts.durability.sync
    settings = {s.name: s for s in facts.settings}
    sc = settings["synchronous_commit"]
    assert (sc.configured, sc.effective) == ("off", "off")
    assert settings["enable_sort"].effective == "off"
    version = await loaded._db.conn.fetchval("SHOW server_version")
    assert facts.versions == {"asyncpg": asyncpg.__version__, "server": version}
    await loaded.close()  # one engine at a time holds the schema's run lock
    strict = make(tmp_path, synchronous_commit="on")
    await strict.open(reset=False)
    try:
        assert await strict._db.conn.fetchval("SHOW synchronous_commit") == "on"
        facts = strict.facts()
        assert facts.durability.parameters["synchronous_commit"] == "on"
        assert facts.durability.sync == "per commit"
    finally:
        await strict.close()


@needs_server
async def test_workers_spread_round_robin_over_endpoints(tmp_path: Path) -> None:
    port = resolve_settings({})["endpoints"][0].port
    hosts = [f"127.0.0.1:{port}", f"localhost:{port}"]  # two names for the one test server
    engine = make(tmp_path, workers=3, hosts=hosts)
    await engine.open(reset=True)
    try:
        views = [store_of(engine, w) for w in range(3)]
        assert [str(v.session.endpoint) for v in views] == [hosts[0], hosts[1], hosts[0]]
        names = [await v.session.conn.fetchval("SHOW application_name") for v in views]
        assert names == ["asyncbench-w0", "asyncbench-w1", "asyncbench-w2"]
        await views[1].insert(create_many(1, 3, SEED), [])  # a write through the second endpoint
        assert await views[2].read_by_id([2], []) == [create(2, SEED)]
        facts = engine.facts()
        assert facts.endpoints == hosts
        assert facts.cluster["workers"] == f"workers 0, 2 -> {hosts[0]}; worker 1 -> {hosts[1]}"
        assert facts.cluster["nodes"].startswith("2 endpoints: ")
        assert set(facts.versions) == {"asyncpg", f"server {hosts[0]}", f"server {hosts[1]}"}
    finally:
        await engine.close()


@needs_server
async def test_an_endpoint_no_worker_uses_is_probed_and_closed(tmp_path: Path) -> None:
    port = resolve_settings({})["endpoints"][0].port
    hosts = [f"127.0.0.1:{port}", f"localhost:{port}", f"127.0.0.1:{port}"]  # one server, two names
    await an_endpoint_no_worker_uses_is_probed_and_closed(make(tmp_path, hosts=hosts), hosts)


@needs_server
async def test_missing_database_is_created(tmp_path: Path) -> None:
    name = f"{TEST_DB}_created"
    conn = await other_connection()
    try:
        await conn.execute(f"DROP DATABASE IF EXISTS {name}")
    finally:
        await conn.close()
    engine = make(tmp_path, database=name)
    await engine.open(reset=False)
    try:
        await store_of(engine).insert(create_many(1, 2, SEED), [])
        assert await store_of(engine).count() == 2
    finally:
        await engine.close()
    conn = await other_connection()
    try:
        await conn.execute(f"DROP DATABASE {name}")
    finally:
        await conn.close()


def test_env_names_are_libpq_names() -> None:
    """The variables scripts/postgres-server exports are the ones the engine reads."""
    from asyncbench.engines.postgres import ENV_VARS

    assert set(ENV_VARS.values()) == {"PGHOST", "PGPORT", "PGDATABASE", "PGUSER", "PGPASSWORD"}
    if os.environ.get("PGHOST"):
        assert resolve_settings({})["endpoints"][0].host == os.environ["PGHOST"].split(",")[0]


def test_no_server_is_skipped_under_all_and_fails_when_named(
    monkeypatch: pytest.MonkeyPatch, run_cli, tmp_path: Path
) -> None:
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    monkeypatch.setenv("PGHOST", "127.0.0.1")
    monkeypatch.setenv("PGPORT", str(port))
    monkeypatch.setattr(engines, "ALL_ENGINES", ("postgres", "memory"))
    code, results, output = run_cli(str(REFERENCE_PLAN), "--engine", "all", "--no-isolate")
    assert code == 0, output
    pg, memory = results[0]["engines"]
    assert status_line(pg).startswith(f"Skipped: no PostgreSQL server reachable at 127.0.0.1:{port} (")
    assert status_line(memory) == "ok"
    code, results, output = run_cli(str(REFERENCE_PLAN), "--engine", "postgres", "--no-isolate")
    assert code == 1
    (pg,) = results[-1]["engines"]
    assert status_line(pg).startswith(f"Failed: open: no PostgreSQL server reachable at 127.0.0.1:{port} (")
