"""What a workload is to the framework, as :mod:`asyncbench.engine` says what an engine is.

The runner, config, report and estimate know no workload: they read its phase kinds
(what each does, which plan streams it consumes, what its checksum folds, where the report
puts it, how P workers split it), draw its plan, fold and combine its checksums through :class:`Workload`, and use
what only some workloads have (reference tables, kernels, reuse, crash checks...) through
the capability Protocols of :mod:`asyncbench.workload_capabilities`, reached by name through the registry
(:mod:`asyncbench.workloads`). A workload (``workloads/profile_store/``, and a second one
such as YCSB beside it) is a package that fills this vocabulary in: a new phase kind is a
row of its table plus the store calls it makes, never a framework edit.

This module imports nothing of the package: workloads build on it, the framework reads it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import Field, dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, runtime_checkable

if TYPE_CHECKING:  # an annotation only: this module imports no third-party package at run time
    import numpy as np
    import numpy.typing as npt

__all__ = [
    "Action",
    "BatchCall",
    "Fold",
    "FoldTarget",
    "Group",
    "Items",
    "MixFigures",
    "RecoveryCounts",
    "PhaseKind",
    "Prefix",
    "RecordMemory",
    "SettingError",
    "Split",
    "StreamUse",
    "Workload",
]


class Action(StrEnum):
    """What the runner does for a phase (asyncbench.run.phase.dispatch runs each)."""

    OPERATIONS = "ops"  # timed operation batches through one store call each
    STABILIZE = "stabilize"  # engine brings background work to rest (only if it needs it)
    SETTLE = "settle"  # engine makes everything durable; storage is measured after it
    REOPEN = "reopen"  # close, then open the same store without reset
    VERIFY = "verify"  # the workload's final checksum
    RECOVER = "recover"  # after a crash: open the store again and check it record by record


class Group(StrEnum):
    """Where the report and charts put a phase."""

    WRITE = "write"
    LOOKUP = "lookup"
    SCAN = "scan"
    QUERY = "query"
    MIXED = "mixed"  # a phase of several operation kinds (PhaseKind.mixes)
    MAINTENANCE = "maintenance"
    VERIFY = "verify"


class Fold(StrEnum):
    """What the phase checksum folds from a batch's result."""

    IDS = "ids"  # one word per id
    RECORDS = "records"  # the workload's checksum fields per record


class Split(StrEnum):
    """How P workers divide a phase's items."""

    CONTIGUOUS = "contiguous"  # len // P each, the first len % P workers one more
    BY_UID = "by_uid"  # worker uid % P, in plan order (an id's updates stay ordered)


class Items(StrEnum):
    """Where a phase's items come from."""

    NONE = "none"
    PROFILE_IDS = "profile_ids"  # ids 1..records (the phase that creates the data)
    STREAM = "stream"  # the plan stream's items
    REPEATS = "repeats"  # range(n): the same query n times (n sized by the stream's count)


@dataclass(frozen=True)
class StreamUse:
    """One way a kind can run: the plan stream it consumes and what that makes it.

    ``reference`` is the identity the published checksum tables use for this use, so a
    renamed phase is still checked and a ``count``-limited one is never compared.
    """

    stream: str | None
    name: str
    post_update: bool
    reference: str


#: One batch: (store, items, context, marks) -> what the checksum folds.
BatchCall = Callable[[Any, Sequence[Any], Any, list[int]], Awaitable[Sequence[Any]]]


