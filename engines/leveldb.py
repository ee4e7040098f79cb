"""LevelDB adapter (via ``plyvel``): RocksDB's ancestor, with the settings people tune.

One LevelDB database per store the workload declares (``EngineConfig.stores``; the profile
store's five, YCSB's one) under the engine's data dir, its log on, synchronous writes off
unless ``sync`` says so, one ``put``/``delete`` per workload operation (no WriteBatch
across operations or databases). plyvel's wheels bundle LevelDB and Snappy, so nothing is
needed from the system.

Settings (``[engines.leveldb]``) are the ``leveldb::Options`` people tune: the write buffer,
the block cache, Bloom filter bits, compression (Snappy or none), the block size and the
open-file limit; plus ``sync`` (``WriteOptions.sync``) and ``verify_checksums``
(``ReadOptions.verify_checksums``). Each is checked against the range LevelDB's
``SanitizeOptions`` keeps (a value outside it would be clipped silently), so the value
configured is the value that runs. LevelDB's LOG states no options (only flushes,
compactions and deletions), so the facts' effective column says what plyvel passes to
``leveldb::Options``.

Where batches run, measured (``asyncbench.engines.leveldb`` over 50k profiles on the
shared two-core machine, the profile store's batches each way in alternation, fastest of
15-25 rounds, ms per 8 batches per worker): point reads (1000 ids a batch) 28.1 on the loop
vs 28.4 in a thread at P1, 28.5 vs 29.7 at P4; scans (100 a batch) 16.1 vs 16.8 and 15.9
vs 17.1; queries (20 scans and their gets) 11.5 vs 12.1 and 11.8 vs 13.3; updates (500 a
batch) 196 vs 202 at P1 but 220 vs 151 at P4. So point reads and scans run on the event
loop, each batch followed by a turn for other tasks: plyvel releases the GIL only inside
LevelDB's Get and each iterator step (a microsecond or less each), while the batch's
Python (the workload's keys, plyvel's argument handling) holds it, so a thread buys no
overlap and its hop costs a share. Writes run in a worker thread, one hop per batch: a
Put releases the GIL for the log's write and the memtable insert, which overlap another
worker's Python at P4; and LevelDB slows or stops writes while level 0 is full (a sleep,
or a wait for its compaction, inside ``Put``), which on the loop would hold every task.
LevelDB's flushes and compactions run in its own background thread.

Reads verify block checksums by default (``verify_checksums``; RocksDB's default, LevelDB's
is off): without it a flipped byte in an uncompressed block is read back as data. The
database is opened with ``paranoid_checks``. plyvel's key iterator ends silently when
LevelDB's iterator becomes invalid on an error at the end of the data (it checks the
status only while the iterator is valid), so a scan or walk that ran out asks a raw
iterator seeked to where it stopped (``_check_end``), whose every step raises LevelDB's
status, as the RocksDB adapter does. Corruption met while reading is
:class:`StoreDamaged` naming the database (a walk or scan) or the store directory (a
point read, whose plyvel call has no wrapper to name it): LevelDB's status ("block
checksum mismatch") names no file, and plyvel gives it as bytes (``b'...'``).

Crash recovery, ownership and damage are RocksDB's (``engines/rocksdb.py``): a clean close
writes the clean-shutdown mark, an open without it says ``KvPrimitives.unclean`` so a
workload that writes a record as several puts repairs it; the data dir is a
:class:`~asyncbench.engines.store_dir.StoreDir` (a reset removes only what the marker
proves ours, an open keeping data compares every file with the record of the last clean
close, then opens each database with ``create_if_missing`` off), and LevelDB's own refusal
to open one becomes :class:`StoreDamaged` naming the store.
"""

from __future__ import annotations

import errno
import functools
import importlib.metadata
import re
from collections.abc import Callable, Iterator, Mapping
from itertools import islice
from pathlib import Path
from typing import Any, TypeVar

import anyio
import anyio.to_thread
import plyvel
from anyio.abc import TaskGroup

