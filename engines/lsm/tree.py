"""One LSM tree: memtables + write-ahead log + disk segments + metadata.

Reads look in the mutable memtable, the frozen memtables (newest first), then the disk
segments newest first; the first hit wins and a tombstone hides older values.

Background work is expressed as *jobs*: generators that do a bounded slice of work per
step and yield either ``None`` (a cooperative checkpoint) or a callable to run in a
worker thread (fsync). ``run_job`` drives one synchronously (tests, close); the async
maintainer drives them on the event loop, so the same code serves both.

Merge policy: a full bottom merge whenever more than one disk segment exists; it merges
every segment into one, so shadowed values and tombstones are dropped safely (nothing
older remains below). Flushes add segments in front while a merge runs; the merge then
replaces only the segments it read.

Directory: ``meta.json`` (the manifest, see ``meta.py``) lists the live segments newest
first, the logs still needed and whether the last session closed cleanly; ``seg-*.sst``
are segments, ``wal-*.log`` logs. Open checks everything before it changes anything: a
missing or unreadable manifest next to segments, a listed file that is gone, a segment
the manifest cannot account for, or log damage that is not a torn tail raise a
``CorruptStore`` error naming the file. Only then does it delete what is provably
garbage: segments of a crashed flush or merge, sources of a committed merge, logs already
in segments, ``*.tmp`` files.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from engines.lsm.errors import CorruptLog, CorruptMeta, MissingStore
from engines.lsm.memtable import Memtable
from engines.lsm.merge import merge_chunks
from engines.lsm.meta import META, Meta, read_meta, write_meta
from engines.lsm.segment import TOMBSTONE, DiskSegment, SegmentWriter, merge_segments
from engines.lsm.wal import MAGIC as WAL_MAGIC
from engines.lsm.wal import MODES, WriteAheadLog, replay_file, wal_path

Job = Generator["Callable[[], Any] | None", None, None]
_MISS = object()
#: Entries a job handles between two cooperative checkpoints.
JOB_SLICE = 4096


@dataclass(frozen=True)
class TreeOptions:
    mutable_segment_max_item_count: int = 250_000
    sparse_array_step: int = 16
    key_cache_size: int = 1024
    value_cache_size: int = 1024
    block_cache_size: int = 1024
    iterator_prefetch: int = 16
    block_cache_lifetime_ms: int = 60_000
    wal_mode: str = "async-compressed"

    def __post_init__(self) -> None:
        for f in fields(self):
            v = getattr(self, f.name)
            if f.name == "wal_mode":
                if v not in MODES:
                    raise ValueError(f"wal_mode must be one of {', '.join(MODES)}, not {v!r}")
                continue
            if not isinstance(v, int) or isinstance(v, bool):
                raise ValueError(f"{f.name} must be an integer, not {v!r}")
        if self.mutable_segment_max_item_count < 1:
            raise ValueError("mutable_segment_max_item_count must be >= 1")
        if not 1 <= self.sparse_array_step <= 4096:
            raise ValueError("sparse_array_step must be in 1..4096")
        if not 1 <= self.iterator_prefetch <= 4096:
            raise ValueError("iterator_prefetch must be in 1..4096")
        for name in ("key_cache_size", "value_cache_size", "block_cache_size"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be >= 0")
        if self.block_cache_lifetime_ms < 1:
            raise ValueError("block_cache_lifetime_ms must be >= 1")

    @classmethod
    def from_mapping(cls, m: dict[str, Any]) -> TreeOptions:
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in m.items() if k in names})


def prefix_end(prefix: bytes) -> bytes | None:
    """The smallest key greater than every key starting with ``prefix`` (None: no bound)."""
    p = prefix.rstrip(b"\xff")
    if not p:
        return None
    return p[:-1] + bytes([p[-1] + 1])


class LsmTree:
    """One LSM tree in ``directory``.

    ``create_if_missing=False`` is for a caller that knows the tree exists (say, its
    other trees or its clean-shutdown marker are there): a directory that is gone or
    holds no tree then raises :class:`MissingStore` instead of opening an empty tree.
    Damage found at open raises a :class:`CorruptStore` subclass and changes nothing.
    ``last_close_was_clean`` tells whether the session before this open ended with
    ``close`` (recorded in ``meta.json``)."""

    def __init__(
        self, directory: Path, options: TreeOptions | None = None, *, create_if_missing: bool = True
    ) -> None:
        self.dir = Path(directory)
        self.options = opts = options or TreeOptions()
        self.max_items = opts.mutable_segment_max_item_count
        #: Called (no arguments) when a memtable freezes or segments change.
        self.on_work: Callable[[], None] | None = None
        self.closed = False
        self.segments: list[DiskSegment] = []
        self.frozen: list[Memtable] = []  # newest first
        #: Segment ids flush/merge jobs are writing; merged-away ids whose files remain.
        self._writing: set[int] = set()
        self._obsolete: set[int] = set()
        if not self.dir.is_dir():
            if not create_if_missing:
                raise MissingStore(self.dir, None, "no LSM tree here: the directory does not exist")
            self.dir.mkdir(parents=True, exist_ok=True)
        try:
            self._open(create_if_missing)
        except BaseException:
            for seg in self.segments:
                seg.close()
            raise
        if self.mutable_was_replayed and len(self.mutable) >= self.max_items:
            self.freeze()

    # --- open / recovery ----------------------------------------------------------------
    def _open(self, create_if_missing: bool) -> None:
        """Check everything first, then delete what is provably garbage, then write."""
        seg_ids, log_seqs, temps = self._list_files()
        meta = read_meta(self.dir)
        if meta is None:
            if seg_ids:
                names = ", ".join(self._seg_path(i).name for i in sorted(seg_ids))
                raise CorruptMeta(
                    self.dir / META,
                    None,
                    f"missing, but the directory holds segments ({names}); nothing was deleted",
                )
            if not create_if_missing and not log_seqs:
                raise MissingStore(self.dir, None, "no LSM tree here: no meta.json, segments or logs")
            meta = Meta()
        self.last_close_was_clean = meta.clean_close
        listed = set(meta.segments)
        for seg_id in meta.segments:
            if seg_id not in seg_ids:
                raise MissingStore(self._seg_path(seg_id), None, f"listed in {META} but gone")
        strays = seg_ids - listed
        unexplained = sorted(i for i in strays if not meta.is_uncommitted(i))
        if unexplained:
            names = ", ".join(self._seg_path(i).name for i in unexplained)
            raise CorruptMeta(
                self.dir / META,
                None,
                f"does not list {names}, and they are no leftovers of a crashed flush or merge "
                "(ids below next_id, not being written, not merged away); nothing was deleted",
            )
        for seq in meta.logs:
            if seq >= meta.min_wal and seq not in log_seqs:
                raise MissingStore(wal_path(self.dir, seq), None, f"listed in {META} but gone")
        self._min_wal = meta.min_wal
        self.segments = [self._open_segment(i) for i in meta.segments]
        live_logs = sorted(s for s in log_seqs if s >= meta.min_wal)
        self._recover_wal(live_logs, meta)
        # Everything checked: drop what is provably garbage, then record the open session.
        for p in temps:
            p.unlink(missing_ok=True)
        for seg_id in strays:
            self._seg_path(seg_id).unlink(missing_ok=True)
        for seq in log_seqs:
            if seq < meta.min_wal:
                wal_path(self.dir, seq).unlink(missing_ok=True)
        self._next_id = max([meta.next_id, *(i + 1 for i in seg_ids)])
        seq = max([self._min_wal - 1, *live_logs]) + 1
        self.wal = WriteAheadLog(self.dir, self.options.wal_mode, seq)
        self._log = self.wal.append
        self.mutable.wal_seqs.append(seq)
        self.save_meta()  # clean_close false from here until close

    def _list_files(self) -> tuple[set[int], set[int], list[Path]]:
        """Segment ids, log sequence numbers, and leftover temporary files."""
        seg_ids: set[int] = set()
        log_seqs: set[int] = set()
        temps: list[Path] = []
        for p in self.dir.iterdir():
            name = p.name
            if name.startswith("seg-") and name.endswith(".sst") and name[4:-4].isdigit():
                seg_ids.add(int(name[4:-4]))
            elif name.startswith("wal-") and name.endswith(".log") and name[4:-4].isdigit():
                log_seqs.add(int(name[4:-4]))
            elif name == META + ".tmp" or (name.startswith("seg-") and name.endswith(".sst.tmp")):
                temps.append(p)
        return seg_ids, log_seqs, temps

    def _seg_path(self, seg_id: int) -> Path:
        return self.dir / f"seg-{seg_id:08d}.sst"

    def _open_segment(self, seg_id: int) -> DiskSegment:
        o = self.options
        return DiskSegment(
            self._seg_path(seg_id),
            seg_id,
            key_cache=o.key_cache_size,
            value_cache=o.value_cache_size,
            block_cache=o.block_cache_size,
        )

    def _recover_wal(self, seqs: list[int], meta: Meta) -> None:
        """Replay live logs into memtables (whole files per memtable, so a memtable's
        logs can be deleted once it is flushed). Only the last log holding frames may end
        in a torn frame, and only if the last session did not close cleanly; after a
        clean close every log must also have the size ``close`` recorded."""
        sizes = {seq: wal_path(self.dir, seq).stat().st_size for seq in seqs}
        mt = Memtable()
        for n, seq in enumerate(seqs):
            path = wal_path(self.dir, seq)
            last = all(sizes[later] <= len(WAL_MAGIC) for later in seqs[n + 1 :])
            data = mt.data
            for k, v in replay_file(path, torn_tail_ok=last and not meta.clean_close):
                data[k] = v
            closed_size = meta.logs.get(seq) if meta.clean_close else None
            if closed_size is not None and closed_size != sizes[seq]:
                raise CorruptLog(
                    path,
                    min(closed_size, sizes[seq]),
                    f"{sizes[seq]} bytes, but {closed_size} when the tree was closed cleanly; nothing was changed",
                )
            mt.wal_seqs.append(seq)
            if len(mt) >= self.max_items:
                self.frozen.insert(0, mt)
                mt = Memtable()
        for seq in seqs:  # durable before any newer log gets frames (see wal.py)
            fd = os.open(wal_path(self.dir, seq), os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        self.mutable = mt
        self.mutable_was_replayed = bool(seqs)

    # --- writes ---------------------------------------------------------------------
    def upsert(self, key: bytes, value: bytes) -> None:
        mt = self.mutable
        data = mt.data
        if mt.sorted_keys is not None and key not in data:
            mt.pending.append(key)
        data[key] = value
        self._log(key, value)
        if len(data) >= self.max_items:
            self.freeze()

    def delete(self, key: bytes) -> None:
        mt = self.mutable
        data = mt.data
        if mt.sorted_keys is not None and key not in data:
            mt.pending.append(key)
        data[key] = None
        self._log(key, None)
        if len(data) >= self.max_items:
            self.freeze()

    def freeze(self) -> None:
        """Make the mutable memtable read-only (to be flushed) and start a new one."""
        old = self.mutable
        if not old.data:
            return
        old.frozen = True
        self.frozen.insert(0, old)
        seq = self.wal.rotate()
        self.mutable = Memtable([seq])
        if self.on_work is not None:
            self.on_work()

    # --- reads ----------------------------------------------------------------------
    def get(self, key: bytes) -> bytes | None:
        v = self.mutable.data.get(key, _MISS)
        if v is not _MISS:
            return v  # type: ignore[return-value]
        for mt in self.frozen:
            v = mt.data.get(key, _MISS)
            if v is not _MISS:
                return v  # type: ignore[return-value]
        for seg in self.segments:
            v = seg.get(key)
            if v is not None:
                return None if v is TOMBSTONE else v  # type: ignore[return-value]
        return None

    def _sources(self) -> list[Any]:
        return [self.mutable, *self.frozen, *self.segments]

    def scan_keys(self, start: bytes, end: bytes | None, inclusive: bool, limit: int) -> list[bytes]:
        """The first ``limit`` live keys with start <= key < end (<= end if inclusive)."""
        if limit <= 0:
            return []
        fetch = limit
        while True:
            parts = []
            bound: bytes | None = None
            truncated_any = False
            for src in self._sources():
                ks, flags, truncated = src.range_keys(start, end, inclusive, fetch)
                if ks:
                    parts.append((ks, flags))
                if truncated:
                    truncated_any = True
                    if bound is None or ks[-1] < bound:
                        bound = ks[-1]
            if not parts:
                return []
            if len(parts) == 1:
                ks, flags = parts[0]
                live = [k for k, f in zip(ks, flags, strict=False) if not f] if any(flags) else ks
            else:
                merged: dict[bytes, Any] = {}
                for ks, flags in reversed(parts):
                    merged.update(zip(ks, flags, strict=False))
                live = sorted(k for k, f in merged.items() if not f)
                if bound is not None:
                    live = [k for k in live if k <= bound]
            if len(live) >= limit or not truncated_any:
                return live[:limit]
            fetch *= 4

    def scan_prefix(self, prefix: bytes, limit: int) -> list[bytes]:
        return self.scan_keys(prefix, prefix_end(prefix), False, limit)

    def iter(self, start: bytes | None = None, end: bytes | None = None) -> Iterator[tuple[bytes, bytes]]:
        """Live (key, value) pairs in key order, from ``start`` (seek) to before ``end``."""
        prefetch = self.options.iterator_prefetch
        srcs = [mt.iter_chunks(start, 16 * prefetch) for mt in (self.mutable, *self.frozen)]
        srcs += [seg.iter_chunks(start, prefetch) for seg in self.segments]
        for keys, values in merge_chunks(srcs, drop_tombstones=True):
            for k, v in zip(keys, values, strict=False):
                if end is not None and k >= end:
                    return
                yield k, v  # type: ignore[misc]

    def count(self) -> int:
        """Number of live keys."""
        nonempty = [s for s in self._sources() if len(s)]
        if not nonempty:
            return 0
        if len(nonempty) == 1 and isinstance(nonempty[0], DiskSegment):
            return nonempty[0].live
        srcs = [s.iter_chunks(None, 4096) for s in nonempty]
        return sum(len(ks) for ks, _ in merge_chunks(srcs, drop_tombstones=True))

    # --- jobs -----------------------------------------------------------------------
    def flush_job(self) -> Job | None:
        """Write the oldest frozen memtable to a new segment, or None if none waits."""
        if not self.frozen or self.closed:
            return None
        return self._flush(self.frozen[-1])

    def _flush(self, mt: Memtable) -> Job:
        drop = not self.segments and len(self.frozen) == 1
        keys, values = mt.sorted_items()
        if drop and None in values:
            pairs = [(k, v) for k, v in zip(keys, values, strict=False) if v is not None]
            keys = [k for k, _ in pairs]
            values = [v for _, v in pairs]
        seg = None
        if keys:
            seg_id = self._new_id()
            writer = SegmentWriter(self._seg_path(seg_id), self.options.sparse_array_step)
            try:
                for i in range(0, len(keys), JOB_SLICE):
                    writer.add(keys[i : i + JOB_SLICE], values[i : i + JOB_SLICE])
                    yield None
                yield writer.finish
            except BaseException:
                writer.abort()
                self._writing.discard(seg_id)
                raise
            seg = self._open_segment(seg_id)
        if self.closed:
            return
        if seg is not None:
            self.segments.insert(0, seg)
            self._writing.discard(seg.id)
        self.frozen.remove(mt)
        if mt.wal_seqs:
            self._min_wal = max(self._min_wal, max(mt.wal_seqs) + 1)
        self.save_meta()
        self.wal.retire(mt.wal_seqs)
        if self.on_work is not None:
            self.on_work()

    def needs_merge(self) -> bool:
        """Policy: a full bottom merge whenever more than one segment exists."""
        return len(self.segments) > 1

    def merge_job(self) -> Job | None:
        if not self.needs_merge() or self.closed:
            return None
        return self._merge(list(self.segments))

    def _merge(self, srcs: list[DiskSegment]) -> Job:
        seg_id = self._new_id()
        writer = SegmentWriter(self._seg_path(seg_id), self.options.sparse_array_step)
        try:
            yield from merge_segments(srcs, writer, drop_tombstones=True, slice_entries=JOB_SLICE)
            yield writer.finish
        except BaseException:
            writer.abort()
            self._writing.discard(seg_id)
            raise
        if self.closed:
            return
        merged = self._open_segment(seg_id)
        # Only flushes add segments, always in front: the merged ones are the tail.
        gone = set(map(id, srcs))
        self.segments = [s for s in self.segments if id(s) not in gone] + ([merged] if merged.entries else [])
        self._writing.discard(seg_id)
        dead = [*srcs, *([] if merged.entries else [merged])]
        self._obsolete.update(s.id for s in dead)
        self.save_meta()  # the commit; a crash before the deletes leaves provable garbage
        for s in dead:
            s.close()
            s.path.unlink(missing_ok=True)
        self._obsolete.difference_update(s.id for s in dead)

    def _new_id(self) -> int:
        """A fresh segment id, recorded as being written until its job commits or aborts."""
        i = self._next_id
        self._next_id += 1
        self._writing.add(i)
        return i

    @staticmethod
    def run_job(job: Job | None) -> None:
        if job is None:
            return
        for step in job:
            if step is not None:
                step()

    # --- synchronous maintenance (tests, close) ------------------------------------------
    def flush_all(self) -> None:
        """Freeze the memtable and flush every frozen one, synchronously."""
        self.freeze()
        while self.frozen:
            self.run_job(self.flush_job())

    def merge_all(self) -> None:
        while self.needs_merge():
            self.run_job(self.merge_job())

    def sync_wal(self) -> None:
        self.wal.write_now()
        self.wal.sync()

    def rotate_caches(self) -> None:
        for seg in self.segments:
            seg.rotate_caches()

    def save_meta(self) -> None:
        """Persist the manifest (``meta.json``); see ``meta.py`` for what it records."""
        self._save_meta(clean_close=False)

    def _save_meta(self, clean_close: bool) -> None:
        logs: dict[int, int | None] = {}
        for mt in (self.mutable, *self.frozen):
            for seq in mt.wal_seqs:
                try:
                    size = wal_path(self.dir, seq).stat().st_size
                except FileNotFoundError:  # wal_mode "none": no files
                    continue
                logs[seq] = size if clean_close else None
        meta = Meta(
            segments=[s.id for s in self.segments],
            next_id=self._next_id,
            min_wal=self._min_wal,
            writing=sorted(self._writing),
            obsolete=sorted(self._obsolete),
            logs=logs,
            clean_close=clean_close,
        )
        write_meta(self.dir, meta)

    def storage_bytes(self) -> int:
        return sum(p.stat().st_size for p in self.dir.iterdir() if p.is_file())

    def close(self) -> None:
        """Persist: drain the log (or, without a log, flush memtables), save metadata."""
        if self.closed:
            return
        if self.options.wal_mode == "none":
            self.flush_all()
        self.wal.close()
        self._save_meta(clean_close=True)  # only after every log is written and fsynced
        self.closed = True
        for seg in self.segments:
            seg.close()
