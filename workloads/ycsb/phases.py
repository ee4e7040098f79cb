"""YCSB's phase table (``load``, ``mixed``), its plan, its phases' items and batch calls.

A ``load`` phase inserts records 0..recordcount-1 (split contiguously; each record's
digest is summed, so the checksum is the same at any P). A ``mixed`` phase draws its whole
operation sequence (:class:`.operations.OperationStream`) before its clock starts and
gives each worker the operations on the keys it owns (:mod:`.partition`: key k to worker
k mod P over all client processes, through the framework's ``by_residue`` split), in
sequence order. A batch is one call of the engine's YCSB store (:mod:`.store`), which
returns one digest per operation; the phase checksum is their sum (:mod:`.checksum`).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, overload

import numpy as np
import numpy.typing as npt

from asyncbench.workload import Action, Fold, Group, Items, MixFigures, PhaseKind, Prefix, Split, StreamUse
from asyncbench.workloads.common.mix import Done, OwnedOps, figures
from asyncbench.workloads.profile_store.fold import M64
from asyncbench.workloads.ycsb import kernels
from asyncbench.workloads.ycsb.operations import INSERT, KINDS, READMODIFYWRITE, SCAN, UPDATE, OperationStream
from asyncbench.workloads.ycsb.plan import Layout, mix_spec
from asyncbench.workloads.ycsb.prefix import prefix_checksums
from asyncbench.workloads.ycsb.record import Values
from asyncbench.workloads.ycsb.scans import scan_range
from asyncbench.workloads.ycsb.store import Marks, YcsbStore

__all__ = ["PHASES", "Counts", "bounded_prefix", "Keys", "MixedOps", "Plan", "PhaseChecksum", "phase_items"]


@dataclass(frozen=True)
class Counts:
    """A level's usertable (the framework's "counts", recorded in the result as numbers):
    ``profiles`` is the record count."""

    profiles: int
    fieldcount: int
    fieldlength: int
    hashed: int  # 1: insertorder hashed, 0: ordered
    zeropadding: int

    @property
    def layout(self) -> Layout:
        return Layout(self.profiles, self.fieldcount, self.fieldlength, bool(self.hashed), self.zeropadding)


@dataclass
class Plan:
    """What a YCSB run draws from (counts, seed): the layout and the field values."""

    counts: Counts
    seed: int
    values: Values = field(init=False)

    def __post_init__(self) -> None:
        lay = self.counts.layout
        self.values = Values(self.seed, lay.fieldcount, lay.fieldlength)

    def names(self, keys: Iterable[int]) -> list[bytes]:
        """The key names of these key numbers (ASCII bytes), in one kernel call."""
        lay = self.counts.layout
        return kernels.key_names(keys, lay.hashed, lay.zeropadding)


class PhaseChecksum:
    """A worker's running checksum: the sum of its operations' digests mod 2**64 (the
    framework's fold target: every batch returns one digest per operation)."""

    __slots__ = ("total",)

    def __init__(self) -> None:
        self.total = 0

    def add_ints(self, values: Sequence[int]) -> None:
        self.total = (self.total + sum(values)) & M64

    def add_profiles(self, records: Sequence[Any]) -> None:
        raise TypeError("a YCSB phase folds operation digests (Fold.IDS)")

    def hex(self) -> str:
        return f"{self.total:016X}"


def combine(hexes: Sequence[str]) -> str:
    """Workers' (and processes') sums add: the same at any P and K."""
    return f"{sum(int(h, 16) for h in hexes) & M64:016X}"


# --- the load phase ---------------------------------------------------------------------


class Keys(Sequence[int]):
    """A contiguous run of key numbers to load, with the plan that names and fills them."""

    def __init__(self, keys: range, plan: Plan) -> None:
        self.keys, self.plan = keys, plan

    def __len__(self) -> int:
        return len(self.keys)

    @overload
    def __getitem__(self, i: int) -> int: ...
    @overload
    def __getitem__(self, i: slice) -> Keys: ...
    def __getitem__(self, i: int | slice) -> int | Keys:
        if isinstance(i, slice):
            return Keys(self.keys[i], self.plan)
        return self.keys[i]


async def _load(store: YcsbStore, items: Sequence[Any], ctx: Any, marks: Marks) -> list[int]:
    assert isinstance(items, Keys)
    keys, plan = items.keys, items.plan
    names = plan.names(keys)  # keys and records built once, inside the phase time
    await store.load(list(zip(names, plan.values.encoded(keys), strict=True)), marks)
    digest = kernels.digest
    return [digest(k, INSERT, n, None) for k, n in zip(keys, names, strict=True)]


# --- the mixed phase --------------------------------------------------------------------


class MixedPhase:
    """One mixed phase's whole operation sequence, drawn once (before its clock), and what
    every worker's share reads: key names, the scan rule's initial keys and written keys."""

    def __init__(self, plan: Plan, params: dict[str, Any]) -> None:
        self.plan = plan
        lay = plan.counts.layout
        doc = {
            "ycsb": {
                "recordcount": lay.recordcount,
                "fieldcount": lay.fieldcount,
                "fieldlength": lay.fieldlength,
                "insertorder": "hashed" if lay.hashed else "ordered",
                "zeropadding": lay.zeropadding,
            }
        }
        spec = mix_spec(doc, params)
        batches = list(OperationStream(spec, plan.seed))
        self.index = np.arange(spec.operationcount, dtype=np.int64)
        cols = ("kind", "key", "read_field", "write_field", "scan_length", "tag")
        self.columns = [np.concatenate([getattr(b, c) for b in batches]) for c in cols]
        self.kind, self.key = self.columns[0], self.columns[1]
        #: (positions, marks) of every batch run in this process, for :func:`mix_figures`
        self.done = Done()
        #: A time-bounded phase (:func:`bounded_prefix`): the positions that ran, sorted;
        #: :func:`mix_figures` counts these instead of the whole sequence
        self.ran_positions: npt.NDArray[np.int64] | None = None

    @cached_property
    def initial(self) -> list[bytes]:
        """The key names present when the phase began, sorted (the scan rule)."""
        return sorted(self.plan.names(range(self.plan.counts.layout.recordcount)))

    @cached_property
    def written_names(self) -> frozenset[bytes]:
        writes = np.isin(self.kind, (UPDATE, INSERT, READMODIFYWRITE))
        return frozenset(self.plan.names(np.unique(self.key[writes]).tolist()))

    def prepare(self) -> None:
        """Compute what scans need now, not inside a worker's timed batch."""
        if (self.kind == SCAN).any():
            _ = self.initial, self.written_names


class MixedOps(OwnedOps, Sequence[tuple[int, ...]]):
    """Positions of a mixed phase's operations (one worker's share, or a batch of it), in
    sequence order; the framework slices it into batches (``LazyItems`` for the split):
    key k's operations on worker k mod P (:class:`~asyncbench.workloads.common.mix.OwnedOps`)."""

    phase: MixedPhase

    def owner_keys(self) -> npt.NDArray[np.int64]:
        return self.phase.key[self.positions]

    @overload
    def __getitem__(self, i: int) -> tuple[int, ...]: ...
    @overload
    def __getitem__(self, i: slice) -> MixedOps: ...
    def __getitem__(self, i: int | slice) -> tuple[int, ...] | MixedOps:
        if isinstance(i, slice):
            return self.part(self.positions[i])
        p = int(self.positions[i])
        return (p, *(int(c[p]) for c in self.phase.columns))

    def __iter__(self) -> Iterator[tuple[int, ...]]:
        return iter(self.rows())

    # what the store's operations read (workloads.ycsb.store.Ops)
    def rows(self) -> list[tuple[int, int, int, int, int, int, int]]:
        p = self.positions
        cols = [c[p].tolist() for c in self.phase.columns]
        return list(zip(p.tolist(), *cols, strict=True))

    def names(self) -> list[bytes]:
        return self.phase.plan.names(self.phase.key[self.positions].tolist())

    def record(self, tag: int) -> bytes:
        return self.phase.plan.values.encoded((tag,))[0]

    def value(self, tag: int, field: int) -> bytes:
        return self.phase.plan.values.value(tag, field)

    def fieldcount(self) -> int:
        return self.phase.plan.counts.layout.fieldcount

    def scan_bounds(self, start: bytes, length: int) -> tuple[bytes, bytes] | None:
        return scan_range(self.phase.initial, start, length)

    def written(self, name: bytes) -> bool:
        return name in self.phase.written_names


async def _mixed(store: YcsbStore, ops: Sequence[Any], ctx: Any, marks: Marks) -> list[int]:
    assert isinstance(ops, MixedOps)
    digests = await store.run(ops, marks)
    ops.phase.done.append(ops.positions, marks)  # O(1): per-kind latency after the phase
    return digests


#: YCSB's counting: a read-modify-write's read is counted under READ and its update under
#: UPDATE (YCSB's ``doTransactionReadModifyWrite`` measures both, and the pair under
#: READ-MODIFY-WRITE), so workload F's read count is its reads plus its read-modify-writes
YCSB_ALSO_COUNTED = {"readmodifywrite": ("read", "update")}


def mix_figures(ops: MixedOps) -> MixFigures:
    """A mixed phase's operations per kind counted as YCSB counts them
    (:data:`YCSB_ALSO_COUNTED`; the plan's own ``readmodifywrite`` kind beside them), each
    kind's latencies (from the marks of the batches this process ran) and the share of its
    operations on the hottest 0.1/1/10 % of the keys (YCSB's key space at the phase's end:
    the records and its inserts). A time-bounded phase that stopped counts the operations
    that ran (:func:`bounded_prefix`)."""
    phase = ops.phase
    positions = ops.positions if phase.ran_positions is None else phase.ran_positions
    inserts = int(np.count_nonzero(phase.kind[positions] == INSERT))
    keys = phase.key[positions]
    keyspace = phase.plan.counts.profiles + inserts
    if phase.ran_positions is not None and len(keys):
        # workers stopped at different points: a key inserted late in the sequence ran while
        # an earlier insert (another worker's) did not; the key space is up to the highest key
        keyspace = max(keyspace, int(keys.max()) + 1)
    return figures(KINDS, phase.kind, positions, phase.done, keys, keyspace, YCSB_ALSO_COUNTED)


def bounded_prefix(ops: MixedOps, ran: Sequence[tuple[Sequence[Any], Sequence[Any]]]) -> Prefix:
    """A time-bounded mixed phase's checksums at the prefixes of its sequence
    (:mod:`.prefix`); the phase's figures then count what ran."""
    phase = ops.phase
    prefix, positions = prefix_checksums(lambda chunk: chunk.positions, len(phase.index), ran)
    phase.ran_positions = positions
    return prefix


def _use(stream: str | None, name: str) -> StreamUse:
    return StreamUse(stream, name, False, reference=name)


PHASES: dict[str, PhaseKind] = {
    k.kind: k
    for k in (
        PhaseKind(
            "load",
            Action.OPERATIONS,
            Group.WRITE,
            (_use("records", "load"),),
            Items.PROFILE_IDS,
            _load,
            Fold.IDS,
            needs_data=False,
        ),
        PhaseKind(
            "mixed",
            Action.OPERATIONS,
            Group.MIXED,
            (_use(None, "mixed"),),
            Items.NONE,
            _mixed,
            Fold.IDS,
            Split.BY_UID,
            repeatable=False,  # its updates and inserts change what a second run reads
            mixes=True,
            bounded=True,  # digests summed, each the same on any worker: a prefix has one checksum
        ),
        PhaseKind(
            "recover",  # after a load's or mixed phase's crash: open the store again, check it record by record
            Action.RECOVER,
            Group.MAINTENANCE,
            (_use(None, "recover"),),
            columns=("Recover (open)",),
        ),
        PhaseKind("stabilize", Action.STABILIZE, Group.MAINTENANCE, (_use(None, "stabilize"),), needs_data=False,
                  columns=("Stabilize",)),
        PhaseKind("settle", Action.SETTLE, Group.MAINTENANCE, (_use(None, "settle"),), needs_data=False,
                  columns=("Settle",)),
    )
}


def phase_items(kind: PhaseKind, plan: Plan, params: dict[str, Any]) -> Sequence[Any]:
    if kind.kind == "load":
        return Keys(range(plan.counts.profiles), plan)
    if kind.kind == "mixed":
        phase = MixedPhase(plan, params)
        phase.prepare()
        return MixedOps(phase, phase.index)
    return ()
