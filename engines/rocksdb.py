"""RocksDB adapter (via ``rocksdict``) reproducing the reference's RocksDB setup.

One database per store the workload declares (the profile store: profiles and four
indexes, as the reference) under the engine's data dir, WAL on,
sync writes off, one ``put``/``delete`` per index entry (no WriteBatch across indexes),
keys and values exactly as the workload spec states: the primary key is the 20-digit
user id and every index value is that primary key (the published reference program uses
8-byte big-endian ids for both, ~60 bytes less per profile before compression; the spec
is the contract here). Options are applied in the reference's order, which matters:
``optimize_level_style_compaction`` comes last and overrides the write-buffer settings
and the per-level compression, so the report shows the *effective* values RocksDB wrote
to its OPTIONS file next to the configured ones.

The workload's operations are its own (e.g. ``workloads/profile_store/kv_store.py``);
this adapter supplies the primitives (:class:`RocksKv`, one per database, and where batches
run: :func:`placement`, in :class:`~asyncbench.store.KvPrimitives`). rocksdict calls block, so every batch but the point reads makes
exactly one ``anyio.to_thread.run_sync`` call and the synchronous body loops doing one
rocksdict call per operation: the thread hop is paid once per batch. Point reads (by id,
by email) run on the event loop a batch at a time, because a worker thread buys them no
concurrency and costs them 15-20% (see ``_on_loop``). Iterators are created per query
inside the worker thread, so several tasks may share one engine.

Crash recovery: a record may be several puts into several databases (the profile store's
is five), so a process killed between
them leaves it half-written. ``close`` marks a clean shutdown once every database closed
without error; ``open(reset=False)`` without that mark says so to the workload
(``KvPrimitives.unclean``), whose store repairs before its first batch (the profile store:
``workloads/profile_store/kv_recovery.py``, sequential walks of the profiles and the four indexes: 18 s at 2_000_000 profiles,
``benchmarks/bench_kv_recovery.py``), so a normal close + reopen never pays it.
Writes are ordered so a crash leaves only extra index entries: an insert writes the index
entries before the profile, an update its new keys before the profile and deletes the old
ones after.

The data dir is the engine's own (``engines.store_dir``): a reset removes only the
databases its marker lists and files RocksDB names, and refuses a directory holding
anything else; an open that keeps the data requires the marker and every database and
opens each with ``create_if_missing`` off, so a deleted database is an error naming it,
never an empty index.
"""

from __future__ import annotations

import errno
import functools
import importlib.metadata
import os
import re
import tempfile
from collections.abc import Callable, Iterator, Mapping
from itertools import islice
from pathlib import Path
from typing import Any, TypeVar, cast

import anyio.to_thread
import rocksdict
from anyio.abc import TaskGroup

from asyncbench.engine import BackgroundThreads, Engine, EngineConfig, EngineCounters
from asyncbench.engines.clean_shutdown import CleanShutdownMarker
from asyncbench.engines.store_dir import MarkedStore, StoreDamaged, StoreDir, StoreLayout
from asyncbench.facts import Durability, EngineFacts, Setting
from asyncbench.store import KvPrimitives, Place, Placement

T = TypeVar("T")


_COMPRESSION = {
    "none": rocksdict.DBCompressionType.none,
    "snappy": rocksdict.DBCompressionType.snappy,
    "zlib": rocksdict.DBCompressionType.zlib,
    "bz2": rocksdict.DBCompressionType.bz2,
    "lz4": rocksdict.DBCompressionType.lz4,
    "lz4hc": rocksdict.DBCompressionType.lz4hc,
    "zstd": rocksdict.DBCompressionType.zstd,
}

#: What the engine's directory holds: one database per store the run's workload keeps
#: (``EngineConfig.stores``, set at open: :meth:`StoreLayout.for_stores`), with only the
#: files RocksDB (and rocksdict) name inside them, and the clean-shutdown mark.
LAYOUT = StoreLayout(
    engine="rocksdb",
    stores=(),
    stores_are_dirs=True,
    store_files=re.compile(
        r"CURRENT|IDENTITY|LOCK|LOG|LOG\.old\.\d+|(MANIFEST|OPTIONS)-\d+|\d+\.(log|sst|ldb|blob)"
        r"|[^/]*\.dbtmp|[^/]*\.trash|rocksdict-config\.json"
    ),
    own_files=re.compile(re.escape(CleanShutdownMarker.NAME)),
)
#: Bounds of the settings that size memory: 0 is invalid to RocksDB, and far beyond these
#: is a typo that fails (or exhausts memory) only after the run started.
MAX_WRITE_BUFFER_MB = 65_536
MAX_WRITE_BUFFER_NUMBER = 64

