"""SQLite engine: the reference's SQLite setup driven through ``aiosqlite``.

One ``profiles`` table with three secondary indexes, WAL + ``synchronous=NORMAL``, and every
write in autocommit (one transaction per INSERT and per UPDATE, like the reference). Each
operation is exactly one statement execution on a cached prepared statement; what is
amortized is only the event-loop <-> thread hop: a whole operation batch runs as one
function on aiosqlite's connection thread (see :class:`SqliteConnection`).

Prepared statements: the batch bodies pass the module's constant SQL strings, and the
sqlite3 module keeps a per-connection cache of prepared statements keyed by SQL text
(``cached_statements``, 128 by default, far above the dozen used here), so every
execution after a connection's first of each string only rebinds and steps.
"""

from __future__ import annotations

import contextlib
import copy
import sqlite3
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

import aiosqlite

from asyncbench.engine import Engine, EngineConfig
from workloads.profile_store.profiles import Profile

T = TypeVar("T")

DB_FILE = "profiles.db"
#: The database file and the two files WAL mode keeps beside it.
DB_SUFFIXES = ("", "-wal", "-shm")

COLUMNS = "user_id, email, country, status, created_at, last_login, reputation, display_name, bio"

SCHEMA = (
    """CREATE TABLE IF NOT EXISTS profiles (
        user_id INTEGER PRIMARY KEY,
        email TEXT NOT NULL UNIQUE,
        country TEXT,
        status TEXT,
        created_at INTEGER,
        last_login INTEGER,
        reputation INTEGER,
        display_name TEXT,
        bio TEXT
    )""",
    "CREATE INDEX IF NOT EXISTS idx_profiles_country_status ON profiles (country, status, user_id)",
    "CREATE INDEX IF NOT EXISTS idx_profiles_created_at ON profiles (created_at, user_id)",
    "CREATE INDEX IF NOT EXISTS idx_profiles_reputation ON profiles (reputation DESC, user_id)",
)

SQL_INSERT = f"INSERT INTO profiles ({COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
SQL_BY_ID = f"SELECT {COLUMNS} FROM profiles WHERE user_id = ?"
SQL_BY_EMAIL = f"SELECT {COLUMNS} FROM profiles WHERE email = ?"
_WHERE_CS = "WHERE country = ? AND status = ? ORDER BY user_id LIMIT ?"
_WHERE_CREATED = "WHERE created_at BETWEEN ? AND ? ORDER BY created_at, user_id LIMIT ?"
_ORDER_TOP = "ORDER BY reputation DESC, user_id LIMIT ?"
SQL_SCAN_COUNTRY_STATUS = f"SELECT user_id FROM profiles {_WHERE_CS}"
SQL_QUERY_COUNTRY_STATUS = f"SELECT {COLUMNS} FROM profiles {_WHERE_CS}"
SQL_SCAN_CREATED_AT = f"SELECT user_id FROM profiles {_WHERE_CREATED}"
SQL_QUERY_CREATED_AT = f"SELECT {COLUMNS} FROM profiles {_WHERE_CREATED}"
SQL_SCAN_TOP_REPUTATION = f"SELECT user_id FROM profiles {_ORDER_TOP}"
SQL_QUERY_TOP_REPUTATION = f"SELECT {COLUMNS} FROM profiles {_ORDER_TOP}"
#: email and created_at never change on update (spec), so their indexes are left alone.
SQL_UPDATE = (
    "UPDATE profiles SET country = ?, status = ?, last_login = ?, reputation = ?, "
    "display_name = ?, bio = ? WHERE user_id = ?"
)
SQL_COUNT = "SELECT COUNT(*) FROM profiles"

JOURNAL_MODES = ("WAL", "DELETE", "TRUNCATE", "PERSIST", "MEMORY", "OFF")
SYNCHRONOUS = ("OFF", "NORMAL", "FULL", "EXTRA")
TEMP_STORES = ("DEFAULT", "FILE", "MEMORY")


