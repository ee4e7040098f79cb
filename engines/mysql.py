"""MySQL/MariaDB engine: a client/server database over TCP, driven through ``asyncmy``.

The tables a workload declares (``asyncbench.store.Table``; the profile store's: one InnoDB
table, email UNIQUE and three secondary indexes), made in the engine's own database and
recorded there (``engines/sql_tables.py``), with a binary collation,
so strings compare by code point like the byte-ordered key/value engines: the first of
``utf8mb4_nopad_bin`` (MariaDB), ``utf8mb4_0900_bin`` (MySQL 8) or ``utf8mb4_bin`` the server
has. The no-pad ones also tell ``"a"`` from ``"a "`` (plain ``utf8mb4_bin`` pads, so a
UNIQUE email would treat them as equal), which is what byte keys do. Every write is
one autocommit statement (its own transaction); every read, scan, query and insert is one
statement round trip, an update its SELECT plus its UPDATE. The batch loops await the
driver directly: an asyncio driver needs no thread hop, so there is nothing else to amortize.

Why asyncmy: measured (``docs/results/drivers.md``) about five times cheaper in client CPU per
point query than aiomysql, and its statement cache (``stmt_cache_size``) runs the same
``%s`` statements as server-side prepared statements in the binary protocol: no escaping
on the way out, no text-to-int parsing on the way back.

The process memory the runner reports is this client only; the server's is not included
(its facts say so). Connection settings come from ``[engines.mysql]`` or, where empty, from
``MYSQL_HOST``/``MYSQL_PORT``/``MYSQL_DATABASE``/``MYSQL_USER``/``MYSQL_PASSWORD``
(``eval "$(scripts/mysql-server start)"`` sets them for a throw-away MariaDB).

Several endpoints (a multi-primary cluster): ``hosts = ["127.0.0.1:3307", ...]`` in the
TOML or ``MYSQL_HOSTS="127.0.0.1:3307,127.0.0.1:3308"`` (``scripts/galera-cluster`` exports
it); worker ``w`` connects to endpoint ``w % K`` (``engines/client_server.py``), so at
P = K each node takes one worker's writes. Precedence: TOML ``hosts``, else a TOML
``host``, else ``MYSQL_HOSTS``, else ``MYSQL_HOST``/``MYSQL_PORT``. The schema is created,
and settle and the storage figure run, on the first endpoint (every Galera node holds the
whole table). Each endpoint's server version and effective settings go into the report.

What Galera (MariaDB's wsrep) needs beyond one server, and how the engine meets it:
- an explicit primary key on every table (rows replicate by key): ``user_id`` is one;
- no reliance on AUTO_INCREMENT order (each node hands out its own interleaved values):
  ids are the workload's, never generated;
- a commit can fail certification when another node committed a conflicting write first
  (error 1213, ER_LOCK_DEADLOCK): the shared SQL store retries the single INSERT, or the
  update's SELECT + UPDATE as a unit, and the engine reports the retries per phase. The
  workload's workers write disjoint rows, so retries stay at or near zero;
- replication is virtually synchronous: a commit returns once certified, and other nodes
  apply it a moment later. So a phase's reads see the previous phase's writes from every
  node, each batch on a Galera connection first makes one causal read
  (``SET STATEMENT wsrep_sync_wait=1 FOR SELECT ...``: the node applies everything
  committed cluster-wide before answering); the batch's own reads are then plain local
  reads, as an application that needs no causality per query would make them.
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib.metadata
import os
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

import asyncmy
import psutil
from asyncmy.errors import MySQLError, OperationalError

from asyncbench.engine import EngineConfig, EngineCounters, EngineUnavailable, distinct_nodes
from asyncbench.engines.client_server import (
    Endpoint,
    SessionPoolEngine,
    assign,
    hybridmethod,
    is_local_host,
    local_process,
    parse_endpoint,
    parse_endpoints,
    worker_map,
)
from asyncbench.engines.mysql_lock import GaleraLockRow, GetLock, claim, lock_name, owned
from asyncbench.engines.server_lock import MARKER_TABLE, Lease, NotOurs, held, lock_wait_seconds
from asyncbench.engines.sql_names import check_name, mysql_ident
from asyncbench.engines.sql_retry import Retrier
from asyncbench.engines.sql_tables import Run, TableRecord
from asyncbench.facts import Durability, EngineFacts, MemoryScope, Setting, StorageMethod
from asyncbench.store import Dialect, SqlPrimitives, Table

#: Binary collations, best first: no-pad (exact byte-key semantics) before the padding one.
COLLATIONS = ("utf8mb4_nopad_bin", "utf8mb4_0900_bin", "utf8mb4_bin")

#: Strict mode (no silent truncation) and no Note-level warnings: a warning costs asyncmy an
#: extra SHOW WARNINGS round trip, and DROP TABLE IF EXISTS of a missing table gives a Note.
SESSION_INIT = "SET SESSION sql_mode = 'STRICT_ALL_TABLES,NO_ENGINE_SUBSTITUTION', sql_notes = 0"

DEFAULTS: dict[str, Any] = {"host": "127.0.0.1", "port": 3306, "database": "asyncbench", "user": "root", "password": ""}
ENV_VARS = {
    "host": "MYSQL_HOST",
    "port": "MYSQL_PORT",
    "database": "MYSQL_DATABASE",
    "user": "MYSQL_USER",
    "password": "MYSQL_PASSWORD",
}
#: Client errors meaning "nothing answered": can't connect (TCP/socket), lost during handshake.
UNREACHABLE_CODES = {2002, 2003, 2006, 2013}
UNKNOWN_DATABASE = 1049
#: ER_LOCK_DEADLOCK: a deadlock victim, or on Galera a write that failed certification.
LOCK_DEADLOCK = 1213
CONNECT_TIMEOUT_S = 5
#: The engine prepares 11 distinct statements; asyncmy keeps them all prepared.
STMT_CACHE_SIZE = 32


#: Each index query names its index: right after a bulk load InnoDB's statistics are
#: refreshed by a background thread, and until then the optimizer may read the whole table
#: and filesort it (seen for the full-row top-reputation query: ~1.2 ms instead of ~0.15 ms
#: per query), so the plan, and the number, would depend on timing. The hint changes no
#: result: WHERE, ORDER BY and LIMIT are the shared SQL store's.
#: Column sizes are the workload's (strict SQL mode, set per session, turns an overflow
#: into an error instead of a silent truncation); text in the binary collation picked at
#: open (:func:`dialect`), indexes inside the CREATE TABLE (one atomic statement).
DIALECT = Dialect(
    placeholder=lambda i: "%s",
    index_hint=lambda index: f"FORCE INDEX ({index}) ",
    integer="BIGINT",
    text=lambda n: f"VARCHAR({n})",
    blob="LONGBLOB",
    table_suffix=" ENGINE=InnoDB DEFAULT CHARSET=utf8mb4",
    inline_indexes=True,
)
#: The record's DDL column: longer than a VARCHAR may be in a utf8mb4 row.
RECORD_TEXT = "MEDIUMTEXT"


def dialect(collation: str) -> Dialect:
    """:data:`DIALECT` with the server's binary collation (:func:`pick_collation`)."""
    return dataclasses.replace(DIALECT, table_suffix=f"{DIALECT.table_suffix} COLLATE={collation}")


