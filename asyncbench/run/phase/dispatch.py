"""The one way a phase runs: split an operation phase among its workers and run them, or
run a maintenance/verify action, the same in every place that runs phases.

Three places run phases: the in-process runner (:mod:`asyncbench.run.runner`, also what an
isolated engine's child process runs) and each client process of a scaled-out run
(:mod:`asyncbench.run.scale_out.client_process`). They differ only in which workers they host and
when the workers are released (as soon as every worker is parked at the gate, or at a
wall-clock instant shared by every process); what a worker does, how a phase's items are
split, and what each non-operation action does is here, once. A new action is one entry
of :data:`ACTIONS`; a worker's loop is :mod:`asyncbench.run.phase.phase_loop`'s.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from time import perf_counter
from typing import Any, cast

import anyio
from anyio.abc import TaskGroup

from asyncbench.engine import Engine
from asyncbench.measure.latency import CLOCK
from asyncbench.rate import Rate
from asyncbench.run.phase.loop_ledger import LoopLedger
from asyncbench.run.phase.loop_stalls import LoopHolds, StallMonitor
from asyncbench.run.phase.phase_loop import (
    BatchHook,
    Deadline,
    PhaseOutcome,
    RanBatches,
    bucket_by_uid,
    partition,
    run_batches,
    run_batches_at,
)
from asyncbench.run.phase.schedule import WorkerSchedule
from asyncbench.run.phase.stores import worker_store
from asyncbench.workload import Action, FoldTarget, PhaseKind, Split, Workload
from asyncbench.workload_capabilities import verifier

__all__ = [
    "ACTIONS",
    "Host",
    "OperationPhase",
    "OtherDone",
    "run_action",
    "run_operations",
    "run_workers",
    "split",
]


def split(kind: PhaseKind, items: Sequence[object], workers: int) -> list[Sequence[object]]:
    """Every worker's share of a phase's items (worker w gets ``[w]``), as the kind splits."""
    if workers == 1:
        return [items]
    if kind.partition is not None:  # the workload's own rule
        return kind.partition(items, workers)
    if kind.split is Split.BY_UID:  # the kind says its items are ids
        buckets: list[Sequence[object]] = list(bucket_by_uid(cast("Sequence[int]", items), workers))
        return buckets
    return partition(items, workers)


def shares(kind: PhaseKind, parts: Sequence[Sequence[Any]]) -> dict[int, float] | None:
    """Each worker's fraction of the phase's operations when the kind divides them by key
    owner (``Split.BY_UID``, or its own ``partition``: YCSB's mixed phase, uneven under a
    skewed distribution), for the open loop's schedules (:class:`WorkerSchedule`'s
    ``share``); None for the contiguous split, even to one operation, paced at R / P each."""
    total = sum(len(p) for p in parts)
    if (kind.partition is None and kind.split is not Split.BY_UID) or total == 0:
        return None
    return {w: len(p) / total for w, p in enumerate(parts)}


@dataclass(frozen=True)
class OperationPhase:
    """What every worker of one operation phase shares, wherever it runs."""

    kind: PhaseKind
    ctx: object  # the workload's batch context (opaque: handed back to its batch calls)
    batch_size: int
    on_batch: BatchHook
    rate: Rate | None  # ops/s over all workers, or None: closed loop
    seed: int  # with ``index``, seeds the Poisson arrivals of an open loop
    index: int  # the phase's index in the plan
    workers: int  # P: all the phase's workers, over every process
    #: worker -> its fraction of the operations, for an uneven split (:func:`shares`)
    shares: Mapping[int, float] | None = None
    #: A time-bounded phase: its duration (ns from the release) and the list its workers'
    #: batches go to (:class:`~asyncbench.run.phase.phase_loop.Deadline`); None: run to the end.
    duration_ns: int | None = None
    ran: RanBatches | None = None


async def run_workers(
    phase: OperationPhase,
    parts: Mapping[int, Sequence[object]],
    stores: Mapping[int, Any],
    sums: Mapping[int, FoldTarget],
    release: Callable[[], Awaitable[int]],
    holds: LoopHolds | None = None,
) -> dict[int, float]:
    """Run the hosted workers (the keys of ``parts``) on this loop, each folding its own
    partition into its own checksum; returns when each ended (wall clock).

    Every worker is parked at a gate first; ``release()`` is awaited once they all are (it
    starts the caller's clock and returns the schedules' origin, ns on the marks' clock),
    then the gate opens. One hosted worker runs in the caller's task, with no gate.
    ``holds``: where the engine's holds of the loop go from the release on
    (:mod:`asyncbench.run.phase.loop_stalls`); None: not measured.
    """
    ledger = LoopLedger(holds)  # the workers share the loop, and so its engine time
    monitor = None if holds is None else StallMonitor(holds)
    alone = len(parts) == 1  # nothing else of the benchmark's on this loop
    ends: dict[int, float] = {}
    origin = 0
    deadline: Deadline | None = None

    def start(at: int) -> None:
        nonlocal origin, deadline
        origin = at
        if phase.duration_ns is not None:
            assert phase.ran is not None
            deadline = Deadline(at + phase.duration_ns, phase.ran)

    async def released() -> int:
        at = await release()
        start(at)
        if monitor is not None and holds is not None:
            holds.begin(at)
            monitor.start()
        return at

    async def worker(w: int) -> None:
        if monitor is not None:
            await monitor.worker(work(w))
        else:
            await work(w)
        ends[w] = time.time()

    async def work(w: int) -> None:
        if phase.rate is None:
            await run_batches(
                phase.kind,
                stores[w],
                parts[w],
                phase.ctx,
                sums[w],
                phase.batch_size,
                phase.on_batch,
                w,
                deadline,
                None if holds is None else ledger,
            )
        else:
            share = None if phase.shares is None else phase.shares[w]
            schedule = WorkerSchedule(phase.rate, origin, w, phase.workers, phase.seed, phase.index, share)
            await run_batches_at(
                phase.kind,
                stores[w],
                parts[w],
                phase.ctx,
                sums[w],
                phase.batch_size,
                phase.on_batch,
                schedule,
                w,
                alone,
                ledger,
                deadline,
            )

    try:
        await _run_hosted(parts, worker, released, alone)
    finally:
        if monitor is not None:
            monitor.stop()
    return ends


async def _run_hosted(
    parts: Mapping[int, Sequence[object]],
    worker: Callable[[int], Awaitable[None]],
    release: Callable[[], Awaitable[int]],
    alone: bool,
) -> None:
    """Release the hosted workers together (one: in the caller's task) and wait for them."""
    if alone:
        await release()
        await worker(next(iter(parts)))
        return
    gate = anyio.Event()
    ready = 0

    async def parked(w: int) -> None:
        nonlocal ready
        ready += 1
        await gate.wait()
        await worker(w)

    async with anyio.create_task_group() as tg:
        for w in parts:
            tg.start_soon(parked, w)
        while ready < len(parts):  # every worker is parked at the gate before the clock starts
            await anyio.sleep(0)
        await release()
        gate.set()


async def run_operations(
    kind: PhaseKind,
    items: Sequence[object],
    stores: Sequence[Any],
    ctx: object,
    batch_size: int,
    on_batch: BatchHook,
    rate: Rate | None = None,
    seed: int = 0,
    phase: int = 0,
    duration: float | None = None,
    stalls: bool = False,
    *,
    wl: Workload,
) -> PhaseOutcome:
    """An operation phase in this process: one worker per store handle, released together.
    ``wl``: the workload whose phase kind ``kind`` is (its checksums are that workload's).

    The phase checksum is the fold of the active workers' hex checksums in worker order
    (one active worker: its own checksum). With a ``rate`` (ops/s over all workers), each
    worker issues its operations at intended times from the release
    (:mod:`asyncbench.run.phase.schedule`); without one, closed loop. With a ``duration``
    (seconds, a ``bounded`` kind), no batch starts after it: the outcome's ``ops`` are the
    operations that ran and ``ran`` their batches (the checksum folds what ran).
    ``stalls``: the engine's holds of the loop measured (:mod:`asyncbench.run.phase.loop_stalls`)
    into the outcome.
    """
    workers = len(stores)
    parts = split(kind, items, workers)
    sums = {w: wl.checksum() for w in range(workers)}
    t0 = 0.0

    async def release() -> int:
        nonlocal t0
        t0 = perf_counter()
        return CLOCK()

    ran: RanBatches | None = None if duration is None else []
    duration_ns = None if duration is None else round(duration * 1e9)
    op = OperationPhase(
        kind, ctx, batch_size, on_batch, rate, seed, phase, workers, shares(kind, parts), duration_ns, ran
    )
    holds = LoopHolds() if stalls else None
    await run_workers(op, dict(enumerate(parts)), dict(enumerate(stores)), sums, release, holds)
    seconds = perf_counter() - t0
    record = None if holds is None else holds.record()
    ops = len(items) if ran is None else sum(len(chunk) for chunk, _ in ran)
    if workers == 1:
        return PhaseOutcome(ops=ops, checksum=sums[0].hex(), seconds=seconds, ran=ran, stalls=record)
    active = [sums[w].hex() for w in range(workers) if len(parts[w])]
    checksum = wl.combine(active) if active else wl.checksum().hex()
    return PhaseOutcome(ops=ops, checksum=checksum, seconds=seconds, ran=ran, stalls=record)


# --- the actions that are not operation batches ---------------------------------------------


@dataclass
class OtherDone:
    """What a non-operation phase did: its time (a reopen: the open alone), the verify
    checksum and operations, and a reopen's close time apart."""

    seconds: float = 0.0
    checksum: str | None = None
    ops: int = 0
    close_seconds: float | None = None


@dataclass
class Host:
    """The engine a non-operation action acts on, as its runner holds it: a reopen
    replaces a persistent engine's adapter (``adopt`` hands the new one back, None first,
    so a failing constructor never leaves a closed engine to close twice)."""

    engine: Engine
    background: TaskGroup
    adopt: Callable[[Engine | None], None]
    profiles: int  # the plan's profile count (what verify reads)
    workload: Workload  # the plan's workload (what verify checks)


async def _stabilize(host: Host, out: OtherDone) -> None:
    await host.engine.stabilize()


async def _settle(host: Host, out: OtherDone) -> None:
    await host.engine.settle()


async def _reopen(host: Host, out: OtherDone) -> None:
    engine = host.engine
    t0 = perf_counter()
    await engine.close()
    out.close_seconds = perf_counter() - t0  # reported apart: the phase times the open alone
    if engine.persistent:  # a fresh adapter on the same store
        host.adopt(None)
        engine = type(engine)(engine.config)
        host.adopt(engine)
    await engine.open(False, host.background)


async def _verify(host: Host, out: OtherDone) -> None:
    wl = verifier(host.workload)
    out.checksum = await wl.verify_checksum(worker_store(host.workload, host.engine, 0), host.profiles)
    out.ops = wl.verify_ops


#: Action -> what it does. A new action is one function and one entry here.
ACTIONS: dict[Action, Callable[[Host, OtherDone], Awaitable[None]]] = {
    Action.STABILIZE: _stabilize,
    Action.SETTLE: _settle,
    Action.REOPEN: _reopen,
    Action.VERIFY: _verify,
}


async def run_action(action: Action, host: Host) -> OtherDone:
    """Run one non-operation phase, timed (a reopen: the open alone, its close apart)."""
    out = OtherDone()
    t0 = perf_counter()
    await ACTIONS[action](host, out)
    out.seconds = perf_counter() - t0 - (out.close_seconds or 0.0)
    return out