#: RocksDB's default num_levels, the length of the per-level compression list.
_NUM_LEVELS = 7

#: OPTIONS-file entries worth showing in the report (what RocksDB actually runs with).
_EFFECTIVE_KEYS = (
    "write_buffer_size",
    "max_write_buffer_number",
    "min_write_buffer_number_to_merge",
    "compression",
    "compression_per_level",
    "level0_file_num_compaction_trigger",
    "target_file_size_base",
    "max_bytes_for_level_base",
    "max_background_jobs",
)


#: The statistics tickers the cost counters read (``Options.get_statistics`` text).
_STATISTICS = (
    "rocksdb.wal.bytes",
    "rocksdb.flush.write.bytes",
    "rocksdb.compact.write.bytes",
    "rocksdb.compact.read.bytes",
    "rocksdb.stall.micros",
)


def parse_statistics(text: str) -> dict[str, int]:
    """RocksDB's statistics dump (``rocksdb.x COUNT : N`` lines) as ticker -> N; the
    histogram lines (``P50 : ...``) are left out."""
    out: dict[str, int] = {}
    for line in text.splitlines():
        name, sep, rest = line.partition(" COUNT : ")
        if sep and rest.strip().isdigit():
            out[name.strip()] = int(rest)
    return out


def read_options_file(db_dir: Path) -> dict[str, str]:
    """``key=value`` pairs of the newest OPTIONS file RocksDB wrote for ``db_dir``."""
    numbered = [p for p in db_dir.glob("OPTIONS-*") if p.name[8:].isdigit()]  # not *.dbtmp
    files = sorted(numbered, key=lambda p: int(p.name[8:]))
    if not files:
        return {}
    out: dict[str, str] = {}
    for line in files[-1].read_text().splitlines():
        key, sep, value = line.strip().partition("=")
        if sep and key not in out:  # the first section ([DBOptions], then default CF) wins
            out[key] = value
    return out


async def _writing(fn: Callable[..., T], *args: Any) -> T:
    """``fn(*args)`` in a worker thread, with RocksDB's out-of-space error as an OSError.

    rocksdict raises a bare ``Exception("IO error: No space left on device: ...")``; giving
    it ``errno.ENOSPC`` lets callers tell a full disk from a bug, and the report says so.
    """
    try:
        return await anyio.to_thread.run_sync(fn, *args)
    except Exception as exc:
        if type(exc) is Exception and "No space left on device" in str(exc):
            raise OSError(errno.ENOSPC, f"No space left on device (RocksDB: {exc})") from exc
        raise


@functools.cache
def rocksdb_version() -> str:
    """The bundled RocksDB's version; rocksdict has no API for it, but RocksDB writes it
    into every OPTIONS file, so open a throwaway database once and read it back."""
    with tempfile.TemporaryDirectory(prefix="asyncbench-rocksdb-version-") as tmp:
        db = rocksdict.Rdict(tmp, rocksdict.Options(raw_mode=True))
        db.close()
        del db
        return read_options_file(Path(tmp)).get("rocksdb_version", "unknown")


async def _on_loop(body: Callable[..., T], *args: Any) -> T:
    """A point-read batch on the event loop, then a turn for other tasks (as the lsm
    adapter does). rocksdict's ``get`` holds the GIL nearly throughout, so a worker thread
    buys no concurrency and its hop costs a share of the batch (measured:
    docs/results/floor-200k.md, "RocksDB point reads on the loop")."""
    out = body(*args)
    await anyio.sleep(0)
    return out


async def _in_thread(body: Callable[..., T], *args: Any) -> T:
    return await anyio.to_thread.run_sync(body, *args)


#: Writes in a worker thread (a full disk as an OSError), point reads on the loop, scans
#: and queries in a worker thread: one hop per batch.
PLACEMENT = Placement(writes=_writing, reads=_on_loop, scans=_in_thread)

#: How RocksDB's status text begins when what it read is damaged or gone.
_DAMAGE = ("Corruption:", "IO error:")


