"""A database or schema name from a plan, a flag or the environment never runs as SQL
(issue 34, finding 1; engines/sql_names.py).

Before the fix ``[engines.mysql] database = "asyncbench_nx`;DROP DATABASE
asyncbench_victim;#"`` dropped the user's database ``asyncbench_victim`` on MariaDB (the
engine put the name between backticks without doubling the ones inside it), and a
PostgreSQL schema name carrying the same kind of payload was accepted and used. Now:

- a name that is not plain (letters, digits, ``_``) is refused when the plan is read:
  exit 2, the plan file and the key named (or the environment variable), nothing created;
- the same check runs for the environment variables the engines read where the plan
  leaves a key unset (``MYSQL_DATABASE``, ``PGDATABASE``), naming the variable;
- every use quotes the name with the server's own identifier quoting, so a value that
  bypassed the check (the engine made directly, below) is still a single identifier: the
  victim survives even then.

Against the real servers (``eval "$(scripts/mysql-server start)"``,
``eval "$(scripts/postgres-server start)"``); the parsing and quoting tests need none. A
Galera cluster takes its database name through the very same settings check (the engine
is the mysql engine with several ``hosts``): shown here with a plan of several hosts and
``MYSQL_HOSTS``, refused before any connection is made.
"""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT, mysql_configured, postgres_expected

from asyncbench.config import ConfigError, load
from asyncbench.engine import EngineConfig
from asyncbench.engines.sql_names import check_name, mysql_ident, pg_ident
from asyncbench.workloads.profile_store.kv_store import STORE_NAMES as PROFILE_STORES

needs_mysql = pytest.mark.skipif(not mysql_configured(), reason="no MySQL server (scripts/mysql-server)")
needs_postgres = pytest.mark.skipif(
    not postgres_expected(), reason="no PostgreSQL server (scripts/postgres-server)"
)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # asyncmy is an asyncio driver


def mysql_payload(victim: str) -> str:
    """The issue's exact payload, aimed at ``victim``."""
    return f"asyncbench_nx`;DROP DATABASE {victim};#"


def pg_schema_payload(victim: str) -> str:
    return f'x"; DROP SCHEMA {victim} CASCADE; --'


def pg_database_payload(victim: str) -> str:
    return f"x\" ENCODING 'UTF8'; DROP SCHEMA {victim} CASCADE; --"


# --- the helpers ------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["asyncbench", "asyncbench_test_1", "_x", "A" * 63, "Mixed_Case9"])
def test_plain_names_pass(name: str) -> None:
    assert check_name(name, "database") == name


@pytest.mark.parametrize(
    "name",
    [
        "",
        "A" * 64,
        "1abc",
        "a-b",
        "a b",
        "a.b",
        "a`b",
        'a"b',
        "a;b",
        "a\x00b",
        "é",
        "asyncbench_nx`;DROP DATABASE asyncbench_victim;#",
        'x"; DROP SCHEMA victim CASCADE; --',
        7,
        None,
    ],
)
def test_other_names_are_refused_naming_the_setting(name: Any) -> None:
    with pytest.raises(ValueError) as refused:
        check_name(name, "MYSQL_DATABASE")
    assert str(refused.value).startswith("MYSQL_DATABASE must be a plain name (1 to 63 ASCII letters")
    assert repr(name) in str(refused.value)


def test_mysql_quoting_doubles_backticks() -> None:
    assert mysql_ident("profiles") == "`profiles`"
    assert mysql_ident("a`b") == "`a``b`"
    assert mysql_ident(mysql_payload("v")) == "`asyncbench_nx``;DROP DATABASE v;#`"
    assert mysql_ident('a"b') == '`a"b`'
    with pytest.raises(ValueError, match="NUL"):
        mysql_ident("a\x00b")


def test_postgres_quoting_doubles_double_quotes() -> None:
    assert pg_ident("profiles") == '"profiles"'
    assert pg_ident('a"b') == '"a""b"'
    assert pg_ident(pg_schema_payload("v")) == '"x""; DROP SCHEMA v CASCADE; --"'
    assert pg_ident("a`b") == '"a`b"'
    with pytest.raises(ValueError, match="NUL"):
        pg_ident("a\x00b")


