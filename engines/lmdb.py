"""LMDB adapter (via ``lmdb``, py-lmdb): one environment, one named database per store.

The environment is the engine's data dir (``data.mdb`` and ``lock.mdb``), holding one
named database per store the run's workload declares (``EngineConfig.stores``: the profile
store's five, YCSB's ``usertable``), and nothing else: ``max_dbs`` is the number of those
stores (LMDB keeps its own two internal databases apart from that count).

Transactions, one per operation, as every engine does one engine call per operation: a
get is one read transaction, a scan one read transaction with one cursor (so a scan sees
one snapshot), a put or a delete one write transaction committed before the call returns;
nothing batches several operations into one transaction. py-lmdb opens every environment
with ``MDB_NOTLS``, so read transactions are not tied to a thread, and it caches one
finished read transaction for the next (``max_spare_txns=1``): a get measured 0.65 us, a
put with its commit 6.6 us (``sync = false``). All workers share the environment, and
every batch runs on the event loop (below), so one transaction is open at a time.

The map: LMDB maps the whole environment into the process's address space at a fixed
size, ``map_size_mb``, and a write that needs more fails with ``MDB_MAP_FULL``. The map
is not grown at run time: ``mdb_env_set_mapsize`` may only run while no transaction is
open in the process, which with several workers means a lock around every transaction,
for a limit a fixed map removes. The map is address space, not disk or memory (without
``MDB_WRITEMAP`` the file grows only as pages are written, and only the pages touched are
resident), so the default is 64 GiB: the profile store takes 11 MB at 20_000 profiles,
so about 5.6 GB at the largest plan shipped (10_000_000), a tenth of it. A put into a full
map raises :class:`LmdbMapFull`, which names the setting to raise. Measured: 100_000
one-put transactions (200-byte values, ``sync = false``), maps of 64 MiB, 64 GiB and 1 TiB
interleaved, best of 7: 9.4, 8.8 and 9.6 us a put, within this loaded machine's noise
(another run of 5: 8.0 us at 64 MiB, 9.3 at 1 TiB).

Durability is the ``sync`` and ``metasync`` settings (LMDB's ``MDB_NOSYNC`` and
``MDB_NOMETASYNC``), stated in the facts. LMDB has no log: a commit writes its new pages
and then the meta page that points at them, so a process that dies loses no committed
write and never leaves a half-written transaction. ``sync = false`` (default, as RocksDB's
``sync``) leaves writing the pages to disk to the OS, ``settle`` and ``close``; a system
crash may then lose the last commits. A record written as several puts (the profile
store's five) is several transactions, so after an unclean close the engine says so
(``KvPrimitives.unclean``, :class:`~asyncbench.engines.clean_shutdown.CleanShutdownMarker`)
and the workload repairs, as with RocksDB and the LSM.

Where batches run (:data:`PLACEMENT`): every batch on the event loop, then a turn for
other tasks. Measured in process with the profile store (20_000 profiles, batches of
1_000, each placement run 5 times interleaved, ``sync = false``; docs/engines.md has the
table): on the loop the point reads took 24 ms against 26 ms in a worker thread at P1 and
22 ms against 41 ms at P4, the updates 1.09 s against 1.14 s at P1 and 1.16 s against
2.33 s at P4 (best of 5), the inserts the same at P1 and 0.91 s against 1.07 s at P4.
py-lmdb holds the GIL through a get and a cursor step (well under a microsecond each), so
a thread buys a batch no concurrency and costs it the hop; and LMDB lets one write
transaction run at a time, so writers in several threads queue on its writer lock and
the GIL by turns (P4 updates twice as slow). With ``sync = true`` each commit waits for
an fsync on the loop; measured the same way (2_000 profiles) the times were ruled by the
shared disk (3 to 12 s for 10_000 puts, either placement) and did not decide, so the
placement stays one.

The store is the engine's own (``engines.store_dir``): ``data.mdb`` and ``lock.mdb`` are
the files it writes beside the marker, so a reset removes only them (with every named
database in them, whichever workload's) and refuses a directory holding anything else. An
open keeping the data requires the marker, ``data.mdb`` exactly as the last clean close
left it (every byte's CRC32: LMDB pages carry no checksum, so a flipped byte would be read
back as data, or a page pointer followed anywhere), then exactly the workload's named
databases: a missing one is :class:`StoreMissing`, another workload's is refused by name,
and a ``data.mdb`` shorter than the pages its meta page claims (which LMDB would map and
fault on) is :class:`StoreDamaged`. ``lock.mdb`` holds only LMDB's reader table, rebuilt
by the first process that opens the environment: one that begins with LMDB's magic
number is passed over whatever a reader left in it, and never missed when gone.
"""