#: Global variables read back from every endpoint for the report (missing ones: not a Galera
#: server, or not MariaDB).
READ_BACK_VARIABLES = (
    "innodb_flush_log_at_trx_commit",
    "sync_binlog",
    "log_bin",
    "innodb_buffer_pool_size",
    "innodb_log_file_size",
    "innodb_redo_log_capacity",
    "wsrep_on",
    "binlog_format",
    "innodb_autoinc_lock_mode",
    "wsrep_sync_wait",
)
READ_BACK_STATUS = ("wsrep_cluster_size", "wsrep_cluster_status", "wsrep_local_state_comment")
#: A Galera connection's once-per-batch causal read (module docstring), of the marker table
#: (ours, always there): it waits for every writeset committed before it, a CREATE TABLE
#: issued on another node included.
CAUSAL_BARRIER = f"SET STATEMENT wsrep_sync_wait = 1 FOR SELECT COUNT(*) FROM {MARKER_TABLE} WHERE tool = ''"


def retryable(exc: BaseException) -> bool:
    """Error 1213: the write lost a conflict (on Galera: failed certification) and rolled
    back; running it again is safe."""
    return isinstance(exc, MySQLError) and bool(exc.args) and exc.args[0] == LOCK_DEADLOCK


def resolve_settings(settings: Mapping[str, Any], environ: Mapping[str, str] | None = None) -> dict[str, Any]:
    """TOML value if set, else the ``MYSQL_*`` variable, else the default; port as an int;
    the database a plain name (engines/sql_names.py), else ValueError naming its source."""
    env = os.environ if environ is None else environ
    out: dict[str, Any] = {}
    for key, default in DEFAULTS.items():
        value, source = settings.get(key), key
        if value in (None, "", 0):
            value, source = env.get(ENV_VARS[key]), ENV_VARS[key]
            if not value:
                value, source = default, key
        out[key] = value
        if key == "database":
            check_name(value, source)
    try:
        out["port"] = int(out["port"])
    except ValueError:
        raise ValueError(f"MySQL port must be an integer, got {out['port']!r}") from None
    if not 1 <= out["port"] <= 65535:
        raise ValueError(f"MySQL port must be from 1 to 65535, got {out['port']}")
    return out


