"""A third workload in one file, outside the package: counters loaded, then incremented.

It is the example of docs/extending.md's "Writing a workload": copy it, change the phases
and the stores, register it and run a plan that names it:

    ASYNCBENCH_WORKLOADS="counter=counter_workload:CounterWorkload" PYTHONPATH=examples \\
        asyncbench run examples/counter.toml --engine memory,lsm,rocksdb,sqlite

(or, installed as a package, an ``asyncbench.workloads`` entry point). Nothing under
``asyncbench/``, ``engines/`` or ``workloads/`` changes: engines hand out primitives
(:mod:`asyncbench.store`), and this file maps its two operations onto each kind of them.

The workload: ``counters`` (the size, ``--records``/``--profiles``) counters, ids 1..N,
each loaded with the value ``id % 97``; then a seeded stream of ``increments`` ids, each
one increment (read the counter, add one, write it back: two engine calls, one operation);
then a verify phase that reads every counter back in one scan. Every phase's checksum is
a sum, modulo 2**64, of one 64-bit digest per operation of (id, value written), so it is
the same on every engine and at every parallelism P: the increments of one id stay with
one worker, in plan order (``Split.BY_UID``), so each id's values are 1, 2, ... above its
start whatever the interleaving of workers.

Its stores, over the primitives an engine gives:
- key/value: one store named ``counters`` (an engine of a fixed set of stores gives its
  first), key ``counter:<id, 10 digits>``, value the decimal number;
- SQL: one table ``counters (id, value)``, made by the load's first batch in the engine's
  integer type (``CREATE TABLE IF NOT EXISTS``): an engine drops only the tables it knows,
  so on a server engine (MySQL, PostgreSQL) the table stays after the run and a second
  load finds its rows (a duplicate key): this example is for the embedded engines;
- in process (the memory engine): a dict.
"""

from __future__ import annotations

import random
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from time import perf_counter_ns
from types import MappingProxyType
from typing import Any

from asyncbench.store import (
    Column,
    InProcess,
    KvPrimitives,
    KvStore,
    Placement,
    SqlPrimitives,
    Table,
    build_once,
)
from asyncbench.workload import Action, Fold, Group, Items, PhaseKind, RecordMemory, Split, StreamUse

__all__ = ["CounterWorkload"]

M64 = (1 << 64) - 1
#: Multiplies an id into its digest (the 64-bit golden ratio: ids spread over the word).
GOLDEN = 0x9E3779B97F4A7C15
KEY = b"counter:%010d"
TABLE = "counters"
Marks = list[int]


def initial(uid: int) -> int:
    """The value the load writes for counter ``uid``."""
    return uid % 97


def digest(uid: int, value: int) -> int:
    """One operation's digest: which counter, and the value it holds after the operation."""
    return (uid * GOLDEN + value) & M64


# --- the plan: a pure function of (counts, seed) ------------------------------------------


@dataclass(frozen=True)
class Counts:
    """The plan's counts: ``profiles`` is the size (counters), as the framework names it."""

    profiles: int
    increments: int


@dataclass(frozen=True)
class Plan:
    counts: Counts
    increments: tuple[int, ...]  # the ids incremented, in plan order


def draw_plan(counts: Counts, seed: int) -> Plan:
    rng = random.Random(seed)
    n = counts.profiles
    return Plan(counts, tuple(rng.randrange(1, n + 1) for _ in range(counts.increments)))


# --- the stores: one per kind of primitives -------------------------------------------------


class KvCounters:
    """The counters over one key/value store, each batch one placed call."""

    def __init__(self, kv: KvStore, place: Placement) -> None:
        self.kv, self.place = kv, place

    def _load(self, ids: Sequence[int], marks: Marks) -> None:
        put, mark = self.kv.put, marks.append
        mark(perf_counter_ns())
        for uid in ids:
            put(KEY % uid, b"%d" % initial(uid))
            mark(perf_counter_ns())

    def _increment(self, ids: Sequence[int], marks: Marks) -> list[int]:
        get, put, mark = self.kv.get, self.kv.put, marks.append
        out = []
        mark(perf_counter_ns())
        for uid in ids:
            raw = get(KEY % uid)
            if raw is None:
                raise KeyError(f"counter {uid} is missing")
            value = int(raw) + 1
            put(KEY % uid, b"%d" % value)
            out.append(digest(uid, value))
            mark(perf_counter_ns())
        return out

    def _total(self) -> tuple[int, int]:
        pairs = [(int(k[8:]), int(v)) for k, v in self.kv.items()]
        return len(pairs), sum(digest(uid, value) for uid, value in pairs) & M64

    async def load(self, ids: Sequence[int], marks: Marks) -> None:
        await self.place.writes(self._load, ids, marks)

    async def increment(self, ids: Sequence[int], marks: Marks) -> list[int]:
        out: list[int] = await self.place.writes(self._increment, ids, marks)
        return out

    async def total(self) -> tuple[int, int]:
        out: tuple[int, int] = await self.place.scans(self._total)
        return out