@dataclass(frozen=True)
class PhaseKind:
    """One row of a workload's phase table."""

    kind: str
    action: Action
    group: Group
    uses: tuple[StreamUse, ...]  # the first is the default; stream-less kinds pick by position
    items: Items = Items.NONE
    call: BatchCall | None = None
    fold: Fold | None = None
    split: Split = Split.CONTIGUOUS
    needs_data: bool = True  # must follow the insert phase
    #: A rate sweep may repeat it: False for a kind whose writes change what a second run
    #: would read or insert (YCSB's mixed phase), as the insert and update kinds (``rewrites``).
    repeatable: bool = True
    #: Its operations are of several kinds (YCSB's mixed phase): the result records each
    #: kind and the skew run (``MixedPhases.mix_figures``, :mod:`asyncbench.workload_capabilities`).
    mixes: bool = False
    #: Maintenance and verify kinds: the report's "Total By Engine" column of each use (in
    #: ``uses`` order), so a new kind gets its column from this row alone.
    columns: tuple[str, ...] = ()
    #: The workload's own division of the items among P workers (worker w gets ``[w]``),
    #: when neither ``split`` rule fits (YCSB: each worker owns the keys it writes); the
    #: dispatcher uses it wherever the phase runs.
    partition: Callable[[Sequence[Any], int], list[Sequence[Any]]] | None = None
    #: It may run for a ``duration`` instead of to its end (YCSB's mixed phase): every
    #: operation has a position in one seeded stream and its checksum is a sum of
    #: per-operation digests independent of the worker that ran it, so the checksum of the
    #: stream's first N operations is the same on every engine and P
    #: (``BoundedPhases.prefix_checksums``).
    bounded: bool = False

    @property
    def streams(self) -> tuple[str, ...]:
        return tuple(u.stream for u in self.uses if u.stream is not None)

    def __copy__(self) -> PhaseKind:
        return self  # a row of the table is a constant: copies of a result keep pointing at it

    def __deepcopy__(self, _memo: dict[int, Any]) -> PhaseKind:
        return self

    @property
    def inserts(self) -> bool:
        """The phase that creates the data (a plan has exactly one, first)."""
        return self.items is Items.PROFILE_IDS

    @property
    def rewrites(self) -> bool:
        """A write phase over stored records: phases after it run on updated data."""
        return self.group is Group.WRITE and not self.inserts

    @property
    def runs_once(self) -> bool:
        """It changes the store, so a rate sweep never repeats it (it runs at one rate)."""
        return self.inserts or self.rewrites or not self.repeatable

    @property
    def takes_stream(self) -> bool:
        return self.items in (Items.STREAM, Items.REPEATS)

    def use(self, stream: str | None, after_update: bool) -> StreamUse:
        """The use a phase spec selects: by stream, or (stream-less kinds) by position."""
        if stream is not None:
            return next(u for u in self.uses if u.stream == stream)
        return next((u for u in self.uses if u.post_update == after_update), self.uses[0])


@dataclass
class MixFigures:
    """What a phase of several operation kinds ran (YCSB's mixed phase), for the result:
    operations per kind, each kind's latencies measured in this process (ns; empty where
    another process ran them), and the share of the operations on the hottest fractions of
    the key space (fraction -> share)."""

    counts: dict[str, int]
    latencies_ns: dict[str, npt.NDArray[np.int64]]  # kind -> its operations' latencies
    hot_shares: dict[float, float]


@dataclass
class RecoveryCounts:
    """What a store held after a crash, record by record against the plan (the workload's
    ``CrashRecovery.check_recovery``, :mod:`asyncbench.workload_capabilities`): the writes the crashed phase's acknowledged operations
    made, found or lost, and what else the store held.

    ``first_lost``: the plan position (0-based, in the phase's order) of the earliest
    acknowledged operation whose write is gone, or None; the runner turns it into the time
    window lost. ``torn_examples``: a few torn or corrupt records, described, for the report."""

    checked: int = 0  # records read back
    acknowledged_present: int = 0
    acknowledged_lost: int = 0
    unacknowledged_present: int = 0  # writes issued but never acknowledged, found (allowed)
    torn: int = 0  # records that are no version the plan ever wrote (never allowed)
    first_lost: int | None = None
    torn_examples: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Prefix:
    """What a time-bounded phase ran, as its checksums can be compared across engines: the
    operations that ran (``ran``, in any order over the workers), the longest prefix of the
    stream that ran whole (operations ``0..complete-1``), the checksum of that prefix, and
    the checksums of the prefixes ``every``, ``2*every``, ... up to ``complete`` (the
    checkpoints another engine, stopped elsewhere, is compared at)."""

    ran: int
    complete: int
    checksum: str
    every: int
    checkpoints: tuple[str, ...]


@dataclass(frozen=True)
class NativePlan:
    """A plan converted from a workload's own file format: its TOML text, and the notes
    about what the conversion accepted without carrying (printed, never silent)."""

    text: str
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class RecordMemory:
    """One record's bytes in memory, as a workload states them for the estimate's memory
    figure. Why stated by the workload: a profile is a tuple of nine Python objects, a YCSB
    record one ``bytes`` whose size the plan's ``fieldcount`` and ``fieldlength`` set, and
    only the workload knows which. Both are measured (``benchmarks/bench_memory_per_record.py``
    and the workload's own docstring say how)."""

    #: One record as a worker's batch holds it while the engine writes it (the load's
    #: records are built one batch at a time, each worker its own batch). Never more than
    #: it takes: a plan is refused when these bytes alone cannot fit the machine.
    built: int
    #: What a store held in the process (the memory engine: a dict of records and its
    #: indexes) keeps per record: the record and the store's own bookkeeping of it.
    kept: int


