"""MySQL/MariaDB engine: a client/server database over TCP, driven through ``asyncmy``.

One InnoDB ``profiles`` table with the SQLite schema's indexes (email UNIQUE; (country,
status, user_id); (created_at, user_id); (reputation DESC, user_id)) and a binary collation,
so strings compare by code point like the byte-ordered key/value engines: the first of
``utf8mb4_nopad_bin`` (MariaDB), ``utf8mb4_0900_bin`` (MySQL 8) or ``utf8mb4_bin`` the server
has. The no-pad ones also tell ``"a"`` from ``"a "`` (plain ``utf8mb4_bin`` pads, so a
UNIQUE email would treat them as equal), which is what byte keys do. Every write is
one autocommit statement (its own transaction); every read, scan, query and insert is one
statement round trip, an update its SELECT plus its UPDATE. The batch loops await the
driver directly: an asyncio driver needs no thread hop, so there is nothing else to amortize.

Why asyncmy: ``benchmarks/bench_mysql_driver.py`` measured it several times cheaper per
point query than aiomysql, and its statement cache (``stmt_cache_size``) runs the same
``%s`` statements as server-side prepared statements in the binary protocol: no escaping
on the way out, no text-to-int parsing on the way back.

The process memory the runner reports is this client only; the server's is not included
(its facts say so). Connection settings come from ``[engines.mysql]`` or, where empty, from
``MYSQL_HOST``/``MYSQL_PORT``/``MYSQL_DATABASE``/``MYSQL_USER``/``MYSQL_PASSWORD``
(``eval "$(scripts/mysql-server start)"`` sets them for a throw-away MariaDB).
"""

from __future__ import annotations

import copy
import importlib.metadata
import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar

import asyncmy
from anyio.abc import TaskGroup
from asyncmy.errors import OperationalError

from asyncbench.engine import Engine, EngineConfig, EngineUnavailable
from asyncbench.facts import Durability, EngineFacts, MemoryScope, Setting, StorageMethod
from engines.sql_profile_store import TABLE, AsyncSqlProfileStore, Dialect, Statements
from workloads.profile_store.profiles import Profile
from workloads.profile_store.store import Marks, Transform

#: Binary collations, best first: no-pad (exact byte-key semantics) before the padding one.
COLLATIONS = ("utf8mb4_nopad_bin", "utf8mb4_0900_bin", "utf8mb4_bin")

#: Column sizes hold the generator's strings with room to spare; strict SQL mode (set per
#: session) turns any overflow into an error instead of a silent truncation. ``{collation}``
#: is filled in at open.
SCHEMA = f"""CREATE TABLE IF NOT EXISTS {TABLE} (
    user_id BIGINT NOT NULL,
    email VARCHAR(255) NOT NULL,
    country VARCHAR(16) NOT NULL,
    status VARCHAR(16) NOT NULL,
    created_at BIGINT NOT NULL,
    last_login BIGINT NOT NULL,
    reputation INT NOT NULL,
    display_name VARCHAR(255) NOT NULL,
    bio VARCHAR(4096) NOT NULL,
    PRIMARY KEY (user_id),
    UNIQUE KEY idx_profiles_email (email),
    KEY idx_profiles_country_status (country, status, user_id),
    KEY idx_profiles_created_at (created_at, user_id),
    KEY idx_profiles_reputation (reputation DESC, user_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE={{collation}}"""

#: Strict mode (no silent truncation) and no Note-level warnings: a warning costs asyncmy an
#: extra SHOW WARNINGS round trip, and DROP TABLE IF EXISTS of a missing table gives a Note.
SESSION_INIT = "SET SESSION sql_mode = 'STRICT_ALL_TABLES,NO_ENGINE_SUBSTITUTION', sql_notes = 0"

DEFAULTS = {"host": "127.0.0.1", "port": 3306, "database": "asyncbench", "user": "root", "password": ""}
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
CONNECT_TIMEOUT_S = 5
#: The engine prepares 11 distinct statements; asyncmy keeps them all prepared.
STMT_CACHE_SIZE = 32


