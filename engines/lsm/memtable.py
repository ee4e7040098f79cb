"""The mutable segment (memtable): a dict with a lazily sorted key view.

Writes are one dict store (``None`` is a tombstone, so deletes shadow older segments);
ordered access sorts the keys once and then only merges in keys added since, which
keeps the hot write path a plain dict assignment. A full memtable is frozen (read-only)
and flushed to a disk segment in the background while a new one takes writes.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Iterator


class Memtable:
    """Keys -> value bytes or ``None`` (tombstone). ``wal_seqs`` are the log files
    whose records it holds; they can be deleted once it is on disk."""

    __slots__ = ("data", "sorted_keys", "pending", "wal_seqs", "frozen")

    def __init__(self, wal_seqs: list[int] | None = None) -> None:
        self.data: dict[bytes, bytes | None] = {}
        self.sorted_keys: list[bytes] | None = None
        self.pending: list[bytes] = []
        self.wal_seqs: list[int] = wal_seqs or []
        self.frozen = False

    def __len__(self) -> int:
        return len(self.data)

    def put(self, key: bytes, value: bytes | None) -> None:
        """Upsert (``None`` = delete). The tree inlines this on its hot path."""
        data = self.data
        if self.sorted_keys is not None and key not in data:
            self.pending.append(key)
        data[key] = value

    def view(self) -> list[bytes]:
        """All keys in order. The list is never mutated afterwards, so iterators that
        hold it stay valid while writes continue."""
        keys = self.sorted_keys
        if keys is None:
            keys = self.sorted_keys = sorted(self.data)
            self.pending = []
        elif self.pending:
            pending = self.pending
            self.pending = []
            if len(pending) * 8 < len(keys):
                pending.sort()
                keys = keys + pending
                keys.sort()  # two sorted runs: timsort merges them in linear time
            else:
                keys = sorted(self.data)
            self.sorted_keys = keys
        return keys

    def range_keys(
        self, start: bytes, end: bytes | None, inclusive: bool, limit: int
    ) -> tuple[list, list, bool]:
        """Same contract as ``DiskSegment.range_keys``: (keys, tombstone flags, truncated)."""
        keys = self.view()
        i = bisect_left(keys, start)
        if end is None:
            j = len(keys)
        else:
            j = bisect_right(keys, end, i) if inclusive else bisect_left(keys, end, i)
        take = min(j, i + limit)
        out = keys[i:take]
        data = self.data
        return out, [data[k] is None for k in out], take < j

    def iter_chunks(self, start: bytes | None = None, chunk: int = 256) -> Iterator[tuple[list, list]]:
        keys = self.view()
        i = 0 if start is None else bisect_left(keys, start)
        data = self.data
        while i < len(keys):
            ks = keys[i : i + chunk]
            yield ks, list(map(data.__getitem__, ks))
            i += chunk

    def sorted_items(self) -> tuple[list[bytes], list[bytes | None]]:
        keys = self.view()
        return keys, list(map(self.data.__getitem__, keys))