#: The counters' table as the workload declares it to a SQL engine.
COUNTERS_TABLE = Table(TABLE, (Column("id", "integer"), Column("value", "integer")), key="id")


class SqlCounters:
    """The counters in one SQL table, each operation its own autocommit statement(s)."""

    def __init__(self, primitives: SqlPrimitives) -> None:
        self.p = primitives
        d = primitives.dialect
        ph = d.placeholder
        self.insert = f"INSERT INTO {TABLE} (id, value) VALUES ({ph(1)}, {ph(2)})"
        self.read = f"SELECT value FROM {TABLE} WHERE id = {ph(1)}"
        self.update = f"UPDATE {TABLE} SET value = {ph(1)} WHERE id = {ph(2)}"
        self.scan = f"SELECT id, value FROM {TABLE}"
        self._made = False

    async def _ensure(self) -> None:
        """The table, declared here and made by the engine in its flavour (once: the
        other workers find it), before the first batch's marks."""
        await self.p.create(COUNTERS_TABLE)
        self._made = True

    async def _write(self, statement: str, args: Sequence[Any]) -> None:
        try:
            await self.p.session.execute(statement, args)
        except Exception as exc:  # re-raised unless the engine calls it transient
            await self.p.retry(exc, self.p.session.execute, statement, args)

    async def _load(self, ids: Sequence[int], marks: Marks) -> None:
        mark = marks.append
        mark(perf_counter_ns())
        for uid in ids:
            await self._write(self.insert, (uid, initial(uid)))
            mark(perf_counter_ns())

    async def _increment_one(self, uid: int) -> int:
        row = await self.p.session.fetch_one(self.read, (uid,))
        if row is None:
            raise KeyError(f"counter {uid} is missing")
        value = int(row[0]) + 1
        await self.p.session.execute(self.update, (value, uid))
        return value

    async def _increment(self, ids: Sequence[int], marks: Marks) -> list[int]:
        mark, out = marks.append, []
        mark(perf_counter_ns())
        for uid in ids:
            try:
                value = await self._increment_one(uid)
            except Exception as exc:  # the read and its write again, as one unit
                value = await self.p.retry(exc, self._increment_one, uid)
            out.append(digest(uid, value))
            mark(perf_counter_ns())
        return out

    async def _total(self) -> tuple[int, int]:
        rows = await self.p.session.fetch_all(self.scan, ())
        return len(rows), sum(digest(int(r[0]), int(r[1])) for r in rows) & M64

    async def load(self, ids: Sequence[int], marks: Marks) -> None:
        if not self._made:
            await self._ensure()
        await self.p.hop(self._load, ids, marks)

    async def increment(self, ids: Sequence[int], marks: Marks) -> list[int]:
        await self.p.barrier()
        out: list[int] = await self.p.hop(self._increment, ids, marks)
        return out

    async def total(self) -> tuple[int, int]:
        await self.p.barrier()
        out: tuple[int, int] = await self.p.hop(self._total)
        return out


class DictCounters:
    """The counters in a dict (the memory engine: nothing between harness and workload)."""

    def __init__(self) -> None:
        self.values: dict[int, int] = {}

    async def load(self, ids: Sequence[int], marks: Marks) -> None:
        values, mark = self.values, marks.append
        mark(perf_counter_ns())
        for uid in ids:
            values[uid] = initial(uid)
            mark(perf_counter_ns())

    async def increment(self, ids: Sequence[int], marks: Marks) -> list[int]:
        values, mark, out = self.values, marks.append, []
        mark(perf_counter_ns())
        for uid in ids:
            value = values[uid] = values[uid] + 1
            out.append(digest(uid, value))
            mark(perf_counter_ns())
        return out

    async def total(self) -> tuple[int, int]:
        return len(self.values), sum(digest(u, v) for u, v in self.values.items()) & M64


Counters = KvCounters | SqlCounters | DictCounters


# --- the phase table ------------------------------------------------------------------------


async def _load(store: Counters, ids: Sequence[int], ctx: Any, marks: Marks) -> Sequence[int]:
    await store.load(ids, marks)
    return [digest(uid, initial(uid)) for uid in ids]


async def _increment(store: Counters, ids: Sequence[int], ctx: Any, marks: Marks) -> Sequence[int]:
    return await store.increment(ids, marks)


def _use(stream: str | None, name: str) -> tuple[StreamUse, ...]:
    return (StreamUse(stream, name, post_update=False, reference=name),)