class SettingError(ValueError):
    """A workload's own plan setting (its section, or a phase's own key) is wrong: the key as
    the plan spells it and the problem; config names the file and exits 2."""

    def __init__(self, key: str, problem: str) -> None:
        super().__init__(f"{key}: {problem}")
        self.key, self.problem = key, problem


class FoldTarget(Protocol):
    """A worker's running checksum: folds each batch's result, then gives its hex."""

    def add_ints(self, values: Sequence[int]) -> None: ...

    def add_profiles(self, records: Sequence[Any]) -> None: ...

    def hex(self) -> str: ...


class PlanCounts(Protocol):
    """A plan's counts at one size, as the framework reads them: a dataclass whose fields
    are the workload's count names (``asdict`` records them in the result; the phase
    ``count`` check reads a stream's by name), ``profiles`` (the size) among them."""

    #: what makes it a dataclass instance (``asdict`` takes one); Any: typeshed's own shape
    __dataclass_fields__: ClassVar[dict[str, Field[Any]]]

    @property
    def profiles(self) -> int: ...


class DrawnPlan(Protocol):
    """A drawn plan as the framework holds it: the counts it was drawn for; its operations
    reach the framework only through ``Workload.phase_items``."""

    @property
    def counts(self) -> PlanCounts: ...


@runtime_checkable
class Workload(Protocol):
    """A workload as the framework reaches it (through :func:`asyncbench.workloads.workload`):
    what EVERY workload writes to run (its phase table, plan, store, checksum and the
    estimate's figures). What only some workloads have (a plan table of their own, a verify
    phase, reference tables, compiled kernels, store reuse, crash checks, durations, mixed
    phases, a file format of their own) are the separate capability Protocols of
    :mod:`asyncbench.workload_capabilities`, which the framework checks where it uses them."""

    #: Its registry name.
    name: str
    #: What its size counts, as the console, charts and report name it ("profiles", "records").
    unit: str
    #: The key/value stores it keeps, by name (a key/value engine opens these, and only
    #: these: ``EngineConfig.stores``; its store mapping reaches them by
    #: ``KvPrimitives.store(name)``).
    kv_stores: tuple[str, ...]
    #: Phase kind name -> row, in the order the report lists them.
    phases: Mapping[str, PhaseKind]
    #: The plan's count names (what ``[counts]`` may set), in drawing order.
    count_names: tuple[str, ...]

    def record_memory(self, settings: Mapping[str, Any]) -> RecordMemory:
        """What one record costs in memory with these settings (the estimate's memory
        figure, ``asyncbench.run.checks.memory_need``): measured, each workload its own."""
        ...

    def counts(
        self, profiles: int, limit: int, overrides: Mapping[str, int], settings: Mapping[str, Any]
    ) -> PlanCounts:
        """The plan's counts at ``profiles`` records, with the plan's own overrides and settings."""
        ...

    def draw_plan(self, counts: Any, seed: int) -> DrawnPlan:
        """The plan: a pure function of (counts, seed), the same in every process. (A
        parameter the workload gets back, ``counts`` here, ``plan`` below, is typed Any:
        each workload takes its own type, which the framework's Protocol cannot name.)"""
        ...

    def phase_items(
        self, kind: PhaseKind, stream: str | None, count: int | None, plan: Any, params: Mapping[str, Any]
    ) -> Sequence[object]:
        """The operations a phase will run (lazy where the plan is); ``params``: the phase's own keys."""
        ...

    def store(self, primitives: Any, limit: int) -> Any:
        """The workload's store over one engine worker's primitives (``Engine.worker(i)``,
        :mod:`asyncbench.store`), built once per set of primitives: what its batch calls
        (and a verify or recovery check) receive. ``limit``: the plan's rows per scan or
        query. TypeError naming what the engine gave when the workload has no mapping onto it."""
        ...

    def checksum(self) -> FoldTarget:
        """An empty running checksum."""
        ...

    def combine(self, hexes: Sequence[str]) -> str:
        """The phase checksum of several workers' checksums (in worker order)."""
        ...

    def plan_writes(
        self, phases: Sequence[tuple[PhaseKind, str | None, int | None]], plan: Any, seed: int
    ) -> list[tuple[int | None, int]]:
        """Per plan phase (kind, stream, count): the logical bytes it writes (None: not a
        write phase) and the live data's logical bytes after it (the cost measurement)."""
        ...


@runtime_checkable
class LazyItems(Protocol):
    """A plan stream drawn as it is consumed: split into windows or residue buckets
    without drawing it (a workload's lazy stream; anything else is sliced)."""

    def window(self, start: int, stop: int) -> Sequence[Any]: ...

    def by_residue(self, workers: int) -> Sequence[Sequence[int]]: ...
