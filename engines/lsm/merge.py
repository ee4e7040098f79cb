"""Merging sorted sources (newest first) chunk by chunk, for iterators and counts.

(Background merges of disk segments use ``segment.merge_segments``, which can also copy
whole untouched blocks.)

Instead of a per-entry heap, each round takes from every source the entries up to the
smallest "last key" among the sources' current chunks (so every entry at or below that
bound is in hand), folds them into a dict oldest to newest (newer values shadow older
ones) and sorts the round's keys. Dict updates and timsort run in C, which makes this
several times faster in CPython than ``heapq.merge`` over tuples, and the work per
round is bounded by the chunk sizes, so callers can yield between rounds.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable, Iterator

Chunk = tuple[list[bytes], list["bytes | None"]]


class _Cursor:
    __slots__ = ("it", "keys", "values", "pos")

    def __init__(self, it: Iterator[Chunk]) -> None:
        self.it = it
        self.keys: list[bytes] = []
        self.values: list[bytes | None] = []
        self.pos = 0

    def fill(self) -> bool:
        """Make sure unread entries are in hand; False when the source is exhausted."""
        while self.pos >= len(self.keys):
            nxt = next(self.it, None)
            if nxt is None:
                return False
            self.keys, self.values = nxt
            self.pos = 0
        return True


def merge_chunks(sources: Iterable[Iterator[Chunk]], drop_tombstones: bool) -> Iterator[Chunk]:
    """Merged (keys, values) chunks in key order; for equal keys the value of the
    earliest source in ``sources`` wins. Tombstones (``None``) are kept unless
    ``drop_tombstones`` (only safe when the oldest data takes part)."""
    cursors = [_Cursor(iter(s)) for s in sources]
    while True:
        cursors = [c for c in cursors if c.fill()]
        if not cursors:
            return
        if len(cursors) == 1:
            c = cursors[0]
            keys, values = c.keys[c.pos :], c.values[c.pos :]
            c.pos = len(c.keys)
        else:
            bound = min(c.keys[-1] for c in cursors)
            merged: dict[bytes, bytes | None] = {}
            for c in reversed(cursors):  # oldest first, newer overwrite
                end = bisect_right(c.keys, bound, c.pos)
                if end > c.pos:
                    merged.update(zip(c.keys[c.pos : end], c.values[c.pos : end], strict=False))
                    c.pos = end
            keys = sorted(merged)
            values = [merged[k] for k in keys]
        if drop_tombstones and None in values:
            pairs = [(k, v) for k, v in zip(keys, values, strict=False) if v is not None]
            keys = [k for k, _ in pairs]
            values = [v for _, v in pairs]
        if keys:
            yield keys, values