def validate_settings(settings: Mapping[str, Any]) -> dict[str, Any]:
    """Checked, normalised settings (enum values upper-cased); ValueError names the bad one."""
    out = dict(settings)
    for key in ("cache_size_mb", "mmap_size_mb"):
        value = out[key]
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ValueError(f"engines.sqlite.{key} must be an integer >= 0 (MB), got {value!r}")
    for key, allowed in (
        ("journal_mode", JOURNAL_MODES),
        ("synchronous", SYNCHRONOUS),
        ("temp_store", TEMP_STORES),
    ):
        value = out[key]
        if not isinstance(value, str) or value.upper() not in allowed:
            raise ValueError(f"engines.sqlite.{key} must be one of {', '.join(allowed)}, got {value!r}")
        out[key] = value.upper()
    return out


def pragma_statements(settings: Mapping[str, Any]) -> list[str]:
    """The PRAGMAs applied on every open, from validated settings.

    ``cache_size`` is given negative, i.e. in KiB, so the TOML's MB mean the same whatever
    the page size; ``mmap_size`` is in bytes.
    """
    return [
        f"PRAGMA journal_mode={settings['journal_mode']}",
        f"PRAGMA synchronous={settings['synchronous']}",
        f"PRAGMA cache_size={-settings['cache_size_mb'] * 1024}",
        f"PRAGMA mmap_size={settings['mmap_size_mb'] * 1024 * 1024}",
        f"PRAGMA temp_store={settings['temp_store']}",
    ]


# --- batch bodies: run on the connection's own thread, one statement per operation ------------
# They take the stdlib connection, so the benchmark can run the very same bodies without the hop.


def configure(conn: sqlite3.Connection, pragmas: Sequence[str]) -> None:
    for pragma in pragmas:
        conn.execute(pragma).fetchall()  # journal_mode answers with a row; drain it
    for statement in SCHEMA:
        conn.execute(statement)


def insert_batch(conn: sqlite3.Connection, profiles: Sequence[Profile]) -> None:
    """One autocommit INSERT per profile.

    ``executemany`` steps the one prepared INSERT once per row; with ``isolation_level=None``
    the sqlite3 module opens no transaction around it, so every row commits on its own (the
    tests check the WAL gets a commit per row). It only saves the Python loop.
    """
    conn.executemany(SQL_INSERT, profiles)


def read_batch(conn: sqlite3.Connection, sql: str, keys: Sequence[Any]) -> list[Profile]:
    """One point SELECT per key, rows in request order, missing keys skipped."""
    cur = conn.cursor()
    execute = cur.execute
    out = []
    append = out.append
    for key in keys:
        row = execute(sql, (key,)).fetchone()
        if row is not None:
            append(row)
    return out


def scan_batch(conn: sqlite3.Connection, sql: str, params: Sequence[tuple]) -> list[int]:
    """One index-only SELECT of user ids per query, concatenated in query order."""
    cur = conn.cursor()
    execute = cur.execute
    out: list[int] = []
    extend = out.extend
    for p in params:
        extend([uid for (uid,) in execute(sql, p)])
    return out


def query_batch(conn: sqlite3.Connection, sql: str, params: Sequence[tuple]) -> list[Profile]:
    """One full-row SELECT per query (same WHERE / ORDER BY / LIMIT as the scan)."""
    cur = conn.cursor()
    execute = cur.execute
    out: list[Profile] = []
    extend = out.extend
    for p in params:
        extend(execute(sql, p).fetchall())
    return out


def update_batch(
    conn: sqlite3.Connection, uids: Sequence[int], transform: Callable[[Profile], Profile]
) -> list[Profile]:
    """Per id: SELECT the row, transform it, one autocommit UPDATE; missing ids skipped."""
    cur = conn.cursor()
    execute = cur.execute
    out = []
    append = out.append
    for uid in uids:
        old = execute(SQL_BY_ID, (uid,)).fetchone()
        if old is None:
            continue
        new = transform(old)
        if new[0] != old[0] or new[1] != old[1] or new[4] != old[4]:
            raise ValueError(f"update of {uid} changed user_id, email or created_at")
        execute(SQL_UPDATE, (new[2], new[3], new[5], new[6], new[7], new[8], uid))
        append(new)
    return out


def count_rows(conn: sqlite3.Connection) -> int:
    return conn.execute(SQL_COUNT).fetchone()[0]