from asyncbench.engine import Engine, EngineConfig
from asyncbench.engines.clean_shutdown import CleanShutdownMarker
from asyncbench.engines.store_dir import MarkedStore, StoreDamaged, StoreDir, StoreLayout
from asyncbench.facts import Durability, EngineFacts, Setting
from asyncbench.store import KvPrimitives, Place, Placement

__all__ = ["LAYOUT", "LevelDbEngine", "LevelKv"]

T = TypeVar("T")

#: What the engine's directory holds: one database per store of the run's workload, with
#: only the files LevelDB names inside them (``db/filename.cc``: tables ``.ldb`` and the
#: older ``.sst``, logs, manifests, CURRENT and its ``.dbtmp``, LOCK, LOG and LOG.old),
#: and the clean-shutdown mark.
LAYOUT = StoreLayout(
    engine="leveldb",
    stores=(),
    stores_are_dirs=True,
    store_files=re.compile(r"CURRENT|LOCK|LOG|LOG\.old|MANIFEST-\d+|\d+\.(log|ldb|sst|dbtmp)"),
    own_files=re.compile(re.escape(CleanShutdownMarker.NAME)),
)

#: ``compression`` -> what plyvel passes (``None``: ``kNoCompression``).
_COMPRESSION: dict[str, str | None] = {"snappy": "snappy", "none": None}

#: Integer settings and their bounds: LevelDB's ``SanitizeOptions`` clips write_buffer_size
#: to [64 KiB, 1 GiB], max_open_files to [74, 50000] and block_size to [1 KiB, 4 MiB]
#: (db/db_impl.cc), so a value outside would run as another value; the block cache has no
#: such clip, its top is a typo guard; 0 Bloom bits is no filter.
_BOUNDS: dict[str, tuple[int, int]] = {
    "write_buffer_size_mb": (1, 1024),
    "block_cache_size_mb": (1, 65_536),
    "bloom_filter_bits": (0, 64),
    "block_size": (1024, 4 * 2**20),
    "max_open_files": (74, 50_000),
}

#: How LevelDB's status text begins when what it read is damaged or gone.
_DAMAGE = ("Corruption:", "IO error:")


def _status(exc: BaseException) -> str:
    """LevelDB's status text of a plyvel error: plyvel raises its ``Error``s and ``IOError``
    with the status as bytes (``IOError(b"IO error: ...")``), whose ``str`` is ``b'...'``."""
    if exc.args and isinstance(exc.args[0], bytes):
        return exc.args[0].decode(errors="replace")
    return str(exc)


async def _on_loop(body: Callable[..., T], *args: Any) -> T:
    """A point-read or scan batch on the event loop, then a turn for other tasks (a worker
    thread measured no faster: see the module docstring)."""
    out = body(*args)
    await anyio.sleep(0)
    return out


async def _writing(body: Callable[..., T], *args: Any) -> T:
    """A write batch in a worker thread (one hop per batch), with LevelDB's out-of-space
    error as an OSError carrying ``errno.ENOSPC`` (plyvel raises ``IOError("IO error: ...:
    No space left on device")`` without an errno), so callers tell a full disk from a bug."""
    try:
        return await anyio.to_thread.run_sync(body, *args)
    except OSError as exc:
        if exc.errno is None and "No space left on device" in _status(exc):
            raise OSError(errno.ENOSPC, f"No space left on device (LevelDB: {_status(exc)})") from exc
        raise


def placement(data_dir: Path) -> Placement:
    """Writes in a worker thread, point reads and scans on the loop; a read or scan that
    meets damage is reported as :class:`StoreDamaged` naming the store directory (plyvel's
    ``CorruptionError`` names the file when LevelDB knows it). One ``try`` per batch, free
    when nothing fails."""

    def naming(place: Place) -> Place:
        async def placed(body: Callable[..., T], *args: Any) -> T:
            try:
                return await place(body, *args)
            except (plyvel.Error, OSError) as exc:  # CorruptionError is a plyvel.Error
                if _status(exc).startswith(_DAMAGE):
                    raise StoreDamaged(f"{data_dir}: LevelDB cannot read the store: {_status(exc)}") from exc
                raise

        return placed

    return Placement(writes=_writing, reads=naming(_on_loop), scans=naming(_on_loop))


