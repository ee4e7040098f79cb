"""Unit tests of the SQLite adapter: schema, PRAGMAs, autocommit, one statement per
operation, index plans, results equal to the reference in-memory engine, reopen, reset."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

import anyio
import pytest
from conftest import store_of

from asyncbench.engine import EngineConfig
from asyncbench.engines.memory import MemoryEngine
from asyncbench.engines.sqlite import (
    DIALECT,
    SqliteEngine,
    configure,
    pragma_statements,
    validate_settings,
)
from asyncbench.engines.store_dir import StoreDirError
from asyncbench.store import SqlPrimitives
from asyncbench.workloads.profile_store.generate import create, create_many
from asyncbench.workloads.profile_store.kv_store import STORE_NAMES as PROFILE_STORES
from asyncbench.workloads.profile_store.profiles import COUNTRIES, STATUSES, update
from asyncbench.workloads.profile_store.sql_store import PROFILES_TABLE, SqlProfileStore, Statements

SEED = 570123434
LIMIT = 20
N = 1_500
SQL = Statements.build(DIALECT, LIMIT)

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # aiosqlite resolves its futures on an asyncio loop


def make(tmp_path: Path, **settings: object) -> SqliteEngine:
    return SqliteEngine(EngineConfig("sqlite", tmp_path / "db", settings, LIMIT, SEED, stores=PROFILE_STORES))


def transform(p):  # type: ignore[no-untyped-def]
    return update(p, SEED)


async def sql(engine: SqliteEngine, text: str, params: tuple = ()) -> list[tuple]:
    """Run one statement on the engine's own connection thread."""
    return await engine._db.run(lambda conn: conn.execute(text, params).fetchall())


async def traced(engine: SqliteEngine, coro_fn, *args):  # type: ignore[no-untyped-def]
    """Result of ``coro_fn(*args)`` and every statement execution SQLite saw meanwhile."""
    log: list[str] = []
    await engine._db.run(lambda conn: conn.set_trace_callback(log.append))
    try:
        result = await coro_fn(*args, [])
    finally:
        await engine._db.run(lambda conn: conn.set_trace_callback(None))
    return result, log


@pytest.fixture
async def loaded(tmp_path: Path):  # type: ignore[no-untyped-def]
    engine = make(tmp_path)
    await engine.open(reset=True)
    await store_of(engine).insert(create_many(1, N, SEED), [])
    yield engine
    await engine.close()


# --- settings -------------------------------------------------------------------------------


def test_settings_are_validated_and_normalised(tmp_path: Path) -> None:
    e = make(tmp_path, synchronous="full", journal_mode="wal", cache_size_mb=8)
    assert e.settings["synchronous"] == "FULL"
    assert e.settings["journal_mode"] == "WAL"
    assert e.settings["cache_size_mb"] == 8
    for bad in (
        {"synchronous": "SOMETIMES"},
        {"journal_mode": 1},
        {"temp_store": "DISK"},
        {"cache_size_mb": -1},
        {"mmap_size_mb": "1024"},
        {"cache_size_mb": True},
    ):
        with pytest.raises(ValueError):
            make(tmp_path, **bad)


def test_report_metadata(tmp_path: Path) -> None:
    e = make(tmp_path)
    facts = e.facts()
    assert facts.durability.parameters == {"journal_mode": "WAL", "synchronous": "NORMAL"}
    assert facts.durability.log == "write-ahead log"
    versions = SqliteEngine.library_versions()
    assert versions["SQLite"] == sqlite3.sqlite_version
    assert versions["aiosqlite"]
    assert {st.name: st.configured for st in facts.settings}["cache_size"] == "1024 MB"
    assert SqliteEngine.needs_stabilization is False


# --- schema and PRAGMAs -----------------------------------------------------------------------