def checkpoint(conn: sqlite3.Connection) -> tuple[int, int, int]:
    """Copy the WAL into the database file and truncate the WAL to zero bytes."""
    return conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()


# --- connection -----------------------------------------------------------------------------


class SqliteConnection:
    """One aiosqlite connection (so one dedicated thread) set up for the workload.

    aiosqlite serves each connection from its own thread and queues every call to it; one
    hop costs tens of microseconds, far more than an SQLite point read. :meth:`run` therefore
    submits a whole batch function to that thread in one hop, where it loops with the stdlib
    connection. aiosqlite has no public "run this callable on the connection thread" API:
    its own public methods (``execute``, ``create_function``, ``backup``...) are all thin
    wrappers over ``Connection._execute(fn, *args)`` on ``Connection._conn``, which have kept
    that shape since aiosqlite 0.11; :meth:`open` checks both exist so a future change fails
    loudly instead of silently. Rejected alternatives: ``executemany`` with a parameter
    generator cannot SELECT; a separate ``to_thread`` worker would not be aiosqlite's thread
    and would race with it on a thread-bound sqlite3 connection.

    Calls from concurrent tasks are safe: the thread runs queued batches one after another.
    A multi-worker run opens one instance per worker.
    """

    def __init__(self, path: Path, pragmas: Sequence[str], busy_timeout_s: float = 30.0) -> None:
        self.path = Path(path)
        self.pragmas = list(pragmas)
        self.busy_timeout_s = busy_timeout_s
        self._db: aiosqlite.Connection | None = None
        self._raw: sqlite3.Connection | None = None

    async def open(self) -> None:
        if not hasattr(aiosqlite.Connection, "_execute") or not hasattr(aiosqlite.Connection, "_conn"):
            raise RuntimeError(
                f"aiosqlite {aiosqlite.__version__} lacks Connection._execute/_conn; "
                "engines/sqlite.py needs a version that has them (0.11 to 0.22 do)"
            )
        # isolation_level=None: the sqlite3 module never issues BEGIN, so each statement
        # is its own autocommit transaction.
        db = await aiosqlite.connect(self.path, isolation_level=None, timeout=self.busy_timeout_s)
        self._db = db
        self._raw = db._conn
        try:
            await self.run(configure, self.pragmas)
        except BaseException:
            await self.close()
            raise

    async def run(self, fn: Callable[..., T], *args: Any) -> T:
        """``fn(stdlib_connection, *args)`` on the connection thread, in one hop."""
        if self._db is None:
            raise RuntimeError("SQLite connection is not open")
        return await self._db._execute(fn, self._raw, *args)

    async def close(self) -> None:
        db, self._db, self._raw = self._db, None, None
        if db is not None:
            await db.close()


# --- engine ---------------------------------------------------------------------------------