class LevelKv:
    """A plyvel database as a :class:`~asyncbench.store.KvStore`. ``get``/``put``/``delete``
    are plyvel's bound methods, with ``verify_checksums``/``sync`` bound in only when set
    (a ``functools.partial``: no Python frame per call). A scan is one plyvel iterator
    created per query, seeked to ``start``, bounded in Python exactly as
    :class:`~asyncbench.engines.rocksdb.RocksKv`'s (the KvStore contract)."""

    __slots__ = ("db", "get", "put", "delete", "_verify")
    get: Callable[[bytes], bytes | None]
    put: Callable[[bytes, bytes], None]
    delete: Callable[[bytes], None]

    def __init__(self, db: plyvel.DB, sync: bool = False, verify_checksums: bool = True) -> None:
        self.db = db
        self._verify = verify_checksums
        self.get = functools.partial(db.get, verify_checksums=True) if verify_checksums else db.get
        self.put = functools.partial(db.put, sync=True) if sync else db.put
        self.delete = functools.partial(db.delete, sync=True) if sync else db.delete

    def items(self) -> Iterator[tuple[bytes, bytes]]:
        last: bytes | None = None
        try:
            for key, value in self.db.iterator(verify_checksums=self._verify):
                last = key
                yield key, value
            self._check_end(last or b"", last is not None)
        except plyvel.Error as exc:
            raise self._damaged(exc) from exc

    def count(self) -> int:
        n = 0
        last = b""
        try:
            for last in self.db.iterator(include_value=False, verify_checksums=self._verify):  # noqa: B007
                n += 1
            self._check_end(last, n > 0)
        except plyvel.Error as exc:
            raise self._damaged(exc) from exc
        return n

    def scan(self, start: bytes, last: bytes | None, limit: int) -> list[bytes]:
        try:
            keys: Iterator[bytes] = islice(
                self.db.iterator(start=start, include_value=False, verify_checksums=self._verify), limit
            )
            out: list[bytes] = []
            if last is None:
                out = list(keys)
            else:
                for key in keys:
                    if key > last:
                        return out  # stopped by the bound: every key up to it was read
                    out.append(key)
            if len(out) < limit:  # the iterator ran out: the end of the data, or an error
                self._check_end(out[-1] if out else start, bool(out))
        except plyvel.Error as exc:
            raise self._damaged(exc) from exc
        return out

    def _damaged(self, exc: BaseException) -> BaseException:
        """LevelDB's corruption as :class:`StoreDamaged` naming this database (LevelDB's
        "block checksum mismatch" names no file); any other error as it is."""
        if isinstance(exc, plyvel.CorruptionError):
            return StoreDamaged(f"{self.db.name}: LevelDB cannot read the database: {_status(exc)}")
        return exc

    def _check_end(self, key: bytes, after: bool) -> None:
        """plyvel's iterator ends silently when LevelDB's turns invalid on an error; a raw
        iterator at the same place says which: its seek and next raise LevelDB's status
        (naming the file), and a valid position means the iteration ended early without one."""
        it = self.db.raw_iterator(verify_checksums=self._verify)
        it.seek(key)
        if after and it.valid():
            it.next()
        if it.valid():
            raise RuntimeError(
                f"LevelDB {self.db.name!r}: an iteration ended at key {key!r} although the database holds "
                "more keys after it, and the iterator reported no error"
            )


