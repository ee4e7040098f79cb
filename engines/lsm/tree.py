"""One LSM tree: memtables + write-ahead log + disk segments + metadata.

Point reads look in the mutable memtable, the frozen memtables (newest first), then the
disk segments newest first; the first hit wins and a tombstone hides older values.
Scans, iteration, counts, flushes and merges all go through the one merging iterator
(``merging_iterator.py``) over cursors of those sources.

Background work is expressed as *jobs*: generators that do a bounded slice of work per
step and yield either ``None`` (a cooperative checkpoint) or a callable to run in a
worker thread (fsync; and, with the compiled writer of ``native.py``, a whole flush or
merge: sort, merge, encode and write run there with the GIL released; the new segment's
file is created and opened there too), or a :class:`Commit` (the manifest's save, renames
and deletions that commit a flush or merge, ``commit.py``), which the maintainer runs on
its commit lane. ``run_job`` drives one synchronously (tests, close); the async
maintainer drives them on the event loop, so the same code serves both.

Merge policy (``pick_merge``): size-ratio tiering. The newest segments merge into one
when the next older segment is no bigger than them together (``MERGE_RATIO``), so sizes
grow geometrically, a tree holds O(log n) segments and an entry is rewritten O(log n)
times (the full bottom merge after every flush this replaced rewrote the whole tree each
time: O(n^2/m) work). Tombstones are dropped only by a merge that includes the oldest
segment. Flushes add segments in front while a merge runs; the merge then replaces only
the segments it read, in place.

Directory: ``meta.json`` (the manifest, see ``meta.py``) lists the live segments newest
first, the logs still needed and whether the last session closed cleanly; ``seg-*.sst``
are segments, ``wal-*.log`` logs. Open checks everything before it changes anything: a
missing or unreadable manifest next to segments, a listed file that is gone, a segment
the manifest cannot account for, or log damage that is not a torn tail raise a
``CorruptStore`` error naming the file. Only then does it finish what is provably
committed (a listed segment still named ``.tmp``: renamed) and delete what is provably
garbage: unlisted ``seg-*.sst.tmp`` files of a crashed flush or merge, the sources of a
committed merge the manifest names as obsolete, logs already in segments. A
``seg-*.sst`` the manifest does not list is never deleted (see ``meta.py``).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Generator, Iterable, Iterator
from dataclasses import dataclass, fields, replace
from functools import partial
from pathlib import Path
from typing import Any

from . import native
from .commit import Commit
from .errors import CorruptLog, CorruptMeta, CorruptSegment, MissingStore
from .held_files import HeldFiles
from .memtable import Memtable
from .merging_iterator import Cursor, compact, merge
from .meta import META, Meta, fsync_path, read_meta, write_meta
from .segment_reader import TOMBSTONE, SegmentReader
from .segment_writer import SegmentWriter
from .wal import MAGIC as WAL_MAGIC
from .wal import MODES, WriteAheadLog, replay_file, wal_path

__all__ = ["JOB_SLICE", "MAX_SEGMENTS", "MERGE_RATIO", "Job", "LsmTree", "TreeOptions", "prefix_end"]

Job = Generator["Callable[[], Any] | None", None, None]
_MISS = object()
#: Entries a job handles between two cooperative checkpoints.
JOB_SLICE = 4096
#: The merge policy (``LsmTree.pick_merge``): a segment joins the merge of the newer
#: ones when it holds at most this many times their entries.
MERGE_RATIO = 1.0
#: Segments a tree keeps at most once its merges are done (lookups consult each).
MAX_SEGMENTS = 8


#: The most entries a key, value or block cache may hold: 100 million, already more than
#: the 2M-profile reference store's entries of every tree together (the defaults are
#: 1_024). A larger figure (2**63 - 1) is a typo that would let a cache grow with the store
#: until the machine swaps.
MAX_CACHE_ENTRIES = 100_000_000
#: The largest compression threshold (1 TiB): beyond it "never" is meant; say so with it.
MAX_COMPRESSION_THRESHOLD_MB = 1 << 20
#: The default threshold: RocksDB's base level under the reference options (1 GiB).
DEFAULT_COMPRESSION_THRESHOLD_MB = 1024


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
    #: A merge writes compressed blocks (segment format 4, LZ4; 3, zlib, without liblz4)
    #: once the tree's segments would take at least this many MiB stored plain; flushes,
    #: and merges below it, write plain blocks that lookups search in place. 0: every
    #: merge compresses; the largest value (1 TiB) leaves compression off in practice.
    #: The default, 1 GiB, is RocksDB's base level under the reference options: below it
    #: RocksDB stores blocks plain, beyond it LZ4 (docs/lsm.md, "LZ4"): in the reference
    #: plan only the profiles tree passes it, from about 5.5M profiles.
    compression_threshold_mb: int = DEFAULT_COMPRESSION_THRESHOLD_MB

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
            if not 0 <= getattr(self, name) <= MAX_CACHE_ENTRIES:
                raise ValueError(f"{name} must be from 0 to at most {MAX_CACHE_ENTRIES:_d} entries, got {getattr(self, name)!r}")
        if self.block_cache_lifetime_ms < 1:
            raise ValueError("block_cache_lifetime_ms must be >= 1")
        if not 0 <= self.compression_threshold_mb <= MAX_COMPRESSION_THRESHOLD_MB:
            raise ValueError(
                f"compression_threshold_mb must be from 0 to {MAX_COMPRESSION_THRESHOLD_MB:_d} MiB, "
                f"got {self.compression_threshold_mb!r}"
            )

    @classmethod
    def from_mapping(cls, m: dict[str, Any]) -> TreeOptions:
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in m.items() if k in names})


@dataclass
class _Built:
    """What a flush's or merge's build step made: the writer of the ``.tmp`` file and,
    when it holds entries, the segment opened on it and the file's size."""

    writer: SegmentWriter | None = None
    seg: SegmentReader | None = None
    size: int = 0

    def discard(self) -> None:
        """Give the new segment up (never committed): close it, delete its file."""
        if self.seg is not None:
            self.seg.close()
        if self.writer is not None:
            self.writer.abort()


