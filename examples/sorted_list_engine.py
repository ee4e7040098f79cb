"""A complete engine in one file: the profile store over a dict and three sorted lists.

It is the example of the README's "Writing an engine" section: copy it, replace the data
structures with your store's calls, register it with
``ASYNCBENCH_ENGINES="mine=mypackage.module:MyEngine"`` and run any plan with
``--engine mine``. ``tests/test_example_engine.py`` runs the spec's reference plan through
the real CLI with it and checks all 17 checksums.

What an engine implements:
- the lifecycle of :class:`asyncbench.engine.Engine` (``open``/``close``; ``stabilize``,
  ``settle`` and ``storage_bytes`` have defaults);
- the ten operations of :class:`asyncbench.workloads.profile_store.store.ProfileStore` plus ``count``:
  each takes a whole batch, does ONE store operation per item, and appends
  ``perf_counter_ns()`` to ``marks`` once before the first item and once after each item
  (the per-operation latency, measured where the operations run);
- optionally ``facts()``, what the report should know (durability, memory scope...).
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right, insort
from collections.abc import Sequence
from time import perf_counter_ns

from anyio.abc import TaskGroup
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

from asyncbench.engine import Engine
from asyncbench.facts import Durability, EngineFacts, StorageMethod

__all__ = ["SortedListEngine"]


class SortedListEngine(Engine):
    name = "sorted-list"
    persistent = False  # nothing survives the process: reopen keeps this object

    def __init__(self, config) -> None:  # type: ignore[no-untyped-def]
        super().__init__(config)
        self._clear()

    def _clear(self) -> None:
        self.rows: dict[int, Profile] = {}
        self.by_email: dict[str, int] = {}
        self.country_status: list[bytes] = []  # sorted index keys, ending with the user id
        self.created_at: list[bytes] = []
        self.reputation: list[bytes] = []

    # --- lifecycle ----------------------------------------------------------------------
    async def open(self, reset: bool, background: TaskGroup | None = None) -> None:
        if reset:
            self._clear()

    async def close(self) -> None:
        pass

    def storage_bytes(self) -> int:
        return 0

    def facts(self) -> EngineFacts:
        facts = super().facts()
        facts.durability = Durability(persistent=False)
        facts.storage_method = StorageMethod.NONE
        return facts

    # --- writes ---------------------------------------------------------------------------
    async def insert(self, profiles: Sequence[Profile], marks: Marks) -> None:
        marks.append(perf_counter_ns())  # start stamp
        for p in profiles:
            self.rows[p[0]] = p
            self.by_email[p[1]] = p[0]
            insort(self.country_status, country_status_key(p))
            insort(self.created_at, created_at_key(p))
            insort(self.reputation, reputation_key(p))
            marks.append(perf_counter_ns())

    async def update(self, uids: Sequence[int], transform: Transform, marks: Marks) -> list[Profile]:
        marks.append(perf_counter_ns())  # start stamp
        out = []
        for uid in uids:
            old = self.rows.get(uid)
            if old is not None:
                new = transform(old)
                self.rows[uid] = new
                for index, key in (
                    (self.country_status, country_status_key),
                    (self.reputation, reputation_key),
                ):
                    index.pop(bisect_left(index, key(old)))
                    insort(index, key(new))
                out.append(new)
            marks.append(perf_counter_ns())
        return out

    # --- point reads ------------------------------------------------------------------------
    async def read_by_id(self, uids: Sequence[int], marks: Marks) -> list[Profile]:
        marks.append(perf_counter_ns())  # start stamp
        out = []
        for uid in uids:
            p = self.rows.get(uid)
            if p is not None:
                out.append(p)
            marks.append(perf_counter_ns())
        return out

    async def lookup_by_email(self, emails: Sequence[str], marks: Marks) -> list[Profile]:
        marks.append(perf_counter_ns())  # start stamp
        out = []
        for email in emails:
            uid = self.by_email.get(email)
            if uid is not None:
                out.append(self.rows[uid])
            marks.append(perf_counter_ns())
        return out

    # --- index scans (ids) and queries (profiles) -------------------------------------------
    def _range(self, index: list[bytes], start: bytes, last: bytes | None) -> list[int]:
        i = bisect_left(index, start)
        j = len(index) if last is None else bisect_right(index, last)
        return [uid_of_index_key(k) for k in index[i : min(j, i + self.limit)]]

    def _cs(self, q: tuple[str, str]) -> list[int]:
        prefix = country_status_prefix(*q)
        return self._range(self.country_status, prefix, prefix + b"\xff")

    def _ca(self, r: tuple[int, int]) -> list[int]:
        return self._range(self.created_at, *created_at_bounds(*r))

    def _top(self, _: object) -> list[int]:
        return self._range(self.reputation, b"", None)

    def _each(self, items, ids_of, fetch: bool, marks: Marks) -> list:  # type: ignore[no-untyped-def]
        marks.append(perf_counter_ns())  # start stamp
        out: list = []
        for item in items:
            ids = ids_of(item)
            out += [self.rows[u] for u in ids] if fetch else ids
            marks.append(perf_counter_ns())
        return out

    async def scan_country_status(self, queries: Sequence[tuple[str, str]], marks: Marks) -> list[int]:
        return self._each(queries, self._cs, False, marks)

    async def query_country_status(self, queries: Sequence[tuple[str, str]], marks: Marks) -> list[Profile]:
        return self._each(queries, self._cs, True, marks)

    async def scan_created_at(self, ranges: Sequence[tuple[int, int]], marks: Marks) -> list[int]:
        return self._each(ranges, self._ca, False, marks)

    async def query_created_at(self, ranges: Sequence[tuple[int, int]], marks: Marks) -> list[Profile]:
        return self._each(ranges, self._ca, True, marks)

    async def scan_top_reputation(self, times: int, marks: Marks) -> list[int]:
        return self._each(range(times), self._top, False, marks)

    async def query_top_reputation(self, times: int, marks: Marks) -> list[Profile]:
        return self._each(range(times), self._top, True, marks)

    async def count(self) -> int:
        return len(self.rows)
