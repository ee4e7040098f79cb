"""RocksDB adapter (via ``rocksdict``) reproducing the reference's RocksDB setup.

Five separate databases (profiles and four indexes) under the engine's data dir, WAL on,
sync writes off, one ``put``/``delete`` per index entry (no WriteBatch across indexes),
keys and values exactly as the workload spec states: the primary key is the 20-digit
user id and every index value is that primary key (the published reference program uses
8-byte big-endian ids for both, ~60 bytes less per profile before compression; the spec
is the contract here). Options are applied in the reference's order, which matters:
``optimize_level_style_compaction`` comes last and overrides the write-buffer settings
and the per-level compression, so the report shows the *effective* values RocksDB wrote
to its OPTIONS file next to the configured ones.

rocksdict calls block, so every public method makes exactly one
``anyio.to_thread.run_sync`` call per batch and the synchronous body loops doing one
rocksdict call per operation: the event loop never blocks on RocksDB and the thread hop
is paid once per batch. Iterators are created per query inside the worker thread, so
several tasks may share one engine.

Crash recovery: a profile is five puts into five databases, so a process killed between
them leaves it half-written. ``close`` marks a clean shutdown once every database closed
without error; ``open(reset=False)`` without that mark runs ``engines.kv_recovery.repair``
(sequential walks of the profiles and the four indexes: 18 s at 2_000_000 profiles,
``benchmarks/bench_kv_recovery.py``), so a normal close + reopen never pays it.
Writes are ordered so a crash leaves only extra index entries: an insert writes the index
entries before the profile, an update its new keys before the profile and deletes the old
ones after.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import importlib.metadata
import os
import shutil
import tempfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

import anyio.to_thread
import rocksdict

from asyncbench.engine import Engine, EngineConfig
from engines.kv_recovery import (
    STORE_NAMES,
    CleanShutdownMarker,
    KvView,
    RepairReport,
    profile_indexes,
    repair,
    write_update,
)
from workloads.profile_store.profiles import (
    Profile,
    country_status_key,
    country_status_prefix,
    created_at_bounds,
    created_at_key,
    decode,
    encode,
    primary_key,
    reputation_key,
)

T = TypeVar("T")

#: Directory names of the five databases, as in the reference.
DB_NAMES = STORE_NAMES

_COMPRESSION = {
    "none": rocksdict.DBCompressionType.none,
    "snappy": rocksdict.DBCompressionType.snappy,
    "zlib": rocksdict.DBCompressionType.zlib,
    "bz2": rocksdict.DBCompressionType.bz2,
    "lz4": rocksdict.DBCompressionType.lz4,
    "lz4hc": rocksdict.DBCompressionType.lz4hc,
    "zstd": rocksdict.DBCompressionType.zstd,
}

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


class RocksDbEngine(Engine):
    name = "rocksdb"
    needs_stabilization = True
    #: What the crash repair at the last open did; None when the store was closed cleanly.
    recovery: RepairReport | None = None
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
        self._effective: dict[str, str] = {}
        self._marker = CleanShutdownMarker(self.data_dir)

    # --- lifecycle --------------------------------------------------------------------
    def _options(self) -> rocksdict.Options:
        """Per-database options, in the reference's call order (optimize last)."""
        buffer_bytes = int(self.settings["write_buffer_size_mb"]) * 1024 * 1024
        opts = rocksdict.Options(raw_mode=True)
        opts.create_if_missing(True)
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
        if reset and self.data_dir.exists():
            for child in self.data_dir.iterdir():
                if child.is_dir() and not child.is_symlink():
                    shutil.rmtree(child)
                else:
                    child.unlink()
        self.data_dir.mkdir(parents=True, exist_ok=True)
        write_opts = rocksdict.WriteOptions()
        write_opts.sync = bool(self.settings["sync"])  # WAL stays enabled (disable_wal=False)
        dbs = []
        try:
            for name in DB_NAMES:
                db = rocksdict.Rdict(str(self.data_dir / name), self._options())
                db.set_write_options(write_opts)
                dbs.append(db)
        except BaseException:
            for db in dbs:
                db.close()
            raise
        self._dbs = dbs
        self._profiles, self._email, self._country_status, self._created_at, self._reputation = dbs
        options = read_options_file(self.data_dir / DB_NAMES[0])
        self._effective = {k: options[k] for k in _EFFECTIVE_KEYS if k in options}
        # A store that was not closed cleanly may hold a profile's five puts only in part.
        self.recovery = None
        if not self._marker.take() and not reset:
            try:
                self.recovery = self._repair_sync()
            except BaseException:
                self._dbs = []  # closed without the mark: the next open repairs again
                for db in dbs:
                    with contextlib.suppress(Exception):
                        db.close()
                raise

    def _repair_sync(self) -> RepairReport:
        """Make the four indexes agree with the profiles database (after an unclean stop)."""

        def view(db: rocksdict.Rdict) -> KvView:
            return KvView(items=db.items, get=db.get, put=db.put, delete=db.delete)

        specs = profile_indexes(values_are_pks=True)
        return repair(view(self._profiles), list(zip(specs, map(view, self._dbs[1:]), strict=True)))

    def _probe_effective(self) -> dict[str, str]:
        """The effective options of these settings, from a temporary database's OPTIONS file."""
        with tempfile.TemporaryDirectory(prefix="asyncbench-rocksdb-options-") as tmp:
            db = rocksdict.Rdict(tmp, self._options())
            db.close()
            del db
            options = read_options_file(Path(tmp))
        return {k: options[k] for k in _EFFECTIVE_KEYS if k in options}

    async def open(self, reset: bool) -> None:
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

    # --- writes -----------------------------------------------------------------------
    def _insert_sync(self, profiles: Sequence[Profile]) -> None:
        put_profile = self._profiles.put
        put_email = self._email.put
        put_country_status = self._country_status.put
        put_created_at = self._created_at.put
        put_reputation = self._reputation.put
        for p in profiles:
            pk = primary_key(p[0])
            # Indexes first, the profile last (see kv_recovery): a crash between these
            # puts leaves only orphan index entries, never a profile missing one.
            put_email(p[1].encode(), pk)
            put_country_status(country_status_key(p), pk)
            put_created_at(created_at_key(p), pk)
            put_reputation(reputation_key(p), pk)
            put_profile(pk, encode(p))

    async def insert(self, profiles: Sequence[Profile]) -> None:
        await _writing(self._insert_sync, profiles)

    def _update_sync(self, uids: Sequence[int], transform: Callable[[Profile], Profile]) -> list[Profile]:
        get = self._profiles.get
        put_profile = self._profiles.put
        cs_db = self._country_status
        rep_db = self._reputation
        out = []
        for uid in uids:
            pk = primary_key(uid)
            raw = get(pk)
            if raw is None:
                continue
            old = decode(raw)
            new = transform(old)
            write_update(old, new, pk, pk, put_profile, cs_db.put, cs_db.delete, rep_db.put, rep_db.delete)
            out.append(new)
        return out

    async def update(self, uids: Sequence[int], transform: Callable[[Profile], Profile]) -> list[Profile]:
        return await _writing(self._update_sync, uids, transform)

    # --- point reads ------------------------------------------------------------------
    def _read_sync(self, uids: Sequence[int]) -> list[bytes]:
        get = self._profiles.get
        out = []
        append = out.append
        for uid in uids:
            value = get(primary_key(uid))
            if value is not None:
                append(value)
        return out

    async def read_by_id(self, uids: Sequence[int]) -> list[bytes]:
        return await anyio.to_thread.run_sync(self._read_sync, uids)

    def _lookup_sync(self, emails: Sequence[str]) -> list[bytes]:
        get_uid = self._email.get
        get = self._profiles.get
        out = []
        for email in emails:
            pk = get_uid(email.encode())
            if pk is not None:
                value = get(pk)
                if value is not None:
                    out.append(value)
        return out

    async def lookup_by_email(self, emails: Sequence[str]) -> list[bytes]:
        return await anyio.to_thread.run_sync(self._lookup_sync, emails)

    # --- index scans ------------------------------------------------------------------
    # One iterator per query (created and dropped inside the worker thread). The index
    # value is the profile's primary key, so a query fetches with it directly and a scan
    # turns it into the user id, as the reference reads the id from the value.

    def _scan_prefix(self, db: rocksdict.Rdict, prefix: bytes, out: list, fetch: Any) -> None:
        it = db.iter()
        it.seek(prefix)
        n = 0
        while n < self.limit and it.valid():
            if not it.key().startswith(prefix):
                break
            fetch(it.value(), out)
            n += 1
            it.next()

    def _scan_upto(self, db: rocksdict.Rdict, start: bytes, last: bytes, out: list, fetch: Any) -> None:
        it = db.iter()
        it.seek(start)
        n = 0
        while n < self.limit and it.valid():
            if it.key() > last:
                break
            fetch(it.value(), out)
            n += 1
            it.next()

    def _scan_first(self, db: rocksdict.Rdict, out: list, fetch: Any) -> None:
        it = db.iter()
        it.seek_to_first()
        n = 0
        while n < self.limit and it.valid():
            fetch(it.value(), out)
            n += 1
            it.next()

    @staticmethod
    def _as_id(pk: bytes, out: list) -> None:
        out.append(int(pk))

    def _as_profile(self, pk: bytes, out: list) -> None:
        """One primary-key get per index entry. An entry whose profile is missing counts
        toward ``limit`` and returns nothing (the engine contract: the scan's ids, then a
        get per id); the workload never leaves such entries."""
        value = self._profiles.get(pk)
        if value is not None:
            out.append(value)

    def _country_status_sync(self, queries: Sequence[tuple[str, str]], fetch: Any) -> list:
        out: list = []
        db = self._country_status
        for country, status in queries:
            self._scan_prefix(db, country_status_prefix(country, status), out, fetch)
        return out

    def _created_at_sync(self, ranges: Sequence[tuple[int, int]], fetch: Any) -> list:
        out: list = []
        db = self._created_at
        for lo, hi in ranges:
            start, last = created_at_bounds(lo, hi)
            self._scan_upto(db, start, last, out, fetch)
        return out

    def _top_sync(self, times: int, fetch: Any) -> list:
        out: list = []
        db = self._reputation
        for _ in range(times):
            self._scan_first(db, out, fetch)
        return out

    async def scan_country_status(self, queries: Sequence[tuple[str, str]]) -> list[int]:
        return await anyio.to_thread.run_sync(self._country_status_sync, queries, self._as_id)

    async def query_country_status(self, queries: Sequence[tuple[str, str]]) -> list[bytes]:
        return await anyio.to_thread.run_sync(self._country_status_sync, queries, self._as_profile)

    async def scan_created_at(self, ranges: Sequence[tuple[int, int]]) -> list[int]:
        return await anyio.to_thread.run_sync(self._created_at_sync, ranges, self._as_id)

    async def query_created_at(self, ranges: Sequence[tuple[int, int]]) -> list[bytes]:
        return await anyio.to_thread.run_sync(self._created_at_sync, ranges, self._as_profile)

    async def scan_top_reputation(self, times: int) -> list[int]:
        return await anyio.to_thread.run_sync(self._top_sync, times, self._as_id)

    async def query_top_reputation(self, times: int) -> list[bytes]:
        return await anyio.to_thread.run_sync(self._top_sync, times, self._as_profile)

    def _count_sync(self) -> int:
        it = self._profiles.iter()
        it.seek_to_first()
        n = 0
        while it.valid():
            n += 1
            it.next()
        return n

    async def count(self) -> int:
        return await anyio.to_thread.run_sync(self._count_sync)

    # --- report metadata ------------------------------------------------------------
    def describe_settings(self) -> dict[str, str]:
        mb = self.settings["write_buffer_size_mb"]
        rows = {
            "Databases": ",".join(DB_NAMES),
            "Compression": str(self.settings["compression"]).capitalize(),
            "CompressionAllLevels": str(bool(self.settings["compression_all_levels"])).lower(),
            "WriteBufferMb": str(self.settings["write_buffer_size_mb"]),
            "MaxWriteBufferNumber": str(self.settings["max_write_buffer_number"]),
            "WriteSync": str(bool(self.settings["sync"])).lower(),
            "Parallelism": str(self.parallelism),
            "LevelStyleCompaction": f"optimize_level_style_compaction({mb} MB) called last (reference order)",
            "ReadStabilization": "Compact before read/query phases",
        }
        if not self._effective:  # the runner asks before open: probe a throwaway database
            self._effective = self._probe_effective()
        rows.update({f"Effective {k}": v for k, v in self._effective.items()})
        return rows

    def durability(self) -> str:
        sync = bool(self.settings["sync"])
        flag = str(sync).lower()
        codec_note = (
            ""
            if self.settings["compression_all_levels"]
            else " (overridden per level by optimize_level_style_compaction)"
        )
        return (
            f"RocksDB: WAL enabled, sync writes {'on' if sync else 'off'} (WriteOptions.sync={flag});"
            " five separate RocksDB instances; no WriteBatch across indexes"
            " (after an unclean shutdown, open repairs the indexes from the profiles);"
            f" compression={str(self.settings['compression']).capitalize()}{codec_note};"
            f" write_buffer_size={self.settings['write_buffer_size_mb']} MB per database;"
            f" max_write_buffer_number={self.settings['max_write_buffer_number']}"
        )

    @classmethod
    def library_versions(cls) -> dict[str, str]:
        return {
            "rocksdict": importlib.metadata.version("rocksdict"),
            "RocksDB": f"{rocksdb_version()} (read from the OPTIONS file; rocksdict has no version API)",
        }