async def test_schema(tmp_path: Path) -> None:
    """The profile store's table as the engine writes it from the workload's declaration
    (made before the workload's first batch, recorded in the file as the engine's own)."""
    engine = make(tmp_path)
    await engine.open(reset=True)
    try:
        assert await sql(engine, "PRAGMA table_info(profiles)") == []  # no workload table at open
        assert await store_of(engine).count() == 0
        assert await sql(engine, "SELECT name FROM asyncbench_tables") == [("profiles",)]
        cols = await sql(engine, "PRAGMA table_info(profiles)")
        assert [c[1] for c in cols] == [
            "user_id",
            "email",
            "country",
            "status",
            "created_at",
            "last_login",
            "reputation",
            "display_name",
            "bio",
        ]
        assert cols[0][2] == "INTEGER" and cols[0][5] == 1  # INTEGER PRIMARY KEY (the rowid)
        assert cols[1][3] == 1  # email NOT NULL
        indexes = {}
        for _seq, name, unique, *_ in await sql(engine, "PRAGMA index_list(profiles)"):
            info = await sql(engine, f"PRAGMA index_xinfo({name})")
            indexes[name] = (unique, [(r[2], r[3]) for r in info if r[5]])  # key columns: (name, desc)
        assert indexes["idx_profiles_country_status"] == (0, [("country", 0), ("status", 0), ("user_id", 0)])
        assert indexes["idx_profiles_created_at"] == (0, [("created_at", 0), ("user_id", 0)])
        assert indexes["idx_profiles_reputation"] == (0, [("reputation", 1), ("user_id", 0)])
        assert (1, [("email", 0)]) in indexes.values()  # UNIQUE email
        await store_of(engine).insert([create(1, SEED)], [])
        assert await sql(engine, "SELECT rowid, user_id FROM profiles") == [(1, 1)]  # user_id is the rowid
        dup = (2,) + create(1, SEED)[1:]
        with pytest.raises(sqlite3.IntegrityError):
            await store_of(engine).insert([dup], [])
    finally:
        await engine.close()


@pytest.mark.parametrize(
    ("settings", "expected"),
    [
        ({}, {"journal_mode": "wal", "synchronous": 1, "cache_size": -1024 * 1024, "temp_store": 2}),
        (
            {"cache_size_mb": 16, "mmap_size_mb": 0, "synchronous": "FULL", "temp_store": "FILE"},
            {
                "journal_mode": "wal",
                "synchronous": 2,
                "cache_size": -16 * 1024,
                "mmap_size": 0,
                "temp_store": 1,
            },
        ),
    ],
)
async def test_pragmas_applied(tmp_path: Path, settings: dict, expected: dict) -> None:
    engine = make(tmp_path, **settings)
    await engine.open(reset=True)
    try:
        for name, value in expected.items():
            assert (await sql(engine, f"PRAGMA {name}"))[0][0] == value, name
        mmap = (await sql(engine, "PRAGMA mmap_size"))[0][0]
        # SQLite caps mmap_size at its compile-time SQLITE_MAX_MMAP_SIZE.
        want = engine.settings["mmap_size_mb"] * 1024 * 1024
        assert mmap == want or (want > 0 and 0 < mmap < want)
        if not settings:
            assert mmap == 1024 * 1024 * 1024
    finally:
        await engine.close()


# --- writes: autocommit, one statement per operation ------------------------------------------


async def test_each_insert_is_its_own_transaction(tmp_path: Path) -> None:
    engine = make(tmp_path)
    await engine.open(reset=True)
    n = 200
    try:
        await sql(engine, "PRAGMA wal_autocheckpoint=0")  # keep every frame in the WAL
        await store_of(engine).count()  # the table made (and recorded) before the inserts
        before = await engine._db.run(lambda c: c.total_changes)
        _, log = await traced(engine, store_of(engine).insert, create_many(1, n, SEED))
        assert await engine._db.run(lambda c: c.in_transaction) is False
        assert await engine._db.run(lambda c: c.total_changes) - before == n
        assert len(log) == n and all(s.startswith("INSERT INTO profiles") for s in log)
        _busy, wal_frames, _done = (await sql(engine, "PRAGMA wal_checkpoint(PASSIVE)"))[0]
    finally:
        await engine.close()
    # Each commit appends at least one frame; the same rows in ONE transaction append far fewer.
    assert wal_frames >= n
    conn = sqlite3.connect(tmp_path / "one.db", isolation_level=None)
    configure(conn, pragma_statements(validate_settings(SqliteEngine.default_settings)))
    for statement in DIALECT.create(PROFILES_TABLE):
        conn.execute(statement)
    conn.execute("PRAGMA wal_autocheckpoint=0")
    conn.execute("BEGIN")
    conn.executemany(SQL.insert, create_many(1, n, SEED))
    conn.execute("COMMIT")
    one_txn_frames = conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()[1]
    conn.close()
    assert one_txn_frames < n // 4


