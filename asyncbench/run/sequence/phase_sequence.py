"""One phase sequence: the plan's phases in order, each skipped, run or searched, and its
result row built and reported the same way wherever its work runs.

Two runs drive it: the in-process run (:class:`~asyncbench.run.runner.EngineRun`: this
process's workers, also what an isolated engine's child runs) and the scaled-out run
(:class:`~asyncbench.run.scale_out.distributed.DistributedEngineRun`: client processes). They differ
only in where a phase's work runs, handed in as a :class:`PhaseExecutor`. When a phase is
skipped (a sweep above its dip, a reused store, a stabilize the engine needs not), what its
row holds, how a sweep stops, which cost figures come after it (storage, logical bytes)
and what a reused store must prove are decided here, once: written twice, the scaled-out
copy had drifted (it measured no cost after its write phases, no logical figures).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from time import perf_counter
from typing import Protocol

import anyio

from asyncbench.config import BenchConfig, PhaseSpec
from asyncbench.rate import Rate
from asyncbench.result import Capacity, EngineResult, OpenLoop, PhaseCost, PhaseResult, StallRecord
from asyncbench.run.capacity.capacity import SearchRecord, stopped_search
from asyncbench.run.observe.observers import Observer
from asyncbench.run.phase.phase_rows import (
    merge_kind_latencies,
    phase_mix,
    phase_rate,
    phase_row,
    sweep_dipped,
)
from asyncbench.run.reuse import reuse, reuse_proof
from asyncbench.workload import Action, DrawnPlan, Group, MixFigures, PhaseKind

__all__ = ["PhaseExecutor", "PhaseSequence", "Ran", "no_figures"]


def no_figures(pr: PhaseResult) -> None:
    """A phase whose work leaves no figures beyond its row (a maintenance action, a search)."""


@dataclass
class Ran:
    """What a phase's work did where it ran: its operations, seconds and checksum, and what
    only that place knows (retries, the loop's stalls, a search's capacity, the cost it
    measured over the phase). ``figures`` adds the figures computed after the phase's clock
    stopped (latency, series, open loop, a time-bounded phase's prefix) to its row;
    ``kind_latencies`` are a mixed phase's per-kind histograms shipped by client processes
    (merged into the row's mix; in one process the mix reads them from its items)."""

    ops: int
    seconds: float
    checksum: str | None = None
    retries: int = 0
    close_seconds: float | None = None
    capacity: Capacity | None = None
    stalls: StallRecord | None = None
    cost: PhaseCost | None = None
    figures: Callable[[PhaseResult], None] = no_figures
    kind_latencies: Sequence[dict[str, str] | None] = field(default_factory=list)


class PhaseExecutor(Protocol):
    """Where a phase's work runs: this process's workers or the client processes. The
    sequence calls ``prepare`` before every phase it runs, then one of ``operations``,
    ``capacity``, ``action`` or ``crash_or_recover``, then ``mix``."""

    @property
    def storage_changes_state(self) -> str | None:
        """Why measuring the storage would change it (:attr:`Engine.storage_changes_state`)."""
        ...

    async def needs_stabilization(self) -> bool: ...

    async def prepare(self, index: int, spec: PhaseSpec, kind: PhaseKind) -> int:
        """Get phase ``index`` ready (its items, outside its time); returns the operations
        the progress bar counts (0: not known ahead, a pulsing bar)."""
        ...

    async def operations(self, index: int, spec: PhaseSpec, kind: PhaseKind, rate: Rate | None) -> Ran: ...

    async def capacity(
        self, index: int, spec: PhaseSpec, kind: PhaseKind, record: Callable[[SearchRecord], None]
    ) -> Ran:
        """The phase's capacity search; ``record`` is handed its :class:`SearchRecord`
        before the probes start (what a stopped search keeps)."""
        ...

    async def action(self, index: int, spec: PhaseSpec, kind: PhaseKind) -> Ran:
        """A phase that is not operations: stabilize, settle, reopen, verify (run once)."""
        ...

    async def crash_or_recover(self, index: int, spec: PhaseSpec) -> PhaseResult:
        """A phase that ends in a crash, or the recover phase after it: its row."""
        ...

    async def mix(self, index: int, spec: PhaseSpec, kind: PhaseKind) -> MixFigures | None:
        """After the phase (untimed): a mixed phase's kinds and skew, None for others."""
        ...

    async def storage(self) -> int | None:
        """The store's size now (untimed)."""
        ...

    async def drawn_plan(self) -> DrawnPlan:
        """The run's plan (for the logical figures, after the run)."""
        ...


class PhaseSequence:
    """The phases of one engine's run in order, on ``executor``; rows go to ``result`` and
    to the observers as each phase ends. ``current`` is the phase running now (a display
    name; the run sets it to "open" while it opens). A reuse run sets ``store_updated``
    and ``proof`` before :meth:`run` (the phases it skips, the checksums it must read)."""

    def __init__(
        self, cfg: BenchConfig, name: str, observer: Observer, result: EngineResult, executor: PhaseExecutor
    ) -> None:
        self.cfg, self.name, self.observer, self.result, self.executor = cfg, name, observer, result, executor
        self.current: str | None = None
        self.dipped: set[int] = set()  # sweeps (by first level's index) whose achieved rate dipped
        #: A reuse run (``cfg.reuse_data``): whether the reused store holds updated profiles.
        self.store_updated: bool | None = None
        #: A reuse run: the checksum each phase it runs must read (``asyncbench.run.reuse.reuse_proof``).
        self.proof: reuse_proof.Proof | None = None
        self.skipped: list[str] = []  # phases a reuse run left out, with the reason

    async def run(self) -> None:
        """Every phase of the plan, in order."""
        for index, spec in enumerate(self.cfg.phases):
            self.current = spec.name
            await self.phase(index, spec)
        self.current = None

    async def storage_after(self) -> None:
        """After the last phase: the store's size, unless a settle measured it."""
        if self.result.storage_bytes is None:
            self.result.storage_bytes = await self.executor.storage()

    def _end(self, pr: PhaseResult) -> None:
        self.result.phases.append(pr)
        self.observer.phase_end(self.name, pr)

    async def phase(self, index: int, spec: PhaseSpec) -> None:
        executor = self.executor
        kind = self.cfg.workload_impl.phases[spec.kind]
        rate = phase_rate(spec)
        if spec.sweep is not None and spec.sweep in self.dipped:  # a sweep stops above its dip
            pr = phase_row(index, spec, kind, 0, 0.0, skipped=True)
            pr.open_loop = OpenLoop(rate=rate.ops_per_s, arrivals=rate.arrivals) if rate else None
            self._end(pr)
            return
        why = None if self.store_updated is None else reuse.skip_reason(spec, self.store_updated, self.cfg.workload_impl)
        if why is not None:
            self.skipped.append(f"{spec.name} ({why})")
        if why is not None or (kind.action is Action.STABILIZE and not await executor.needs_stabilization()):
            self._end(phase_row(index, spec, kind, 0, 0.0, skipped=True))
            return
        if spec.crash is not None or kind.action is Action.RECOVER:
            self._end(await executor.crash_or_recover(index, spec))
            return
        total = await executor.prepare(index, spec, kind)
        self.observer.phase_start(self.name, spec.name, total, spec.kind, spec.stream)
        if spec.capacity:  # a capacity search instead of one run (asyncbench.run.capacity.capacity)
            ran = await self._search(index, spec, kind)
        elif kind.action is Action.OPERATIONS:
            ran = await executor.operations(index, spec, kind, rate)
        else:
            ran = await executor.action(index, spec, kind)
        pr = phase_row(index, spec, kind, ran.ops, ran.seconds, ran.checksum, close_seconds=ran.close_seconds)
        ran.figures(pr)  # (a time-bounded phase's checksum becomes its prefix's here)
        pr.retries = ran.retries
        pr.stalls = ran.stalls
        pr.capacity = ran.capacity
        if kind.action is Action.SETTLE:
            self.result.storage_bytes = await executor.storage()  # untimed
        if ran.cost is not None:
            await self._cost_figures(kind, ran.cost)
        pr.cost = ran.cost
        pr.mix = phase_mix(await executor.mix(index, spec, kind))
        merge_kind_latencies(pr.mix, ran.kind_latencies)
        sweep_dipped(pr, spec, rate, self.dipped, self.result.notes, self.cfg.phases[index + 1 :])
        if self.proof is not None and pr.checksum is not None:  # a reused store proves its data
            self.proof.check(index, spec, pr.checksum)
        self._end(pr)

    async def _search(self, index: int, spec: PhaseSpec, kind: PhaseKind) -> Ran:
        """The capacity search; a stopped search keeps the probes it completed (the partial
        result's row)."""
        searches: list[SearchRecord] = []
        started = perf_counter()
        try:
            return await self.executor.capacity(index, spec, kind, searches.append)
        except BaseException:
            if searches:

                def row(ops: int, seconds: float) -> PhaseResult:
                    return phase_row(index, spec, kind, ops, seconds)

                self.result.phases.append(stopped_search(row, searches[0], perf_counter() - started))
            raise

    async def _cost_figures(self, kind: PhaseKind, cost: PhaseCost) -> None:
        """After a write phase or settle: the storage (space amplification's numerator),
        measured now, untimed; the logical figures come after the run (:meth:`logical_figures`)."""
        if kind.group is not Group.WRITE and kind.action is not Action.SETTLE:
            return
        if kind.action is Action.SETTLE:
            cost.storage_bytes = self.result.storage_bytes
            return
        changes = self.executor.storage_changes_state
        if changes is not None:
            cost.not_measured["storage"] = changes
            return
        try:
            cost.storage_bytes = await self.executor.storage()
        except Exception as exc:  # a figure lost, never the run
            cost.not_measured["storage"] = f"{type(exc).__name__}: {exc}"

    async def logical_figures(self) -> None:
        """Each measured phase's logical bytes written and the live data's logical size after
        it: the yardstick of write and space amplification (``Workload.plan_writes``).

        Computed once the engine is done, never before its phases: at 2M profiles it is
        seconds of generating profiles again and replaying the updates, millions of objects
        made and freed, and done before the engine opened it left the phases a different heap
        and garbage collector state than a run without the cost measurement (ops/s 0.95x on
        a quiet machine, benchmarks/bench_cost_overhead.py). Nothing reads these figures
        before the report."""
        costed = [pr for pr in self.result.phases if pr.cost is not None]
        if not costed:
            return
        phases = [(self.cfg.workload_impl.phases[p.kind], p.stream, p.count) for p in self.cfg.phases]
        try:
            plan = await self.executor.drawn_plan()
            logical = await anyio.to_thread.run_sync(self.cfg.workload_impl.plan_writes, phases, plan, self.cfg.seed)
        except Exception as exc:  # a figure lost, never the run
            for pr in costed:
                assert pr.cost is not None
                pr.cost.not_measured["logical"] = f"{type(exc).__name__}: {exc}"
            return
        for pr in costed:
            assert pr.cost is not None
            written, live = logical[pr.index]
            pr.cost.logical_write_bytes = written
            if pr.kind.group is Group.WRITE or pr.kind.action is Action.SETTLE:
                pr.cost.logical_live_bytes = live

