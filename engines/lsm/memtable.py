"""The mutable segment (memtable): a dict with a lazily sorted key view.

Why a dict: a write is one dict store into ``data`` (``None`` is a tombstone, so deletes
shadow older segments; the tree's write path is exactly that store). Ordered access
sorts the keys once and then merges in only the keys added since, which it finds at the
end of the dict's insertion order: keys are never removed (a delete stores ``None``), so
the keys past the sorted count are the new ones. A full memtable is frozen (read-only)
and flushed to a disk segment in the background while a new one takes writes.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from itertools import islice

from .merging_iterator import Chunk, Cursor

__all__ = ["Memtable", "MemtableCursor"]


class Memtable:
    """Keys -> value bytes or ``None`` (tombstone) in ``data``, which callers write
    directly and never delete from. ``wal_seqs`` are the log files whose records it
    holds; they can be deleted once it is on disk."""

    __slots__ = ("data", "sorted_keys", "wal_seqs")

    def __init__(self, wal_seqs: list[int] | None = None) -> None:
        self.data: dict[bytes, bytes | None] = {}
        self.sorted_keys: list[bytes] = []
        self.wal_seqs: list[int] = wal_seqs or []

    def __len__(self) -> int:
        return len(self.data)

    def view(self) -> list[bytes]:
        """All keys in order. The list is never mutated afterwards, so cursors that
        hold it stay valid while writes continue."""
        keys = self.sorted_keys
        new = len(self.data) - len(keys)
        if new:
            if new * 8 < len(keys):
                added = sorted(islice(reversed(self.data), new))
                keys = keys + added
                keys.sort()  # two sorted runs: timsort merges them in linear time
            else:
                keys = sorted(self.data)
            self.sorted_keys = keys
        return keys

    def cursor(
        self, start: bytes | None = None, end: bytes | None = None, inclusive: bool = False, batch: int = 256
    ) -> MemtableCursor:
        """Entries with start <= key < end (<= end if inclusive; None: unbounded),
        ``batch`` at a time; values as stored (``None`` = tombstone)."""
        return MemtableCursor(self, start, end, inclusive, batch)


class MemtableCursor(Cursor):
    """A memtable's entries for :func:`~asyncbench.engines.lsm.merging_iterator.merge`."""

    __slots__ = ("_view", "_data", "_i", "_stop", "_batch")

    def __init__(
        self, mt: Memtable, start: bytes | None, end: bytes | None, inclusive: bool, batch: int
    ) -> None:
        super().__init__()
        view = self._view = mt.view()
        self._data = mt.data
        i = self._i = 0 if start is None else bisect_left(view, start)
        if end is None:
            self._stop = len(view)
        else:
            self._stop = bisect_right(view, end, i) if inclusive else bisect_left(view, end, i)
        self._batch = batch

    def next_chunk(self) -> Chunk | None:
        i = self._i
        if i >= self._stop:
            return None
        j = self._i = min(self._stop, i + self._batch)
        ks = self._view[i:j]
        return ks, list(map(self._data.__getitem__, ks))