PHASES: Mapping[str, PhaseKind] = MappingProxyType(
    {
        k.kind: k
        for k in (
            PhaseKind("load", Action.OPERATIONS, Group.WRITE, _use(None, "load"), Items.PROFILE_IDS, _load, Fold.IDS, needs_data=False),
            PhaseKind(
                "increment",
                Action.OPERATIONS,
                Group.WRITE,
                _use("increments", "increment"),
                Items.STREAM,
                _increment,
                Fold.IDS,
                split=Split.BY_UID,  # an id's increments stay with one worker, in order
            ),
            PhaseKind("verify", Action.VERIFY, Group.VERIFY, _use(None, "verify"), columns=("Verify",)),
        )
    }
)


class Checksum:
    """A worker's running sum of operation digests (order-free: the same at any P)."""

    def __init__(self) -> None:
        self.total = 0

    def add_ints(self, values: Sequence[int]) -> None:
        self.total = (self.total + sum(values)) & M64

    def add_profiles(self, records: Sequence[Any]) -> None:
        raise TypeError("a counter phase folds operation digests (Fold.IDS)")

    def hex(self) -> str:
        return f"{self.total:016X}"


# --- the workload -----------------------------------------------------------------------------


class CounterWorkload:
    """Counters loaded and incremented (this module's docstring).

    It writes the members every workload writes (:class:`asyncbench.workload.Workload`:
    13) and one capability, a verify phase (:class:`asyncbench.workload_capabilities.Verifies`:
    3 more). It subclasses nothing and writes nothing for what it lacks (its own plan
    settings, phase keys, reference tables, kernels, reuse, crash checks, durations...): the
    framework checks each capability where it uses it."""

    name = "counter"
    unit = "counters"
    kv_stores: tuple[str, ...] = (TABLE,)
    phases = PHASES
    count_names: tuple[str, ...] = ("increments",)
    verify_ops = 1  # one scan of every counter
    verify_note: str | None = (
        "verify reads every counter back in one scan; its checksum folds each counter's id and value."
    )

    def record_memory(self, settings: Mapping[str, Any]) -> RecordMemory:
        """Built: a batch holds ids (one int each, ``sys.getsizeof``); kept (the memory
        engine): a dict slot (3 words) with its id and value ints, rounded up."""
        word = sys.getsizeof(10**6)
        return RecordMemory(built=word, kept=3 * 8 + 2 * word + 16)

    def counts(self, profiles: int, limit: int, overrides: Mapping[str, int], settings: Mapping[str, Any]) -> Counts:
        return Counts(profiles=profiles, increments=overrides.get("increments", profiles))

    def draw_plan(self, counts: Counts, seed: int) -> Plan:
        return draw_plan(counts, seed)

    def phase_items(
        self, kind: PhaseKind, stream: str | None, count: int | None, plan: Plan, params: Mapping[str, Any]
    ) -> Sequence[Any]:
        if kind.kind == "load":
            return range(1, plan.counts.profiles + 1)
        ids = plan.increments
        return ids if count is None else ids[:count]

    def store(self, primitives: Any, limit: int) -> Counters:
        if isinstance(primitives, KvPrimitives):
            return build_once(primitives, self.name, lambda: KvCounters(primitives.store(TABLE), primitives.place))
        if isinstance(primitives, SqlPrimitives):
            return build_once(primitives, self.name, lambda: SqlCounters(primitives))
        if isinstance(primitives, InProcess):
            return build_once(primitives, self.name, DictCounters)
        raise TypeError(f"the engine's worker gave {type(primitives).__name__}: the counter workload maps no such store")

    def checksum(self) -> Checksum:
        return Checksum()

    def combine(self, hexes: Sequence[str]) -> str:
        return f"{sum(int(h, 16) for h in hexes) & M64:016X}"

    async def verify_checksum(self, store: Counters, records: int) -> str:
        count, total = await store.total()
        if count != records:
            raise RuntimeError(f"the store holds {count} counters, not {records}")
        return f"{total:016X}"

    def plan_writes(
        self, phases: Sequence[tuple[PhaseKind, str | None, int | None]], plan: Plan, seed: int
    ) -> list[tuple[int | None, int]]:
        """Logical bytes: a key (18 bytes) and a decimal value per write, counted exactly by
        replaying the plan's values; the live data is every counter's key and value."""
        values = [initial(uid) for uid in range(plan.counts.profiles + 1)]
        key = len(KEY % 0)

        def live() -> int:
            return sum(key + len(str(v)) for v in values[1:])

        out: list[tuple[int | None, int]] = []
        for kind, _stream, count in phases:
            if kind.kind == "load":
                out.append((live(), live()))
            elif kind.kind == "increment":
                written = 0
                ids = plan.increments if count is None else plan.increments[:count]
                for uid in ids:
                    values[uid] += 1
                    written += key + len(str(values[uid]))
                out.append((written, live()))
            else:
                out.append((None, live()))
        return out


