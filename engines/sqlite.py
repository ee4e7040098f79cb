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
import re
import sqlite3
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

import aiosqlite
import anyio.to_thread
from anyio.abc import TaskGroup
from asyncbench.engines.sql_profile_store import (
    TABLE,
    Dialect,
    Statements,
    sync_count,
    sync_insert,
    sync_read,
    sync_repeat,
    sync_select_many,
    sync_update,
)
from asyncbench.engines.store_dir import StoreDir, StoreLayout
from asyncbench.workloads.profile_store.profiles import Profile
from asyncbench.workloads.profile_store.store import Marks, ProfileStore, Transform

from asyncbench.engine import Engine, EngineConfig
from asyncbench.facts import Durability, EngineFacts, Setting

T = TypeVar("T")

DB_FILE = "profiles.db"
#: The database file and the two files WAL mode keeps beside it.
DB_SUFFIXES = ("", "-wal", "-shm")
#: What the engine's directory holds (``engines.store_dir``): the database, its WAL-mode
#: companions and the rollback journal of the other journal modes; a reset removes only these.
LAYOUT = StoreLayout(
    engine="sqlite",
    stores=(DB_FILE,),
    stores_are_dirs=False,
    own_files=re.compile(re.escape(DB_FILE) + r"-(wal|shm|journal)"),
)

SCHEMA = (
    f"""CREATE TABLE IF NOT EXISTS {TABLE} (
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
    f"CREATE INDEX IF NOT EXISTS idx_profiles_country_status ON {TABLE} (country, status, user_id)",
    f"CREATE INDEX IF NOT EXISTS idx_profiles_created_at ON {TABLE} (created_at, user_id)",
    f"CREATE INDEX IF NOT EXISTS idx_profiles_reputation ON {TABLE} (reputation DESC, user_id)",
)

DIALECT = Dialect(placeholder=lambda i: "?")

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
        self.sql = Statements.build(DIALECT, self.limit)
        self._conn: SqliteConnection | None = None
        self._worker_conns: list[SqliteConnection] = []

    def files(self) -> list[Path]:
        """The database file plus its -wal and -shm companions."""
        return [self.path.with_name(self.path.name + s) for s in DB_SUFFIXES]

    def connection(self) -> SqliteConnection:
        """A new, unopened connection configured like the engine's own."""
        return SqliteConnection(self.path, pragma_statements(self.settings))

    # --- lifecycle ----------------------------------------------------------------------
    async def delete_store(self) -> bool:
        """The database file and its -wal and -shm companions."""
        await anyio.to_thread.run_sync(StoreDir(self.data_dir, LAYOUT).delete)
        return True

    async def open(self, reset: bool, background: TaskGroup | None = None) -> None:
        if self._conn is not None:
            raise RuntimeError("SQLite engine is already open")
        store = StoreDir(self.data_dir, LAYOUT)
        if reset:  # only its own files
            store.reset()
        else:  # the database must exist
            store.require()
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

    def worker(self, index: int) -> ProfileStore:
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

    # --- operations: the shared SQL store's synchronous bodies, one hop per batch ----------
    async def insert(self, profiles: Sequence[Profile], marks: Marks) -> None:
        await self._db.run(sync_insert, self.sql, profiles, marks)

    async def read_by_id(self, uids: Sequence[int], marks: Marks) -> list[Profile]:
        return await self._db.run(sync_read, self.sql.by_id, uids, marks)

    async def lookup_by_email(self, emails: Sequence[str], marks: Marks) -> list[Profile]:
        return await self._db.run(sync_read, self.sql.by_email, emails, marks)

    async def scan_country_status(self, queries: Sequence[tuple[str, str]], marks: Marks) -> list[int]:
        return await self._db.run(sync_select_many, self.sql.scan_country_status, queries, True, marks)

    async def query_country_status(self, queries: Sequence[tuple[str, str]], marks: Marks) -> list[Profile]:
        return await self._db.run(sync_select_many, self.sql.query_country_status, queries, False, marks)

    async def scan_created_at(self, ranges: Sequence[tuple[int, int]], marks: Marks) -> list[int]:
        return await self._db.run(sync_select_many, self.sql.scan_created_at, ranges, True, marks)

    async def query_created_at(self, ranges: Sequence[tuple[int, int]], marks: Marks) -> list[Profile]:
        return await self._db.run(sync_select_many, self.sql.query_created_at, ranges, False, marks)

    async def scan_top_reputation(self, times: int, marks: Marks) -> list[int]:
        return await self._db.run(sync_repeat, self.sql.scan_top_reputation, times, True, marks)

    async def query_top_reputation(self, times: int, marks: Marks) -> list[Profile]:
        return await self._db.run(sync_repeat, self.sql.query_top_reputation, times, False, marks)

    async def update(self, uids: Sequence[int], transform: Transform, marks: Marks) -> list[Profile]:
        return await self._db.run(sync_update, self.sql, uids, transform, marks)

    async def count(self) -> int:
        return await self._db.run(sync_count, self.sql)

    # --- facts ------------------------------------------------------------------------
    def facts(self) -> EngineFacts:
        s = self.settings
        settings = [
            Setting("journal_mode", s["journal_mode"]),
            Setting("synchronous", s["synchronous"]),
            Setting("cache_size", f"{s['cache_size_mb']} MB"),
            Setting("mmap_size", f"{s['mmap_size_mb']} MB"),
            Setting("temp_store", s["temp_store"]),
            Setting("writes", "autocommit, one transaction per insert / update"),
        ]
        wal = s["journal_mode"] == "WAL"
        return EngineFacts(
            settings=settings,
            durability=Durability(
                log="write-ahead log" if wal else f"rollback journal ({s['journal_mode']})",
                sync={"OFF": "never (by the OS)", "NORMAL": "at checkpoints" if wal else "per commit"}.get(
                    s["synchronous"], "per commit"
                ),
                write_unit="one autocommit transaction per insert and per update",
                after_crash="every committed transaction that reached the disk survives",
                parameters={"journal_mode": s["journal_mode"], "synchronous": s["synchronous"]},
            ),
            versions=self.library_versions(),
            colour="#2f6fb0",
        )

    @classmethod
    def library_versions(cls) -> dict[str, str]:
        return {"SQLite": sqlite3.sqlite_version, "aiosqlite": aiosqlite.__version__}