def resolve_endpoints(
    settings: Mapping[str, Any], environ: Mapping[str, str] | None = None
) -> list[Endpoint]:
    """The servers, in order: TOML ``hosts``, else a TOML ``host`` (with the resolved
    port), else ``MYSQL_HOSTS`` (a comma list), else ``MYSQL_HOST``/``MYSQL_PORT``/default.
    An entry without a port gets the resolved port."""
    env = os.environ if environ is None else environ
    single = resolve_settings(settings, env)
    port = single["port"]
    hosts = settings.get("hosts") or []
    try:
        if hosts:
            return parse_endpoints(hosts, port)
        if not settings.get("host") and env.get("MYSQL_HOSTS"):
            return parse_endpoints(env["MYSQL_HOSTS"], port)
        return [
            parse_endpoint(f"{single['host']}:{port}" if ":" not in single["host"] else single["host"], port)
        ]
    except ValueError as exc:
        raise ValueError(f"MySQL hosts: {exc}") from None


async def _present(run: Run) -> set[str]:
    """The tables in the connection's database (the engine's own)."""
    rows = await run("SELECT table_name FROM information_schema.tables WHERE table_schema = DATABASE()", ())
    return {str(r[0]) for r in rows}


async def pick_collation(session: Session) -> str:
    """The first of :data:`COLLATIONS` the server knows."""
    names = ", ".join(f"'{c}'" for c in COLLATIONS)
    have = {row[0] for row in await session.query(f"SHOW COLLATION WHERE Collation IN ({names})")}
    for name in COLLATIONS:
        if name in have:
            return name
    raise RuntimeError(f"the server has none of the binary collations {', '.join(COLLATIONS)}")