def _one_line(exc: BaseException) -> str:
    """RocksDB's message on one line (some span two: "... The file X may be corrupted.")."""
    return " ".join(str(exc).split())


def placement(data_dir: Path) -> Placement:
    """:data:`PLACEMENT`, with a read that meets damage reported as :class:`StoreDamaged`
    naming the store: rocksdict raises a bare ``Exception("Corruption: block checksum
    mismatch: stored(context removed) = ...")`` whose row said only ``Exception:``
    (RocksDB names the file when it knows it; the store is named here either way).
    One ``try`` per batch, free when nothing fails."""

    def naming(place: Place) -> Place:
        async def placed(body: Callable[..., T], *args: Any) -> T:
            try:
                return await place(body, *args)
            except Exception as exc:
                if type(exc) is Exception and str(exc).startswith(_DAMAGE):
                    raise StoreDamaged(f"{data_dir}: RocksDB cannot read the store: {_one_line(exc)}") from exc
                raise

        return placed

    return Placement(writes=PLACEMENT.writes, reads=naming(PLACEMENT.reads), scans=naming(PLACEMENT.scans))


def _mb(option: str | None) -> str | None:
    """An OPTIONS byte count as the MB figure the settings use."""
    if option is None or not option.isdigit():
        return option
    return f"{int(option) / 2**20:g} MB"



def _codec_name(codec: str) -> str:
    """``kLZ4Compression`` -> ``LZ4``, ``kNoCompression`` -> ``none``, ``kZSTD`` -> ``ZSTD``."""
    name = codec.removeprefix("k").removesuffix("Compression")
    return "none" if name == "No" else name


def _compression_applied(eff: Mapping[str, str]) -> str | None:
    """What ``compression`` does in the OPTIONS file: a non-empty ``compression_per_level``
    overrides it on every level (RocksDB's rule), so the row names the per-level codecs
    (``overridden per level: L0-L1 none, L2-L6 LZ4``) rather than an unused ``kZSTD``."""
    codec = eff.get("compression")
    levels = [c for c in (eff.get("compression_per_level") or "").split(":") if c]
    if not levels or all(c == codec for c in levels):
        return codec
    runs: list[tuple[int, int, str]] = []
    for i, c in enumerate(levels):
        if runs and runs[-1][2] == c:
            runs[-1] = (runs[-1][0], i, c)
        else:
            runs.append((i, i, c))
    parts = [f"L{a}-L{b} {_codec_name(c)}" if a != b else f"L{a} {_codec_name(c)}" for a, b, c in runs]
    return "overridden per level: " + ", ".join(parts)

class RocksKv:
    """A rocksdict database as a :class:`~asyncbench.store.KvStore`: get, put and
    delete are the database's own bound methods (no wrapper call per operation); a scan
    is one iterator created and dropped inside the calling worker thread.

    Every iteration ends by asking the iterator's status: rocksdict's key and item
    iterators end silently on an error (a corrupt block ends a scan early: 475 of 1000
    keys, and the checksum is simply wrong), while the raw iterator's ``status()`` raises
    RocksDB's error, which names the file and offset ("Corruption: block checksum
    mismatch ... in .../000009.sst offset 36330"). So the walks (count, the repair's
    items) are raw iterators whose status is checked where they stop; a scan keeps the
    key iterator (one call per key instead of three) and, whenever it ran out before its
    limit or its bound, asks a raw iterator seeked to where it stopped (``_check_end``):
    an error stops an iteration early, so it is always caught there, and a scan that
    ends by its limit or bound read every key it returns without error."""

    __slots__ = ("db", "get", "put", "delete")
    get: Callable[[bytes], bytes | None]
    put: Callable[[bytes, bytes], None]
    delete: Callable[[bytes], None]

    def __init__(self, db: rocksdict.Rdict) -> None:
        self.db = db
        # rocksdict types keys and values as any of its kinds; these databases hold bytes only
        self.get, self.put, self.delete = db.get, db.put, db.delete

    def items(self) -> Iterator[tuple[bytes, bytes]]:
        it = self.db.iter()
        it.seek_to_first()
        valid, key, value, step = it.valid, it.key, it.value, it.next
        while valid():
            yield key(), value()
            step()
        it.status()  # raises if the walk stopped on an error rather than at the end

    def count(self) -> int:
        it = self.db.iter()
        it.seek_to_first()
        n = 0
        valid, step = it.valid, it.next
        while valid():
            n += 1
            step()
        it.status()
        return n

    def scan(self, start: bytes, last: bytes | None, limit: int) -> list[bytes]:
        # One iterator per query, seeked to ``start``, at most ``limit`` keys: rocksdict's
        # key iterator steps and reads the key in one call (valid/key/next are three, which
        # cost 9-34% on the scan phases: docs/stores.md).
        # rocksdict types keys as any of its key kinds; these databases hold bytes keys only
        keys = cast("Iterator[bytes]", islice(self.db.keys(from_key=start), limit))
        out: list[bytes] = []
        if last is None:
            out = list(keys)
        else:
            for key in keys:
                if key > last:
                    return out  # stopped by the bound: every key up to it was read
                out.append(key)
        if len(out) < limit:  # the key iterator ran out: the end of the data, or an error
            self._check_end(out[-1] if out else start, bool(out))
        return out

    def _check_end(self, key: bytes, after: bool) -> None:
        """A key iterator ends silently on an error; a raw iterator at the same place
        says which: its status raises RocksDB's error (naming the file), and a valid
        position means the scan ended early without one."""
        it = self.db.iter()
        it.seek(key)
        if after and it.valid():
            it.next()
        if it.valid():
            raise RuntimeError(
                f"RocksDB {self.db.path()}: a scan ended at key {key!r} although the database holds more "
                "keys after it, and the iterator reported no error"
            )
        it.status()  # raises if the iteration stopped on an error rather than at the end


