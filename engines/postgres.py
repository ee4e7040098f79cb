"""PostgreSQL engine: a client/server database over TCP, driven through ``asyncpg``.

The tables a workload declares (``asyncbench.store.Table``; the profile store's: one table,
``BIGINT`` primary key, email UNIQUE, three secondary indexes), written in PostgreSQL's
types and made in the engine's own schema, where they are recorded
(``engines/sql_tables.py``), and the workload's SQL statements
(e.g. ``workloads/profile_store/sql_store.py``): the same
WHERE, ORDER BY and LIMIT, one statement per operation (an update: its SELECT plus its
UPDATE), every write its own autocommit transaction, one connection per worker. Every
text column is ``COLLATE "C"``: strings compare byte by byte, which in UTF-8 is code point
order, like the byte-ordered engines and MySQL's binary collation, whatever locale the
database was created with.

Why asyncpg: measured (``docs/results/drivers.md``) against psycopg 3's async
connection, both with server-side prepared statements. On uvloop, per point SELECT,
asyncpg took 78.8 µs wall / 30.9 µs client CPU and psycopg 98.3 / 59.1 µs (about half the
client CPU); per 50-row index query 140.4 / 67.8 µs against 164.3 / 92.4 µs (25-40% less
CPU). Its binary protocol decodes ints without text parsing, and the client's CPU per
query is part of every number a one-round-trip-per-operation engine reports. Each
connection prepares the dozen statements once (``Connection.prepare``) and runs them with
``PreparedStatement.fetchrow``/``fetch``: bind and execute only, no parse or plan lookup.

Plans: every connection runs with ``enable_sort = off``. Right after the bulk load the
table has no statistics until autovacuum's ANALYZE gets to it, and meanwhile the planner
estimates a created-at range at a few dozen rows and answers it with a bitmap scan of all
~5_000 matching rows plus a top-N sort (about 1.3 ms instead of 0.03 ms per query), so
the plan, and the number, would depend on when autovacuum ran. Without sorts every ORDER
BY reads its index in order, which is the plan PostgreSQL picks anyway once statistics
exist: the counterpart of the MySQL engine's FORCE INDEX. It changes no result: WHERE,
ORDER BY and LIMIT are the shared SQL store's.

Durability: ``synchronous_commit`` (``[engines.postgres] synchronous_commit``, default
``off``) is set per connection. ``off`` is the counterpart of the reference MySQL's
``innodb_flush_log_at_trx_commit=2``: every commit is written to the WAL, the WAL writer
flushes it within ``wal_writer_delay`` (200 ms by default), a server crash can lose up to
three times that of acknowledged commits and never corrupts the database. The effective
values are read back (``SHOW``) from every endpoint into the report.

Settle is ``CHECKPOINT`` (timed): it needs a superuser or, from PostgreSQL 15, the
``pg_checkpoint`` role (``scripts/postgres-server`` grants it); ``open`` checks and fails
with that message instead of failing at the end of a run. Storage is
``pg_total_relation_size`` of the table (heap, TOAST and every index), the server's
figure: queried in ``measure_storage``, the runner's untimed async step after settle (as
the MySQL engine does), on the event loop like every other query, and cached; the
synchronous ``storage_bytes`` returns that cache (0 before it). Peak memory is this
client's only.

Connection: ``[engines.postgres]`` ``host``/``port``/``database``/``user``/``password``, or
``hosts = ["h1:5432", "h2:5432"]`` for several endpoints; where unset, libpq's variables
``PGHOST``/``PGPORT``/``PGDATABASE``/``PGUSER``/``PGPASSWORD``. As in libpq, ``PGHOST`` (or
``host``) may be a comma list, with ``PGPORT`` either one port for all hosts or a list of
the same length; unlike libpq, which tries the hosts in order (failover), the engine
connects worker ``w`` to endpoint ``w % K`` (see ``engines/client_server.py``).
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import os
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import asyncpg
import psutil

from asyncbench.engine import EngineConfig, EngineCounters, EngineUnavailable
from asyncbench.engines.client_server import (
    Endpoint,
    SessionPoolEngine,
    assign,
    hybridmethod,
    local_process,
    parse_endpoint,
    parse_endpoints,
    worker_map,
)
from asyncbench.engines.postgres_lock import AdvisoryLock, claim, owned
from asyncbench.engines.server_lock import Lease, NotOurs, held, lock_wait_seconds
from asyncbench.engines.sql_names import check_name, pg_ident
from asyncbench.engines.sql_retry import Retrier
from asyncbench.engines.sql_tables import Run, TableRecord
from asyncbench.facts import Durability, EngineFacts, MemoryScope, Setting, StorageMethod
from asyncbench.store import Dialect, SqlPrimitives

#: Text collates as bytes ("C"), integers 64-bit, bytes BYTEA: the DDL of a workload's
#: table (asyncbench.store.Table), made in the schema and recorded there (engines/sql_tables.py).
DIALECT = Dialect(
    placeholder=lambda i: f"${i}",
    integer="BIGINT",
    text=lambda n: 'TEXT COLLATE "C"',
    blob="BYTEA",
)


def _run(conn: asyncpg.Connection) -> Run:
    """A connection's statement runner (unprepared: DDL and the record's few statements)."""

    async def run(statement: str, args: Sequence[Any]) -> Sequence[Sequence[Any]]:
        rows: Sequence[Sequence[Any]] = await conn.fetch(statement, *args)  # asyncpg is untyped
        return rows

    return run


async def _present(run: Run) -> set[str]:
    """The tables in the connection's schema (its search_path: the engine's own)."""
    return {str(r[0]) for r in await run("SELECT tablename FROM pg_tables WHERE schemaname = current_schema()", ())}

DEFAULTS: dict[str, Any] = {
    "host": "127.0.0.1",
    "port": 5432,
    "database": "asyncbench",
    "user": "postgres",
    "password": "",
}
ENV_VARS = {
    "host": "PGHOST",
    "port": "PGPORT",
    "database": "PGDATABASE",
    "user": "PGUSER",
    "password": "PGPASSWORD",
}
#: The schema the table lives in (engines/postgres_lock.py): asyncbench's own.
DEFAULT_SCHEMA = "asyncbench"
#: Every ORDER BY reads its index in order, whatever the statistics (module docstring).
SESSION_PLANNER = {"enable_sort": "off"}
SYNCHRONOUS_COMMIT = ("off", "local", "remote_write", "remote_apply", "on")
CONNECT_TIMEOUT_S = 5
#: Server settings read back from every endpoint for the report (``SHOW name``).
READ_BACK = ("synchronous_commit", "fsync", "wal_writer_delay", "full_page_writes", "enable_sort")


def retryable(exc: BaseException) -> bool:
    """A write that lost a conflict and may simply run again: serialization failure or
    deadlock victim (neither happens on one server with disjoint rows; a multi-primary
    target may raise them)."""
    return isinstance(exc, (asyncpg.SerializationError, asyncpg.DeadlockDetectedError))


def validate_settings(settings: Mapping[str, Any]) -> None:
    """ValueError naming the setting: synchronous_commit's value, the endpoints' shape,
    schema and database plain names (engines/sql_names.py; an empty database: PGDATABASE,
    checked by :func:`check_environment`)."""
    sc = settings.get("synchronous_commit", "off")
    if not isinstance(sc, str) or sc.lower() not in SYNCHRONOUS_COMMIT:
        raise ValueError(f"synchronous_commit must be one of {', '.join(SYNCHRONOUS_COMMIT)}, got {sc!r}")
    hosts = settings.get("hosts") or []
    if hosts:
        try:
            parse_endpoints(hosts, DEFAULTS["port"])
        except ValueError as exc:
            raise ValueError(f"hosts: {exc}") from None
    port = settings.get("port", 0)
    if isinstance(port, int) and not 0 <= port <= 65535:  # 0: PGPORT or 5432
        raise ValueError(f"port must be between 1 and 65535, got {port}")
    check_name(settings.get("schema", DEFAULT_SCHEMA), "schema")
    if settings.get("database"):  # empty: PGDATABASE or the default (check_environment)
        check_name(settings["database"], "database")
    lock_wait_seconds(settings)


def check_environment(settings: Mapping[str, Any], environ: Mapping[str, str]) -> None:
    """``PGDATABASE`` when the plan sets no database: a plain name (engines/sql_names.py)."""
    variable = ENV_VARS["database"]
    if not settings.get("database") and environ.get(variable):
        check_name(environ[variable], variable)


def _libpq_endpoints(hosts: str, ports: str) -> list[Endpoint]:
    """libpq's multi-host rule: N hosts with one port, or N hosts with N ports."""
    host_list = [h.strip() for h in hosts.split(",")]
    port_list = [p.strip() for p in ports.split(",")]
    if len(port_list) == 1:
        port_list *= len(host_list)
    if len(port_list) != len(host_list):
        raise ValueError(f"{len(host_list)} hosts ({hosts!r}) but {len(port_list)} ports ({ports!r})")
    out = []
    for h, p in zip(host_list, port_list, strict=True):
        if not h:
            raise ValueError(f"empty host in {hosts!r}")
        out.append(parse_endpoint(f"{h}:{p or DEFAULTS['port']}" if ":" not in h else h, DEFAULTS["port"]))
    return out