from __future__ import annotations

import errno
import importlib.metadata
import os
import re
import stat
import sys
import tempfile
from collections.abc import Callable, Iterator, Mapping
from itertools import islice
from pathlib import Path
from typing import Any, TypeVar

import anyio.to_thread
import lmdb
from anyio.abc import TaskGroup

from asyncbench.engine import BackgroundThreads, Engine, EngineConfig
from asyncbench.engines.clean_shutdown import CleanShutdownMarker
from asyncbench.engines.store_dir import (
    MarkedStore,
    StoreDamaged,
    StoreDir,
    StoreDirError,
    StoreLayout,
    StoreMissing,
)
from asyncbench.facts import Durability, EngineFacts, MemoryScope, Setting
from asyncbench.store import KvPrimitives, Place, Placement

__all__ = ["LAYOUT", "LmdbEngine", "LmdbKv", "LmdbMapFull", "OtherDatabases"]

T = TypeVar("T")

DATA_FILE = "data.mdb"
LOCK_FILE = "lock.mdb"
#: The first word of LMDB's lock file (and meta pages), in the machine's byte order.
LMDB_MAGIC = 0xBEEFC0DE


def lock_is_lmdbs(path: Path) -> bool:
    """Whether ``path`` is absent or LMDB's lock file: it begins with LMDB's magic number
    (0xBEEFC0DE, in the machine's byte order). Whatever LMDB's readers left in its reader
    table, it holds nothing of the store; a user's file of that name is not LMDB's, so it
    is neither passed over as one nor deleted by a reset."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        return True
    except OSError:
        return False
    try:
        head = os.read(fd, 4)
    finally:
        os.close(fd)
    return len(head) == 4 and int.from_bytes(head, sys.byteorder) == LMDB_MAGIC


#: What the engine's directory holds: LMDB's two files and the clean-shutdown mark beside
#: the marker. The workload's stores are named databases inside ``data.mdb``, not files,
#: so the layout lists none; the engine checks them by name at open (``_open_databases``).
LAYOUT = StoreLayout(
    engine="lmdb",
    stores=(),
    stores_are_dirs=False,
    own_files=re.compile("|".join(map(re.escape, (DATA_FILE, LOCK_FILE, CleanShutdownMarker.NAME)))),
    sum_all=True,  # LMDB pages carry no checksum: a flipped byte would read back as data
    # the reader table: LMDB rebuilds it when the first process opens the environment
    transient_files=re.compile(re.escape(LOCK_FILE)),
    idle_transients=lambda directory: lock_is_lmdbs(directory / LOCK_FILE),
)

#: The bundled LMDB the engine opens a new environment with: 0.9.x (data format 1), the
#: production series; py-lmdb would otherwise take ``LMDB_DEFAULT_LIB_VERSION`` from the
#: environment, so a run's store format is stated, not inherited.
LIB_VERSION = 0
#: Bounds of ``map_size_mb``: below 1 MB not even the named databases fit; above 64 TiB is
#: beyond a 64-bit process's address space on common kernels (128 TiB, shared).
MIN_MAP_MB = 1
MAX_MAP_MB = 64 * 2**20
#: How many (key, value) pairs ``items`` reads per read transaction: a walk of a whole
#: store never holds one snapshot (which keeps every page it sees from reuse) for long.
ITEMS_CHUNK = 4096


class LmdbMapFull(RuntimeError):
    """A write needed more than the environment's map (``MDB_MAP_FULL``)."""


class OtherDatabases(StoreDirError):
    """The environment holds named databases this run's workload does not keep."""


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())


async def _on_loop(body: Callable[..., T], *args: Any) -> T:
    """A batch on the event loop, then a turn for other tasks."""
    out = body(*args)
    await anyio.sleep(0)
    return out


#: Every batch on the event loop (measured against a worker thread: the module doc).
PLACEMENT = Placement.everywhere(_on_loop)


