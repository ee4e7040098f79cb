"""The one k-way merge of sorted sources: point-in-time reads, scans, counts, flushes and
compaction all go through :func:`merge`.

Sources are :class:`Cursor` objects (a memtable's or a segment's entries from a seek
position, a chunk at a time), newest first; for equal keys the newest wins, and
tombstones (``None`` values) are dropped in one place, :func:`live_only`, when the
caller says the oldest data takes part.

Why chunks and not a heap: each round takes from every source the entries up to the
smallest last key among the sources' buffered chunks (so every entry at or below that
bound is in hand), folds them into a dict oldest to newest and sorts the round's keys.
Dict updates and timsort run in C, which makes this several times faster in CPython
than ``heapq.merge`` over tuples, and a round's work is bounded by the chunk sizes, so
callers can yield between rounds.

Why block runs: in compaction (``run_entries`` > 0) a segment cursor that sits at a
block boundary below every other source's next key hands over whole encoded blocks
(:class:`~asyncbench.engines.lsm.segment_writer.BlockRun`) instead of entries, and the writer
appends them verbatim: merging key-disjoint segments (ascending inserts) costs no
decode or encode at all.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable, Iterable, Iterator
from functools import partial
from typing import Literal, Protocol, overload

from .segment_writer import BlockRun

__all__ = ["NOT_READ", "Chunk", "Cursor", "RunWriter", "compact", "live_only", "merge"]

Chunk = tuple[list[bytes], list["bytes | None"]]


class Cursor:
    """One source's entries in key order from a seek position, behind a buffer:
    ``keys[pos:]`` / ``values[pos:]`` are in hand and unread. Subclasses provide
    :meth:`next_chunk` (and segments :meth:`take_run` and a cheaper :meth:`head`)."""

    __slots__ = ("keys", "values", "pos")

    def __init__(self) -> None:
        self.keys: list[bytes] = []
        self.values: list[bytes | None] = []
        self.pos = 0

    def next_chunk(self) -> Chunk | None:
        """The next entries after the buffer, or None when the source is exhausted."""
        raise NotImplementedError

    def load(self) -> bool:
        """Make sure unread entries are in hand; False when the source is exhausted."""
        while self.pos >= len(self.keys):
            chunk = self.next_chunk()
            if chunk is None:
                return False
            self.keys, self.values = chunk
            self.pos = 0
        return True

    def head(self) -> bytes | None:
        """The next key (None when exhausted)."""
        return self.keys[self.pos] if self.load() else None

    def take_run(self, below: bytes | None, drop_tombstones: bool, max_entries: int) -> BlockRun | None:
        """Whole encoded blocks whose keys all lie below ``below`` (None: no bound),
        if the cursor sits at a block boundary; else None. Only segments have blocks."""
        return None


#: The value a keys-only cursor gives a live entry whose value it did not read: truthy,
#: so :func:`live_only` can tell in C that a chunk of them holds no tombstone.
NOT_READ = b"(not read)"


def live_only(keys: list[bytes], values: list[bytes | None]) -> Chunk:
    """The one tombstone filter: the entries whose value is not ``None``."""
    if all(values) or None not in values:  # ``all`` first: fast when every value is truthy
        return keys, values
    pairs = [(k, v) for k, v in zip(keys, values, strict=True) if v is not None]
    return [k for k, _ in pairs], [v for _, v in pairs]


@overload
def merge(cursors: Iterable[Cursor], drop_tombstones: bool, run_entries: Literal[0] = 0) -> Iterator[Chunk]: ...
@overload
def merge(cursors: Iterable[Cursor], drop_tombstones: bool, run_entries: int) -> Iterator[Chunk | BlockRun]: ...
def merge(
    cursors: Iterable[Cursor], drop_tombstones: bool, run_entries: int = 0
) -> Iterator[Chunk | BlockRun]:
    """Merged (keys, values) chunks in key order; newer sources (earlier in ``cursors``)
    win. Tombstones are kept unless ``drop_tombstones`` (only safe when the oldest data
    takes part). ``run_entries`` > 0 (compaction) also yields block runs of up to about
    that many entries wherever a segment's next blocks lie below every other source."""
    live = list(cursors)
    while True:
        if run_entries:
            heads = [c.head() for c in live]
            live = [c for c, h in zip(live, heads, strict=True) if h is not None]
            if not live:
                return
            heads = [h for h in heads if h is not None]
            first = heads.index(min(heads))  # type: ignore[type-var]
            others = heads[:first] + heads[first + 1 :]
            run = live[first].take_run(min(others) if others else None, drop_tombstones, run_entries)  # type: ignore[type-var]
            if run is not None:
                yield run
                continue
            for c in live:
                c.load()
        elif len(live) == 1:  # one source left (a scan's usual case): chunks pass through
            c = live[0]
            chunk: Chunk | None = (
                (c.keys[c.pos :], c.values[c.pos :]) if c.pos < len(c.keys) else c.next_chunk()
            )
            while chunk is not None:
                keys, values = live_only(*chunk) if drop_tombstones else chunk
                if keys:
                    yield keys, values
                chunk = c.next_chunk()
            return
        else:
            live = [c for c in live if c.load()]
            if not live:
                return
        if len(live) == 1:
            c = live[0]
            if c.pos:
                keys, values = c.keys[c.pos :], c.values[c.pos :]
            else:
                keys, values = c.keys, c.values
            c.pos = len(c.keys)
        else:
            bound = min(c.keys[-1] for c in live)
            merged: dict[bytes, bytes | None] = {}
            for c in reversed(live):  # oldest first, newer overwrite
                end = bisect_right(c.keys, bound, c.pos)
                if end > c.pos:
                    merged.update(zip(c.keys[c.pos : end], c.values[c.pos : end], strict=True))
                    c.pos = end
            keys = sorted(merged)
            values = [merged[k] for k in keys]
        if drop_tombstones:
            keys, values = live_only(keys, values)
        if keys:
            yield keys, values


class RunWriter(Protocol):
    def add(self, keys: list[bytes], values: list[bytes | None]) -> None: ...
    def add_run(self, run: BlockRun) -> None: ...


def compact(
    cursors: Iterable[Cursor], writer: RunWriter, drop_tombstones: bool, slice_entries: int
) -> Iterator[Callable[[], None] | None]:
    """Merge ``cursors`` into ``writer`` as a job does (see ``tree.py``): ``None``
    after about every ``slice_entries`` entries (a checkpoint), and each block run as
    the write to run, e.g. in a worker thread."""
    done = 0
    for item in merge(cursors, drop_tombstones, run_entries=16 * slice_entries):
        if type(item) is BlockRun:
            done = 0
            yield partial(writer.add_run, item)
            continue
        keys, values = item  # type: ignore[misc]
        writer.add(keys, values)
        done += len(keys)
        if done >= slice_entries:
            done = 0
            yield None
