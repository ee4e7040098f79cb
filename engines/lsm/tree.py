"""One LSM tree: memtables + write-ahead log + disk segments + metadata.

Point reads look in the mutable memtable, the frozen memtables (newest first), then the
disk segments newest first; the first hit wins and a tombstone hides older values.
Scans, iteration, counts, flushes and merges all go through the one merging iterator
(``merging_iterator.py``) over cursors of those sources.

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

from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from .errors import CorruptLog, CorruptMeta, MissingStore
from .memtable import Memtable
from .merging_iterator import Cursor, compact, merge
from .meta import META, Meta, fsync_path, read_meta, write_meta
from .segment_reader import TOMBSTONE, SegmentReader
from .segment_writer import SegmentWriter
from .wal import MAGIC as WAL_MAGIC
from .wal import MODES, WriteAheadLog, replay_file, wal_path

__all__ = ["JOB_SLICE", "Job", "LsmTree", "TreeOptions", "prefix_end"]

Job = Generator["Callable[[], Any] | None", None, None]
_MISS = object()
#: Entries a job handles between two cooperative checkpoints.
JOB_SLICE = 4096


@dataclass(frozen=True)
class TreeOptions:
    """A tree's settings (the engine's settings of the same names), validated."""

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
        self.segments: list[SegmentReader] = []
        self.frozen: list[Memtable] = []  # newest first
        #: Segment ids flush/merge jobs are writing; merged-away ids whose files remain.
        self._writing: set[int] = set()
        self._obsolete: set[int] = set()
        #: The manifest as last written and fsynced by this object.
        self._saved_meta: Meta | None = None
        #: The only segment's lookup while exactly one exists (``_segments_changed``).
        self._one: Callable[[bytes], Any] | None = None
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
        if self._replayed and len(self.mutable) >= self.max_items:
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
        self._segments_changed()
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

    def _open_segment(self, seg_id: int) -> SegmentReader:
        o = self.options
        return SegmentReader(
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
            fsync_path(wal_path(self.dir, seq))
        self.mutable = mt
        self._replayed = bool(seqs)

    # --- writes ---------------------------------------------------------------------
    def upsert(self, key: bytes, value: bytes | None) -> None:
        """Store ``value`` under ``key`` (``None`` writes a tombstone, see ``delete``)."""
        data = self.mutable.data
        data[key] = value
        self._log(key, value)
        if len(data) >= self.max_items:
            self.freeze()

    def delete(self, key: bytes) -> None:
        self.upsert(key, None)

    def freeze(self) -> None:
        """Make the mutable memtable read-only (to be flushed) and start a new one."""
        old = self.mutable
        if not old.data:
            return
        self.frozen.insert(0, old)
        seq = self.wal.rotate()
        self.mutable = Memtable([seq])
        if self.on_work is not None:
            self.on_work()

    # --- reads ----------------------------------------------------------------------
    def _segments_changed(self) -> None:
        """Called wherever ``segments`` changes (open, a flush's or a merge's commit, close):
        with exactly one segment, ``get`` calls its lookup directly."""
        self._one = self.segments[0].get if len(self.segments) == 1 and not self.closed else None

    def get(self, key: bytes) -> bytes | None:
        v = self.mutable.data.get(key, _MISS)
        if v is not _MISS:
            return v  # type: ignore[return-value]
        one = self._one
        if one is not None and not self.frozen:  # the usual state after a stabilization
            v = one(key)
            return None if v is TOMBSTONE else v
        for mt in self.frozen:
            v = mt.data.get(key, _MISS)
            if v is not _MISS:
                return v  # type: ignore[return-value]
        for seg in self.segments:
            v = seg.get(key)
            if v is not None:
                return None if v is TOMBSTONE else v
        return None

    def _cursors(
        self,
        start: bytes | None,
        end: bytes | None,
        inclusive: bool,
        keys_only: bool,
        chunk: int,
        blocks: int,
        max_blocks: int,
        min_entries: int = 0,
    ) -> list[Cursor]:
        """One cursor per non-empty source, newest first: memtables ``chunk`` entries at
        a time, segments as ``SegmentReader.cursor`` says."""
        out: list[Cursor] = []
        if self.mutable.data:
            out.append(self.mutable.cursor(start, end, inclusive, chunk))
        for mt in self.frozen:
            out.append(mt.cursor(start, end, inclusive, chunk))
        for seg in self.segments:
            out.append(seg.cursor(start, end, inclusive, blocks, max_blocks, min_entries, keys_only))
        return out

    def scan_keys(self, start: bytes, end: bytes | None, inclusive: bool, limit: int) -> list[bytes]:
        """The first ``limit`` live keys with start <= key < end (<= end if inclusive)."""
        if limit <= 0:
            return []
        prefetch = self.options.iterator_prefetch
        out: list[bytes] = []
        cursors = self._cursors(
            start,
            end,
            inclusive,
            keys_only=True,
            chunk=limit,
            blocks=1,
            max_blocks=prefetch,
            min_entries=limit,
        )
        for keys, _ in merge(cursors, True):
            if out:
                out += keys
            else:
                out = keys  # the chunk is the caller's now (merge never reuses it)
            if len(out) >= limit:
                del out[limit:]
                break
        return out

    def scan_prefix(self, prefix: bytes, limit: int) -> list[bytes]:
        return self.scan_keys(prefix, prefix_end(prefix), False, limit)

    def iter(self, start: bytes | None = None, end: bytes | None = None) -> Iterator[tuple[bytes, bytes]]:
        """Live (key, value) pairs in key order, from ``start`` (seek) to before ``end``.
        Reads ramp from one block up to ``iterator_prefetch`` blocks, so short walks stay
        short."""
        o = self.options
        cursors = self._cursors(
            start,
            end,
            False,
            keys_only=False,
            chunk=16 * o.iterator_prefetch,
            blocks=1,
            max_blocks=o.iterator_prefetch,
        )
        for keys, values in merge(cursors, True):
            yield from zip(keys, values, strict=True)

    def count(self) -> int:
        """Number of live keys."""
        if not self.mutable.data and not self.frozen and len(self.segments) == 1:
            return self.segments[0].live
        cursors = self._cursors(None, None, False, keys_only=True, chunk=4096, blocks=1, max_blocks=4096)
        return sum(len(keys) for keys, _ in merge(cursors, True))

    # --- jobs -----------------------------------------------------------------------
    def flush_job(self) -> Job | None:
        """Write the oldest frozen memtable to a new segment, or None if none waits."""
        if not self.frozen or self.closed:
            return None
        return self._flush(self.frozen[-1])

    def _flush(self, mt: Memtable) -> Job:
        # Tombstones can go only if nothing older exists (no segment, no older memtable).
        drop = not self.segments and len(self.frozen) == 1
        seg = None
        if mt.data and not (drop and list(mt.data.values()).count(None) == len(mt.data)):
            seg_id = self._new_id()
            writer = SegmentWriter(self._seg_path(seg_id), self.options.sparse_array_step)
            try:
                for keys, values in merge([mt.cursor(batch=JOB_SLICE)], drop):
                    writer.add(keys, values)
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
            self._segments_changed()
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

    def _merge(self, srcs: list[SegmentReader]) -> Job:
        seg_id = self._new_id()
        writer = SegmentWriter(self._seg_path(seg_id), self.options.sparse_array_step)
        try:
            cursors = [s.cursor(blocks=8, max_blocks=8, cached=False) for s in srcs]
            yield from compact(cursors, writer, drop_tombstones=True, slice_entries=JOB_SLICE)
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
        self._segments_changed()
        self._writing.discard(seg_id)
        dead = [*srcs, *([] if merged.entries else [merged])]
        self._obsolete.update(s.id for s in dead)
        self.save_meta()  # the commit; a crash before the deletes leaves provable garbage
        if not merged.entries:
            merged.close()
        for s in dead:  # (a source's mapping outlives its file for iterators still on it)
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
        if meta == self._saved_meta:
            return  # on disk already, fsynced (a settle after a stabilization rewrites nothing)
        write_meta(self.dir, meta)
        self._saved_meta = meta

    def close(self) -> None:
        """Persist: drain the log (or, without a log, flush memtables), save metadata."""
        if self.closed:
            return
        if self.options.wal_mode == "none":
            self.flush_all()
        self.wal.close()
        self._save_meta(clean_close=True)  # only after every log is written and fsynced
        self.closed = True
        self._segments_changed()
        for seg in self.segments:
            seg.close()