#: Each index query names its index: right after a bulk load InnoDB's statistics are
#: refreshed by a background thread, and until then the optimizer may read the whole table
#: and filesort it (seen for the full-row top-reputation query: ~1.2 ms instead of ~0.15 ms
#: per query), so the plan, and the number, would depend on timing. The hint changes no
#: result: WHERE, ORDER BY and LIMIT are the shared SQL store's.
DIALECT = Dialect(placeholder=lambda i: "%s", index_hint=lambda index: f"FORCE INDEX ({index}) ")


def resolve_settings(settings: Mapping[str, Any], environ: Mapping[str, str] | None = None) -> dict[str, Any]:
    """TOML value if set, else the ``MYSQL_*`` variable, else the default; port as an int."""
    env = os.environ if environ is None else environ
    out: dict[str, Any] = {}
    for key, default in DEFAULTS.items():
        value = settings.get(key)
        if value in (None, "", 0):
            value = env.get(ENV_VARS[key]) or default
        out[key] = value
    try:
        out["port"] = int(out["port"])
    except ValueError:
        raise ValueError(f"MySQL port must be an integer, got {out['port']!r}") from None
    return out


async def pick_collation(session: Session) -> str:
    """The first of :data:`COLLATIONS` the server knows."""
    names = ", ".join(f"'{c}'" for c in COLLATIONS)
    have = {row[0] for row in await session.query(f"SHOW COLLATION WHERE Collation IN ({names})")}
    for name in COLLATIONS:
        if name in have:
            return name
    raise RuntimeError(f"the server has none of the binary collations {', '.join(COLLATIONS)}")


class _hybridmethod:
    """A method callable on the class (before open) and on an instance (knows more after open)."""

    def __init__(self, func: Callable[..., Any]) -> None:
        self.func = func

    def __get__(self, obj: object, owner: type) -> Callable[[], Any]:
        target = owner if obj is None else obj
        return lambda: self.func(target)


class Session:
    """One connection and its cursor, as the shared SQL store's :class:`AsyncSession`.

    A worker owns one session; with P workers the engine would hold P of them (asyncmy
    connections are not safe to share between concurrent tasks).
    """

    def __init__(self, conn: Any, sql: Statements) -> None:
        self.conn = conn
        self.cur = conn.cursor()
        self.store = AsyncSqlProfileStore(self, sql)

    async def close(self) -> None:
        conn, self.conn = self.conn, None
        if conn is None:
            return
        try:
            await self.cur.close()
            await conn.ensure_closed()  # polite COM_QUIT
        except Exception:
            conn.close()  # the transport is gone or broken: just drop it

    async def query(self, sql: str, args: Any = None) -> list[tuple]:
        cur = self.cur
        await cur.execute(sql, args)
        return list(await cur.fetchall())

    # AsyncSession: empty args, not None, so asyncmy runs every statement prepared.
    async def fetch_one(self, statement: str, args: Sequence[Any]) -> Sequence[Any] | None:
        await self.cur.execute(statement, args)
        return await self.cur.fetchone()

    async def fetch_all(self, statement: str, args: Sequence[Any]) -> Sequence[Sequence[Any]]:
        await self.cur.execute(statement, args)
        return await self.cur.fetchall()

    async def execute(self, statement: str, args: Sequence[Any]) -> None:
        await self.cur.execute(statement, args)


#: Server variables read back after open (SHOW GLOBAL VARIABLES) for Engine Settings.
SERVER_VARIABLES = (
    "innodb_flush_log_at_trx_commit",
    "sync_binlog",
    "log_bin",
    "innodb_buffer_pool_size",
    "innodb_log_file_size",
    "innodb_redo_log_capacity",
)
#: What the reference starts MySQL with (the Configured column); scripts/mysql-server does the same.
REFERENCE_SERVER = {
    "innodb_flush_log_at_trx_commit": "2",
    "sync_binlog": "0",
    "log_bin": "OFF",
    "innodb_buffer_pool_size": "large (25% of RAM here)",
}