class SqliteEngine(Engine):
    name = "sqlite"
    needs_stabilization = False
    default_settings = {
        "cache_size_mb": 1024,
        "mmap_size_mb": 1024,
        "journal_mode": "WAL",
        "synchronous": "NORMAL",
        "temp_store": "MEMORY",
    }

    @classmethod
    def check_settings(cls, settings: Mapping[str, Any]) -> None:
        validate_settings(settings)

    def __init__(self, config: EngineConfig) -> None:
        super().__init__(config)
        self.settings = validate_settings(self.settings)
        self.path = self.data_dir / DB_FILE
        self._conn: SqliteConnection | None = None
        self._worker_conns: list[SqliteConnection] = []

    def files(self) -> list[Path]:
        """The database file plus its -wal and -shm companions."""
        return [self.path.with_name(self.path.name + s) for s in DB_SUFFIXES]

    def connection(self) -> SqliteConnection:
        """A new, unopened connection configured like the engine's own."""
        return SqliteConnection(self.path, pragma_statements(self.settings))

    # --- lifecycle ----------------------------------------------------------------------
    async def open(self, reset: bool) -> None:
        if self._conn is not None:
            raise RuntimeError("SQLite engine is already open")
        self.data_dir.mkdir(parents=True, exist_ok=True)
        if reset:
            for f in self.files():
                f.unlink(missing_ok=True)
        conn = self.connection()
        await conn.open()
        self._conn = conn
        # P > 1: one connection (so one thread) per worker, like the reference; worker 0
        # uses the engine's own connection.
        try:
            for _ in range(1, self.config.workers):
                extra = self.connection()
                await extra.open()
                self._worker_conns.append(extra)
        except BaseException:
            await self.close()
            raise

    def worker(self, index: int) -> SqliteEngine:
        """A view of this engine bound to worker ``index``'s own connection."""
        if index == 0:
            return self
        view = copy.copy(self)
        view._conn = self._worker_conns[index - 1]
        view._worker_conns = []
        return view

    async def close(self) -> None:
        conns = [self._conn, *self._worker_conns]
        self._conn, self._worker_conns = None, []
        for conn in reversed(conns):
            if conn is not None:
                await conn.close()

    async def settle(self) -> None:
        await self._db.run(checkpoint)

    def storage_bytes(self) -> int:
        total = 0
        for f in self.files():
            with contextlib.suppress(FileNotFoundError):
                total += f.stat().st_size
        return total

    @property
    def _db(self) -> SqliteConnection:
        if self._conn is None:
            raise RuntimeError("SQLite engine is not open")
        return self._conn

    # --- operations ---------------------------------------------------------------------
    async def insert(self, profiles: Sequence[Profile]) -> None:
        await self._db.run(insert_batch, profiles)

    async def read_by_id(self, uids: Sequence[int]) -> list[Profile]:
        return await self._db.run(read_batch, SQL_BY_ID, uids)

    async def lookup_by_email(self, emails: Sequence[str]) -> list[Profile]:
        return await self._db.run(read_batch, SQL_BY_EMAIL, emails)

    async def scan_country_status(self, queries: Sequence[tuple[str, str]]) -> list[int]:
        limit = self.limit
        return await self._db.run(scan_batch, SQL_SCAN_COUNTRY_STATUS, [(c, s, limit) for c, s in queries])

    async def query_country_status(self, queries: Sequence[tuple[str, str]]) -> list[Profile]:
        limit = self.limit
        return await self._db.run(query_batch, SQL_QUERY_COUNTRY_STATUS, [(c, s, limit) for c, s in queries])

    async def scan_created_at(self, ranges: Sequence[tuple[int, int]]) -> list[int]:
        limit = self.limit
        return await self._db.run(scan_batch, SQL_SCAN_CREATED_AT, [(lo, hi, limit) for lo, hi in ranges])

    async def query_created_at(self, ranges: Sequence[tuple[int, int]]) -> list[Profile]:
        limit = self.limit
        return await self._db.run(query_batch, SQL_QUERY_CREATED_AT, [(lo, hi, limit) for lo, hi in ranges])

    async def scan_top_reputation(self, times: int) -> list[int]:
        return await self._db.run(scan_batch, SQL_SCAN_TOP_REPUTATION, [(self.limit,)] * times)

    async def query_top_reputation(self, times: int) -> list[Profile]:
        return await self._db.run(query_batch, SQL_QUERY_TOP_REPUTATION, [(self.limit,)] * times)

    async def update(self, uids: Sequence[int], transform: Callable[[Profile], Profile]) -> list[Profile]:
        return await self._db.run(update_batch, uids, transform)

    async def count(self) -> int:
        return await self._db.run(count_rows)

    # --- report metadata ----------------------------------------------------------------
    def describe_settings(self) -> dict[str, str]:
        s = self.settings
        return {
            "journal_mode": s["journal_mode"],
            "synchronous": s["synchronous"],
            "cache_size": f"{s['cache_size_mb']} MB",
            "mmap_size": f"{s['mmap_size_mb']} MB",
            "temp_store": s["temp_store"],
            "writes": "autocommit, one transaction per insert / update",
        }

    def durability(self) -> str:
        return f"SQLite: {self.settings['journal_mode']}, synchronous={self.settings['synchronous']}"

    @classmethod
    def library_versions(cls) -> dict[str, str]:
        return {"SQLite": sqlite3.sqlite_version, "aiosqlite": aiosqlite.__version__}