def _add_memtable(data: dict[bytes, bytes | None], drop: bool, writer: SegmentWriter) -> None:
    """A flush's entries into ``writer``, compiled (the frozen memtable's dict)."""
    writer.add_merged([data], drop)


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
        #: Merged-away segment ids whose files may remain (recorded in the manifest).
        self._obsolete: set[int] = set()
        #: Set by a stabilization: merge every segment into one (``pick_merge``).
        self.compact_requested = False
        #: The manifest as last written and fsynced by this object, and its version.
        self._saved_meta: Meta | None = None
        self._saved_version = 0
        #: The version of the newest manifest snapshot (``_snapshot``).
        self._meta_version = 0
        #: Held while a manifest is written: the commit lane and the loop's saves.
        self._meta_lock = threading.Lock()
        #: Segments in ``segments`` whose commit step has not finished (``commit.py``).
        self._unpublished: set[int] = set()
        #: Merged-away segment files, open until their mappings are gone (``held_files.py``).
        self.held = HeldFiles()
        #: The only segment's lookup while exactly one exists (``_segments_changed``).
        self._one: Callable[[bytes], Any] | None = None
        #: The only segment's compiled key-range read, when it has one (``scan_keys``).
        self._one_scan: Callable[[bytes, bytes | None, bool, int], list[bytes] | None] | None = None
        #: Bytes of segment files this object's flushes and merges wrote (the cost counters).
        self.flushed_bytes = 0
        self.merged_bytes = 0
        # Recovered by ``_open`` (meta.json, the logs): placeholders until it returns.
        self.last_close_was_clean = False
        self._min_wal = 0  # the oldest log still needed; older ones are deleted
        self._next_id = 0  # the next segment id
        self.mutable = Memtable()
        self._replayed = False  # whether the open replayed any log
        self.wal: WriteAheadLog  # opened by ``_open`` at the sequence recovery leaves
        self._log: Callable[[bytes, bytes | None], None]  # ``self.wal.append``, bound once
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
        seg_ids, seg_tmps, log_seqs, meta_tmp = self._list_files()
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
        # A listed segment whose rename did not happen before a crash is its ``.tmp``:
        # complete and fsynced before the manifest that lists it was saved.
        unpublished = {i for i in meta.segments if i not in seg_ids and i in seg_tmps}
        for seg_id in meta.segments:
            if seg_id not in seg_ids and seg_id not in unpublished:
                raise MissingStore(self._seg_path(seg_id), None, f"listed in {META} but gone")
        strays = seg_ids - listed
        unexplained = sorted(strays - set(meta.obsolete))
        if unexplained:
            names = ", ".join(self._seg_path(i).name for i in unexplained)
            raise CorruptMeta(
                self.dir / META,
                None,
                f"does not list {names}: no crash leaves an unlisted segment (segments are "
                "renamed into place only after the manifest lists them), so either the "
                "manifest is not this tree's or the files were put there; nothing was deleted",
            )
        for seq in meta.logs:
            if seq >= meta.min_wal and seq not in log_seqs:
                raise MissingStore(wal_path(self.dir, seq), None, f"listed in {META} but gone")
        self._min_wal = meta.min_wal
        self.segments = [
            self._open_segment(i, seg_tmps[i] if i in unpublished else None) for i in meta.segments
        ]
        live_logs = sorted(s for s in log_seqs if s >= meta.min_wal)
        self._recover_wal(live_logs, meta)
        # Everything checked: finish committed renames, drop what is provably garbage
        # (unlisted ``.tmp`` files; merge sources the manifest names as obsolete; logs
        # below ``min_wal``), then record the open session.
        for seg in self.segments:
            if seg.id in unpublished:
                seg_tmps[seg.id].replace(self._seg_path(seg.id))
                seg.renamed(self._seg_path(seg.id))
        for seg_id, p in seg_tmps.items():
            if seg_id not in unpublished:
                p.unlink(missing_ok=True)
        if meta_tmp is not None:
            meta_tmp.unlink(missing_ok=True)
        for seg_id in strays:
            self._seg_path(seg_id).unlink(missing_ok=True)
        for seq in log_seqs:
            if seq < meta.min_wal:
                wal_path(self.dir, seq).unlink(missing_ok=True)
        self._segments_changed()
        self._next_id = max([meta.next_id, *(i + 1 for i in seg_ids | set(seg_tmps))])
        seq = max([self._min_wal - 1, *live_logs]) + 1
        # Logs that replayed no record (a session that wrote nothing after its last flush:
        # every reopen of a stabilized store) are retired once the manifest says so;
        # else each reopen would add one more log to replay and keep.
        empty = live_logs if not self.frozen and not self.mutable.data else []
        if empty:
            self._min_wal = seq
            self.mutable.wal_seqs.clear()
        self.wal = WriteAheadLog(self.dir, self.options.wal_mode, seq)
        self._log = self.wal.append
        self.mutable.wal_seqs.append(seq)
        self.save_meta()  # clean_close false from here until close
        for old in empty:
            wal_path(self.dir, old).unlink(missing_ok=True)

    def _list_files(self) -> tuple[set[int], dict[int, Path], set[int], Path | None]:
        """Segment ids, segment ``.tmp`` files by id, log sequence numbers, and a leftover
        ``meta.json.tmp``: only names this engine writes."""
        seg_ids: set[int] = set()
        seg_tmps: dict[int, Path] = {}
        log_seqs: set[int] = set()
        meta_tmp: Path | None = None
        for p in self.dir.iterdir():
            name = p.name
            if name.startswith("seg-") and name.endswith(".sst") and name[4:-4].isdigit():
                seg_ids.add(int(name[4:-4]))
            elif name.startswith("seg-") and name.endswith(".sst.tmp") and name[4:-8].isdigit():
                seg_tmps[int(name[4:-8])] = p
            elif name.startswith("wal-") and name.endswith(".log") and name[4:-4].isdigit():
                log_seqs.add(int(name[4:-4]))
            elif name == META + ".tmp":
                meta_tmp = p
        return seg_ids, seg_tmps, log_seqs, meta_tmp

    def _seg_path(self, seg_id: int) -> Path:
        return self.dir / f"seg-{seg_id:08d}.sst"

    def _open_segment(self, seg_id: int, path: Path | None = None) -> SegmentReader:
        o = self.options
        return SegmentReader(
            path or self._seg_path(seg_id),
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
        if not meta.clean_close:  # (a clean close fsynced every log it left)
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
        one = self.segments[0] if len(self.segments) == 1 and not self.closed else None
        self._one = None if one is None else one.get
        self._one_scan = None if one is None else one.scan_keys

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
        fast = self._one_scan
        if fast is not None and not self.frozen and not self.mutable.data:  # after a stabilization
            got = fast(start, end, inclusive, limit)
            if got is not None:
                return got
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
        # The log that took over from this memtable's is new (its header unsynced): fsync
        # it here, in a worker thread beside the flush's own work, so that a settle right
        # after a stabilization has nothing left to make durable.
        current = self.wal.current
        if current is not None and current.dirty:
            yield current.sync
        # Tombstones can go only if nothing older exists (no segment, no older memtable).
        drop = not self.segments and len(self.frozen) == 1
        built = _Built()
        if mt.data:
            seg_id = self._new_id()
            try:
                if native.ACCELERATED:  # sort, encode, write and open in a worker thread
                    yield partial(self._build, built, seg_id, False, partial(_add_memtable, mt.data, drop))
                else:
                    built.writer = writer = self._writer(seg_id, False)
                    for keys, values in merge([mt.cursor(batch=JOB_SLICE)], drop):
                        writer.add(keys, values)
                        yield None
                    yield partial(self._finish_build, built, seg_id)
            except BaseException:
                built.discard()
                raise
        if self.closed:
            built.discard()
            return
        seg = built.seg
        if seg is not None:
            self.flushed_bytes += built.size
            self.segments.insert(0, seg)
            self._segments_changed()
        else:
            built.discard()  # only tombstones, dropped: no segment
        self.frozen.remove(mt)
        if mt.wal_seqs:
            self._min_wal = max(self._min_wal, max(mt.wal_seqs) + 1)
        # the commit: lists the segment (still named ``.tmp``), then renames it and
        # deletes the memtable's logs
        commit = self._commit(built if seg is not None else None, (), mt.wal_seqs)
        try:
            yield commit
        finally:
            commit()  # a job closed before its commit step ran: inline, now
        if self.on_work is not None:
            self.on_work()

    def _writer(self, seg_id: int, compress: bool) -> SegmentWriter:
        return SegmentWriter(self._seg_path(seg_id), self.options.sparse_array_step, compress=compress)

    def _build(self, out: _Built, seg_id: int, compress: bool, write: Callable[[SegmentWriter], None]) -> None:
        """A compiled flush's or merge's thread step, whole: create the segment's
        ``.tmp``, ``write`` its entries, fsync and open it. Creating and opening the file
        on the loop took it 1.7 s of a 10M-profile insert (py-spy)."""
        out.writer = writer = self._writer(seg_id, compress)
        write(writer)
        self._finish_build(out, seg_id)

    def _finish_build(self, out: _Built, seg_id: int) -> None:
        """Finish the written segment (not published) and open it; nothing if it holds
        no entry (a flush of dropped tombstones, a merge that cancelled out)."""
        writer = out.writer
        assert writer is not None
        if writer.entries or writer.pending:
            writer.finish(publish=False)
            out.size = os.stat(writer.tmp).st_size
            out.seg = self._open_segment(seg_id, writer.tmp)

    def _commit(self, built: _Built | None, sources: Iterable[SegmentReader], wal_seqs: list[int]) -> Commit:
        """The file side of a commit whose memory side is done (``commit.py``): save the
        manifest as it is now, then publish ``built``, delete the merged ``sources`` and
        the flushed memtable's logs ``wal_seqs``."""
        meta, version = self._snapshot(clean_close=False)
        sources = list(sources)
        wal_seqs = list(wal_seqs)
        if built is not None:
            assert built.seg is not None
            self._unpublished.add(built.seg.id)

        def run() -> None:
            self._write_meta(meta, version)
            if built is not None:
                assert built.writer is not None and built.seg is not None
                built.writer.publish()
                built.seg.renamed(built.writer.path)
                self._unpublished.discard(built.seg.id)
            for s in sources:  # (a source's mapping outlives its file for iterators still on it)
                self.held.hold(s.path, s.mappings())  # its last release here, not on the loop
                s.path.unlink(missing_ok=True)
            self.wal.retire(wal_seqs)
            self.held.release()  # earlier sources whose mappings are gone by now

        return Commit(run)

    def pick_merge(self) -> tuple[int, int] | None:
        """The merge policy: which segments to merge next, as ``segments[start:stop]``,
        or None.

        Size-ratio ("binary counter") tiering: the newest segments are merged as one
        group ``segments[0:j+1]`` for the largest j where every segment ``i <= j`` holds
        at most ``MERGE_RATIO`` times the entries of all the segments newer than it. With
        flushes of m entries this keeps segments of sizes m, 2m, 4m, ... (at most
        log2(n/m) + 1 of them) and rewrites each entry about log2(n/m) times, where the
        full bottom merge after every flush rewrote the whole tree each time (n/m times).
        More than ``MAX_SEGMENTS`` segments (many tiny flushes) widens the group so that
        lookups consult a bounded number of segments. While ``compact_requested`` (a
        stabilization, see ``Maintainer.wait_idle``) every segment merges into one."""
        sizes = [max(1, s.entries) for s in self.segments]
        n = len(sizes)
        if n < 2 or self._unpublished:  # (a merge waits until every commit has finished)
            return None
        if self.compact_requested:  # after the flushes, so that everything merges once
            return None if self.frozen else (0, n)
        j = 0
        newer = sizes[0]
        for i in range(1, n):
            if sizes[i] > MERGE_RATIO * newer:
                break
            j = i
            newer += sizes[i]
        j = max(j, n - MAX_SEGMENTS)
        return (0, j + 1) if j >= 1 else None

    def needs_merge(self) -> bool:
        return self.pick_merge() is not None

    def merge_job(self) -> Job | None:
        picked = None if self.closed else self.pick_merge()
        if picked is None:
            return None
        start, stop = picked
        # Tombstones can be dropped only when the oldest segment takes part.
        return self._merge(self.segments[start:stop], drop_tombstones=stop == len(self.segments))

    def compresses(self) -> bool:
        """Whether a merge now writes compressed blocks: the tree's live data, stored
        plain, reaches ``compression_threshold_mb`` (measured plain, so a tree that
        compressed stays past it).

        The live data is estimated as the segments' plain bytes scaled by the share of
        their live entries left once every tombstone has cancelled one of them (a
        tombstone's own bytes, a key, are counted as if live). Why not
        the segments' bytes alone: after an update phase that sum holds every moved
        index entry twice plus its tombstone (the reference plan's email index at 10M:
        about 580 MB live, about 1.5 GB with the update's segments beside it), so a tree
        well below the threshold could pass it, and a tree that compressed stays
        compressed; RocksDB sizes its levels by the data in its last one. Overwrites
        without a tombstone (the profiles tree's updates) still count twice: a tree of
        that kind compresses early, never late."""
        live = sum(s.live for s in self.segments)
        if not live:
            return self.options.compression_threshold_mb == 0
        dead = sum(s.entries for s in self.segments) - live  # tombstones
        left = max(0, live - dead) / live  # each tombstone cancels a live entry
        plain = sum(s.plain_size for s in self.segments)
        return plain * left >= self.options.compression_threshold_mb << 20

    def _merge(self, srcs: list[SegmentReader], drop_tombstones: bool) -> Job:
        seg_id = self._new_id()
        compress = self.compresses()
        built = _Built()
        try:
            if native.ACCELERATED:  # decode, merge, encode, write and open in a worker thread
                merge_into = partial(self._native_merge, srcs=srcs, drop_tombstones=drop_tombstones)
                yield partial(self._build, built, seg_id, compress, merge_into)
            else:
                built.writer = writer = self._writer(seg_id, compress)
                cursors = [s.cursor(blocks=8, max_blocks=8, cached=False) for s in srcs]
                yield from compact(cursors, writer, drop_tombstones, slice_entries=JOB_SLICE)
                yield partial(self._finish_build, built, seg_id)
        except BaseException:
            built.discard()
            raise
        if self.closed:
            built.discard()
            return
        merged = built.seg
        if merged is None:
            built.discard()  # every entry cancelled out: the sources simply go
        else:
            self.merged_bytes += built.size
        # Flushes only add segments in front and one merge runs at a time, so the
        # sources are still one contiguous run: the result takes their place.
        at = next(i for i, s in enumerate(self.segments) if s is srcs[0])
        assert self.segments[at : at + len(srcs)] == srcs
        self.segments[at : at + len(srcs)] = [merged] if merged is not None else []
        self._segments_changed()
        self._obsolete.update(s.id for s in srcs)
        # the commit; a crash before the deletes leaves provable garbage
        commit = self._commit(built if merged is not None else None, srcs, [])
        try:
            yield commit
        finally:
            commit()  # a job closed before its commit step ran: inline, now
        self._obsolete.difference_update(s.id for s in srcs)
        if self.on_work is not None:
            self.on_work()  # the result may itself be due for a merge

    @staticmethod
    def _native_merge(writer: SegmentWriter, *, srcs: list[SegmentReader], drop_tombstones: bool) -> None:
        """The compiled merge of ``srcs`` into ``writer``; a damaged source block is a
        ``CorruptSegment`` naming its file and offset, as the Python path's read says."""
        try:
            writer.add_merged([s.native_source() for s in srcs], drop_tombstones)
        except native.BlockCorrupt as exc:
            src, blk, reason = exc.args
            seg = srcs[src]
            raise CorruptSegment(seg.path, int(seg.offsets[blk]), f"block {blk} {reason}") from None

    def _new_id(self) -> int:
        """A fresh segment id (never reused)."""
        i = self._next_id
        self._next_id += 1
        return i

    @staticmethod
    def run_job(job: Job | None) -> None:
        if job is None:
            return
        try:
            for step in job:
                if step is not None:
                    step()
        finally:
            job.close()  # a step that raised: the job cleans up now (its ``.tmp``), not at GC

    # --- synchronous maintenance (tests, close) ------------------------------------------
    def flush_all(self) -> None:
        """Freeze the memtable and flush every frozen one, synchronously."""
        self.freeze()
        while self.frozen:
            self.run_job(self.flush_job())

    def merge_all(self) -> None:
        while self.needs_merge():
            self.run_job(self.merge_job())

    def compact_all(self) -> None:
        """Merge every segment into one, synchronously (what a stabilization ends with)."""
        self.compact_requested = True
        try:
            self.merge_all()
        finally:
            self.compact_requested = False

    def rotate_caches(self) -> None:
        for seg in self.segments:
            seg.rotate_caches()

    def save_meta(self) -> None:
        """Persist the manifest (``meta.json``); see ``meta.py`` for what it records."""
        self._save_meta(clean_close=False)

    def persisted(self) -> bool:
        """Whether a ``wal.sync()`` and ``save_meta()`` would write nothing: every log
        fsynced since its last write and the manifest as saved (a settle right after a
        stabilization then needs no worker thread)."""
        if self.wal.has_work() or any(log.dirty for log in list(self.wal.files.values())):
            return False
        return self._on_disk(self._meta(clean_close=False))

    def _on_disk(self, meta: Meta) -> bool:
        """Whether the saved manifest already says what ``meta`` says. Ids in its
        ``obsolete`` whose files a merge has since deleted do not count: open deletes only
        the listed ids that exist, and ids are never reused (so a settle after a
        stabilization's merges rewrites no manifest)."""
        saved = self._saved_meta
        if saved is None:
            return False
        return meta == saved or (
            set(meta.obsolete) <= set(saved.obsolete) and replace(meta, obsolete=saved.obsolete) == saved
        )

    def _meta(self, clean_close: bool) -> Meta:
        logs: dict[int, int | None] = {}
        for mt in (self.mutable, *self.frozen):
            for seq in mt.wal_seqs:
                try:
                    size = wal_path(self.dir, seq).stat().st_size
                except FileNotFoundError:  # wal_mode "none": no files
                    continue
                logs[seq] = size if clean_close else None
        return Meta(
            segments=[s.id for s in self.segments],
            next_id=self._next_id,
            min_wal=self._min_wal,
            obsolete=sorted(self._obsolete),
            logs=logs,
            clean_close=clean_close,
        )

    def _snapshot(self, clean_close: bool) -> tuple[Meta, int]:
        """The manifest as the tree is now, and its version (newer snapshots, higher)."""
        self._meta_version += 1
        return self._meta(clean_close), self._meta_version

    def _save_meta(self, clean_close: bool) -> None:
        self._write_meta(*self._snapshot(clean_close))

    def _write_meta(self, meta: Meta, version: int) -> None:
        """Write ``meta`` unless a newer snapshot is on disk already (it records all
        that ``meta`` does: see ``commit.py``) or the saved manifest says the same."""
        with self._meta_lock:
            if version <= self._saved_version:
                return
            if not self._on_disk(meta):  # (a settle after a stabilization rewrites nothing)
                write_meta(self.dir, meta)
                self._saved_meta = meta
            self._saved_version = version

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
        self.held.release_all()