async def test_update_is_select_then_one_update_per_id(loaded: SqliteEngine) -> None:
    uids = [5, 9, 5, N + 10, 12]  # a repeat and a missing id
    out, log = await traced(loaded, store_of(loaded).update, uids, transform)
    first = transform(create(5, SEED))
    assert out == [first, transform(create(9, SEED)), transform(first), transform(create(12, SEED))]
    kinds = [s.split()[0] for s in log]
    assert kinds == ["SELECT", "UPDATE", "SELECT", "UPDATE", "SELECT", "UPDATE", "SELECT", "SELECT", "UPDATE"]
    assert await loaded._db.run(lambda c: c.in_transaction) is False
    assert await store_of(loaded).read_by_id([5, 9], []) == [transform(first), transform(create(9, SEED))]


async def test_update_refuses_to_change_keys_that_never_change(loaded: SqliteEngine) -> None:
    with pytest.raises(ValueError):
        await store_of(loaded).update([3], lambda p: (p[0], "x@y.z", *p[2:]), [])


# --- reads ----------------------------------------------------------------------------------


async def test_point_reads_one_statement_each_in_request_order(loaded: SqliteEngine) -> None:
    ids = [7, 3, N + 1, 7, 1]
    rows, log = await traced(loaded, store_of(loaded).read_by_id, ids)
    assert rows == [create(7, SEED), create(3, SEED), create(7, SEED), create(1, SEED)]
    assert len(log) == len(ids)
    emails = [create(4, SEED)[1], "nobody@example.com", create(2, SEED)[1]]
    rows, log = await traced(loaded, store_of(loaded).lookup_by_email, emails)
    assert rows == [create(4, SEED), create(2, SEED)]
    assert len(log) == len(emails)


async def test_one_statement_per_query(loaded: SqliteEngine) -> None:
    qs = [("US", "active"), ("DE", "pending"), ("GR", "deleted")]
    lo = create(100, SEED)[4]
    ranges = [(lo, lo + 400_000), (lo, lo)]
    for fn, arg, n in (
        (store_of(loaded).scan_country_status, qs, 3),
        (store_of(loaded).query_country_status, qs, 3),
        (store_of(loaded).scan_created_at, ranges, 2),
        (store_of(loaded).query_created_at, ranges, 2),
        (store_of(loaded).scan_top_reputation, 4, 4),
        (store_of(loaded).query_top_reputation, 4, 4),
    ):
        _, log = await traced(loaded, fn, arg)
        assert len(log) == n, fn.__name__


