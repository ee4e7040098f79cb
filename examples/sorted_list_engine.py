"""A complete engine in one file: sorted key lists, and nothing of any workload.

It is the example of docs/extending.md's "Writing an engine" section: copy it, replace the
sorted lists with your store's calls, register it (an ``asyncbench.engines`` entry point
in your package, or ``ASYNCBENCH_ENGINES="mine=mypackage.module:MyEngine"``) and run any
plan with ``--engine mine``. ``tests/test_example_engine.py`` runs the spec's reference
plan through the real CLI with it and checks all 17 checksums.

What an engine implements:
- its primitives (:mod:`asyncbench.store`): here ordered key/value stores
  (:class:`SortedListKv`: get, put, delete, the first keys from a key, every item, a
  count), made on first use under the names a workload asks for (:class:`SortedListStores`);
- the lifecycle of :class:`asyncbench.engine.Engine` (``open``/``close``; ``stabilize``,
  ``settle`` and ``storage_bytes`` have defaults) and ``worker(i)``, which returns those
  primitives as a :class:`~asyncbench.store.KvPrimitives`, with where a batch runs (a
  :class:`~asyncbench.store.Placement`: here on the event loop, with a turn for other
  tasks after each batch). Each workload builds its own store over them (the profile
  store maps its profiles and four indexes onto five named stores, YCSB its records onto
  one): one store operation per workload operation, per-operation latency stamps;
- optionally ``facts()``, what the report should know (durability, memory scope...).

A SQL engine does the same with :class:`~asyncbench.store.SqlPrimitives` (driver calls and
dialect: ``sqlite_memory_engine.py`` beside this file).
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right, insort
from collections.abc import Callable, Iterator
from typing import Any

import anyio
from anyio.abc import TaskGroup

from asyncbench.engine import Engine
from asyncbench.facts import Durability, EngineFacts, StorageMethod
from asyncbench.store import KvPrimitives, Placement

__all__ = ["SortedListEngine", "SortedListKv", "SortedListStores"]


class SortedListKv:
    """One ordered key/value store: values in a dict, keys in a sorted list."""

    def __init__(self) -> None:
        self.values: dict[bytes, bytes] = {}
        self.keys: list[bytes] = []

    def get(self, key: bytes) -> bytes | None:
        return self.values.get(key)

    def put(self, key: bytes, value: bytes) -> None:
        if key not in self.values:
            insort(self.keys, key)
        self.values[key] = value

    def delete(self, key: bytes) -> None:
        if key in self.values:
            del self.values[key]
            self.keys.pop(bisect_left(self.keys, key))

    def scan(self, start: bytes, last: bytes | None, limit: int) -> list[bytes]:
        """The first ``limit`` keys >= ``start`` and <= ``last`` (None: no upper bound)."""
        i = bisect_left(self.keys, start)
        j = len(self.keys) if last is None else bisect_right(self.keys, last)
        return self.keys[i : min(j, i + limit)]

    def items(self) -> Iterator[tuple[bytes, bytes]]:
        return ((k, self.values[k]) for k in self.keys)

    def count(self) -> int:
        return len(self.keys)


class SortedListStores(dict[str, SortedListKv]):
    """The engine's stores by name, each made when a workload first asks for it."""

    def __missing__(self, name: str) -> SortedListKv:
        made = self[name] = SortedListKv()
        return made


async def _on_loop(body: Callable[..., Any], *args: Any) -> Any:
    """Run a batch right here, then give other tasks a turn."""
    out = body(*args)
    await anyio.sleep(0)
    return out


class SortedListEngine(Engine):
    """Sorted key lists in memory (docs/extending.md's example engine)."""

    name = "sorted-list"
    persistent = False  # nothing survives the process: reopen keeps this object

    def __init__(self, config) -> None:  # type: ignore[no-untyped-def]
        super().__init__(config)
        self._primitives = KvPrimitives(SortedListStores(), Placement.everywhere(_on_loop))
        self._open = False

    # --- lifecycle ----------------------------------------------------------------------
    async def open(self, reset: bool, background: TaskGroup | None = None) -> None:
        if reset:  # new primitives: a workload builds its store over them anew
            self._primitives = KvPrimitives(SortedListStores(), Placement.everywhere(_on_loop))
        self._open = True

    async def close(self) -> None:
        self._open = False

    def worker(self, index: int) -> KvPrimitives:
        """Every worker shares the one set of stores."""
        if not self._open:
            raise RuntimeError("sorted-list engine is not open")
        return self._primitives

    def storage_bytes(self) -> int:
        return 0

    def facts(self) -> EngineFacts:
        facts = super().facts()
        facts.durability = Durability(persistent=False)
        facts.storage_method = StorageMethod.NONE
        return facts
