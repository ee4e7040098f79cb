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

Directory: ``meta.json`` (atomically replaced) lists the live segments newest first and
the oldest write-ahead log still needed; ``seg-*.sst`` are segments; ``wal-*.log`` logs.
Anything else the metadata does not name (a crashed flush or merge) is deleted on open.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from engines.lsm.memtable import Memtable
from engines.lsm.merge import merge_chunks
from engines.lsm.segment import TOMBSTONE, DiskSegment, SegmentWriter, merge_segments
from engines.lsm.wal import MODES, WriteAheadLog, replay_file, wal_path

Job = Generator["Callable[[], Any] | None", None, None]
_MISS = object()
META = "meta.json"
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
    def __init__(self, directory: Path, options: TreeOptions | None = None) -> None:
        self.dir = Path(directory)
        self.options = opts = options or TreeOptions()
        self.dir.mkdir(parents=True, exist_ok=True)
        self.max_items = opts.mutable_segment_max_item_count
        #: Called (no arguments) when a memtable freezes or segments change.
        self.on_work: Callable[[], None] | None = None
        self.closed = False
        meta = self._read_meta()
        listed = meta.get("segments", [])
        self._min_wal: int = meta.get("min_wal", 0)
        self._next_id: int = meta.get("next_id", 0)
        self._clean_orphans(set(listed))
        self.segments: list[DiskSegment] = [self._open_segment(i) for i in listed]
        self.frozen: list[Memtable] = []  # newest first
        wal_seqs = self._recover_wal()
        seq = max([self._min_wal - 1, *wal_seqs]) + 1
        self.wal = WriteAheadLog(self.dir, opts.wal_mode, seq)
        self._log = self.wal.append
        self.mutable.wal_seqs.append(seq)
        if self.mutable_was_replayed and len(self.mutable) >= self.max_items:
            self.freeze()

    # --- open / recovery ----------------------------------------------------------------
    def _read_meta(self) -> dict[str, Any]:
        path = self.dir / META
        if not path.exists():
            return {}
        return json.loads(path.read_text())

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

    def _clean_orphans(self, listed: set[int]) -> None:
        for p in self.dir.iterdir():
            name = p.name
            if name.endswith(".tmp"):
                p.unlink()
            elif name.startswith("seg-") and name.endswith(".sst"):
                seg_id = int(name[4:-4])
                self._next_id = max(self._next_id, seg_id + 1)
                if seg_id not in listed:
                    p.unlink()

    def _recover_wal(self) -> list[int]:
        """Replay live logs into memtables (whole files per memtable, so a memtable's
        logs can be deleted once it is flushed); delete logs already in segments."""
        seqs = []
        for p in self.dir.glob("wal-*.log"):
            seq = int(p.name[4:-4])
            if seq < self._min_wal:
                p.unlink()
            else:
                seqs.append(seq)
        seqs.sort()
        mt = Memtable()
        for seq in seqs:
            data = mt.data
            for k, v in replay_file(wal_path(self.dir, seq)):
                data[k] = v
            mt.wal_seqs.append(seq)
            if len(mt) >= self.max_items:
                mt.frozen = True
                self.frozen.insert(0, mt)
                mt = Memtable()
        self.mutable = mt
        self.mutable_was_replayed = bool(seqs)
        return seqs

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
                raise
            seg = self._open_segment(seg_id)
        if self.closed:
            return
        if seg is not None:
            self.segments.insert(0, seg)
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
            raise
        if self.closed:
            return
        merged = self._open_segment(seg_id)
        # Only flushes add segments, always in front: the merged ones are the tail.
        gone = set(map(id, srcs))
        self.segments = [s for s in self.segments if id(s) not in gone] + ([merged] if merged.entries else [])
        self.save_meta()
        for s in srcs:
            s.path.unlink(missing_ok=True)
        if not merged.entries:
            merged.close()
            merged.path.unlink(missing_ok=True)

    def _new_id(self) -> int:
        i = self._next_id
        self._next_id += 1
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
        meta = {
            "version": 1,
            "segments": [s.id for s in self.segments],
            "min_wal": self._min_wal,
            "next_id": self._next_id,
        }
        tmp = self.dir / (META + ".tmp")
        with open(tmp, "w") as f:
            json.dump(meta, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.dir / META)
        fd = os.open(self.dir, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)

    def storage_bytes(self) -> int:
        return sum(p.stat().st_size for p in self.dir.iterdir() if p.is_file())

    def close(self) -> None:
        """Persist: drain the log (or, without a log, flush memtables), save metadata."""
        if self.closed:
            return
        if self.options.wal_mode == "none":
            self.flush_all()
        self.wal.close()
        self.save_meta()
        self.closed = True
        for seg in self.segments:
            seg.close()