async def test_results_equal_reference_engine(loaded: SqliteEngine, tmp_path: Path) -> None:
    """Same operations on the in-memory reference engine give identical results, before and
    after updates that move rows in the country/status and reputation indexes."""
    ref = MemoryEngine(EngineConfig("memory", tmp_path / "mem", {}, LIMIT, SEED, stores=PROFILE_STORES))
    await ref.open(reset=True)
    await store_of(ref).insert(create_many(1, N, SEED), [])
    qs = [(c, s) for c in COUNTRIES[:8] for s in STATUSES]
    ranges = [(create(u, SEED)[4], create(min(N, u + 60), SEED)[4]) for u in (1, 50, 700, N - 5)]

    async def compare() -> None:
        assert await store_of(loaded).scan_country_status(qs, []) == await store_of(ref).scan_country_status(qs, [])
        assert await store_of(loaded).query_country_status(qs, []) == await store_of(ref).query_country_status(qs, [])
        assert await store_of(loaded).scan_created_at(ranges, []) == await store_of(ref).scan_created_at(ranges, [])
        assert await store_of(loaded).query_created_at(ranges, []) == await store_of(ref).query_created_at(ranges, [])
        assert await store_of(loaded).scan_top_reputation(2, []) == await store_of(ref).scan_top_reputation(2, [])
        assert await store_of(loaded).query_top_reputation(2, []) == await store_of(ref).query_top_reputation(2, [])
        assert await store_of(loaded).count() == await store_of(ref).count()

    await compare()
    assert len(await store_of(loaded).scan_top_reputation(1, [])) == LIMIT
    # Update every id divisible by 4 (status moves) plus the current top ids (reputation moves).
    uids = list(range(4, N + 1, 4)) + await store_of(ref).scan_top_reputation(1, [])
    assert await store_of(loaded).update(uids, transform, []) == await store_of(ref).update(uids, transform, [])
    await compare()


async def test_index_plans(loaded: SqliteEngine) -> None:
    await sql(loaded, "ANALYZE")  # plans must hold with statistics too, not just without
    expect = {
        SQL.by_id: "USING INTEGER PRIMARY KEY",
        SQL.by_email: "USING INDEX idx_profiles_email",
        SQL.scan_country_status: "USING COVERING INDEX idx_profiles_country_status",
        SQL.query_country_status: "USING INDEX idx_profiles_country_status",
        SQL.scan_created_at: "USING COVERING INDEX idx_profiles_created_at",
        SQL.query_created_at: "USING INDEX idx_profiles_created_at",
        SQL.scan_top_reputation: "idx_profiles_reputation",
        SQL.query_top_reputation: "idx_profiles_reputation",
    }
    for statement, needle in expect.items():
        n_params = statement.count("?")
        plan = " | ".join(r[3] for r in await sql(loaded, "EXPLAIN QUERY PLAN " + statement, (1,) * n_params))
        assert needle in plan, (statement, plan)
        assert "TEMP B-TREE" not in plan, (statement, plan)
        assert plan.count("SCAN profiles") == 0 or "INDEX" in plan, (statement, plan)


# --- lifecycle ------------------------------------------------------------------------------


async def test_reopen_keeps_data(tmp_path: Path) -> None:
    engine = make(tmp_path)
    await engine.open(reset=True)
    await store_of(engine).insert(create_many(1, 300, SEED), [])
    updated = await store_of(engine).update([4, 8], transform, [])
    await engine.close()
    current = {p[0]: p for p in create_many(1, 300, SEED)} | {p[0]: p for p in updated}
    again = make(tmp_path)
    await again.open(reset=False)
    try:
        assert await store_of(again).count() == 300
        assert await store_of(again).read_by_id([1, 4, 8, 300], []) == [current[u] for u in (1, 4, 8, 300)]
        top = sorted(current, key=lambda u: (-current[u][6], u))[:LIMIT]
        assert await store_of(again).scan_top_reputation(1, []) == top
    finally:
        await again.close()


async def test_reset_removes_db_wal_and_shm(tmp_path: Path) -> None:
    engine = make(tmp_path)
    await engine.open(reset=True)  # marks the directory as the engine's store
    try:
        await store_of(engine).insert(create_many(1, 10, SEED), [])
    finally:
        await engine.close()  # records the files it leaves
    await engine.open(reset=True)  # removes exactly those
    try:
        assert await store_of(engine).count() == 0
    finally:
        await engine.close()