def placement(data_dir: Path, map_mb: int, max_key: int) -> Placement:
    """:data:`PLACEMENT`, with LMDB's errors that a run must tell apart named, one ``try``
    per batch (free when nothing fails): a full map as :class:`LmdbMapFull` naming the
    setting, a full disk as ``OSError(ENOSPC)`` (the report says "disk full"), a key LMDB
    cannot hold as ValueError naming its limit, damage met while reading as
    :class:`StoreDamaged` naming the store."""

    def naming(place: Place) -> Place:
        async def placed(body: Callable[..., T], *args: Any) -> T:
            try:
                return await place(body, *args)
            except lmdb.MapFullError as exc:
                raise LmdbMapFull(
                    f"{data_dir}: the LMDB map is full (map_size_mb = {map_mb}): {_one_line(exc)}; raise "
                    "[engines.lmdb] map_size_mb (address space only: the file grows as pages are written)"
                ) from exc
            except lmdb.BadValsizeError as exc:
                raise ValueError(
                    f"{data_dir}: LMDB holds keys of 1 to {max_key} bytes: {_one_line(exc)}"
                ) from exc
            except (lmdb.CorruptedError, lmdb.PageNotFoundError, lmdb.PanicError) as exc:
                raise StoreDamaged(f"{data_dir}: LMDB cannot read the store: {_one_line(exc)}") from exc
            except lmdb.Error as exc:
                if getattr(exc, "code", None) == errno.ENOSPC or "No space left on device" in str(exc):
                    raise OSError(errno.ENOSPC, f"No space left on device (LMDB: {_one_line(exc)})") from exc
                raise

        return placed

    return Placement(writes=naming(PLACEMENT.writes), reads=naming(PLACEMENT.reads), scans=naming(PLACEMENT.scans))


class WriteFailures:
    """Whether a put or delete of this open failed (a full disk, a full map, a cancelled
    call). Shared by every database of the environment: a workload's record may be several
    puts, so one that failed may have left the record partial, and the close must then not
    mark the store clean, or the next open would skip the workload's repair (a full disk
    left an index entry without its profile behind a clean mark: tests/test_disk_full.py)."""

    __slots__ = ("failed",)

    def __init__(self) -> None:
        self.failed = False


class LmdbKv:
    """One named database of the environment as a :class:`~asyncbench.store.KvStore`:
    every call its own transaction, aborted (a read) or committed (a write) before it
    returns, so no reader slot or writer lock outlives the call."""

    __slots__ = ("begin", "db", "writes")

    def __init__(self, env: lmdb.Environment, db: Any, writes: WriteFailures) -> None:
        self.begin = env.begin
        self.db = db  # py-lmdb's database handle (its type is private: lmdb._Database)
        self.writes = writes

    def get(self, key: bytes) -> bytes | None:
        txn = self.begin(db=self.db)
        try:
            return txn.get(key)
        finally:
            txn.abort()

    def put(self, key: bytes, value: bytes) -> None:
        txn = self.begin(db=self.db, write=True)
        try:
            txn.put(key, value)
        except BaseException:
            self.writes.failed = True
            txn.abort()
            raise
        try:
            txn.commit()  # LMDB frees the transaction whether the commit succeeds or not
        except BaseException:
            self.writes.failed = True
            raise

    def delete(self, key: bytes) -> None:
        txn = self.begin(db=self.db, write=True)
        try:
            txn.delete(key)
        except BaseException:
            self.writes.failed = True
            txn.abort()
            raise
        try:
            txn.commit()
        except BaseException:
            self.writes.failed = True
            raise

    def scan(self, start: bytes, last: bytes | None, limit: int) -> list[bytes]:
        """The first ``limit`` keys >= ``start`` and <= ``last`` (None: no bound) in
        LMDB's byte order, from one cursor in one read transaction. LMDB keys are never
        empty, so ``start = b""`` is the first key. A cursor raises on what it cannot
        read (no silent early end, unlike rocksdict's key iterator)."""
        txn = self.begin(db=self.db)
        try:
            cursor = txn.cursor()
            if not (cursor.set_range(start) if start else cursor.first()):
                return []
            keys = islice(cursor.iternext(keys=True, values=False), limit)
            if last is None:
                return list(keys)
            out: list[bytes] = []
            for key in keys:
                if key > last:
                    break
                out.append(key)
            return out
        finally:
            txn.abort()

    def items(self) -> Iterator[tuple[bytes, bytes]]:
        """Every (key, value) in key order, :data:`ITEMS_CHUNK` pairs per read transaction
        (each chunk resumes after the last key of the one before)."""
        after: bytes | None = None
        while True:
            txn = self.begin(db=self.db)
            try:
                cursor = txn.cursor()
                if after is None:
                    found = cursor.first()
                else:
                    found = cursor.set_range(after)
                    if found and cursor.key() == after:
                        found = cursor.next()
                chunk = list(islice(cursor.iternext(), ITEMS_CHUNK)) if found else []
            finally:
                txn.abort()
            yield from chunk
            if len(chunk) < ITEMS_CHUNK:
                return
            after = chunk[-1][0]

    def count(self) -> int:
        """The database's entry count from its header (no walk)."""
        txn = self.begin(db=self.db)
        try:
            return int(txn.stat(self.db)["entries"])
        finally:
            txn.abort()


