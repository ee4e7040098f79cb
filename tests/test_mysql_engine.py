"""Unit tests of the MySQL adapter.

Without a server only the settings, SQL and "no server" behaviour are tested; with
``MYSQL_HOST``/``MYSQL_PORT`` set (``eval "$(scripts/mysql-server start)"``, CI does it) the
adapter runs against it: schema and collation, autocommit (one commit per write), one
statement per operation, results equal to the reference in-memory engine, reopen, reset,
storage. The tests use their own database (``asyncbench_test``), created by the adapter.
"""

from __future__ import annotations

import os
import socket
from pathlib import Path

import asyncmy
import pytest
from conftest import store_of
from sql_engine_checks import (
    an_endpoint_no_worker_uses_is_probed_and_closed,
    reopen_keeps_data_and_reset_wipes_it,
    results_equal_the_memory_engine,
    storage_is_measured_then_cached,
)

from asyncbench.engine import EngineConfig, EngineUnavailable
from asyncbench.engines.mysql import COLLATIONS, DIALECT, MySqlEngine, resolve_settings
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
    not (os.environ.get("MYSQL_HOST") and os.environ.get("MYSQL_PORT")),
    reason='no MySQL server: set MYSQL_HOST/MYSQL_PORT (eval "$(scripts/mysql-server start)")',
)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # asyncmy is an asyncio driver


def make(tmp_path: Path, limit: int = LIMIT, **settings: object) -> MySqlEngine:
    settings.setdefault("database", TEST_DB)
    return MySqlEngine(EngineConfig("mysql", tmp_path / "mysql", settings, limit, SEED, stores=PROFILE_STORES))


def transform(p):  # type: ignore[no-untyped-def]
    return update(p, SEED)


async def status(engine: MySqlEngine, *names: str) -> dict[str, int]:
    """Session status counters of the engine's own connection."""
    where = ", ".join(f"'{n}'" for n in names)
    rows = await engine._db.query(f"SHOW SESSION STATUS WHERE Variable_name IN ({where})")
    return {name: int(value) for name, value in rows}


async def other_connection():  # type: ignore[no-untyped-def]
    """An independent client: it only sees what the engine committed."""
    s = resolve_settings({"database": TEST_DB})
    return await asyncmy.connect(
        host=s["host"], port=s["port"], user=s["user"], password=s["password"], database=s["database"],
        autocommit=True,
    )  # fmt: skip


async def fetch(conn, sql: str, args: tuple = ()) -> list[tuple]:  # type: ignore[no-untyped-def]
    async with conn.cursor() as cur:
        await cur.execute(sql, args or None)
        return list(await cur.fetchall())


@pytest.fixture
async def loaded(tmp_path: Path):  # type: ignore[no-untyped-def]
    engine = make(tmp_path)
    await engine.open(reset=True)
    await store_of(engine).insert(create_many(1, N, SEED), [])
    yield engine
    await engine.close()


# --- without a server -------------------------------------------------------------------------


def test_settings_toml_then_env_then_default() -> None:
    env = {"MYSQL_HOST": "db.local", "MYSQL_PORT": "3307", "MYSQL_USER": "bench"}
    got = resolve_settings({"host": "", "port": 0, "database": "", "user": "me", "password": ""}, env)
    assert got == {"host": "db.local", "port": 3307, "database": "asyncbench", "user": "me", "password": ""}
    assert resolve_settings({}, {}) == {
        "host": "127.0.0.1",
        "port": 3306,
        "database": "asyncbench",
        "user": "root",
        "password": "",
    }
    with pytest.raises(ValueError, match="port"):
        resolve_settings({}, {"MYSQL_PORT": "nope"})


def test_statements_inline_limit_and_keep_the_reference_order() -> None:
    sql = Statements.build(DIALECT, 13)
    assert sql.scan_country_status == (
        "SELECT user_id FROM profiles FORCE INDEX (idx_profiles_country_status) "
        "WHERE country = %s AND status = %s ORDER BY user_id LIMIT 13"
    )
    assert sql.query_created_at.endswith(
        "WHERE created_at BETWEEN %s AND %s ORDER BY created_at, user_id LIMIT 13"
    )
    assert sql.scan_top_reputation.endswith("ORDER BY reputation DESC, user_id LIMIT 13")
    for text in (sql.by_id, sql.by_email, sql.query_country_status, sql.query_top_reputation):
        assert text.startswith("SELECT user_id, email, country, status, created_at, last_login, reputation,")
    assert " IN (" not in " ".join(sql.texts())


def test_class_metadata_before_open() -> None:
    assert MySqlEngine.name == "mysql" and MySqlEngine.persistent and not MySqlEngine.needs_stabilization
    facts = MySqlEngine(EngineConfig("mysql", Path("unused"), {"host": "127.0.0.1", "port": 1}, stores=PROFILE_STORES)).facts()
    assert facts.memory_scope is MemoryScope.CLIENT_ONLY
    assert facts.storage_method is StorageMethod.SERVER_ESTIMATE
    assert set(MySqlEngine.library_versions()) == {"asyncmy"}


