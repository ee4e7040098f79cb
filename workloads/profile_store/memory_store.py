"""The profile store in this process's memory: dicts plus lazily sorted index key lists.

What the memory engine runs (its primitives are :class:`asyncbench.store.InProcess`: the
workload keeps its own reference store, nothing in between). It exists to check the
workload and the runner (its checksums must equal the spec's) and to measure the
harness-overhead floor. Reopen keeps the object: nothing persists.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Callable, Sequence
from time import perf_counter_ns
from typing import Any

from asyncbench.workloads.profile_store.profiles import (
    Profile,
    country_status_key,
    country_status_prefix,
    created_at_bounds,
    created_at_key,
    reputation_key,
    uid_of_index_key,
)
from asyncbench.workloads.profile_store.store import Marks, Transform

__all__ = ["MemoryProfileStore"]


class _SortedIndex:
    """A set of byte keys with a sorted view (and the ids the keys end with) rebuilt only
    after writes, so a scan is two bisects and a list slice."""

    __slots__ = ("keys", "_sorted", "_ids")

    def __init__(self) -> None:
        self.keys: set[bytes] = set()
        self._sorted: list[bytes] | None = []
        self._ids: list[int] = []

    def add(self, key: bytes) -> None:
        self.keys.add(key)
        self._sorted = None

    def discard(self, key: bytes) -> None:
        self.keys.discard(key)
        self._sorted = None

    def view(self) -> list[bytes]:
        if self._sorted is None:
            self._sorted = sorted(self.keys)
            self._ids = [uid_of_index_key(k) for k in self._sorted]
        return self._sorted

    def first_ids(self, start: bytes, stop: bytes | None, limit: int) -> list[int]:
        """Ids of the first ``limit`` keys >= start and < stop (or all after start)."""
        keys = self.view()
        i = bisect_left(keys, start)
        j = len(keys) if stop is None else bisect_left(keys, stop)
        return self._ids[i : min(j, i + limit)]

    def first_ids_inclusive(self, start: bytes, last: bytes, limit: int) -> list[int]:
        keys = self.view()
        i = bisect_left(keys, start)
        j = bisect_right(keys, last)
        return self._ids[i : min(j, i + limit)]


def _prefix_end(prefix: bytes) -> bytes:
    return prefix[:-1] + bytes([prefix[-1] + 1])


class MemoryProfileStore:
    """The profiles in a dict, each index a lazily sorted list of keys: a complete
    :class:`~asyncbench.workloads.profile_store.store.ProfileStore` with no store between
    the harness and the workload (the memory engine's, the harness floor)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.profiles: dict[int, Profile] = {}
        self.emails: dict[str, int] = {}
        self.country_status = _SortedIndex()
        self.created_at = _SortedIndex()
        self.reputation = _SortedIndex()

    async def insert(self, profiles: Sequence[Profile], marks: Marks) -> None:
        mark, clock = marks.append, perf_counter_ns
        mark(clock())  # the batch's start stamp, taken where the operations run
        for p in profiles:
            self.profiles[p[0]] = p
            self.emails[p[1]] = p[0]
            self.country_status.add(country_status_key(p))
            self.created_at.add(created_at_key(p))
            self.reputation.add(reputation_key(p))
            mark(clock())

    async def read_by_id(self, uids: Sequence[int], marks: Marks) -> list[Profile]:
        get = self.profiles.get
        mark, clock = marks.append, perf_counter_ns
        mark(clock())  # the batch's start stamp, taken where the operations run
        out = []
        for uid in uids:
            p = get(uid)
            if p is not None:
                out.append(p)
            mark(clock())
        return out

    async def lookup_by_email(self, emails: Sequence[str], marks: Marks) -> list[Profile]:
        mark, clock = marks.append, perf_counter_ns
        mark(clock())  # the batch's start stamp, taken where the operations run
        out = []
        for e in emails:
            uid = self.emails.get(e)
            if uid is not None:
                p = self.profiles.get(uid)
                if p is not None:
                    out.append(p)
            mark(clock())
        return out

    def _country_status_ids(self, q: tuple[str, str]) -> list[int]:
        prefix = country_status_prefix(*q)
        return self.country_status.first_ids(prefix, _prefix_end(prefix), self.limit)

    def _created_at_ids(self, r: tuple[int, int]) -> list[int]:
        start, last = created_at_bounds(*r)
        return self.created_at.first_ids_inclusive(start, last, self.limit)

    def _top_ids(self, _: object) -> list[int]:
        return self.reputation.first_ids(b"", None, self.limit)

    def _each(
        self, items: Sequence[Any], ids_of: Callable[[Any], list[int]], fetch: bool, marks: Marks
    ) -> list[Any]:
        """Per query: its ids (a scan) or their profiles (a query), one mark each."""
        get = self.profiles.get
        mark, clock = marks.append, perf_counter_ns
        mark(clock())  # the batch's start stamp, taken where the operations run
        out: list[Any] = []
        for item in items:
            ids = ids_of(item)
            out += [p for p in map(get, ids) if p is not None] if fetch else ids
            mark(clock())
        return out

    async def scan_country_status(self, queries: Sequence[tuple[str, str]], marks: Marks) -> list[int]:
        return self._each(queries, self._country_status_ids, False, marks)

    async def query_country_status(self, queries: Sequence[tuple[str, str]], marks: Marks) -> list[Profile]:
        return self._each(queries, self._country_status_ids, True, marks)

    async def scan_created_at(self, ranges: Sequence[tuple[int, int]], marks: Marks) -> list[int]:
        return self._each(ranges, self._created_at_ids, False, marks)

    async def query_created_at(self, ranges: Sequence[tuple[int, int]], marks: Marks) -> list[Profile]:
        return self._each(ranges, self._created_at_ids, True, marks)

    async def scan_top_reputation(self, times: int, marks: Marks) -> list[int]:
        return self._each(range(times), self._top_ids, False, marks)

    async def query_top_reputation(self, times: int, marks: Marks) -> list[Profile]:
        return self._each(range(times), self._top_ids, True, marks)

    async def update(self, uids: Sequence[int], transform: Transform, marks: Marks) -> list[Profile]:
        mark, clock = marks.append, perf_counter_ns
        mark(clock())  # the batch's start stamp, taken where the operations run
        out = []
        for uid in uids:
            old = self.profiles.get(uid)
            if old is not None:
                new = transform(old)
                self.profiles[uid] = new
                self.country_status.discard(country_status_key(old))
                self.country_status.add(country_status_key(new))
                self.reputation.discard(reputation_key(old))
                self.reputation.add(reputation_key(new))
                out.append(new)
            mark(clock())
        return out

    async def count(self) -> int:
        return len(self.profiles)