class Session:
    """One connection and its cursor, as a :class:`~asyncbench.store.SqlSession`; its
    ``primitives`` are what the engine's ``worker(i)`` returns.

    A worker owns one session; with P workers the engine would hold P of them (asyncmy
    connections are not safe to share between concurrent tasks).
    """

    def __init__(self, conn: Any, endpoint: Endpoint | None = None) -> None:
        self.conn = conn
        self.cur = conn.cursor()
        self.endpoint = endpoint
        self.galera = False  # set at open: wsrep_on=ON on this connection's server
        self.retrier = Retrier(retryable)
        self.primitives = SqlPrimitives(self, DIALECT, barrier=self.barrier, retry=self.retrier)

    async def barrier(self) -> None:
        """On Galera, one causal read: later reads see every write committed cluster-wide
        before now (see the module docstring). Nothing on a single server."""
        if self.galera:
            await self.cur.execute(CAUSAL_BARRIER)
            await self.cur.fetchall()

    async def close(self) -> None:
        conn, self.conn = self.conn, None
        if conn is None:
            return
        try:
            await self.cur.close()
            await conn.ensure_closed()  # polite COM_QUIT
        except Exception:
            conn.close()  # the transport is gone or broken: just drop it

    async def query(self, sql: str, args: Any = None) -> list[tuple[Any, ...]]:
        cur = self.cur
        await cur.execute(sql, args)
        return list(await cur.fetchall())

    async def run(self, sql: str, args: Sequence[Any]) -> Sequence[Sequence[Any]]:
        """The table record's runner (engines/sql_tables.py): unprepared without arguments
        (DDL), prepared with them."""
        return await self.query(sql, tuple(args) or None)

    # SqlSession: empty args, not None, so asyncmy runs every statement prepared.
    async def fetch_one(self, statement: str, args: Sequence[Any]) -> Sequence[Any] | None:
        await self.cur.execute(statement, args)
        row: Sequence[Any] | None = await self.cur.fetchone()  # asyncmy is untyped
        return row

    async def fetch_all(self, statement: str, args: Sequence[Any]) -> Sequence[Sequence[Any]]:
        await self.cur.execute(statement, args)
        rows: Sequence[Sequence[Any]] = await self.cur.fetchall()  # asyncmy is untyped
        return rows

    async def execute(self, statement: str, args: Sequence[Any]) -> None:
        await self.cur.execute(statement, args)


#: Server variables shown in Engine Settings (read back at open with READ_BACK_VARIABLES).
SERVER_VARIABLES = READ_BACK_VARIABLES[:6]
#: What the reference starts MySQL with (the Configured column); scripts/mysql-server does the same.
REFERENCE_SERVER = {
    "innodb_flush_log_at_trx_commit": "2",
    "sync_binlog": "0",
    "log_bin": "OFF",
    "innodb_buffer_pool_size": "large (25% of RAM here)",
}