class RocksDbEngine(MarkedStore, Engine):
    """RocksDB, embedded through ``rocksdict``, set up as the reference sets it up: one
    database per store of the workload (the profile store's five) under the data directory, the write-ahead log
    on and synchronous writes off, one put or delete per index entry. The report shows the
    options RocksDB actually applied beside the configured ones."""

    store_layout = LAYOUT
    name = "rocksdb"
    #: Cost per operation over the knee's (200k), the reference plan measured on the quiet
    #: machine at 2M and 10M (docs/results/estimate.md, "Points, not one exponent").
    cost_growth = ((2_000_000, 1.32), (10_000_000, 1.47))
    in_all = True
    needs_stabilization = True
    default_settings = {
        "write_buffer_size_mb": 1024,
        "max_write_buffer_number": 4,
        "compression": "zstd",
        "sync": False,
        # False reproduces the reference: its optimize_level_style_compaction call sets a
        # per-level list that overrides `compression` (none for L0 and the base level, LZ4
        # below). A full compaction puts everything on the base level, so the compacted
        # store is uncompressed (50k profiles: 18.9 MB with zstd or none alike). True sets
        # `compression` on every level after that call, so the codec applies (4.6 MB).
        "compression_all_levels": False,
    }

    @classmethod
    def check_settings(cls, settings: Mapping[str, Any]) -> None:
        for key, top in (
            ("write_buffer_size_mb", MAX_WRITE_BUFFER_MB),
            ("max_write_buffer_number", MAX_WRITE_BUFFER_NUMBER),
        ):
            value = settings[key]
            if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= top:
                raise ValueError(f"engines.rocksdb.{key} must be an integer from 1 to {top:_d}, got {value!r}")
        if settings["compression"] not in _COMPRESSION:
            raise ValueError(
                f"engines.rocksdb.compression must be one of {', '.join(_COMPRESSION)}, "
                f"not {settings['compression']!r}"
            )

    def __init__(self, config: EngineConfig) -> None:
        super().__init__(config)
        self.check_settings(self.settings)
        self.parallelism = os.cpu_count() or 1
        self._dbs: list[rocksdict.Rdict] = []
        self._db_options: list[rocksdict.Options] = []
        self._effective: dict[str, str] = {}
        self._marker = CleanShutdownMarker(self.data_dir)

    # --- lifecycle --------------------------------------------------------------------
    def _options(self, create: bool = True) -> rocksdict.Options:
        """Per-database options, in the reference's call order (optimize last)."""
        buffer_bytes = int(self.settings["write_buffer_size_mb"]) * 1024 * 1024
        opts = rocksdict.Options(raw_mode=True)
        opts.create_if_missing(create)
        # RocksDB's statistics (flush, compaction and WAL bytes, stall time) for the cost of
        # each phase: counters at the default level, which leaves out the per-operation timers
        opts.enable_statistics()
        # RocksDB's default, stated: errors found in the files (at open, in reads and
        # compactions) are errors, never skipped over. An existing store is opened with
        # create_if_missing off, after the marker's record of its files was checked
        # (``StoreDir.open_existing``: RocksDB takes a MANIFEST cut in half for an empty
        # database, paranoid or not, and deletes the .sst files it no longer lists); a new
        # one only after a reset proved the directory holds nothing else.
        opts.set_paranoid_checks(True)
        opts.increase_parallelism(self.parallelism)
        opts.set_write_buffer_size(buffer_bytes)
        opts.set_max_write_buffer_number(int(self.settings["max_write_buffer_number"]))
        opts.set_compression_type(_COMPRESSION[self.settings["compression"]]())
        opts.optimize_level_style_compaction(buffer_bytes)
        if self.settings["compression_all_levels"]:
            codec = _COMPRESSION[self.settings["compression"]]
            opts.set_compression_per_level([codec() for _ in range(_NUM_LEVELS)])
        return opts

    def _open_sync(self, reset: bool) -> None:
        if self._dbs:
            raise RuntimeError("rocksdb engine is already open")
        names = self.config.stores
        store = StoreDir(self.data_dir, LAYOUT.for_stores(names))
        if reset:
            store.reset()
        else:
            store.open_existing()
        write_opts = rocksdict.WriteOptions()
        write_opts.sync = bool(self.settings["sync"])  # WAL stays enabled (disable_wal=False)
        dbs = []
        db_options: list[rocksdict.Options] = []
        try:
            for name in names:
                try:
                    opts = self._options(create=reset)
                    db = rocksdict.Rdict(str(self.data_dir / name), opts)
                except Exception as exc:
                    if reset:
                        raise
                    # the marker's stores were all there (open_existing): what RocksDB
                    # refuses now is a damaged database, never a missing one
                    raise StoreDamaged(
                        f"{self.data_dir / name}: RocksDB cannot open the database {name!r}: {_one_line(exc)}"
                    ) from exc
                db.set_write_options(write_opts)
                dbs.append(db)
                db_options.append(opts)
        except BaseException:
            for db in dbs:
                db.close()
            raise
        self._dbs = dbs
        self._db_options = db_options  # their statistics: cost_counters
        self._primitives = KvPrimitives(
            dict(zip(names, (RocksKv(db) for db in dbs), strict=True)), placement(self.data_dir)
        )
        options = read_options_file(self.data_dir / names[0])
        self._effective = {k: options[k] for k in _EFFECTIVE_KEYS if k in options}
        # A store that was not closed cleanly may hold a record's several puts only in
        # part: the workload's store repairs it before its first batch (the mark stays
        # away until a clean close, so a failed repair is tried again at the next open).
        if not self._marker.take() and not reset:
            self._primitives.unclean = True

    def _probe_effective(self) -> dict[str, str]:
        """The effective options of these settings, from a temporary database's OPTIONS file."""
        with tempfile.TemporaryDirectory(prefix="asyncbench-rocksdb-options-") as tmp:
            db = rocksdict.Rdict(tmp, self._options())
            db.close()
            del db
            options = read_options_file(Path(tmp))
        return {k: options[k] for k in _EFFECTIVE_KEYS if k in options}

    async def delete_store(self) -> bool:
        """The databases and the markers, after the same ownership checks as a reset."""
        await anyio.to_thread.run_sync(StoreDir(self.data_dir, LAYOUT).delete)
        return True

    async def open(self, reset: bool, background: TaskGroup | None = None) -> None:
        await _writing(self._open_sync, reset)

    def _close_sync(self) -> None:
        """Close every database even if one fails (each releases its handle either way),
        raise the first error, and mark a clean shutdown only when all closed cleanly."""
        dbs, self._dbs = self._dbs, []
        if not dbs:
            return
        error: BaseException | None = None
        for db in dbs:
            try:
                db.close()  # flushes memtables, then releases the handle
            except Exception as exc:
                error = error or exc
        if error is not None:
            raise error
        self._marker.set()
        StoreDir(self.data_dir, LAYOUT).record_files()  # what a later reset may delete, by name

    async def close(self) -> None:
        await _writing(self._close_sync)

    def _compact_all_sync(self) -> None:
        for db in self._dbs:
            db.compact_range(None, None)

    async def stabilize(self) -> None:
        """Full-range compaction of every database, as the reference does before reads."""
        await _writing(self._compact_all_sync)

    async def settle(self) -> None:
        await _writing(self._compact_all_sync)

    # --- cost -----------------------------------------------------------------------------
    def background_threads(self) -> BackgroundThreads | str:
        """RocksDB's flush and compaction pools: native threads it names ``rocksdb:high``
        and ``rocksdb:low`` (shared by the databases)."""
        return BackgroundThreads(names=("rocksdb:",))

    async def cost_counters(self) -> EngineCounters | str:
        """The statistics of the databases, summed: WAL, flush and compaction bytes
        written, compaction bytes read, and the write stall time."""
        if not self._db_options:
            return "the engine is not open"
        totals: dict[str, int] = dict.fromkeys(_STATISTICS, 0)
        for opts in self._db_options:
            for key, value in parse_statistics(opts.get_statistics() or "").items():
                if key in totals:
                    totals[key] += value
        return EngineCounters(
            written={"wal": totals["rocksdb.wal.bytes"], "flush": totals["rocksdb.flush.write.bytes"],
                     "compaction": totals["rocksdb.compact.write.bytes"]},  # fmt: skip
            other={"compaction_read_bytes": totals["rocksdb.compact.read.bytes"]},
            stall_seconds=totals["rocksdb.stall.micros"] / 1e6,
        )

    # --- operations: the workload's key/value store, placed by PLACEMENT -------------
    def worker(self, index: int) -> KvPrimitives:
        """Every worker shares the one set of databases (rocksdict databases are safe
        across threads), so the workload builds one store over them."""
        if not self._dbs:
            raise RuntimeError("rocksdb engine is not open")
        return self._primitives


    # --- facts ----------------------------------------------------------------------
    def facts(self) -> EngineFacts:
        s = self.settings
        mb = s["write_buffer_size_mb"]
        if not self._effective:  # asked before open: probe a throwaway database
            self._effective = self._probe_effective()
        eff = self._effective
        sync = bool(s["sync"])
        settings = [
            Setting("Databases", ",".join(self.config.stores) or "one per store of the workload"),
            Setting("Compression", str(s["compression"]).capitalize(), _compression_applied(eff)),
            Setting(
                "CompressionAllLevels",
                str(bool(s["compression_all_levels"])).lower(),
                eff.get("compression_per_level"),
            ),
            Setting("WriteBufferMb", str(mb), _mb(eff.get("write_buffer_size"))),
            Setting(
                "MaxWriteBufferNumber", str(s["max_write_buffer_number"]), eff.get("max_write_buffer_number")
            ),
            Setting("WriteSync", str(sync).lower()),
            # not in the reference's options: the cost table's flush/compaction/WAL bytes
            Setting("Statistics", "enabled (counters at the default level, no per-operation timers)"),
            Setting("Parallelism", str(self.parallelism), eff.get("max_background_jobs")),
            Setting(
                "LevelStyleCompaction",
                f"optimize_level_style_compaction({mb} MB) called last (reference order)",
            ),
            Setting("ReadStabilization", "Compact before read/query phases"),
        ]
        settings += [
            Setting(f"OPTIONS {k}", "-", v)
            for k, v in eff.items()
            if k
            not in (
                "compression",
                "compression_per_level",
                "write_buffer_size",
                "max_write_buffer_number",
                "max_background_jobs",
            )
        ]
        durability = Durability(
            log="write-ahead log on every database",
            sync="per write" if sync else "by the OS (WriteOptions.sync=false)",
            write_unit="one put per store a record touches, no WriteBatch across databases",
            after_crash="a workload that writes a record as several puts repairs them at open (unclean close)",
            synced_commits=bool(sync),
            parameters={
                "write_buffer_size": _mb(eff.get("write_buffer_size")) or f"{mb} MB",
                "max_write_buffer_number": eff.get(
                    "max_write_buffer_number", str(s["max_write_buffer_number"])
                ),
                "compression": eff.get(
                    "compression_per_level", eff.get("compression", str(s["compression"]))
                ),
            },
        )
        return EngineFacts(
            settings=settings,
            durability=durability,
            versions=self.library_versions(),
            needs_stabilization=True,
            colour="#d1495b",
        )

    @classmethod
    def library_versions(cls) -> dict[str, str]:
        return {
            "rocksdict": importlib.metadata.version("rocksdict"),
            "RocksDB": f"{rocksdb_version()} (read from the OPTIONS file; rocksdict has no version API)",
        }