async def test_unreachable_server_raises_engine_unavailable(tmp_path: Path) -> None:
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    engine = make(tmp_path, host="127.0.0.1", port=port)
    with pytest.raises(EngineUnavailable) as info:
        await engine.open(reset=True)
    message = str(info.value)
    assert message.startswith(f"no MySQL server reachable at 127.0.0.1:{port} (")
    assert "scripts/mysql-server" in message
    await engine.close()  # closing a never-opened engine is harmless


# --- against the server -------------------------------------------------------------------------


@needs_server
async def test_schema_indexes_and_binary_collation(loaded: MySqlEngine) -> None:
    conn = await other_connection()
    try:
        (engine_row,) = await fetch(
            conn,
            "SELECT engine, table_collation FROM information_schema.tables "
            "WHERE table_schema = DATABASE() AND table_name = 'profiles'",
        )
        assert engine_row[0] == "InnoDB" and engine_row[1] in COLLATIONS
        assert engine_row[1] == loaded.collation
        rows = await fetch(
            conn,
            "SELECT index_name, non_unique, column_name, collation FROM information_schema.statistics "
            "WHERE table_schema = DATABASE() AND table_name = 'profiles' ORDER BY index_name, seq_in_index",
        )
    finally:
        await conn.ensure_closed()
    indexes: dict[str, list[tuple]] = {}
    for name, non_unique, column, order in rows:
        indexes.setdefault(name, []).append((int(non_unique), column, order))
    assert indexes == {
        "PRIMARY": [(0, "user_id", "A")],
        "idx_profiles_email": [(0, "email", "A")],
        "idx_profiles_country_status": [(1, "country", "A"), (1, "status", "A"), (1, "user_id", "A")],
        "idx_profiles_created_at": [(1, "created_at", "A"), (1, "user_id", "A")],
        "idx_profiles_reputation": [(1, "reputation", "D"), (1, "user_id", "A")],
    }


@needs_server
async def test_index_queries_read_their_index_in_order(loaded: MySqlEngine) -> None:
    """No full scan and no filesort, whatever the state of the statistics."""
    sql = store_of(loaded).sql  # the profile store's statements over the engine's dialect
    cases = [
        (sql.scan_country_status, ("'US'", "'active'"), "idx_profiles_country_status"),
        (sql.query_country_status, ("'US'", "'active'"), "idx_profiles_country_status"),
        (sql.scan_created_at, (0, 2**62), "idx_profiles_created_at"),
        (sql.query_created_at, (0, 2**62), "idx_profiles_created_at"),
        (sql.scan_top_reputation, (), "idx_profiles_reputation"),
        (sql.query_top_reputation, (), "idx_profiles_reputation"),
    ]
    for text, args, index in cases:
        ((_id, _type, _table, access, _keys, key, *_rest, extra),) = await loaded._db.query(
            "EXPLAIN " + (text % args if args else text)
        )
        assert key == index and access != "ALL", text
        assert "filesort" not in (extra or ""), text


@needs_server
async def test_strings_compare_as_bytes(loaded: MySqlEngine) -> None:
    p = create(N + 1, SEED)
    upper = (N + 2, p[1].upper(), p[2].lower(), *p[3:])  # same letters, other case
    padded = (N + 3, p[1] + " ", *p[2:])  # trailing space: a different byte key
    await store_of(loaded).insert([p, upper, padded], [])
    assert await store_of(loaded).lookup_by_email([p[1], p[1].upper(), p[1] + " "], []) == [p, upper, padded]
    assert await store_of(loaded).lookup_by_email([p[1].title()], []) == []
    # country "us" (lower case) is not "US"
    got = await store_of(loaded).scan_country_status([(p[2].lower(), p[3])], [])
    assert got == [N + 2]


@needs_server
async def test_rows_are_python_ints_and_strs(loaded: MySqlEngine) -> None:
    (row,) = await store_of(loaded).read_by_id([5], [])
    assert row == create(5, SEED)
    assert [type(v) for v in row] == [int, str, str, str, int, int, int, str, str]
    top = await store_of(loaded).query_top_reputation(1, [])
    assert len(top) == LIMIT and all(type(r[0]) is int and type(r[6]) is int for r in top)