def _check_names(stores: tuple[str, ...]) -> list[bytes]:
    """The workload's store names as LMDB database names: at least one, distinct, and not
    empty (LMDB names a database by a key of its main database)."""
    if not stores:
        raise ValueError(
            "the lmdb engine was given no key/value stores to open (EngineConfig.stores: the run's "
            "workload declares them as kv_stores)"
        )
    if len(set(stores)) != len(stores) or not all(stores):
        raise ValueError(f"the lmdb engine cannot keep stores named {list(stores)} (non-empty, distinct names)")
    return [name.encode() for name in stores]


class LmdbEngine(MarkedStore, Engine):
    """LMDB, embedded through py-lmdb: one memory-mapped copy-on-write B+tree environment
    holding a named database per store of the workload, every get and scan its own read
    transaction and every put and delete its own write transaction, synced as the sync
    and metasync settings say (off by default, as RocksDB's). The report shows the map
    size, flags and limits LMDB actually runs with beside the configured ones."""

    store_layout = LAYOUT
    name = "lmdb"
    #: Not in ``--engine all`` (nor a plan without engines): every test and run that takes
    #: the default set would run it too; a plan names it.
    in_all = False
    default_settings = {
        "map_size_mb": 65_536,  # 64 GiB of address space: the module doc
        "sync": False,
        "metasync": True,
        "readahead": True,
    }

    @classmethod
    def check_settings(cls, settings: Mapping[str, Any]) -> None:
        value = settings["map_size_mb"]
        if isinstance(value, bool) or not isinstance(value, int) or not MIN_MAP_MB <= value <= MAX_MAP_MB:
            raise ValueError(
                f"engines.lmdb.map_size_mb must be an integer from {MIN_MAP_MB} to {MAX_MAP_MB:_d}, got {value!r}"
            )
        for key in ("sync", "metasync", "readahead"):
            if not isinstance(settings[key], bool):
                raise ValueError(f"engines.lmdb.{key} must be true or false, got {settings[key]!r}")

    def __init__(self, config: EngineConfig) -> None:
        super().__init__(config)
        self.check_settings(self.settings)
        self._env: lmdb.Environment | None = None
        self._primitives: KvPrimitives | None = None
        self._effective: dict[str, str] = {}
        self._marker = CleanShutdownMarker(self.data_dir)
        self._writes = WriteFailures()  # this open's: renewed at each open

    # --- lifecycle --------------------------------------------------------------------
    def _environment(self, path: Path, stores: int) -> lmdb.Environment:
        s = self.settings
        return lmdb.open(
            str(path),
            map_size=int(s["map_size_mb"]) * 2**20,
            subdir=True,
            create=False,  # the directory is the StoreDir's, made (or checked) before
            max_dbs=stores,
            sync=bool(s["sync"]),
            metasync=bool(s["metasync"]),
            readahead=bool(s["readahead"]),
            max_spare_txns=1,  # the C extension keeps at most one anyway
            lock=True,
            lib_version=LIB_VERSION,
        )

    def _open_sync(self, reset: bool) -> None:
        if self._env is not None:
            raise RuntimeError("lmdb engine is already open")
        names = _check_names(self.config.stores)
        self._writes = WriteFailures()
        store = StoreDir(self.data_dir, LAYOUT)
        data = self.data_dir / DATA_FILE
        if reset:
            store.reset()
        else:
            store.open_existing()
            _require_data_file(data)
        try:
            env = self._environment(self.data_dir, len(names))
        except lmdb.Error as exc:
            if reset:
                raise
            raise StoreDamaged(f"{data}: LMDB cannot open the environment: {_one_line(exc)}") from exc
        try:
            if not reset:
                _check_extent(env, data)
            dbs = _open_databases(env, names, create=reset, path=data)
        except OtherDatabases:
            env.close()
            # refused before any write: a store closed cleanly (its mark still there) is
            # recorded as it is again, so the marker does not say "in use" (opened since its
            # last clean close), which would make the reset this error asks for refuse the
            # reader table LMDB rewrote at open as a file asyncbench cannot prove its own
            if self._marker.path.exists():
                StoreDir(self.data_dir, LAYOUT).record_files()
            raise
        except BaseException:
            env.close()
            raise
        self._env = env
        self._effective = _effective(env)
        self._primitives = KvPrimitives(
            {name.decode(): LmdbKv(env, db, self._writes) for name, db in zip(names, dbs, strict=True)},
            placement(self.data_dir, int(self.settings["map_size_mb"]), env.max_key_size()),
        )
        # A record may be several puts, each its own transaction: after an unclean stop
        # (no mark from close) the workload's store repairs before its first batch.
        if not self._marker.take() and not reset:
            self._primitives.unclean = True

    async def open(self, reset: bool, background: TaskGroup | None = None) -> None:
        await anyio.to_thread.run_sync(self._open_sync, reset)

    def _close_sync(self) -> None:
        """Sync (a clean mark then means the store is on disk, whatever ``sync`` says),
        close, mark a clean shutdown unless a write of this open failed (a record may be
        partial: :class:`WriteFailures`), and record the files a later reset may delete."""
        env, self._env = self._env, None
        self._primitives = None
        if env is None:
            return
        try:
            env.sync(True)
        finally:
            env.close()
        if not self._writes.failed:
            self._marker.set()
        StoreDir(self.data_dir, LAYOUT).record_files()

    async def close(self) -> None:
        await anyio.to_thread.run_sync(self._close_sync)

    async def settle(self) -> None:
        """Flush every committed page and the meta page to disk (``mdb_env_sync(force)``)."""
        env = self._env
        if env is not None:
            await anyio.to_thread.run_sync(env.sync, True)

    async def delete_store(self) -> bool:
        """``data.mdb``, ``lock.mdb`` and the markers, after the same checks as a reset."""
        await anyio.to_thread.run_sync(StoreDir(self.data_dir, LAYOUT).delete)
        return True

    # --- cost -----------------------------------------------------------------------------
    def background_threads(self) -> BackgroundThreads | str:
        return "LMDB has no threads of its own: every page it writes is written by the committing call"

    # --- operations -----------------------------------------------------------------------
    def worker(self, index: int) -> KvPrimitives:
        """Every worker shares the one environment, so the workload builds one store over it."""
        if self._primitives is None:
            raise RuntimeError("lmdb engine is not open")
        return self._primitives

    # --- facts ------------------------------------------------------------------------
    def _probe_effective(self) -> dict[str, str]:
        """What LMDB runs these settings with, from a throwaway environment (before open)."""
        with tempfile.TemporaryDirectory(prefix="asyncbench-lmdb-probe-") as tmp:
            env = self._environment(Path(tmp), 1)
            try:
                return _effective(env)
            finally:
                env.close()

    def facts(self) -> EngineFacts:
        s = self.settings
        if not self._effective:  # asked before open
            self._effective = self._probe_effective()
        eff = self._effective
        sync, metasync = bool(s["sync"]), bool(s["metasync"])
        settings = [
            Setting("Databases", ",".join(self.config.stores) or "one per store of the workload",
                    "named databases in one environment"),  # fmt: skip
            Setting("MapSizeMb", str(s["map_size_mb"]), eff.get("map_size")),
            Setting("Sync", str(sync).lower(), eff.get("sync")),
            Setting("MetaSync", str(metasync).lower(), eff.get("metasync")),
            Setting("ReadAhead", str(bool(s["readahead"])).lower(), eff.get("readahead")),
            Setting("WriteMap", "false", eff.get("writemap")),
            Setting("MaxReaders", "126 (LMDB's default)", eff.get("max_readers")),
            Setting("MaxKeySize", "-", eff.get("max_key_size")),
            Setting("PageSize", "-", eff.get("page_size")),
            Setting("Transactions", "one read transaction per get or scan, one write transaction per put or delete"),
            Setting("Placement", "every batch on the event loop, then a turn for other tasks (measured: docs/engines.md)"),
            Setting(
                "Memory",
                "the map is address space; the pages a run touches are the OS's page cache mapped "
                "into the process, counted in its resident memory",
            ),
        ]
        if sync and metasync:
            when = "per write: the commit's pages, then its meta page, fsynced before it returns"
        elif sync:
            when = "per write, pages only (MDB_NOMETASYNC): the meta page reaches the disk with the next commit's sync"
        else:
            when = "by the OS (MDB_NOSYNC), and at settle and close"
        durability = Durability(
            log="none: a copy-on-write B+tree, each commit writes its pages and then the meta page that points at them",
            sync=when,
            write_unit="one write transaction per put or delete; a record written as several puts is several transactions",
            after_crash=(
                "a process crash loses no committed write; a system crash may lose the last commits"
                + ("" if sync and metasync else " (those not yet on disk)")
                + "; a workload that writes a record as several puts repairs it at open (unclean close)"
            ),
            synced_commits=sync and metasync,
            parameters={"sync": str(sync).lower(), "metasync": str(metasync).lower(),
                        "map_size": eff.get("map_size", f"{s['map_size_mb']} MB")},  # fmt: skip
        )
        return EngineFacts(
            settings=settings,
            durability=durability,
            memory_scope=MemoryScope.PROCESS,
            versions=self.library_versions(),
            colour="#8e5ea2",
        )

    @classmethod
    def library_versions(cls) -> dict[str, str]:
        return {
            "lmdb (py-lmdb)": importlib.metadata.version("lmdb"),
            "LMDB": ".".join(map(str, lmdb.version(lib_version=LIB_VERSION))) + " (bundled, data format 1)",
        }


