"""SQLite engine: the reference's SQLite setup driven through ``aiosqlite``.

A workload's tables (the profile store's: one table with three secondary indexes) in one
database file, WAL + ``synchronous=NORMAL``, and every
write in autocommit (one transaction per INSERT and per UPDATE, like the reference). Each
operation is exactly one statement execution on a cached prepared statement; what is
amortized is only the event-loop <-> thread hop: a whole operation batch runs as one
function on aiosqlite's connection thread (see :class:`SqliteConnection`). The batches
themselves are the workload's SQL store's (e.g. ``workloads/profile_store/sql_store.py``);
this module supplies the driver calls, the pragmas, and makes the tables a workload
declares (``engines/sql_tables.py``: recorded in the file, checked at every reopen).

Prepared statements: the batches pass the engine's constant SQL strings, and the
sqlite3 module keeps a per-connection cache of prepared statements keyed by SQL text
(``cached_statements``, 128 by default, far above the dozen used here), so every
execution after a connection's first of each string only rebinds and steps.
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
import sqlite3
import stat
import struct
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar, cast

import aiosqlite
import anyio.to_thread
from anyio.abc import TaskGroup

from asyncbench.engine import BackgroundThreads, Engine, EngineConfig, EngineCounters
from asyncbench.engines.sql_tables import DDL_SEPARATOR, RECORD_TABLE, Run, TableRecord, record_schema
from asyncbench.engines.store_dir import MarkedStore, StoreDamaged, StoreDir, StoreLayout, StoreMissing
from asyncbench.facts import Durability, EngineFacts, Setting
from asyncbench.store import Dialect, SqlPrimitives, run_to_completion

T = TypeVar("T")

DB_FILE = "store.db"
#: The database file and the two files WAL mode keeps beside it.
DB_SUFFIXES = ("", "-wal", "-shm")
#: What the engine's directory holds (``engines.store_dir``): the database, its WAL-mode
#: companions and the rollback journal of the other journal modes; a reset removes only these.
LAYOUT = StoreLayout(
    engine="sqlite",
    stores=(DB_FILE,),
    stores_are_dirs=False,
    own_files=re.compile(re.escape(DB_FILE) + r"-(wal|shm|journal)"),
    sum_all=True,  # SQLite pages have no checksum: a flipped byte in a value reads back as data
    # the last connection to close checkpoints the WAL into the database (whose CRC then
    # differs) and deletes both: gone is fine, changed is not
    transient_files=re.compile(re.escape(DB_FILE) + r"-(wal|shm)"),
    # ... and a reader that is not the last to close (a read-only sqlite3 CLI) leaves them
    # behind unchanged: told apart from damage by what the WAL would apply
    idle_transients=lambda directory: wal_is_idle(directory / DB_FILE) and shm_is_an_index(directory / DB_FILE),
)

#: The wal-index's version (the first field of the -shm's header, in native byte order).
_SHM_VERSION = 3007000
_SHM_HEADER = 48


def shm_is_an_index(db: Path) -> bool:
    """Whether ``db``'s ``-shm`` is absent or a wal-index SQLite wrote: its header's version
    is 3007000 and its two header copies agree. A file of the user's that merely has the
    name is not (so it is neither taken for SQLite's nor deleted)."""
    shm = db.with_name(db.name + "-shm")
    try:
        fd = os.open(shm, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except FileNotFoundError:
        return True
    except OSError:
        return False
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return False
        head = os.read(fd, 2 * _SHM_HEADER)
    finally:
        os.close(fd)
    return (
        len(head) == 2 * _SHM_HEADER
        and struct.unpack("=I", head[:4])[0] == _SHM_VERSION
        and head[:_SHM_HEADER] == head[_SHM_HEADER:]
    )

#: The WAL file's header and each frame's header (https://sqlite.org/fileformat2.html#walformat).
_WAL_HEADER, _WAL_FRAME_HEADER = 32, 24
_WAL_MAGIC = (0x377F0682, 0x377F0683)


def wal_is_idle(db: Path) -> bool:
    """Whether ``db``'s ``-wal`` would change nothing at the next open: absent, empty (what
    a read-only connection leaves), or every frame of its current generation (the salts of
    its header) holding a page equal to the database's page of that number (a WAL already
    checkpointed into the database, not truncated). The ``-shm`` is only an index of the
    WAL, rebuilt from it (:func:`shm_is_an_index` checks it is one). Anything else (unreadable, not a regular file, a frame the
    database does not hold) is not idle: the store is refused as changed."""
    wal = db.with_name(db.name + "-wal")
    try:
        wfd = os.open(wal, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except FileNotFoundError:
        return True
    except OSError:
        return False
    try:
        if not stat.S_ISREG(os.fstat(wfd).st_mode):
            return False
        with os.fdopen(os.dup(wfd), "rb") as w, open(db, "rb") as d:
            header = w.read(_WAL_HEADER)
            if not header:
                return True
            if len(header) < _WAL_HEADER:
                return False
            magic, _version, page_size, _seq, salt1, salt2 = struct.unpack(">6I", header[:24])
            if magic not in _WAL_MAGIC or page_size < 512 or page_size & (page_size - 1):
                return False
            while frame := w.read(_WAL_FRAME_HEADER):
                if len(frame) < _WAL_FRAME_HEADER:
                    return True  # a torn frame header: SQLite ignores it
                page_no, _commit, f1, f2 = struct.unpack(">4I", frame[:16])
                page = w.read(page_size)
                if (f1, f2) != (salt1, salt2) or len(page) < page_size:
                    return True  # an earlier generation's frame (or torn): never applied
                d.seek((page_no - 1) * page_size)
                if d.read(page_size) != page:
                    return False
            return True
    except OSError:
        return False
    finally:
        os.close(wfd)

#: Text compared as bytes (BINARY, the default collation), bytes as BLOBs. A workload's
#: table is made in the store's own file and recorded there (engines/sql_tables.py).
DIALECT = Dialect(placeholder=lambda i: "?")

#: The largest page cache and memory map a plan may give, in MB: 64 GB, the bound RocksDB's
#: write buffers have (engines/rocksdb.py). Beyond it is a typo: SQLite would take a page
#: cache of 99_999_999_999 MB as "no limit" and grow it until the machine swaps.
MAX_SIZE_MB = 65_536
JOURNAL_MODES = ("WAL", "DELETE", "TRUNCATE", "PERSIST", "MEMORY", "OFF")
SYNCHRONOUS = ("OFF", "NORMAL", "FULL", "EXTRA")
TEMP_STORES = ("DEFAULT", "FILE", "MEMORY")


def validate_settings(settings: Mapping[str, Any]) -> dict[str, Any]:
    """Checked, normalised settings (enum values upper-cased); ValueError names the bad one."""
    out = dict(settings)
    for key in ("cache_size_mb", "mmap_size_mb"):
        value = out[key]
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_SIZE_MB:
            raise ValueError(
                f"engines.sqlite.{key} must be an integer from 0 to at most {MAX_SIZE_MB:_d} (MB, 64 GB), got {value!r}"
            )
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


# --- run on the connection's own thread ------------------------------------------------------


def configure(
    conn: sqlite3.Connection, pragmas: Sequence[str], create: bool = True, path: Path | None = None
) -> None:
    """The pragmas, then the table record when ``create`` (a new store: a workload's
    tables are made later, through ``SqlPrimitives.create``). An existing store is
    checked first (:func:`check_tables`), before any pragma writes to the file
    (``journal_mode=WAL`` writes a header into an empty one)."""
    if not create:
        check_tables(conn, Path(path or DB_FILE))
    for pragma in pragmas:
        conn.execute(pragma).fetchall()  # journal_mode answers with a row; drain it
    if create:
        conn.execute(record_schema(DIALECT))


def _master(conn: sqlite3.Connection) -> set[tuple[Any, ...]]:
    return set(conn.execute("SELECT type, name, tbl_name, sql FROM sqlite_master").fetchall())


def check_tables(conn: sqlite3.Connection, path: Path) -> None:
    """An existing store holds asyncbench's table record and exactly what the recorded
    DDL makes: every table and index, none missing, none more, each as written (an empty
    file holds none). The recorded DDL runs into an in-memory database to tell (SQLite
    keeps each object's SQL text as given). StoreDamaged names the file and what differs."""
    names = {str(r[0]) for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall()}
    if RECORD_TABLE not in names:
        raise StoreDamaged(
            f"{path}: no {RECORD_TABLE} table, so asyncbench did not make this SQLite store (or it is empty, or an "
            "asyncbench from before the table record made it: rebuild it); the store is refused"
        )
    rows = _master(conn)
    want_db = sqlite3.connect(":memory:")
    try:
        want_db.execute(record_schema(DIALECT))
        for (ddl,) in conn.execute(f"SELECT ddl FROM {RECORD_TABLE}").fetchall():
            for statement in str(ddl).split(DDL_SEPARATOR):
                want_db.execute(statement)
        want = _master(want_db)
    except sqlite3.Error as exc:
        raise StoreDamaged(f"{path}: the record of asyncbench's tables cannot be replayed ({exc}); refused") from exc
    finally:
        want_db.close()
    if rows != want:
        missing = sorted(str(r[1]) for r in want - rows)
        extra = sorted(str(r[1]) for r in rows - want)
        what = "; ".join(
            part
            for part in (
                f"missing or changed: {', '.join(missing)}" if missing else "",
                f"not asyncbench's: {', '.join(extra)}" if extra else "",
            )
            if part
        )
        raise StoreDamaged(f"{path}: not the tables asyncbench made ({what}); the store is refused")


def _fetch(conn: sqlite3.Connection, statement: str, args: Sequence[Any]) -> list[Any]:
    return conn.execute(statement, args).fetchall()


async def _present(run: Run) -> set[str]:
    rows = await run("SELECT name FROM sqlite_master WHERE type = 'table'", ())
    return {str(r[0]) for r in rows}


def quick_check(conn: sqlite3.Connection, path: Path) -> None:
    """``PRAGMA quick_check`` of an existing store: every page, b-tree and record well
    formed (the index contents are not compared with the table's, which
    ``integrity_check`` adds at several times the cost). Cost measured in
    docs/stores.md. StoreDamaged names the file and the first problems."""
    try:
        problems = [row[0] for row in conn.execute("PRAGMA quick_check").fetchall()]
    except sqlite3.DatabaseError as exc:
        raise StoreDamaged(f"{path}: PRAGMA quick_check cannot read the store: {exc}") from exc
    if problems != ["ok"]:
        raise StoreDamaged(f"{path}: PRAGMA quick_check failed: {'; '.join(map(str, problems[:5]))}")


def checkpoint(conn: sqlite3.Connection) -> tuple[int, int, int]:
    """Copy the WAL into the database file and truncate the WAL to zero bytes."""
    row: tuple[int, int, int] = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()  # sqlite3 rows are Any
    return row


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

    It is also the workload SQL store's session (:class:`~asyncbench.store.SqlSession`):
    ``fetch_one``/``fetch_all``/``execute`` call the stdlib cursor directly and never
    suspend, so they run only inside a batch that :meth:`run_batch` hands to the thread.
    """

    def __init__(
        self,
        path: Path,
        pragmas: Sequence[str],
        busy_timeout_s: float = 30.0,
        create: bool = True,
        read_only: bool = False,
    ) -> None:
        self.path = Path(path)
        self.pragmas = list(pragmas)
        #: False: the database must exist (opened read-write, never created) and gets no schema.
        self.create = create
        #: An existing database this process may not write (``mode=ro``): see SqliteEngine.open.
        self.read_only = read_only and not create
        self.busy_timeout_s = busy_timeout_s
        self._db: aiosqlite.Connection | None = None
        self._raw: sqlite3.Connection | None = None
        self._execute: Callable[..., sqlite3.Cursor] | None = None  # the cursor's, on the thread

    async def open(self) -> None:
        if not hasattr(aiosqlite.Connection, "_execute") or not hasattr(aiosqlite.Connection, "_conn"):
            raise RuntimeError(
                f"aiosqlite {aiosqlite.__version__} lacks Connection._execute/_conn; "
                "engines/sqlite.py needs a version that has them (0.11 to 0.22 do)"
            )
        # isolation_level=None: the sqlite3 module never issues BEGIN, so each statement
        # is its own autocommit transaction.
        if self.create:
            db = await aiosqlite.connect(self.path, isolation_level=None, timeout=self.busy_timeout_s)
        else:  # mode=rw: an existing database only, never an empty one created in its place
            mode = "ro" if self.read_only else "rw"
            uri = Path(os.path.abspath(self.path)).as_uri() + f"?mode={mode}"
            try:
                db = await aiosqlite.connect(uri, uri=True, isolation_level=None, timeout=self.busy_timeout_s)
            except sqlite3.OperationalError as exc:
                gone = not os.path.lexists(self.path)  # missing is one thing, unopenable another
                raise (StoreMissing if gone else StoreDamaged)(
                    f"{self.path}: the SQLite store cannot be opened: {exc}"
                ) from exc
        self._db = db
        self._raw = db._conn
        try:
            await self.run(configure, self.pragmas, self.create, self.path)
            self._execute = (await self.run(sqlite3.Connection.cursor)).execute
        except sqlite3.DatabaseError as exc:
            await self.close()
            if self.create:
                raise
            raise StoreDamaged(f"{self.path}: SQLite cannot open the store: {exc}") from exc
        except BaseException:
            await self.close()
            raise

    async def run(self, fn: Callable[..., T], *args: Any) -> T:
        """``fn(stdlib_connection, *args)`` on the connection thread, in one hop."""
        if self._db is None:
            raise RuntimeError("SQLite connection is not open")
        # aiosqlite's _execute is unannotated (pyproject's untyped_calls_exclude): it returns fn's result
        return cast(T, await self._db._execute(fn, self._raw, *args))

    async def run_batch(self, body: Callable[..., Any], *args: Any) -> Any:
        """One batch of the shared SQL store on the connection thread, in one hop."""
        if self._db is None:
            raise RuntimeError("SQLite connection is not open")
        return await self._db._execute(run_to_completion, body, *args)

    # SqlSession: the stdlib calls, only ever called inside run_batch (on the thread)
    async def fetch_one(self, statement: str, args: Sequence[Any]) -> Any:
        return self._execute(statement, args).fetchone()  # type: ignore[misc]

    async def fetch_all(self, statement: str, args: Sequence[Any]) -> list[Any]:
        return self._execute(statement, args).fetchall()  # type: ignore[misc]

    async def execute(self, statement: str, args: Sequence[Any]) -> None:
        self._execute(statement, args)  # type: ignore[misc]

    async def close(self) -> None:
        db, self._db, self._raw, self._execute = self._db, None, None, None
        if db is not None:
            await db.close()


# --- engine ---------------------------------------------------------------------------------


class SqliteEngine(MarkedStore, Engine):
    """SQLite, embedded through ``aiosqlite``, set up as the reference sets it up: the
    workload's tables in one file, WAL with ``synchronous=NORMAL``, every
    write its own autocommit transaction, one connection per worker, each operation one
    prepared statement run on the connection's thread."""

    store_layout = LAYOUT
    name = "sqlite"
    cost_growth = 0.06  # per operation, above the estimate's knee (docs/results/estimate.md)
    in_all = True
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
        #: Opened read-only: an existing database this process may not write (see open).
        self.read_only = False
        self._worker_conns: list[SqliteConnection] = []
        self._stores: list[SqlPrimitives] = []

    def files(self) -> list[Path]:
        """The database file plus its -wal and -shm companions."""
        return [self.path.with_name(self.path.name + s) for s in DB_SUFFIXES]

    def connection(self, create: bool = True) -> SqliteConnection:
        """A new, unopened connection configured like the engine's own (``create``: a new
        store, given the schema; else an existing one, which must be there)."""
        return SqliteConnection(
            self.path, pragma_statements(self.settings), create=create, read_only=self.read_only
        )

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
        else:  # the database must exist, as its last clean close recorded it
            await anyio.to_thread.run_sync(store.open_existing)
        # A database this process may not write (a kept store made read-only, reused by
        # a user without write permission) is opened read-only: a read-write open falls
        # back to read-only by itself but then leaves -wal/-shm it cannot write, and the
        # next run's settle failed on them ("attempt to write a readonly database").
        self.read_only = not reset and not os.access(self.path, os.W_OK)
        conn = self.connection(create=reset)
        await conn.open()
        self._conn = conn
        # P > 1: one connection (so one thread) per worker, like the reference; worker 0
        # uses the engine's own connection.
        try:
            if not reset:  # every page of the existing store (its schema was checked at connect)
                await conn.run(quick_check, self.path)
            for _ in range(1, self.config.workers):
                extra = self.connection(create=reset)
                await extra.open()
                self._worker_conns.append(extra)
        except BaseException:
            await self.close()
            raise
        record = TableRecord(DIALECT, _present, str(self.path))
        self._stores = [
            SqlPrimitives(c, DIALECT, hop=c.run_batch, make_table=record.maker(functools.partial(c.run, _fetch)))
            for c in (conn, *self._worker_conns)
        ]

    def worker(self, index: int) -> SqlPrimitives:
        """The SQL primitives over worker ``index``'s own connection (its batches run on
        the connection's thread, whole)."""
        if not self._stores:
            raise RuntimeError("SQLite engine is not open")
        return self._stores[index]

    async def close(self) -> None:
        conns = [self._conn, *self._worker_conns]
        self._conn, self._worker_conns, self._stores = None, [], []
        for conn in reversed(conns):
            if conn is not None:
                await conn.close()
        if conns[0] is not None:  # it was open: record what a later reset may delete, by name
            await anyio.to_thread.run_sync(StoreDir(self.data_dir, LAYOUT).record_files)

    async def settle(self) -> None:
        if self.read_only:  # nothing written, and nothing it may write: the file is durable as it is
            return
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

    # --- facts ------------------------------------------------------------------------
    # --- cost ---------------------------------------------------------------------------
    def background_threads(self) -> BackgroundThreads | str:
        return "none: SQLite runs on the threads that call it (its CPU is the client's)"

    async def cost_counters(self) -> EngineCounters | str:
        return "SQLite keeps no byte counters of its own (its pages are the storage figure)"

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
                # FULL and EXTRA sync every commit; NORMAL does too with a rollback journal, but
                # in WAL mode only at checkpoints (sqlite.org/pragma.html#pragma_synchronous)
                synced_commits=s["synchronous"] in ("FULL", "EXTRA") or (s["synchronous"] == "NORMAL" and not wal),
            ),
            versions=self.library_versions(),
            colour="#2f6fb0",
        )

    @classmethod
    def library_versions(cls) -> dict[str, str]:
        return {"SQLite": sqlite3.sqlite_version, "aiosqlite": aiosqlite.__version__}