# --- plan validation, no server needed -------------------------------------------------------


def _plan(tmp: Path, engine: str, settings: str) -> Path:
    plan = tmp / "plan.toml"
    plan.write_text(
        f'[run]\nprofiles = 100\nengines = ["{engine}"]\n\n[engines.{engine}]\n{settings}\n\n'
        '[[phase]]\nkind = "insert"\n\n[[phase]]\nkind = "verify"\n'
    )
    return plan


def _toml(value: str) -> str:
    return (
        "'" + value + "'" if "'" not in value else '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    )


@pytest.mark.parametrize(
    ("engine", "key", "value"),
    [
        ("mysql", "database", mysql_payload("asyncbench_victim")),
        ("postgres", "schema", pg_schema_payload("victim")),
        ("postgres", "database", pg_database_payload("victim")),
        ("mysql", "database", "has space"),
        ("postgres", "schema", "x" * 64),
    ],
)
def test_the_plan_is_refused_naming_file_and_key(tmp_path: Path, engine: str, key: str, value: str) -> None:
    pytest.importorskip("asyncmy" if engine == "mysql" else "asyncpg")
    plan = _plan(tmp_path, engine, f"{key} = {_toml(value)}")
    with pytest.raises(ConfigError) as refused:
        load(plan)
    assert refused.value.where == str(plan)
    assert refused.value.key == f"engines.{engine}.{key}"
    assert "must be a plain name" in refused.value.reason


def test_galera_hosts_share_the_check(tmp_path: Path) -> None:
    """Several endpoints (a Galera cluster) go through the same settings check."""
    pytest.importorskip("asyncmy")
    plan = _plan(
        tmp_path,
        "mysql",
        f'hosts = ["127.0.0.1:1", "127.0.0.1:2", "127.0.0.1:3"]\ndatabase = {_toml(mysql_payload("v"))}',
    )
    with pytest.raises(ConfigError) as refused:
        load(plan)
    assert refused.value.key == "engines.mysql.database"


@pytest.mark.parametrize(
    ("engine", "variable", "value"),
    [
        ("mysql", "MYSQL_DATABASE", mysql_payload("asyncbench_victim")),
        ("postgres", "PGDATABASE", pg_database_payload("victim")),
    ],
)
def test_engines_made_directly_refuse_a_bad_name_too(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, engine: str, variable: str, value: str
) -> None:
    """The engine checks what it resolved (plan value, else the variable), naming its source."""
    pytest.importorskip("asyncmy" if engine == "mysql" else "asyncpg")
    from asyncbench.engines import engine_class

    cls = engine_class(engine)
    monkeypatch.setenv(variable, value)
    with pytest.raises(ValueError, match=f"^{variable} must be a plain name"):
        cls(EngineConfig(engine, tmp_path / "d", {}, 1, 1, stores=PROFILE_STORES))
    with pytest.raises(ValueError, match="^database must be a plain name"):
        cls(EngineConfig(engine, tmp_path / "d", {"database": value}, 1, 1, stores=PROFILE_STORES))
    monkeypatch.setenv(variable, "asyncbench_fine")  # a plan value wins over the variable
    cls(EngineConfig(engine, tmp_path / "d", {"database": "asyncbench_fine"}, 1, 1, stores=PROFILE_STORES))


# --- the CLI against the real servers ---------------------------------------------------------


def _cli(plan: Path, tmp: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    out, data = tmp / "out", tmp / "data"
    cmd = [
        sys.executable,
        "-m",
        "asyncbench",
        str(plan),
        "--no-progress",
        "--quiet",
        "--output",
        str(out),
        "--data",
        str(data),
    ]
    done = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert not out.exists() and not data.exists(), done.stderr  # nothing created
    return done


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "ASYNCBENCH_ENGINES"}
    return {**env, **extra}


async def _mysql(*statements: str) -> list[tuple]:
    import asyncmy

    from asyncbench.engines.mysql import resolve_settings

    s = resolve_settings({})
    conn = await asyncmy.connect(
        host=s["host"], port=s["port"], user=s["user"], password=s["password"], autocommit=True
    )
    rows: list[tuple] = []
    try:
        async with conn.cursor() as cur:
            for statement in statements:
                await cur.execute(statement)
                rows = list(await cur.fetchall())
    finally:
        await conn.ensure_closed()
    return rows


async def _pg(*statements: str, database: str | None = None) -> list[tuple]:
    import asyncpg

    from asyncbench.engines.postgres import resolve_settings

    s = resolve_settings({})
    e = s["endpoints"][0]
    conn = await asyncpg.connect(
        host=e.host, port=e.port, user=s["user"], password=s["password"], database=database or s["database"]
    )
    rows: list[tuple] = []
    try:
        for statement in statements:
            rows = [tuple(r) for r in await conn.fetch(statement)]
    finally:
        await conn.close()
    return rows


@pytest.fixture
def victim_name() -> str:
    return f"asyncbench_victim_{secrets.token_hex(4)}"


@pytest.fixture
def mysql_victim(victim_name: str) -> Iterator[str]:
    """A user's database with a table and a row, dropped after the test (with whatever the
    test made next to it)."""
    import anyio

    anyio.run(_mysql, f"CREATE DATABASE {victim_name}", f"CREATE TABLE {victim_name}.t (id INT PRIMARY KEY)",
              f"INSERT INTO {victim_name}.t VALUES (1)")  # fmt: skip
    yield victim_name
    anyio.run(_mysql, f"DROP DATABASE IF EXISTS {victim_name}")


async def _mysql_exists(name: str) -> bool:
    rows = await _mysql(f"SELECT COUNT(*) FROM information_schema.schemata WHERE schema_name = '{name}'")
    return rows == [(1,)]


@pytest.fixture
def pg_victim(victim_name: str) -> Iterator[str]:
    import anyio

    anyio.run(_pg, f"CREATE SCHEMA {victim_name}", f"CREATE TABLE {victim_name}.t (id INT PRIMARY KEY)",
              f"INSERT INTO {victim_name}.t VALUES (1)")  # fmt: skip
    yield victim_name
    anyio.run(_pg, f"DROP SCHEMA IF EXISTS {victim_name} CASCADE")


async def _pg_exists(name: str) -> bool:
    return await _pg(f"SELECT COUNT(*) FROM {name}.t") == [(1,)]


@needs_mysql
def test_mysql_payload_in_the_plan_is_refused_and_the_victim_survives(
    tmp_path: Path, mysql_victim: str
) -> None:
    import anyio

    plan = _plan(tmp_path, "mysql", f"database = {_toml(mysql_payload(mysql_victim))}")
    done = _cli(plan, tmp_path, _env())
    assert done.returncode == 2, done.stdout + done.stderr
    assert f"{plan}: engines.mysql.database: database must be a plain name" in done.stderr, done.stderr
    assert anyio.run(_mysql_exists, mysql_victim)
    assert not anyio.run(_mysql_exists, "asyncbench_nx")


@needs_mysql
def test_mysql_payload_in_the_environment_is_refused_naming_the_variable(
    tmp_path: Path, mysql_victim: str
) -> None:
    import anyio

    plan = _plan(tmp_path, "mysql", "lock_wait_seconds = 1")
    done = _cli(plan, tmp_path, _env(MYSQL_DATABASE=mysql_payload(mysql_victim)))
    assert done.returncode == 2, done.stdout + done.stderr
    assert "environment: MYSQL_DATABASE: must be a plain name" in done.stderr, done.stderr
    assert anyio.run(_mysql_exists, mysql_victim)


@needs_mysql
def test_galera_style_endpoints_refuse_the_payload_too(tmp_path: Path, mysql_victim: str) -> None:
    """``MYSQL_HOSTS`` (what scripts/galera-cluster exports) with the payload: the same check."""
    import anyio

    plan = tmp_path / "plan.toml"
    plan.write_text('[run]\nprofiles = 100\nengines = ["mysql"]\n[[phase]]\nkind = "insert"\n')
    host = f"{os.environ['MYSQL_HOST']}:{os.environ['MYSQL_PORT']}"
    done = _cli(
        plan, tmp_path, _env(MYSQL_HOSTS=f"{host},{host}", MYSQL_DATABASE=mysql_payload(mysql_victim))
    )
    assert done.returncode == 2, done.stdout + done.stderr
    assert "environment: MYSQL_DATABASE: must be a plain name" in done.stderr, done.stderr
    assert anyio.run(_mysql_exists, mysql_victim)


@needs_mysql
@pytest.mark.anyio
async def test_mysql_quoting_holds_when_the_check_is_bypassed(tmp_path: Path, mysql_victim: str) -> None:
    """The engine's CREATE DATABASE quotes the name: a payload that got past the check
    names one (odd) database, and the victim is intact."""
    from asyncbench.engines.mysql import MySqlEngine

    engine = MySqlEngine(EngineConfig("mysql", tmp_path / "d", {"database": "asyncbench_x"}, 1, 1, stores=PROFILE_STORES))
    odd = "asyncbench_" + mysql_payload(mysql_victim)[len("asyncbench_") :]
    engine.conn_settings["database"] = odd  # past the check
    try:
        conn = await engine.connect()
        conn.close()
        assert await _mysql_exists(mysql_victim)
        assert await _mysql_exists(odd)  # the whole payload is the new database's name
    finally:
        await _mysql(f"DROP DATABASE IF EXISTS {mysql_ident(odd)}")


@needs_postgres
@pytest.mark.parametrize("key", ["schema", "database"])
def test_postgres_payload_in_the_plan_is_refused_and_the_victim_survives(
    tmp_path: Path, pg_victim: str, key: str
) -> None:
    import anyio

    value = (pg_schema_payload if key == "schema" else pg_database_payload)(pg_victim)
    plan = _plan(tmp_path, "postgres", f"{key} = {_toml(value)}")
    done = _cli(plan, tmp_path, _env())
    assert done.returncode == 2, done.stdout + done.stderr
    assert f"{plan}: engines.postgres.{key}: {key} must be a plain name" in done.stderr, done.stderr
    assert anyio.run(_pg_exists, pg_victim)


@needs_postgres
def test_postgres_payload_in_the_environment_is_refused_naming_the_variable(
    tmp_path: Path, pg_victim: str
) -> None:
    import anyio

    plan = _plan(tmp_path, "postgres", "lock_wait_seconds = 1")
    done = _cli(plan, tmp_path, _env(PGDATABASE=pg_database_payload(pg_victim)))
    assert done.returncode == 2, done.stdout + done.stderr
    assert "environment: PGDATABASE: must be a plain name" in done.stderr, done.stderr
    assert anyio.run(_pg_exists, pg_victim)


@needs_postgres
@pytest.mark.anyio
async def test_postgres_quoting_holds_when_the_check_is_bypassed(tmp_path: Path, pg_victim: str) -> None:
    """A schema payload past the check is one schema's name: claimed, used, the victim intact."""
    from asyncbench.engines.postgres import PostgresEngine

    engine = PostgresEngine(EngineConfig("postgres", tmp_path / "d", {"schema": "asyncbench_x"}, 1, 1, stores=PROFILE_STORES))
    odd = pg_schema_payload(pg_victim)
    engine.conn_settings["schema"] = odd  # past the check
    try:
        await engine.open(reset=True)
        await engine.close()
        assert await engine.delete_store()
        assert await _pg_exists(pg_victim)
        assert await _pg(
            f"SELECT COUNT(*) FROM pg_namespace WHERE nspname = '{odd.replace(chr(39), chr(39) * 2)}'"
        ) == [(1,)]
    finally:
        await _pg(f"DROP SCHEMA IF EXISTS {pg_ident(odd)} CASCADE")