def _effective(env: lmdb.Environment) -> dict[str, str]:
    """What the open environment runs with, read back from LMDB."""
    flags, info = env.flags(), env.info()
    on = {True: "true", False: "false"}
    mb = info["map_size"] / 2**20
    return {
        "map_size": f"{int(mb)} MB" if mb.is_integer() else f"{mb:.3f} MB",
        "sync": on[flags["sync"]] + ("" if flags["sync"] else " (MDB_NOSYNC)"),
        "metasync": on[flags["metasync"]] + ("" if flags["sync"] else " (no effect while sync is off)"),
        "readahead": on[flags["readahead"]],
        "writemap": on[flags["writemap"]],
        "max_readers": str(env.max_readers()),
        "max_key_size": f"{env.max_key_size()} bytes",
        "page_size": f"{env.stat()['psize']} bytes",
    }


def _require_data_file(data: Path) -> None:
    """An open keeping the data needs ``data.mdb`` itself: LMDB would create an empty one."""
    try:
        st = os.lstat(data)
    except FileNotFoundError:
        raise StoreMissing(f"{data} is missing: the lmdb store was deleted or moved, and opening would start it empty") from None
    if not stat.S_ISREG(st.st_mode):
        raise StoreDirError(f"{data} is not a regular file; asyncbench did not make it")