@needs_server
async def test_every_write_commits_on_its_own(loaded: MySqlEngine) -> None:
    (autocommit,) = (await loaded._db.query("SELECT @@autocommit"))[0]
    assert int(autocommit) == 1
    before = await status(loaded, "Handler_commit", "Com_stmt_execute")
    await store_of(loaded).insert(create_many(N + 1, 5, SEED), [])
    updated = await store_of(loaded).update([N + 1, N + 3, 10**9], transform, [])
    after = await status(loaded, "Handler_commit", "Com_stmt_execute")
    # 5 INSERTs + 3 SELECTs + 2 UPDATEs, each its own statement and its own transaction.
    assert after["Com_stmt_execute"] - before["Com_stmt_execute"] == 10
    assert after["Handler_commit"] - before["Handler_commit"] == 10
    conn = await other_connection()  # visible to another client without any explicit commit
    try:
        rows = await fetch(conn, Statements.build(DIALECT, 1).by_id, (N + 3,))
        assert await fetch(conn, "SELECT COUNT(*) FROM profiles") == [(N + 5,)]
    finally:
        await conn.ensure_closed()
    assert rows == [updated[1]]
    assert updated == [transform(create(N + 1, SEED)), transform(create(N + 3, SEED))]


@needs_server
async def test_one_statement_per_operation(loaded: MySqlEngine) -> None:
    cases = [
        (store_of(loaded).read_by_id, [1, 2, 10**9, 3], 4),
        (store_of(loaded).lookup_by_email, [create(7, SEED)[1], "nobody@example.com"], 2),
        (store_of(loaded).scan_country_status, [("US", "active"), ("DE", "pending"), ("GR", "deleted")], 3),
        (store_of(loaded).query_created_at, [(create(1, SEED)[4], create(30, SEED)[4])], 1),
        (store_of(loaded).scan_top_reputation, 4, 4),
        (store_of(loaded).query_top_reputation, 2, 2),
    ]
    for method, arg, statements in cases:
        before = await status(loaded, "Com_stmt_execute")
        await method(arg, [])
        after = await status(loaded, "Com_stmt_execute")
        assert after["Com_stmt_execute"] - before["Com_stmt_execute"] == statements, method.__name__


@needs_server
async def test_results_equal_the_reference_engine(loaded: MySqlEngine, tmp_path: Path) -> None:
    await results_equal_the_memory_engine(loaded, tmp_path / "mem", profiles=N, limit=LIMIT, seed=SEED)


@needs_server
async def test_reopen_keeps_data_and_reset_wipes_it(loaded: MySqlEngine, tmp_path: Path) -> None:
    await reopen_keeps_data_and_reset_wipes_it(loaded, lambda: make(tmp_path), profiles=N, seed=SEED)


@needs_server
async def test_settle_caches_storage_and_metadata_after_open(loaded: MySqlEngine) -> None:
    assert loaded.storage_bytes() == 0  # nothing measured before settle
    await loaded.settle()  # timed: FLUSH TABLES profiles, as the reference
    stored = await storage_is_measured_then_cached(loaded)  # ANALYZE and the size query, untimed
    rows = await loaded._db.query(
        "SELECT data_length, index_length FROM information_schema.tables "
        "WHERE table_schema = DATABASE() AND table_name = 'profiles'"
    )
    assert stored == int(rows[0][0]) + int(rows[0][1]) > 0
    assert int(rows[0][1]) > 0  # the four secondary indexes are counted
    versions = loaded.library_versions()
    (server,) = (await loaded._db.query("SELECT VERSION()"))[0]
    assert versions == {"asyncmy": MySqlEngine.library_versions()["asyncmy"], "server": server}
    durability = loaded.facts().durability
    assert durability.parameters["innodb_flush_log_at_trx_commit"] in ("0", "1", "2")
    assert durability.write_unit == "one autocommit transaction per insert and per update"
    effective = {st.name: st.effective for st in loaded.facts().settings}
    assert effective["server innodb_flush_log_at_trx_commit"] in ("0", "1", "2")
    assert effective["server innodb_buffer_pool_size"].isdigit()  # read back with SHOW VARIABLES


@needs_server
async def test_an_endpoint_no_worker_uses_is_probed_and_closed(tmp_path: Path) -> None:
    port = resolve_settings({})["port"]
    hosts = [f"127.0.0.1:{port}", f"localhost:{port}", f"127.0.0.1:{port}"]  # one server, two names
    await an_endpoint_no_worker_uses_is_probed_and_closed(make(tmp_path, hosts=hosts), hosts)


@needs_server
async def test_missing_database_is_created(tmp_path: Path) -> None:
    conn = await other_connection()
    try:
        await fetch(conn, f"DROP DATABASE IF EXISTS {TEST_DB}_created")
    finally:
        await conn.ensure_closed()
    engine = make(tmp_path, database=f"{TEST_DB}_created")
    await engine.open(reset=False)
    try:
        await store_of(engine).insert(create_many(1, 2, SEED), [])
        assert await store_of(engine).count() == 2
        await engine._db.query(f"DROP DATABASE {TEST_DB}_created")
    finally:
        await engine.close()