class LevelDbEngine(MarkedStore, Engine):
    """LevelDB, embedded through ``plyvel``: one database per store of the workload under
    the data directory, its log on, one put or delete per operation; the settings people
    tune, validated against LevelDB's own ranges, and what plyvel passes shown beside them."""

    store_layout = LAYOUT
    name = "leveldb"
    # Not in ``--engine all``: every test that runs all engines would run it too (CI's time);
    # name it (``--engine leveldb``) to run it.
    in_all = False
    needs_stabilization = True
    default_settings = {
        "write_buffer_size_mb": 4,  # LevelDB's default
        "block_cache_size_mb": 8,  # LevelDB's default (its internal cache), per database
        "bloom_filter_bits": 10,  # LevelDB's documentation's advice; 0: no filter (its default)
        "compression": "snappy",  # LevelDB's default
        "block_size": 4096,  # LevelDB's default, bytes before compression
        "max_open_files": 1000,  # LevelDB's default, per database
        "sync": False,
        "verify_checksums": True,
    }

    @classmethod
    def check_settings(cls, settings: Mapping[str, Any]) -> None:
        for key, (low, top) in _BOUNDS.items():
            value = settings[key]
            if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= top:
                raise ValueError(f"engines.leveldb.{key} must be an integer from {low:_d} to {top:_d}, got {value!r}")
        if settings["compression"] not in _COMPRESSION:
            raise ValueError(
                f"engines.leveldb.compression must be one of {', '.join(_COMPRESSION)}, "
                f"not {settings['compression']!r}"
            )
        for key in ("sync", "verify_checksums"):
            if not isinstance(settings[key], bool):
                raise ValueError(f"engines.leveldb.{key} must be true or false, got {settings[key]!r}")

    def __init__(self, config: EngineConfig) -> None:
        super().__init__(config)
        self.check_settings(self.settings)
        self._dbs: list[plyvel.DB] = []
        self._marker = CleanShutdownMarker(self.data_dir)

    # --- lifecycle --------------------------------------------------------------------
    def _options(self) -> dict[str, Any]:
        """What plyvel passes to ``leveldb::Options`` (besides create_if_missing)."""
        s = self.settings
        return {
            "paranoid_checks": True,
            "write_buffer_size": int(s["write_buffer_size_mb"]) * 2**20,
            "lru_cache_size": int(s["block_cache_size_mb"]) * 2**20,
            "bloom_filter_bits": int(s["bloom_filter_bits"]),
            "compression": _COMPRESSION[s["compression"]],
            "block_size": int(s["block_size"]),
            "max_open_files": int(s["max_open_files"]),
        }

    def _open_sync(self, reset: bool) -> None:
        if self._dbs:
            raise RuntimeError("leveldb engine is already open")
        names = self.config.stores
        store = StoreDir(self.data_dir, LAYOUT.for_stores(names))
        if reset:
            store.reset()
        else:
            store.open_existing()
        options = self._options()
        dbs: list[plyvel.DB] = []
        try:
            for name in names:
                path = str(self.data_dir / name)
                try:
                    # a reset made the directory empty: an existing database there is not ours
                    dbs.append(plyvel.DB(path, create_if_missing=reset, error_if_exists=reset, **options))
                except plyvel.Error as exc:
                    if reset:
                        raise
                    # the marker's stores were all there (open_existing): what LevelDB
                    # refuses now is a damaged database, never a missing one
                    raise StoreDamaged(f"{path}: LevelDB cannot open the database {name!r}: {_status(exc)}") from exc
        except BaseException:
            for db in dbs:
                db.close()
            raise
        self._dbs = dbs
        sync, verify = bool(self.settings["sync"]), bool(self.settings["verify_checksums"])
        self._primitives = KvPrimitives(
            {name: LevelKv(db, sync, verify) for name, db in zip(names, dbs, strict=True)},
            placement(self.data_dir),
        )
        # A store that was not closed cleanly may hold a record's several puts only in
        # part: the workload's store repairs it before its first batch.
        if not self._marker.take() and not reset:
            self._primitives.unclean = True

    async def open(self, reset: bool, background: TaskGroup | None = None) -> None:
        await anyio.to_thread.run_sync(self._open_sync, reset)

    def _close_sync(self) -> None:
        """Close every database even if one fails, raise the first error, and mark a clean
        shutdown only when all closed cleanly. LevelDB does not flush its memtable at
        close: what it holds is in the database's log, replayed at the next open."""
        dbs, self._dbs = self._dbs, []
        if not dbs:
            return
        error: BaseException | None = None
        for db in dbs:
            try:
                db.close()
            except Exception as exc:
                error = error or exc
        if error is not None:
            raise error
        self._marker.set()
        StoreDir(self.data_dir, LAYOUT).record_files()  # what a later reset may delete, by name

    async def close(self) -> None:
        await anyio.to_thread.run_sync(self._close_sync)

    async def delete_store(self) -> bool:
        """The databases and the markers, after the same ownership checks as a reset."""
        await anyio.to_thread.run_sync(StoreDir(self.data_dir, LAYOUT).delete)
        return True

    def _compact_all_sync(self) -> None:
        for db in self._dbs:
            db.compact_range()  # the memtable first, then every level

    async def stabilize(self) -> None:
        """A full compaction of every database before reads, as the RocksDB engine does."""
        await anyio.to_thread.run_sync(self._compact_all_sync)

    async def settle(self) -> None:
        await anyio.to_thread.run_sync(self._compact_all_sync)

    async def cost_counters(self) -> str:
        return (
            "LevelDB's only counters (the leveldb.stats property) are compaction megabytes per level, "
            "rounded to whole megabytes: too coarse for a phase's difference"
        )

    def worker(self, index: int) -> KvPrimitives:
        """Every worker shares the one set of databases (a LevelDB handle is safe across
        threads and tasks), so the workload builds one store over them."""
        if not self._dbs:
            raise RuntimeError("leveldb engine is not open")
        return self._primitives

    # --- facts ----------------------------------------------------------------------
    def facts(self) -> EngineFacts:
        s = self.settings
        o = self._options()
        sync = bool(s["sync"])
        bits = o["bloom_filter_bits"]
        settings = [
            Setting("Databases", ",".join(self.config.stores) or "one per store of the workload"),
            Setting(
                "OptionsSource",
                "LevelDB's LOG states no options: the effective column is what plyvel passes to "
                "leveldb::Options (within the ranges SanitizeOptions keeps, so nothing is clipped)",
            ),
            Setting("WriteBufferMb", str(s["write_buffer_size_mb"]), f"write_buffer_size={o['write_buffer_size']}"),
            Setting(
                "BlockCacheMb",
                f"{s['block_cache_size_mb']} per database",
                f"block_cache=NewLRUCache({o['lru_cache_size']})",
            ),
            Setting(
                "BloomFilterBits",
                str(bits),
                f"filter_policy=NewBloomFilterPolicy({bits})" if bits else "filter_policy=nullptr (no filter)",
            ),
            Setting(
                "Compression",
                str(s["compression"]),
                "compression=kSnappyCompression" if o["compression"] else "compression=kNoCompression",
            ),
            Setting("BlockSize", str(s["block_size"]), f"block_size={o['block_size']}"),
            Setting("MaxOpenFiles", f"{s['max_open_files']} per database", f"max_open_files={o['max_open_files']}"),
            Setting("ParanoidChecks", "true", "paranoid_checks=true"),
            Setting(
                "VerifyChecksums",
                str(bool(s["verify_checksums"])).lower(),
                f"ReadOptions.verify_checksums={str(bool(s['verify_checksums'])).lower()} (gets and iterators)",
            ),
            Setting("WriteSync", str(sync).lower(), f"WriteOptions.sync={str(sync).lower()}"),
            Setting("Placement", "writes in a worker thread (one hop per batch), point reads and scans on the event loop"),
            Setting("ReadStabilization", "CompactRange over every database before read/query phases"),
        ]
        durability = Durability(
            log="LevelDB's log on every database",
            sync="per write" if sync else "by the OS (WriteOptions.sync=false)",
            write_unit="one put per store a record touches, no WriteBatch across databases",
            after_crash="a workload that writes a record as several puts repairs them at open (unclean close)",
            synced_commits=sync,
            parameters={
                "write_buffer_size": f"{s['write_buffer_size_mb']} MB",
                "compression": str(s["compression"]),
                "paranoid_checks": "true",
            },
        )
        return EngineFacts(
            settings=settings,
            durability=durability,
            versions=self.library_versions(),
            needs_stabilization=True,
            colour="#7b4fa0",
        )

    @classmethod
    def library_versions(cls) -> dict[str, str]:
        return {
            "plyvel": importlib.metadata.version("plyvel"),
            "LevelDB": f"{plyvel.__leveldb_version__} (bundled with plyvel)",
        }