class MySqlEngine(Engine):
    """InnoDB over TCP; see the module docstring for the schema and the driver choice."""

    name = "mysql"
    needs_stabilization = False
    persistent = True
    default_settings: ClassVar[Mapping[str, Any]] = {
        "host": "",
        "port": 0,
        "database": "",
        "user": "",
        "password": "",
    }

    def __init__(self, config: EngineConfig) -> None:
        super().__init__(config)
        self.conn_settings = resolve_settings(self.settings)
        self.sql = Statements.build(DIALECT, self.limit)
        self._session: Session | None = None
        self._worker_sessions: list[Session] = []
        self._server_version: str | None = None
        self._flush_log_at_trx_commit: str | None = None
        self._server_variables: dict[str, str] = {}  # SHOW VARIABLES after open
        self._storage_bytes: int | None = None
        self.collation: str | None = None

    # --- lifecycle --------------------------------------------------------------------
    async def connect(self) -> Any:
        """A new autocommit connection; EngineUnavailable when no server answers."""
        s = self.conn_settings
        kwargs = dict(
            host=s["host"],
            port=s["port"],
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
                    f"CREATE DATABASE IF NOT EXISTS `{s['database']}` CHARACTER SET utf8mb4 COLLATE utf8mb4_bin"
                )
            await conn.select_db(s["database"])
            return conn
        except OperationalError as exc:
            if exc.args and exc.args[0] in UNREACHABLE_CODES:
                raise EngineUnavailable(self._unreachable(exc.args[-1])) from exc
            raise
        except OSError as exc:
            raise EngineUnavailable(self._unreachable(exc)) from exc

    def _unreachable(self, why: object) -> str:
        s = self.conn_settings
        return (
            f"no MySQL server reachable at {s['host']}:{s['port']} ({why}); "
            "start one with scripts/mysql-server"
        )

    async def delete_store(self) -> bool:
        """DROP the engine's table on the server (it writes no local files)."""
        session = Session(await self.connect(), self.sql)
        try:
            await session.query(f"DROP TABLE IF EXISTS {TABLE}")
        finally:
            await session.close()
        return True

    async def open(self, reset: bool, background: TaskGroup | None = None) -> None:
        conn = await self.connect()
        session = Session(conn, self.sql)
        try:
            rows = await session.query("SELECT VERSION(), @@innodb_flush_log_at_trx_commit")
            self._server_version, flush = rows[0]
            self._flush_log_at_trx_commit = str(flush)
            names = ", ".join(f"'{v}'" for v in SERVER_VARIABLES)
            shown = await session.query(f"SHOW GLOBAL VARIABLES WHERE Variable_name IN ({names})")
            self._server_variables = {str(k): str(v) for k, v in shown}
            self.collation = await pick_collation(session)
            if reset:
                await session.query(f"DROP TABLE IF EXISTS {TABLE}")
            await session.query(SCHEMA.format(collation=self.collation))
        except BaseException:
            await session.close()
            raise
        self._session = session
        self._storage_bytes = None
        try:  # P > 1: a connection per worker (a connection serves one query at a time)
            for _ in range(1, self.config.workers):
                self._worker_sessions.append(Session(await self.connect(), self.sql))
        except BaseException:
            await self.close()
            raise

    def worker(self, index: int) -> MySqlEngine:
        """A view of this engine bound to worker ``index``'s own connection."""
        if index == 0:
            return self
        view = copy.copy(self)
        view._session = self._worker_sessions[index - 1]
        view._worker_sessions = []
        return view

    async def close(self) -> None:
        sessions = [self._session, *self._worker_sessions]
        self._session, self._worker_sessions = None, []
        for session in sessions:
            if session is not None:
                await session.close()

    async def settle(self) -> None:
        """What the reference times as settle: the final commit (a no-op under autocommit)
        and ``FLUSH TABLES profiles``."""
        db = self._db
        await db.conn.commit()
        await db.query(f"FLUSH TABLES {TABLE}")

    async def measure_storage(self) -> int:
        """Untimed, after settle (as the reference): ANALYZE TABLE refreshes InnoDB's
        statistics (information_schema's lengths come from them), then data + index length."""
        db = self._db
        await db.query(f"ANALYZE TABLE {TABLE}")
        rows = await db.query(
            "SELECT data_length + index_length FROM information_schema.tables "
            "WHERE table_schema = DATABASE() AND table_name = %s",
            (TABLE,),
        )
        self._storage_bytes = int(rows[0][0]) if rows and rows[0][0] is not None else 0
        return self._storage_bytes

    def storage_bytes(self) -> int:
        """Data + index length cached by :meth:`measure_storage` (0 before it)."""
        return self._storage_bytes or 0

    @property
    def _db(self) -> Session:
        if self._session is None:
            raise RuntimeError("MySQL engine is not open")
        return self._session

    # --- operations: the shared SQL store over this worker's session --------------------
    async def insert(self, profiles: Sequence[Profile], marks: Marks) -> None:
        await self._db.store.insert(profiles, marks)

    async def read_by_id(self, uids: Sequence[int], marks: Marks) -> list[Profile]:
        return await self._db.store.read(self.sql.by_id, uids, marks)

    async def lookup_by_email(self, emails: Sequence[str], marks: Marks) -> list[Profile]:
        return await self._db.store.read(self.sql.by_email, emails, marks)

    async def scan_country_status(self, queries: Sequence[tuple[str, str]], marks: Marks) -> list[int]:
        return await self._db.store.select_many(self.sql.scan_country_status, queries, True, marks)

    async def query_country_status(self, queries: Sequence[tuple[str, str]], marks: Marks) -> list[Profile]:
        return await self._db.store.select_many(self.sql.query_country_status, queries, False, marks)

    async def scan_created_at(self, ranges: Sequence[tuple[int, int]], marks: Marks) -> list[int]:
        return await self._db.store.select_many(self.sql.scan_created_at, ranges, True, marks)

    async def query_created_at(self, ranges: Sequence[tuple[int, int]], marks: Marks) -> list[Profile]:
        return await self._db.store.select_many(self.sql.query_created_at, ranges, False, marks)

    async def scan_top_reputation(self, times: int, marks: Marks) -> list[int]:
        return await self._db.store.select_many(self.sql.scan_top_reputation, [()] * times, True, marks)

    async def query_top_reputation(self, times: int, marks: Marks) -> list[Profile]:
        return await self._db.store.select_many(self.sql.query_top_reputation, [()] * times, False, marks)

    async def update(self, uids: Sequence[int], transform: Transform, marks: Marks) -> list[Profile]:
        return await self._db.store.update(uids, transform, marks)

    async def count(self) -> int:
        return await self._db.store.count()

    # --- facts ------------------------------------------------------------------------
    def facts(self) -> EngineFacts:
        s = self.conn_settings
        flush = self._flush_log_at_trx_commit
        settings = [
            Setting("server", f"{s['host']}:{s['port']}"),
            Setting("database", str(s["database"])),
            Setting("user", str(s["user"])),
            Setting(
                "table", "InnoDB, utf8mb4 binary collation (no-pad where available), 4 secondary indexes"
            ),
            Setting("driver", f"asyncmy (prepared statements, statement cache {STMT_CACHE_SIZE})"),
        ]
        # The server's own settings as it runs them (SHOW GLOBAL VARIABLES), next to what
        # the reference starts its server with.
        for name in SERVER_VARIABLES:
            settings.append(
                Setting(
                    f"server {name}",
                    REFERENCE_SERVER.get(name, "server default"),
                    self._server_variables.get(name, "unknown until connected"),
                )
            )
        return EngineFacts(
            settings=settings,
            durability=Durability(
                log="InnoDB redo log",
                sync="per commit" if flush == "1" else "about once a second" if flush in ("0", "2") else "",
                write_unit="one autocommit transaction per insert and per update",
                after_crash="InnoDB recovers every committed transaction that reached the log",
                parameters={"innodb_flush_log_at_trx_commit": flush or "unknown until connected"},
            ),
            memory_scope=MemoryScope.CLIENT_ONLY,
            storage_method=StorageMethod.SERVER_ESTIMATE,
            versions=self.library_versions(),
            endpoints=[f"{s['host']}:{s['port']}"],
            colour="#f08c00",
        )

    @_hybridmethod
    def library_versions(self_or_cls: Any) -> dict[str, str]:  # called on the class or an instance
        """The driver's version; after open also the server's (SELECT VERSION())."""
        try:
            versions = {"asyncmy": importlib.metadata.version("asyncmy")}
        except importlib.metadata.PackageNotFoundError:
            versions = {"asyncmy": "unknown"}
        server = getattr(self_or_cls, "_server_version", None)
        if isinstance(server, str):
            versions["server"] = server
        return versions