def resolve_settings(settings: Mapping[str, Any], environ: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Endpoints, database, user, password, synchronous_commit and schema, from the TOML,
    else libpq's variables, else the defaults; the database and the schema plain names
    (ValueError naming the setting or the variable).

    ``hosts`` (a TOML list) wins; else ``host``/``port`` (TOML, else ``PGHOST``/``PGPORT``)
    each may be a comma list (libpq's rule). Other keys: TOML value if set, else the
    variable, else the default.
    """
    env = os.environ if environ is None else environ
    out: dict[str, Any] = {}
    for key in ("host", "port", "database", "user", "password"):
        value = settings.get(key)
        if value in (None, "", 0):
            value = env.get(ENV_VARS[key]) or DEFAULTS[key]
        out[key] = str(value)
    # database and schema: plain names (engines/sql_names.py), named by their source
    if settings.get("database"):
        check_name(settings["database"], "database")
    check_environment(settings, env)
    hosts = settings.get("hosts") or []
    if hosts:
        endpoints = parse_endpoints(hosts, int(DEFAULTS["port"]))
    else:
        try:
            endpoints = _libpq_endpoints(out["host"], out["port"])
        except ValueError as exc:
            raise ValueError(f"PostgreSQL host/port: {exc}") from None
    sc = str(settings.get("synchronous_commit") or "off").lower()
    return {
        "endpoints": endpoints,
        "database": out["database"],
        "user": out["user"],
        "password": out["password"],
        "synchronous_commit": sc,
        "schema": check_name(settings.get("schema") or DEFAULT_SCHEMA, "schema"),
    }


#: The process titles of PostgreSQL's own processes (``postgres: [cluster: ]<title>``), as
#: opposed to a client backend's (``postgres: user database host(port) state``).
BACKGROUND_TITLES = (
    "checkpointer",
    "background writer",
    "walwriter",
    "autovacuum launcher",
    "autovacuum worker",
    "logical replication launcher",
    "logical replication worker",
    "logical replication apply worker",
    "archiver",
    "stats collector",
    "walsender",
    "walreceiver",
    "startup",
    "io worker",
)


def is_background_title(title: str) -> bool:
    """A PostgreSQL process title that names one of the server's own processes."""
    if not title.startswith("postgres: "):
        return False
    rest = title.removeprefix("postgres: ")
    parts = [rest, rest.split(": ", 1)[-1]]  # with cluster_name set: "postgres: main: checkpointer"
    return any(p.startswith(BACKGROUND_TITLES) for p in parts)


class Session:
    """One asyncpg connection with a workload's statements prepared on it, as a
    :class:`~asyncbench.store.SqlSession` (a worker owns one: a connection runs one query
    at a time); its ``primitives`` are what the engine's ``worker(i)`` returns."""

    def __init__(self, conn: asyncpg.Connection, endpoint: Endpoint) -> None:
        self.conn = conn
        self.endpoint = endpoint
        self._fetchrow: dict[str, Any] = {}
        self._fetch: dict[str, Any] = {}
        self._fetchval: dict[str, Any] = {}
        self.retrier = Retrier(retryable)
        self.primitives = SqlPrimitives(self, DIALECT, retry=self.retrier, prepare=self.prepare)

    async def prepare(self, texts: Sequence[str]) -> None:
        """Prepare each statement once (its table must exist): later executions only bind
        (a workload's store calls it before its first batch)."""
        for text in texts:
            if text not in self._fetchrow:
                await self._prepare(text)

    async def close(self) -> None:
        conn, self.conn = self.conn, None
        if conn is None:
            return
        try:
            await conn.close(timeout=CONNECT_TIMEOUT_S)  # polite Terminate
        except Exception:
            conn.terminate()  # the transport is gone or broken: just drop it

    async def _prepare(self, text: str) -> None:
        """A statement not prepared yet (YCSB's, built for its field count): once."""
        stmt = await self.conn.prepare(text)
        self._fetchrow[text], self._fetch[text], self._fetchval[text] = stmt.fetchrow, stmt.fetch, stmt.fetchval

    # SqlSession, on the prepared statements
    async def fetch_one(self, statement: str, args: Sequence[Any]) -> Sequence[Any] | None:
        if statement not in self._fetchrow:
            await self._prepare(statement)
        row: Sequence[Any] | None = await self._fetchrow[statement](*args)  # asyncpg is untyped
        return row

    async def fetch_all(self, statement: str, args: Sequence[Any]) -> Sequence[Sequence[Any]]:
        if statement not in self._fetch:
            await self._prepare(statement)
        rows: Sequence[Sequence[Any]] = await self._fetch[statement](*args)  # asyncpg is untyped
        return rows

    async def execute(self, statement: str, args: Sequence[Any]) -> None:
        if statement not in self._fetchval:
            await self._prepare(statement)
        await self._fetchval[statement](*args)


class PostgresEngine(SessionPoolEngine[Session]):
    """PostgreSQL over TCP through ``asyncpg``: the workload's tables (the profile store's:
    one with three secondary indexes) with byte-order (``COLLATE "C"``) text, prepared statements, every write its own
    autocommit transaction (``synchronous_commit`` off by default), one connection per
    worker. The table lives in a schema of asyncbench's own, locked for the engine's run;
    the server's memory is not measured.

    The module docstring says why asyncpg, the planner setting and the durability."""

    name = "postgres"
    product = "PostgreSQL"
    default_settings: ClassVar[Mapping[str, Any]] = {
        **SessionPoolEngine.SERVER_SETTINGS,
        "synchronous_commit": "off",
        "schema": DEFAULT_SCHEMA,
    }

    @classmethod
    def setting_sources(cls) -> Mapping[str, str]:
        """An empty connection setting's variable and default (:func:`resolve_settings`)."""
        out = {key: f"{ENV_VARS[key]}, else {DEFAULTS[key]!r}" for key in DEFAULTS}
        out["hosts"] = "empty: host and port, each may be a comma list"
        return out

    @classmethod
    def check_settings(cls, settings: Mapping[str, Any]) -> None:
        validate_settings(settings)

    @classmethod
    def check_environment(cls, settings: Mapping[str, Any], environ: Mapping[str, str]) -> None:
        check_environment(settings, environ)

    def __init__(self, config: EngineConfig) -> None:
        super().__init__(config)
        validate_settings(self.settings)
        self.conn_settings = resolve_settings(self.settings)
        self.endpoints: list[Endpoint] = self.conn_settings["endpoints"]
        #: The tables made for workloads in the schema, recorded there (engines/sql_tables.py).
        self._record = TableRecord(DIALECT, _present, self.where)

    # --- ownership and the run lock (engines/server_lock.py, engines/postgres_lock.py) -----
    @property
    def where(self) -> str:
        """The server, database and schema messages name."""
        s = self.conn_settings
        return f"PostgreSQL server {self.endpoints[0]}, database {s['database']!r}, schema {s['schema']!r}"

    def lock_key(self) -> str:
        s = self.conn_settings
        return f"postgres:{self.endpoints[0]}/{s['database']}/{s['schema']}"

    async def take_lock(self) -> Lease:
        """The advisory lock of this database and schema, on a connection of its own."""
        conn = await self.connect(self.endpoints[0], None, "asyncbench-lock")
        try:
            wait = lock_wait_seconds(self.settings)
            return await AdvisoryLock.take(conn, self.conn_settings["schema"], wait, self.where)
        except BaseException:
            conn.terminate()
            raise

    @classmethod
    def exclusive(cls, config: EngineConfig) -> contextlib.AbstractAsyncContextManager[object]:
        engine = cls(config)
        return held(engine.lock_key(), engine.take_lock)

    async def delete_store(self) -> bool:
        """DROP the recorded tables, only in a schema that holds our marker (else NotOurs)."""
        async with held(self.lock_key(), self.take_lock):
            conn = await self.connect(self.endpoints[0], None)
            try:
                if not await owned(conn, self.conn_settings["schema"]):
                    raise NotOurs(f"{self.where}: no marker table, so nothing in it is asyncbench's: kept")
                schema = pg_ident(self.conn_settings["schema"])
                await self._record.drop_all(_run(conn), lambda table: f"{schema}.{table}")
            finally:
                await conn.close()
        return True

    # --- lifecycle --------------------------------------------------------------------
    async def server_identity(self) -> str:
        """The server's system identifier and start time (a replica shares the first, not the
        second), the database and the schema; the database is not created if missing."""
        conn = await self.connect(self.endpoints[0], None, "asyncbench-identity", create_database=False)
        try:
            try:
                system = await conn.fetchval("SELECT system_identifier::text FROM pg_control_system()")
            except asyncpg.PostgresError:  # not granted: the start time and port still tell servers apart
                system = "?"
            started, port = await conn.fetchrow("SELECT pg_postmaster_start_time()::text, current_setting('port')")
        finally:
            await conn.close()
        s = self.conn_settings
        return (
            f"PostgreSQL system {system} (port {port}, started {started}), "
            f"database {s['database']!r}, schema {s['schema']!r}"
        )

    async def connect(
        self,
        endpoint: Endpoint,
        worker: int | None = 0,
        application: str | None = None,
        create_database: bool = True,
    ) -> asyncpg.Connection:
        """A new connection to ``endpoint`` with the session's settings; EngineUnavailable
        when no server answers there. A missing database is created (the user may), unless
        ``create_database`` is false: then the connection is to the ``postgres`` database."""
        s = self.conn_settings
        kwargs: dict[str, Any] = dict(
            host=endpoint.host,
            port=endpoint.port,
            user=s["user"],
            password=s["password"],
            timeout=CONNECT_TIMEOUT_S,
            server_settings={
                "synchronous_commit": s["synchronous_commit"],
                # pg_stat_activity tells the workers' connections apart
                "application_name": application
                or ("asyncbench-probe" if worker is None else f"asyncbench-w{worker}"),
                # tables are the schema's (engines/postgres_lock.py): never public's of that name
                "search_path": pg_ident(s["schema"]),
                "client_min_messages": "warning",  # no NOTICE for DROP TABLE IF EXISTS
                **SESSION_PLANNER,
            },
        )
        try:
            try:
                return await asyncpg.connect(database=s["database"], **kwargs)
            except asyncpg.InvalidCatalogNameError:
                pass
            admin = await asyncpg.connect(database="postgres", **kwargs)
            if not create_database:
                return admin
            try:
                await admin.execute(f"CREATE DATABASE {pg_ident(s['database'])} ENCODING 'UTF8'")
            except asyncpg.DuplicateDatabaseError:
                pass  # created meanwhile by another connection
            finally:
                await admin.close()
            return await asyncpg.connect(database=s["database"], **kwargs)
        except (OSError, TimeoutError, asyncpg.CannotConnectNowError) as exc:
            raise EngineUnavailable(
                f"no PostgreSQL server reachable at {endpoint} ({type(exc).__name__}: {exc}); "
                "start one with scripts/postgres-server"
            ) from exc

    async def _open(self, reset: bool) -> None:
        first = self.endpoints[0]
        session = Session(await self.connect(first, 0), first)
        try:
            await self._check_checkpoint_allowed(session.conn)
            await claim(session.conn, self.conn_settings["schema"], self.where)  # refuses a schema not ours
            if reset:  # the tables it made (any workload's), and nothing else
                await self._record.drop_all(_run(session.conn))
            await self._record.ensure(_run(session.conn))
        except BaseException:
            await session.close()
            raise
        self._session = session
        self._storage_bytes = None
        try:  # P > 1: a connection per worker, worker w on endpoint w % K
            for w, e in enumerate(assign(self.config.workers, len(self.endpoints))):
                if w == 0:
                    continue
                endpoint = self.endpoints[e]
                extra = Session(await self.connect(endpoint, w), endpoint)
                self._worker_sessions.append(extra)
            for s in self._sessions():  # each worker makes a workload's table on its own connection
                s.primitives.make_table = self._record.maker(_run(s.conn))
            await self._read_nodes()
        except BaseException:
            await self.close()
            raise

    async def _check_checkpoint_allowed(self, conn: asyncpg.Connection) -> None:
        """Fail now, not at settle, when this user may not run CHECKPOINT."""
        allowed = await conn.fetchval(
            "SELECT rolsuper OR CASE WHEN EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'pg_checkpoint') "
            "THEN pg_has_role(current_user, 'pg_checkpoint', 'MEMBER') ELSE false END "
            "FROM pg_roles WHERE rolname = current_user"
        )
        if not allowed:
            raise RuntimeError(
                f"PostgreSQL user {self.conn_settings['user']!r} may not run CHECKPOINT (the settle step): "
                "it needs superuser or, from PostgreSQL 15, membership of pg_checkpoint "
                f"(GRANT pg_checkpoint TO {self.conn_settings['user']}); scripts/postgres-server grants it"
            )

    async def _probe(self, endpoint: Endpoint) -> Session:
        """A connection named ``asyncbench-probe``, without prepared statements (it only
        reads settings)."""
        return Session(await self.connect(endpoint, None), endpoint)

    async def _node_values(self, session: Session) -> dict[str, str]:
        """``server_version``, every :data:`READ_BACK` setting as ``SHOW`` gives it, and the
        role (primary or standby)."""
        conn = session.conn
        values = {"server_version": await conn.fetchval("SHOW server_version")}
        for name in READ_BACK:
            values[name] = await conn.fetchval(f"SHOW {name}")
        values["role"] = "standby" if await conn.fetchval("SELECT pg_is_in_recovery()") else "primary"
        return values

    # --- cost ---------------------------------------------------------------------------
    async def _server_pids(self, sessions: list[Session]) -> list[int] | str:
        """The backends of these connections (``pg_backend_pid``, without a query) and
        the server's own background processes among the postmaster's children (checkpointer, WAL writer, background writer, autovacuum...: by their
        process titles, since ``pg_stat_activity`` hides their type from a role without
        ``pg_read_all_stats``). Other clients' backends are left out (not this run's work);
        the background processes serve every client of the server alike."""
        own = [s.conn.get_server_pid() for s in sessions]
        first = local_process(own[0], ("postgres", "postmaster"))
        if isinstance(first, str):
            return first
        pids = set(own)
        with contextlib.suppress(psutil.Error):
            parent = first.parent()
            if parent is not None and parent.name().startswith(("postgres", "postmaster")):
                # (the postmaster itself is left out: the kernel adds every child it reaps
                # to its I/O counters, so a backend closed at a reopen would count twice)
                for child in parent.children():
                    with contextlib.suppress(psutil.Error):
                        if is_background_title(" ".join(child.cmdline())):
                            pids.add(child.pid)
        return sorted(pids)

    async def cost_counters(self) -> EngineCounters | str:
        """``pg_stat_wal.wal_bytes`` (the WAL the server generated: every client's) and,
        from PostgreSQL 16, ``pg_stat_io``'s bytes written and read by relation I/O."""
        if self._session is None:
            return "the engine is not open"
        conn = self._session.conn
        # a backend reports its statistics at most once a second: make every one of this
        # run's report now (PostgreSQL 15+), so the phase's WAL is in the phase's figure
        for session in self._sessions():
            with contextlib.suppress(asyncpg.PostgresError):
                await session.conn.execute("SELECT pg_stat_force_next_flush()")
        try:
            wal = int(await conn.fetchval("SELECT wal_bytes FROM pg_stat_wal"))
        except asyncpg.PostgresError as exc:
            return f"pg_stat_wal is not readable: {exc}"
        written = {"wal": wal}
        other: dict[str, float] = {}
        try:
            row = await conn.fetchrow(
                "SELECT coalesce(sum(writes * op_bytes), 0) AS w, coalesce(sum(reads * op_bytes), 0) AS r FROM pg_stat_io"
            )
            written["relation_io"] = int(row["w"])
            other["relation_io_read_bytes"] = float(row["r"])
        except asyncpg.PostgresError:
            pass  # before PostgreSQL 16: the WAL alone
        return EngineCounters(written=written, other=other, server_wide=True)

    async def settle(self) -> None:
        """CHECKPOINT: every dirty page written and fsynced, the WAL up to here made
        redundant (the counterpart of SQLite's WAL checkpoint)."""
        try:
            await self._db.conn.execute("CHECKPOINT")
        except asyncpg.InsufficientPrivilegeError as exc:
            raise RuntimeError(
                f"CHECKPOINT refused ({exc}): grant pg_checkpoint to {self.conn_settings['user']!r}"
            ) from exc

    async def measure_storage(self) -> int:
        """Untimed, after settle (as the reference): ``pg_total_relation_size`` of the
        tables made for the workload, i.e. heap, TOAST and every index, on the first
        endpoint. An async step on the loop, so the query needs no thread hop; cached for
        :meth:`storage_bytes`."""
        conn = self._db.conn
        size = 0
        for table in await self._record.tables(_run(conn)):
            size += int(await conn.fetchval("SELECT coalesce(pg_total_relation_size(to_regclass($1)), 0)", table))
        self._storage_bytes = size
        return self._storage_bytes

    # --- facts ------------------------------------------------------------------------
    def facts(self) -> EngineFacts:
        s = self.conn_settings
        endpoints = [str(e) for e in self.endpoints]
        sc, fsync, delay = (self._effective(n) for n in ("synchronous_commit", "fsync", "wal_writer_delay"))
        settings = [
            Setting("server" if len(endpoints) == 1 else "servers", ", ".join(endpoints)),
            Setting("database", s["database"]),
            Setting("schema", f"{s['schema']} (asyncbench's own: marker table asyncbench_owner)"),
            Setting("user", s["user"]),
            Setting("synchronous_commit", s["synchronous_commit"], sc),
            Setting("fsync", "server setting", fsync),
            Setting("wal_writer_delay", "server setting", delay),
            Setting("full_page_writes", "server setting", self._effective("full_page_writes")),
            Setting("enable_sort", "off (each ORDER BY reads its index)", self._effective("enable_sort")),
            Setting("tables", 'heap, text columns COLLATE "C", as the workload declares them'),
            Setting("driver", "asyncpg (statements prepared once per connection, binary protocol)"),
        ]
        if sc is None:
            sync = after_crash = ""
        elif fsync == "off":
            sync, after_crash = "never (fsync=off)", "a server or OS crash can corrupt the cluster"
        elif sc == "off":
            sync = f"by the WAL writer every {delay} (commits do not wait for it)"
            after_crash = (
                f"a server crash loses at most about 3 x {delay} of acknowledged commits; "
                "the database stays consistent"
            )
        else:
            sync, after_crash = "per commit", "every acknowledged commit survives"
        versions = self.library_versions()
        cluster: dict[str, str] = {}
        if len(self.endpoints) > 1:
            nodes = ", ".join(
                f"{node} ({v.get('role', '?')}, PostgreSQL {v.get('server_version', '?')})"
                for node, v in self._nodes.items()
            )
            cluster = {
                "nodes": f"{len(self.endpoints)} endpoints: {nodes or ', '.join(endpoints)}",
                "workers": worker_map(self.config.workers, self.endpoints),
                "replication": "not managed by the engine (it spreads connections; it does not fail over)",
            }
        return EngineFacts(
            settings=settings,
            durability=Durability(
                log="write-ahead log (WAL)",
                sync=sync,
                # synchronous_commit on/local/remote_*: a commit returns after its WAL is flushed locally
                synced_commits=sync == "per commit",
                write_unit="one autocommit transaction per insert and per update",
                after_crash=after_crash,
                parameters={
                    "synchronous_commit": sc or "unknown until connected",
                    "fsync": fsync or "unknown until connected",
                    "wal_writer_delay": delay or "unknown until connected",
                },
            ),
            memory_scope=MemoryScope.CLIENT_ONLY,
            storage_method=StorageMethod.SERVER_ESTIMATE,
            versions=versions,
            endpoints=endpoints,
            cluster=cluster,
            colour="#336791",
        )

    @hybridmethod  # called like the base's classmethod, and on an instance too
    def library_versions(self_or_cls: Any) -> dict[str, str]:  # type: ignore[override]
        """asyncpg's version; after open also each endpoint's server version."""
        try:
            versions = {"asyncpg": importlib.metadata.version("asyncpg")}
        except importlib.metadata.PackageNotFoundError:
            versions = {"asyncpg": asyncpg.__version__}
        nodes = getattr(self_or_cls, "_nodes", None)
        if not isinstance(nodes, dict):
            return versions
        for node, values in nodes.items():
            key = "server" if len(nodes) == 1 else f"server {node}"
            versions[key] = values.get("server_version", "unknown")
        return versions