async def test_reset_refuses_files_replaced_after_the_close(tmp_path: Path) -> None:
    """A reset deletes only the files recorded at the last clean close (name, inode, size,
    mtime): files written behind the engine's back are not provably its own."""
    engine = make(tmp_path)
    await engine.open(reset=True)
    await engine.close()
    for f in engine.files():
        f.write_bytes(b"not a database" * 100)
    with pytest.raises(StoreDirError, match="did not write"):
        await engine.open(reset=True)
    assert all(f.read_bytes() == b"not a database" * 100 for f in engine.files())


async def test_settle_truncates_wal_and_storage_counts_only_db_files(loaded: SqliteEngine) -> None:
    db, wal, shm = loaded.files()
    assert wal.stat().st_size > 0
    (loaded.data_dir / "unrelated.txt").write_bytes(b"x" * 12345)
    await loaded.settle()
    assert wal.stat().st_size == 0
    assert loaded.storage_bytes() == db.stat().st_size + shm.stat().st_size
    assert await store_of(loaded).count() == N


async def test_closed_engine_refuses_operations(tmp_path: Path) -> None:
    engine = make(tmp_path)
    with pytest.raises(RuntimeError):
        await store_of(engine).read_by_id([1], [])
    await engine.open(reset=True)
    await engine.close()
    await engine.close()  # idempotent
    with pytest.raises(RuntimeError):
        await store_of(engine).count()


# --- threads and concurrency ------------------------------------------------------------------


async def test_batches_run_on_one_connection_thread(loaded: SqliteEngine) -> None:
    here = threading.get_ident()
    idents = {await loaded._db.run(lambda _c: threading.get_ident()) for _ in range(3)}
    assert len(idents) == 1 and here not in idents


async def test_concurrent_calls_on_one_engine(loaded: SqliteEngine) -> None:
    qs = [(c, s) for c in COUNTRIES[:4] for s in STATUSES]
    ids = list(range(1, N + 1, 7))
    expected = (await store_of(loaded).read_by_id(ids, []), await store_of(loaded).query_country_status(qs, []))
    results: list = [None] * 8

    async def worker(i: int) -> None:
        results[i] = (await store_of(loaded).read_by_id(ids, []), await store_of(loaded).query_country_status(qs, []))

    async with anyio.create_task_group() as tg:
        for i in range(len(results)):
            tg.start_soon(worker, i)
    assert all(r == expected for r in results)


async def test_one_connection_per_worker(tmp_path: Path) -> None:
    """What a multi-worker run does: separate connections writing disjoint ids at once."""
    engine = make(tmp_path)
    await engine.open(reset=True)
    await store_of(engine).count()  # the engine makes (and records) the table
    conns = [engine.connection() for _ in range(3)]
    for c in conns:
        await c.open()
    try:

        async def write(i: int) -> None:
            for start in range(1 + i * 300, 1 + (i + 1) * 300, 100):
                await SqlProfileStore(SqlPrimitives(conns[i], DIALECT, hop=conns[i].run_batch), LIMIT).insert(
                    create_many(start, 100, SEED), []
                )

        async with anyio.create_task_group() as tg:
            for i in range(len(conns)):
                tg.start_soon(write, i)
        assert await store_of(engine).count() == 900
        assert await store_of(engine).read_by_id([1, 450, 900], []) == [create(u, SEED) for u in (1, 450, 900)]
    finally:
        for c in conns:
            await c.close()
        await engine.close()


async def test_each_worker_gets_its_own_connection(tmp_path) -> None:
    from asyncbench.engine import EngineConfig, opened
    from asyncbench.engines.sqlite import SqliteEngine

    engine = SqliteEngine(EngineConfig("sqlite", tmp_path, {}, 50, 570123434, workers=3, stores=PROFILE_STORES))
    async with opened(engine):
        handles = [store_of(engine, w) for w in range(3)]
        conns = {id(h.session) for h in handles}
        assert len(conns) == 3
        from asyncbench.workloads.profile_store.generate import create_many

        await handles[1].insert(create_many(1, 10, 570123434), [])
        assert len(await handles[2].read_by_id(list(range(1, 11)), [])) == 10
    assert engine._conn is None and engine._worker_conns == []
