"""The server engines touch only tables they created, and one run at a time per schema
(issue 23, item 8; engines/server_lock.py).

Against the real servers (``eval "$(scripts/mysql-server start)"``,
``eval "$(scripts/postgres-server start)"``; skipped without them, except PostgreSQL
under CI): a user's ``profiles`` table with a row is refused by name and survives, in
the engine and through the CLI; a database/schema holding other tables, or any other
kind of object (a sequence, a routine, an event, a type...: issue 34), is not claimed and
the refusal names what it holds;
two engines, and two real CLI runs, against one schema: the second waits its bounded
time and is refused, the first one's table is intact and its run correct; the lock is
released at close; the clean-up drops only a table under our marker.

Before the fix, the engines dropped and recreated ``profiles`` whatever it held, and two
runs destroyed each other's tables ("table doesn't exist").
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT, mysql_configured, postgres_expected, status_line, store_of

from asyncbench.engine import EngineConfig
from asyncbench.engines.server_lock import NotOurs, ServerBusy
from asyncbench.workloads.profile_store.generate import create_many
from asyncbench.workloads.profile_store.kv_store import STORE_NAMES as PROFILE_STORES

SEED = 570123434
pytestmark = pytest.mark.anyio

ENGINES = [
    pytest.param(
        "mysql",
        marks=pytest.mark.skipif(not mysql_configured(), reason="no MySQL server (scripts/mysql-server)"),
    ),
    pytest.param(
        "postgres",
        marks=pytest.mark.skipif(
            not postgres_expected(), reason="no PostgreSQL server (scripts/postgres-server)"
        ),
    ),
]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # asyncmy is an asyncio driver


class Server:
    """Plain SQL on the test server, outside the engine: what a user would do."""

    def __init__(self, kind: str) -> None:
        self.kind = kind

    # the place a user's table lives in: a MySQL database, a PostgreSQL schema
    def settings(self, place: str, **extra: Any) -> dict[str, Any]:
        key = "database" if self.kind == "mysql" else "schema"
        return {key: place, **extra}

    async def sql(self, *statements: str) -> list[tuple]:
        rows: list[tuple] = []
        if self.kind == "mysql":
            import asyncmy

            from asyncbench.engines.mysql import resolve_settings

            s = resolve_settings({})
            conn = await asyncmy.connect(
                host=s["host"], port=s["port"], user=s["user"], password=s["password"], autocommit=True
            )
            try:
                async with conn.cursor() as cur:
                    for statement in statements:
                        await cur.execute(statement)
                        rows = list(await cur.fetchall())
            finally:
                await conn.ensure_closed()
            return rows
        import asyncpg

        from asyncbench.engines.postgres import resolve_settings as pg_settings

        s = pg_settings({})
        e = s["endpoints"][0]
        conn = await asyncpg.connect(
            host=e.host, port=e.port, user=s["user"], password=s["password"], database=s["database"]
        )
        try:
            for statement in statements:
                rows = [tuple(r) for r in await conn.fetch(statement)]
        finally:
            await conn.close()
        return rows

    async def fresh(self, place: str) -> None:
        """Drop the database/schema ``place`` (the test's own name)."""
        if self.kind == "mysql":
            await self.sql(f"DROP DATABASE IF EXISTS `{place}`")
        else:
            await self.sql(f'DROP SCHEMA IF EXISTS "{place}" CASCADE')

    async def users_table(self, place: str, table: str = "profiles") -> None:
        """A user's own table with one row, in a database/schema asyncbench never made."""
        if self.kind == "mysql":
            await self.sql(
                f"CREATE DATABASE `{place}`",
                f"CREATE TABLE `{place}`.{table} (id INT PRIMARY KEY, note VARCHAR(40))",
                f"INSERT INTO `{place}`.{table} VALUES (1, 'the user''s row')",
            )
        else:
            await self.sql(
                f'CREATE SCHEMA "{place}"',
                f'CREATE TABLE "{place}".{table} (id INT PRIMARY KEY, note TEXT)',
                f"INSERT INTO \"{place}\".{table} VALUES (1, 'the user''s row')",
            )

    async def rows(self, place: str, table: str = "profiles") -> list[tuple]:
        q = f"`{place}`" if self.kind == "mysql" else f'"{place}"'
        return await self.sql(f"SELECT * FROM {q}.{table} ORDER BY 1")

    async def count(self, place: str) -> int:
        q = f"`{place}`" if self.kind == "mysql" else f'"{place}"'
        return int((await self.sql(f"SELECT COUNT(*) FROM {q}.profiles"))[0][0])


def make(kind: str, tmp: Path, **settings: Any) -> Any:
    if kind == "mysql":
        from asyncbench.engines.mysql import MySqlEngine as cls
    else:
        from asyncbench.engines.postgres import PostgresEngine as cls
    return cls(EngineConfig(kind, tmp / kind, settings, 7, SEED, stores=PROFILE_STORES))


@pytest.fixture
async def place(request: pytest.FixtureRequest) -> AsyncIterator[str]:
    """A database/schema name of this test's own (``asyncbench_`` + a short test id),
    dropped before and after."""
    kind = request.node.callspec.params["kind"]
    name = f"asyncbench_t{abs(hash(request.node.name)) % 10**8}"
    server = Server(kind)
    await server.fresh(name)
    yield name
    await server.fresh(name)


@pytest.mark.parametrize("kind", ENGINES)
async def test_a_users_profiles_table_is_refused_and_survives(kind: str, place: str, tmp_path: Path) -> None:
    server = Server(kind)
    await server.users_table(place)
    engine = make(kind, tmp_path, **server.settings(place))
    with pytest.raises(NotOurs) as refused:
        await engine.open(reset=True)
    message = str(refused.value)
    product = "MySQL" if kind == "mysql" else "PostgreSQL"
    assert message.startswith(f"{product} server {engine.endpoints[0]}, ")
    assert place in message and "table profiles was not created by asyncbench" in message
    assert await server.rows(place) == [(1, "the user's row")]
    with pytest.raises(NotOurs):  # the clean-up refuses too
        await engine.delete_store()
    assert await server.rows(place) == [(1, "the user's row")]
    # the lock was given back: an engine on a schema of its own opens at once
    other = make(kind, tmp_path, **server.settings(place + "_own", lock_wait_seconds=0))
    await server.fresh(place + "_own")
    try:
        await other.open(reset=True)
        await other.close()
    finally:
        await server.fresh(place + "_own")


@pytest.mark.parametrize("kind", ENGINES)
async def test_a_place_with_other_tables_is_not_claimed(kind: str, place: str, tmp_path: Path) -> None:
    server = Server(kind)
    await server.users_table(place, table="invoices")
    engine = make(kind, tmp_path, **server.settings(place))
    with pytest.raises(NotOurs, match="table invoices was not created by asyncbench"):
        await engine.open(reset=True)
    assert await server.rows(place, "invoices") == [(1, "the user's row")]


#: Objects a user may keep in a database (MySQL) or schema (PostgreSQL) that are not
#: tables, each with how it is created in place ``{p}`` (quoted), how the refusal names it
#: and how to see it is still there afterwards. Issue 34, finding 2: before the fix a
#: place holding only one of these counted as empty, was claimed and used.
OBJECTS = {
    "mysql": {
        "sequence": ("CREATE SEQUENCE {p}.s1", "sequence s1", "SELECT NEXTVAL({p}.s1)"),
        "function": (
            "CREATE FUNCTION {p}.f1() RETURNS INT DETERMINISTIC RETURN 1",
            "function f1",
            "SELECT {p}.f1()",
        ),
        "procedure": ("CREATE PROCEDURE {p}.p1() SELECT 1", "procedure p1", "CALL {p}.p1()"),
        "event": (
            "CREATE EVENT {p}.e1 ON SCHEDULE AT CURRENT_TIMESTAMP + INTERVAL 1 DAY DO SELECT 1",
            "event e1",
            "SHOW CREATE EVENT {p}.e1",
        ),
        "view": ("CREATE VIEW {p}.v1 AS SELECT 1 AS x", "view v1", "SELECT x FROM {p}.v1"),
        "lock table": (
            "CREATE TABLE {p}.asyncbench_lock (id INT PRIMARY KEY, note VARCHAR(40))",
            "table asyncbench_lock",
            "SELECT COUNT(*) FROM {p}.asyncbench_lock",
        ),
    },
    "postgres": {
        "sequence": ("CREATE SEQUENCE {p}.s1", "sequence s1", "SELECT nextval('{p}.s1')"),
        "function": (
            "CREATE FUNCTION {p}.f1() RETURNS int LANGUAGE sql AS 'SELECT 1'",
            "function f1",
            "SELECT {p}.f1()",
        ),
        "procedure": ("CREATE PROCEDURE {p}.p1() LANGUAGE sql AS 'SELECT 1'", "procedure p1", "CALL {p}.p1()"),
        "enum type": ("CREATE TYPE {p}.mood AS ENUM ('ok')", "enum type mood", "SELECT 'ok'::{p}.mood"),
        "domain": ("CREATE DOMAIN {p}.pos AS int CHECK (VALUE > 0)", "domain pos", "SELECT 1::{p}.pos"),
        "composite type": ("CREATE TYPE {p}.pair AS (a int, b int)", "type pair", "SELECT ROW(1, 2)::{p}.pair"),
        "view": ("CREATE VIEW {p}.v1 AS SELECT 1 AS x", "view v1", "SELECT x FROM {p}.v1"),
        "operator": (
            "CREATE OPERATOR {p}.=== (LEFTARG = int, RIGHTARG = int, FUNCTION = int4eq)",
            "operator ===",
            "SELECT 1 OPERATOR({p}.===) 1",
        ),
        "collation": ('CREATE COLLATION {p}.c1 FROM "C"', "collation c1", "SELECT 'a' COLLATE {p}.c1"),
        "text search configuration": (
            "CREATE TEXT SEARCH CONFIGURATION {p}.ts1 (COPY = english)",
            "text search configuration ts1",
            "SELECT to_tsvector('{p}.ts1', 'cats')",
        ),
        "lock table": (
            "CREATE TABLE {p}.asyncbench_lock (id INT PRIMARY KEY, note TEXT)",
            "table asyncbench_lock",
            "SELECT COUNT(*) FROM {p}.asyncbench_lock",
        ),
    },
}
OBJECT_CASES = [
    pytest.param(kind, what, marks=engine.marks, id=f"{kind}-{what.replace(' ', '_')}")
    for engine in ENGINES
    for kind in engine.values
    for what in OBJECTS[str(kind)]
]


#: MySQL's "access denied" errors: a server started by an older scripts/mysql-server gave
#: the test user no right to make views, routines, events or triggers.
DENIED = {1044, 1142, 1227, 1370}


async def may_make(server: Server, statement: str) -> None:
    """Run ``statement``, or skip the test when the MySQL user may not (naming why)."""
    try:
        await server.sql(statement)
    except Exception as exc:
        if server.kind == "mysql" and exc.args and exc.args[0] in DENIED:
            pytest.skip(f"the MySQL test user may not run {statement!r} (scripts/mysql-server grants it): {exc}")
        raise


@pytest.mark.parametrize(("kind", "what"), OBJECT_CASES)
async def test_a_place_holding_any_object_is_not_claimed_and_the_refusal_names_it(
    kind: str, what: str, place: str, tmp_path: Path
) -> None:
    server = Server(kind)
    q = f"`{place}`" if kind == "mysql" else f'"{place}"'
    make_it, named, use_it = (text.replace("{p}", q) for text in OBJECTS[kind][what])
    await server.sql(f"CREATE {'DATABASE' if kind == 'mysql' else 'SCHEMA'} {q}")
    await may_make(server, make_it)
    engine = make(kind, tmp_path, **server.settings(place))
    with pytest.raises(NotOurs) as refused:
        await engine.open(reset=True)
    message = str(refused.value)
    assert f"{named} was not created by asyncbench" in message, message
    assert place in message
    await server.sql(use_it)  # still there, and still works
    marker = await server.sql(
        "SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = "
        f"'{place}' AND table_name IN ('asyncbench_owner', 'profiles')"
    )
    assert marker == [(0,)]  # nothing created next to it


@pytest.mark.parametrize("kind", ENGINES)
async def test_every_object_is_named_in_the_refusal(kind: str, place: str, tmp_path: Path) -> None:
    server = Server(kind)
    q = f"`{place}`" if kind == "mysql" else f'"{place}"'
    made = [(make_it.replace("{p}", q), named) for make_it, named, _ in OBJECTS[kind].values()]
    await server.sql(f"CREATE {'DATABASE' if kind == 'mysql' else 'SCHEMA'} {q}")
    for make_it, _ in made:
        await may_make(server, make_it)
    engine = make(kind, tmp_path, **server.settings(place))
    with pytest.raises(NotOurs) as refused:
        await engine.open(reset=True)
    message = str(refused.value)
    assert f"it holds {len(made)} objects: " in message, message
    for _, named in made:
        assert named in message, (named, message)


@pytest.mark.parametrize("kind", ENGINES[:1])
async def test_our_own_galera_lock_table_alone_still_counts_as_empty(kind: str, place: str, tmp_path: Path) -> None:
    """The lock row a Galera run inserts before it claims (engines/mysql_lock.py) leaves
    the database claimable; the same table holding another row name is a user's."""
    from asyncbench.engines.mysql_lock import LOCK_SCHEMA

    server = Server(kind)
    await server.sql(
        f"CREATE DATABASE `{place}`",
        f"USE `{place}`",
        LOCK_SCHEMA,
        "INSERT INTO asyncbench_lock (name, token, holder, heartbeat) VALUES ('run', 't', 'h', 0)",
    )
    engine = make(kind, tmp_path, **server.settings(place))
    await engine.open(reset=True)
    await engine.close()
    assert await engine.delete_store()
    await server.fresh(place)
    await server.sql(
        f"CREATE DATABASE `{place}`",
        f"USE `{place}`",
        LOCK_SCHEMA,
        "INSERT INTO asyncbench_lock (name, token, holder, heartbeat) VALUES ('payroll', 't', 'h', 0)",
    )
    with pytest.raises(NotOurs, match="table asyncbench_lock was not created by asyncbench"):
        await engine.open(reset=True)


@pytest.mark.parametrize("kind", ENGINES)
async def test_a_second_engine_waits_then_is_refused_and_the_first_table_is_intact(
    kind: str, place: str, tmp_path: Path
) -> None:
    server = Server(kind)
    first = make(kind, tmp_path, **server.settings(place))
    await first.open(reset=True)
    try:
        await store_of(first).insert(create_many(1, 50, SEED), [])
        second = make(kind, tmp_path, **server.settings(place, lock_wait_seconds=0.5))
        t0 = time.monotonic()
        with pytest.raises(ServerBusy, match="another asyncbench run holds the"):
            await second.open(reset=True)
        assert 0.4 < time.monotonic() - t0 < 10  # waited its bounded time, then refused
        assert await store_of(first).count() == 50  # nothing dropped
    finally:
        await first.close()
    # released at close: the second opens now, on the first one's (marked) table
    second = make(kind, tmp_path, **server.settings(place, lock_wait_seconds=0))
    await second.open(reset=False)
    try:
        assert await store_of(second).count() == 50
    finally:
        await second.close()
    assert await second.delete_store()  # ours (marked): dropped
    assert await server.sql(
        "SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = "
        f"'{place}' AND table_name = 'profiles'"
    ) == [(0,)]


@pytest.mark.parametrize("kind", ENGINES)
async def test_the_clean_up_refuses_a_table_whose_marker_is_gone(
    kind: str, place: str, tmp_path: Path
) -> None:
    server = Server(kind)
    engine = make(kind, tmp_path, **server.settings(place))
    await engine.open(reset=True)
    await store_of(engine).insert(create_many(1, 3, SEED), [])
    await engine.close()
    q = f"`{place}`" if kind == "mysql" else f'"{place}"'
    await server.sql(f"DROP TABLE {q}.asyncbench_owner")
    with pytest.raises(NotOurs, match="nothing in it is asyncbench's: kept"):
        await engine.delete_store()
    assert await server.count(place) == 3


@pytest.mark.parametrize("kind", ENGINES)
async def test_a_reset_drops_exactly_the_recorded_tables_of_any_workload(
    kind: str, place: str, tmp_path: Path
) -> None:
    """Engines name no workload table: what a reset drops is what the engine recorded
    as made for a workload (here YCSB's usertable, then the profile store's table), and
    a table someone else put in asyncbench's place survives every reset; a workload
    table of that someone's name is refused, never adopted."""
    from asyncbench.workloads.ycsb.record import encode
    from asyncbench.workloads.ycsb.stores import ycsb_store

    server = Server(kind)
    engine = make(kind, tmp_path, **server.settings(place))
    q = f"`{place}`" if kind == "mysql" else f'"{place}"'
    await engine.open(reset=True)
    try:
        await ycsb_store(engine.worker(0)).load([(b"user1", encode([b"a"]))], [])
        await server.sql(f"CREATE TABLE {q}.keepme (id INT PRIMARY KEY)", f"INSERT INTO {q}.keepme VALUES (1)")
    finally:
        await engine.close()
    listed = f"SELECT name FROM {q}.asyncbench_tables ORDER BY name"
    assert await server.sql(listed) == [("usertable",)]
    await engine.open(reset=True)  # the profile store's run: usertable (recorded) dropped
    try:
        await store_of(engine).insert(create_many(1, 2, SEED), [])
        assert await server.sql(listed) == [("profiles",)]
        assert await server.count(place) == 2
    finally:
        await engine.close()
    await server.sql(f"CREATE TABLE {q}.usertable (id INT PRIMARY KEY)")  # someone's, unrecorded
    await engine.open(reset=True)
    try:
        with pytest.raises(NotOurs, match="table usertable exists but asyncbench's record"):
            await ycsb_store(engine.worker(0)).load([(b"user1", encode([b"a"]))], [])
    finally:
        await engine.close()
    assert await server.sql(f"SELECT COUNT(*) FROM {q}.keepme") == [(1,)]
    assert await server.sql(f"SELECT COUNT(*) FROM {q}.usertable") == [(0,)]
    await engine.delete_store()
    assert await server.sql(f"SELECT COUNT(*) FROM {q}.keepme") == [(1,)]  # still not ours


def _plan(tmp: Path, kind: str, place: str, profiles: int, wait: float) -> Path:
    key = "database" if kind == "mysql" else "schema"
    plan = tmp / f"plan-{profiles}.toml"
    plan.write_text(
        f"""[run]
profiles = {profiles}
engines = ["{kind}"]
timeout_seconds = 300

[engines.{kind}]
{key} = "{place}"
lock_wait_seconds = {wait}

[[phase]]
kind = "insert"

[[phase]]
kind = "read_by_id"
stream = "reads"

[[phase]]
kind = "reopen"

[[phase]]
kind = "verify"
"""
    )
    return plan


def _cli(plan: Path, out: Path) -> list[str]:
    return [
        sys.executable, "-m", "asyncbench", str(plan), "--no-progress", "--quiet", "--keep-data", "--no-charts",
        "--output", str(out / "out"), "--data", str(out / "data"),
    ]  # fmt: skip


#: Run A's size: long enough that a second CLI run starts and is refused while A runs.
A_PROFILES = 80_000


@pytest.mark.slow
@pytest.mark.parametrize("kind", ENGINES)
async def test_two_concurrent_cli_runs_one_clear_refusal_no_destroyed_table(
    kind: str, place: str, tmp_path: Path
) -> None:
    """Run A (A_PROFILES, tens of seconds) takes the lock; run B starts while A runs,
    waits 1 s and is refused (a Failed row naming the lock); A finishes correct, its table
    whole. A once had 20_000 profiles: on a loaded CI machine it finished before B (a
    whole CLI start-up, then its 1 s wait) was refused, and the test's guard failed."""
    server = Server(kind)
    env = {k: v for k, v in os.environ.items() if k != "ASYNCBENCH_ENGINES"}
    a_dir, b_dir = tmp_path / "a", tmp_path / "b"
    a = subprocess.Popen(
        _cli(_plan(tmp_path, kind, place, A_PROFILES, 1), a_dir), cwd=ROOT, env=env,
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:  # A has opened: its table exists under our marker
            got = await server.sql(
                "SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = "
                f"'{place}' AND table_name = 'profiles'"
            )
            if got == [(1,)] or a.poll() is not None:
                break
            time.sleep(0.05)
        assert a.poll() is None, "run A ended before run B could start"
        b = subprocess.run(
            _cli(_plan(tmp_path, kind, place, 1_000, 1), b_dir), cwd=ROOT, env=env,
            capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        assert a.poll() is None, "run A ended before run B was refused: the test proves nothing"
        a_out, _ = a.communicate(timeout=300)
    finally:
        if a.poll() is None:
            a.kill()
            a.wait()
    assert b.returncode == 1, b.stdout + b.stderr
    import orjson

    (b_json,) = (b_dir / "out").glob("profiles-*/asyncbench-*.json")
    (b_engine,) = orjson.loads(b_json.read_bytes())["engines"]
    line = status_line(b_engine)
    assert "ServerBusy" in line and "another asyncbench run holds the" in line and place in line, line
    assert a.returncode == 0, a_out
    (a_json,) = (a_dir / "out").glob("profiles-*/asyncbench-*.json")
    (a_engine,) = orjson.loads(a_json.read_bytes())["engines"]
    assert status_line(a_engine) == "ok", status_line(a_engine)
    assert await server.count(place) == A_PROFILES  # --keep-data: A's whole table is still there