def _check_extent(env: lmdb.Environment, data: Path) -> None:
    """``data.mdb`` holds every page its meta page claims: LMDB maps the file and would
    fault (SIGBUS) reading a page past its end, so a file cut short is refused here."""
    need = (env.info()["last_pgno"] + 1) * env.stat()["psize"]
    size = os.stat(data).st_size
    if size < need:
        raise StoreDamaged(
            f"{data} is {size:_d} bytes but its meta page claims {need:_d}: the file was cut short; refused as damaged"
        )


def _open_databases(env: lmdb.Environment, names: list[bytes], create: bool, path: Path) -> list[Any]:
    """The workload's named databases. Keeping the data, the environment must hold exactly
    these: one more is another workload's store, refused naming them all (as
    :meth:`StoreDir.require` refuses another workload's stores); one missing is
    :class:`StoreMissing`, never created empty in its place."""
    if not create:
        txn = env.begin()
        try:
            try:
                present = list(txn.cursor().iternext(keys=True, values=False))
            except lmdb.Error as exc:
                raise StoreDamaged(f"{path}: LMDB cannot read its main database: {_one_line(exc)}") from exc
        finally:
            txn.abort()
        extra = [n for n in present if n not in names]
        if extra:
            held = sorted(n.decode(errors="replace") for n in present)
            raise OtherDatabases(
                f"{path} holds the lmdb databases {held}, not the stores {sorted(n.decode() for n in names)} "
                "this run's workload keeps; open it with a reset to rebuild it"
            )
        missing = [n.decode() for n in names if n not in present]
        if missing:
            raise StoreMissing(
                f"{path}: the lmdb database(s) {', '.join(map(repr, missing))} listed by this workload are missing; "
                "the store was damaged, and opening would start them empty"
            )
    dbs = []
    for name in names:
        try:
            dbs.append(env.open_db(name, create=create))
        except lmdb.Error as exc:
            if create:
                raise
            raise StoreDamaged(f"{path}: LMDB cannot open the database {name.decode()!r}: {_one_line(exc)}") from exc
    return dbs