class MySqlEngine(SessionPoolEngine[Session]):
    """MySQL or MariaDB over TCP through ``asyncmy``: the workload's InnoDB tables (the
    profile store's: one with three secondary indexes) in a binary collation, every write its own autocommit
    statement, one connection per worker, on one server or spread over a multi-primary
    (Galera) cluster's nodes. The table lives in a database of asyncbench's own, locked
    for the engine's run; the server's memory is not measured.

    The module docstring says why asyncmy, the schema, and what Galera needs."""

    name = "mysql"
    product = "MySQL"
    default_settings = SessionPoolEngine.SERVER_SETTINGS

    @classmethod
    def setting_sources(cls) -> Mapping[str, str]:
        """An empty connection setting's variable and default (:func:`resolve_settings`)."""
        out = {key: f"{ENV_VARS[key]}, else {DEFAULTS[key]!r}" for key in DEFAULTS}
        out["hosts"] = "empty: MYSQL_HOSTS, else host and port"
        return out

    @classmethod
    def check_settings(cls, settings: Mapping[str, Any]) -> None:
        try:
            lock_wait_seconds(settings)
        except ValueError as exc:
            raise ValueError(f"engines.mysql.{exc}") from None
        if settings.get("database"):  # empty: MYSQL_DATABASE or the default (check_environment)
            check_name(settings["database"], "database")
        port = settings["port"]
        if port != 0 and not 1 <= port <= 65535:  # 0: MYSQL_PORT or 3306
            raise ValueError(
                f"engines.mysql.port must be a TCP port from 1 to 65535 (or 0: MYSQL_PORT), got {port}"
            )
        hosts = settings.get("hosts") or []
        if hosts:
            try:
                parse_endpoints(hosts, DEFAULTS["port"])
            except ValueError as exc:
                raise ValueError(f"hosts: {exc}") from None

    @classmethod
    def check_environment(cls, settings: Mapping[str, Any], environ: Mapping[str, str]) -> None:
        """``MYSQL_DATABASE`` when the plan sets no database: a plain name."""
        if not settings.get("database") and environ.get(ENV_VARS["database"]):
            check_name(environ[ENV_VARS["database"]], ENV_VARS["database"])

    def __init__(self, config: EngineConfig) -> None:
        super().__init__(config)
        self.conn_settings = resolve_settings(self.settings)
        self.endpoints = resolve_endpoints(self.settings)
        self.collation: str | None = None
        #: The tables made for workloads in the database, recorded there (set at open).
        self._record = self._table_record(DIALECT)

    # --- ownership and the run lock (engines/server_lock.py, engines/mysql_lock.py) --------
    @property
    def where(self) -> str:
        """The server and database messages name."""
        return f"MySQL server {self.endpoints[0]}, database {mysql_ident(str(self.conn_settings['database']))}"

    def lock_key(self) -> str:
        return f"mysql:{self.endpoints[0]}/{self.conn_settings['database']}"

    async def take_lock(self) -> Lease:
        """The run lock of this database: GET_LOCK on one server, the lock row on Galera
        (GET_LOCK is node-local there); on a connection of its own."""
        conn = await self.connect(self.endpoints[0])
        try:
            rows = await Session(conn).query("SHOW GLOBAL VARIABLES LIKE 'wsrep_on'")
            wait = lock_wait_seconds(self.settings)
            if rows and str(rows[0][1]).upper() == "ON":
                return await GaleraLockRow.take(conn, wait, self.where)
            return await GetLock.take(conn, lock_name(str(self.conn_settings["database"])), wait, self.where)
        except BaseException:
            conn.close()
            raise

    @classmethod
    def exclusive(cls, config: EngineConfig) -> contextlib.AbstractAsyncContextManager[object]:
        engine = cls(config)
        return held(engine.lock_key(), engine.take_lock)

    # --- lifecycle --------------------------------------------------------------------
    async def connect(self, endpoint: Endpoint | None = None) -> Any:
        """A new autocommit connection (to the first endpoint unless told); EngineUnavailable
        when no server answers."""
        s = self.conn_settings
        endpoint = endpoint or self.endpoints[0]
        kwargs = dict(
            host=endpoint.host,
            port=endpoint.port,
            user=s["user"],
            password=s["password"],
            charset="utf8mb4",
            autocommit=True,
            connect_timeout=CONNECT_TIMEOUT_S,
            init_command=SESSION_INIT,
            stmt_cache_size=STMT_CACHE_SIZE,
        )
        try:
            try:
                return await asyncmy.connect(database=s["database"], **kwargs)
            except OperationalError as exc:
                if exc.args[0] != UNKNOWN_DATABASE:
                    raise
            # The server is there but the database is not: create it (as a local root would).
            conn = await asyncmy.connect(**kwargs)
            async with conn.cursor() as cur:
                await cur.execute(
                    f"CREATE DATABASE IF NOT EXISTS {mysql_ident(s['database'])} "
                    "CHARACTER SET utf8mb4 COLLATE utf8mb4_bin"
                )
            await conn.select_db(s["database"])
            return conn
        except OperationalError as exc:
            if exc.args and exc.args[0] in UNREACHABLE_CODES:
                raise EngineUnavailable(self._unreachable(endpoint, exc.args[-1])) from exc
            raise
        except OSError as exc:
            raise EngineUnavailable(self._unreachable(endpoint, exc)) from exc

    def _unreachable(self, endpoint: Endpoint, why: object) -> str:
        return f"no MySQL server reachable at {endpoint} ({why}); start one with scripts/mysql-server"

    async def _session_to(self, endpoint: Endpoint) -> Session:
        """A session on ``endpoint`` that knows whether its server is a Galera node."""
        session = Session(await self.connect(endpoint), endpoint)
        try:
            rows = await session.query("SHOW GLOBAL VARIABLES LIKE 'wsrep_on'")
            session.galera = bool(rows) and str(rows[0][1]).upper() == "ON"
        except BaseException:
            await session.close()
            raise
        return session

    async def delete_store(self) -> bool:
        """DROP the engine's table on the server (it writes no local files), only in a
        database that holds our marker (else NotOurs)."""
        async with held(self.lock_key(), self.take_lock):  # reentrant inside the runner's lease
            session = await self._session_to(self.endpoints[0])
            try:
                if not await owned(session.conn):
                    raise NotOurs(f"{self.where}: no marker table, so nothing in it is asyncbench's: kept")
                await self._table_record(DIALECT).drop_all(session.run)
            finally:
                await session.close()
        return True

    async def _open(self, reset: bool) -> None:
        session = await self._session_to(self.endpoints[0])
        try:
            self.collation = await pick_collation(session)
            await claim(session.conn, self.where)  # refuses a database that is not ours
            self._record = self._table_record(dialect(self.collation))
            if reset:  # the tables it made (any workload's), and nothing else
                await self._record.drop_all(session.run)
            await self._record.ensure(session.run)
        except BaseException:
            await session.close()
            raise
        self._session = session
        self._storage_bytes = None
        try:  # P > 1: a connection per worker, worker w on endpoint w % K
            for w, e in enumerate(assign(self.config.workers, len(self.endpoints))):
                if w:
                    self._worker_sessions.append(await self._session_to(self.endpoints[e]))
            for s in self._sessions():
                s.primitives.dialect = self._record.dialect
                s.primitives.make_table = self._maker(s)
                await s.barrier()  # the record exists on every node before any worker uses it
            await self._read_nodes()
        except BaseException:
            await self.close()
            raise

    def _table_record(self, flavour: Dialect) -> TableRecord:
        return TableRecord(flavour, _present, self.where, text=RECORD_TEXT)

    def _maker(self, session: Session) -> Callable[[Table], Awaitable[None]]:
        """``make_table`` on ``session``'s connection, then its causal barrier: on Galera
        the CREATE (total-order DDL, maybe issued by another worker on another node) is
        applied on this worker's node before its first batch."""
        make = self._record.maker(session.run)

        async def make_table(table: Table) -> None:
            await make(table)
            await session.barrier()

        return make_table

    async def _probe(self, endpoint: Endpoint) -> Session:
        """The same session a worker gets (it knows whether its server is a Galera node)."""
        return await self._session_to(endpoint)

    async def _node_values(self, session: Session) -> dict[str, str]:
        """Version, settings and cluster status: SELECT VERSION() and SHOW GLOBAL
        VARIABLES/STATUS of :data:`READ_BACK_VARIABLES` and :data:`READ_BACK_STATUS`."""
        variables = ", ".join(f"'{v}'" for v in READ_BACK_VARIABLES)
        status = ", ".join(f"'{v}'" for v in READ_BACK_STATUS)
        values = {"version": str((await session.query("SELECT VERSION()"))[0][0])}
        for query in (
            f"SHOW GLOBAL VARIABLES WHERE Variable_name IN ({variables})",
            f"SHOW GLOBAL STATUS WHERE Variable_name IN ({status})",
        ):
            values.update({str(k).lower(): str(v) for k, v in await session.query(query)})
        return values

    async def settle(self) -> None:
        """What the reference times as settle: the final commit (a no-op under autocommit)
        and ``FLUSH TABLES`` of the workload's tables (on the first endpoint; on Galera
        after the causal barrier, so every write is in)."""
        db = self._db
        await db.conn.commit()
        await db.barrier()
        for table in await self._record.tables(db.run):
            await db.query(f"FLUSH TABLES {mysql_ident(table)}")

    # --- cost ---------------------------------------------------------------------------
    async def _server_pids(self, sessions: list[Session]) -> list[int] | str:
        """The one server process (MariaDB/MySQL serve every connection from threads of
        one process): the pid in ``@@pid_file``, checked to be a mysqld/mariadbd here that
        listens on the endpoint's port (a pid file of a server elsewhere names nothing here)."""
        session = sessions[0]
        path = str((await session.query("SELECT @@pid_file"))[0][0])
        try:
            with open(path) as fh:
                pid = int(fh.read().split()[0])
        except (OSError, ValueError, IndexError) as exc:
            return f"the server's pid file {path} is not readable here ({type(exc).__name__}): the server runs in another container or host"
        proc = local_process(pid, ("mysqld", "mariadbd"))
        if isinstance(proc, str):
            return proc
        port = session.endpoint.port if session.endpoint is not None else None
        try:
            listening = {c.laddr.port for c in proc.net_connections(kind="inet") if c.status == psutil.CONN_LISTEN}
        except psutil.Error:
            listening = set()  # not visible to this user: the pid file is the evidence
        if listening and port not in listening:
            return f"process {pid} of the pid file {path} does not listen on port {port}: another server's"
        return [pid]

    def _cluster(self) -> bool:
        """Several endpoints (a Galera cluster's nodes): cost is read on every one."""
        return len({str(e) for e in self.endpoints}) > 1

    async def server_nodes(self) -> dict[str, list[int] | str]:
        """Every node's server process, also a node no worker uses (``@@pid_file`` is the
        server's, not the connection's: a probe session there finds it), or why not: a node
        on another machine, or a pid not proven to be a mysqld/mariadbd on its port."""
        if not self._cluster() or self._session is None:
            return {}

        async def find(session: Session) -> list[int] | str:
            endpoint = session.endpoint
            if endpoint is None or not is_local_host(endpoint.host):
                return f"the server at {endpoint} is not on this machine"
            return await self._server_pids([session])

        return distinct_nodes(await self._on_each_endpoint(find, keep=True))

    async def cost_counters(self) -> EngineCounters | str:
        """InnoDB's own byte counters (server-wide: every client's): ``Innodb_data_written``
        and ``Innodb_os_log_written`` (redo log), ``Innodb_data_read``; on a cluster each
        node's (every node applies every write) and their sum."""
        if self._session is None:
            return "the engine is not open"
        if not self._cluster():
            return await self._innodb_counters(self._session)
        nodes = await self._on_each_endpoint(self._innodb_counters, keep=True)
        written: dict[str, int] = {}
        other: dict[str, float] = {}
        for n in nodes.values():
            for k, v in n.written.items():
                written[k] = written.get(k, 0) + v
            for k, f in n.other.items():
                other[k] = other.get(k, 0.0) + f
        return EngineCounters(written=written, other=other, server_wide=True, nodes=nodes)

    @staticmethod
    async def _innodb_counters(session: Session) -> EngineCounters:
        rows = await session.query(
            "SHOW GLOBAL STATUS WHERE Variable_name IN ('Innodb_data_written', 'Innodb_os_log_written', 'Innodb_data_read')"
        )
        values = {str(k): int(v) for k, v in rows}
        return EngineCounters(
            written={"data": values.get("Innodb_data_written", 0)},
            other={"redo_log_written_bytes": values.get("Innodb_os_log_written", 0), "data_read_bytes": values.get("Innodb_data_read", 0)},
            server_wide=True,
        )

    storage_changes_state = (
        "MySQL's storage figure needs ANALYZE TABLE, which refreshes the optimizer's statistics "
        "the phases after it would use: measured at settle only, as the reference does"
    )

    async def measure_storage(self) -> int:
        """Untimed, after settle (as the reference): ANALYZE TABLE refreshes InnoDB's
        statistics (information_schema's lengths come from them), then data + index length
        of the table (on the first endpoint: on Galera every node holds the whole table)."""
        db = self._db
        size = 0
        for table in await self._record.tables(db.run):
            await db.query(f"ANALYZE TABLE {mysql_ident(table)}")
            rows = await db.query(
                "SELECT data_length + index_length FROM information_schema.tables "
                "WHERE table_schema = DATABASE() AND table_name = %s",
                (table,),
            )
            size += int(rows[0][0]) if rows and rows[0][0] is not None else 0
        self._storage_bytes = size
        return self._storage_bytes

    # --- facts ------------------------------------------------------------------------
    @property
    def galera(self) -> bool:
        """Whether the endpoints are Galera nodes (known after open)."""
        return any(v.get("wsrep_on", "").upper() == "ON" for v in self._nodes.values())

    def facts(self) -> EngineFacts:
        s = self.conn_settings
        endpoints = [str(e) for e in self.endpoints]
        flush = self._effective("innodb_flush_log_at_trx_commit")
        settings = [
            Setting("server" if len(endpoints) == 1 else "servers", ", ".join(endpoints)),
            Setting("database", str(s["database"])),
            Setting("user", str(s["user"])),
            Setting(
                "tables", "InnoDB, utf8mb4 binary collation (no-pad where available), as the workload declares them"
            ),
            Setting("driver", f"asyncmy (prepared statements, statement cache {STMT_CACHE_SIZE})"),
        ]
        # The server's own settings as it runs them (SHOW GLOBAL VARIABLES on every
        # endpoint), next to what the reference starts its server with.
        for name in SERVER_VARIABLES:
            settings.append(
                Setting(
                    f"server {name}",
                    REFERENCE_SERVER.get(name, "server default"),
                    self._effective(name) or "unknown until connected",
                )
            )
        parameters = {"innodb_flush_log_at_trx_commit": flush or "unknown until connected"}
        cluster: dict[str, str] = {}
        if self.galera:
            for name in ("wsrep_on", "wsrep_cluster_size", "binlog_format", "innodb_autoinc_lock_mode"):
                settings.append(Setting(name, "server setting", self._effective(name)))
                parameters[name] = self._effective(name) or "unknown"
            parameters["causal reads"] = "wsrep_sync_wait=1 once per batch"
        if self.galera or len(self.endpoints) > 1:
            nodes = ", ".join(f"{node} ({v.get('version', '?')})" for node, v in self._nodes.items())
            size = self._effective("wsrep_cluster_size")
            cluster = {
                "nodes": f"{len(self.endpoints)} endpoints: {nodes or ', '.join(endpoints)}"
                + (
                    f"; Galera cluster of {size} nodes, {self._effective('wsrep_cluster_status')}, "
                    f"{self._effective('wsrep_local_state_comment')}"
                    if self.galera
                    else ""
                ),
                "workers": worker_map(self.config.workers, self.endpoints),
                "replication": (
                    "Galera (wsrep), certification-based and virtually synchronous: a commit returns once "
                    "its write set reached every node and passed certification, the other nodes apply it "
                    "right after; each reading batch starts with one causal read (wsrep_sync_wait=1) so it "
                    "sees every write committed before it, on any node"
                    if self.galera
                    else "not Galera (no wsrep_on=ON): whatever the servers replicate, the engine only "
                    "spreads connections"
                ),
                "schema, settle and storage": f"on {endpoints[0]}",
            }
        return EngineFacts(
            settings=settings,
            durability=Durability(
                log="InnoDB redo log"
                + (", replicated to every node before commit returns" if self.galera else ""),
                sync="per commit" if flush == "1" else "about once a second" if flush in ("0", "2") else "",
                write_unit="one autocommit transaction per insert and per update",
                # flush=1: the redo log is written and fsynced at every commit, before it returns
                synced_commits=flush == "1",
                after_crash="InnoDB recovers every committed transaction that reached the log"
                + ("; a node that crashes rejoins from the others (IST/SST)" if self.galera else ""),
                parameters=parameters,
            ),
            memory_scope=MemoryScope.CLIENT_ONLY,
            storage_method=StorageMethod.SERVER_ESTIMATE,
            versions=self.library_versions(),
            endpoints=endpoints,
            cluster=cluster,
            colour="#f08c00",
        )

    @hybridmethod  # called like the base's classmethod, and on an instance too
    def library_versions(self_or_cls: Any) -> dict[str, str]:  # type: ignore[override]
        """The driver's version; after open also each endpoint's server version."""
        try:
            versions = {"asyncmy": importlib.metadata.version("asyncmy")}
        except importlib.metadata.PackageNotFoundError:
            versions = {"asyncmy": "unknown"}
        nodes = getattr(self_or_cls, "_nodes", None)
        if isinstance(nodes, dict):
            for node, values in nodes.items():
                versions["server" if len(nodes) == 1 else f"server {node}"] = values.get("version", "unknown")
        return versions
