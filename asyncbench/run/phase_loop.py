"""The timed loop of an operation phase: batches, workers, checksum folds.

A phase runs its items in batches through the phase kind's one batch call each, folding
every batch's result into the worker's checksum; the phase is timed from the workers'
release to the last worker's end, checksum included, exactly as the reference times it.
Everything the loop needs to know about the phase comes from its phase-table row.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from time import perf_counter
from typing import Any

import anyio

from asyncbench.measure.latency import CLOCK
from asyncbench.rate import Rate
from asyncbench.run.loop_ledger import LoopLedger
from asyncbench.run.schedule import WorkerSchedule, wait_until
from asyncbench.workloads.profile_store.checksum import Checksum, combine
from asyncbench.workloads.profile_store.phases import Fold, PhaseContext, PhaseKind, Split
from asyncbench.workloads.profile_store.store import Marks, ProfileStore
from asyncbench.workloads.profile_store.streams import LazyStream

__all__ = ["BatchHook", "PhaseOutcome", "bucket_by_uid", "partition", "run_batches", "run_batches_at", "run_operations"]

BatchHook = Callable[..., None]
"""Called after every batch with (worker, batch index, ops in batch, batch seconds, marks);
under a rate with a sixth argument, the batch's intended start times (an int64 array, ns on
the marks' clock, one per operation), and a seventh, the ns the engine's calls of the other
workers held the event loop between this worker's previous batch and this one
(:mod:`asyncbench.run.loop_ledger`: taken out of the harness's delay)."""


@dataclass
class PhaseOutcome:
    ops: int
    checksum: str | None
    seconds: float


def partition(items: Sequence[Any], workers: int) -> list[Sequence[Any]]:
    """Contiguous partitions: ``len // P`` each, the first ``len % P`` workers one more.

    A lazy plan stream is split into windows (streams of their own), never materialised.
    """
    base, extra = divmod(len(items), workers)
    cut = items.window if isinstance(items, LazyStream) else lambda a, b: items[a:b]
    parts, start = [], 0
    for w in range(workers):
        size = base + (1 if w < extra else 0)
        parts.append(cut(start, start + size))
        start += size
    return parts


def bucket_by_uid(uids: Sequence[int], workers: int) -> list[Sequence[int]]:
    """Updates go to worker ``uid % P`` in plan order, so each id's updates stay ordered.

    A lazy plan stream gives lazy buckets: each draws the stream and keeps its share.
    """
    if isinstance(uids, LazyStream):
        return list(uids.by_residue(workers))
    buckets: list[list[int]] = [[] for _ in range(workers)]
    for uid in uids:
        buckets[uid % workers].append(uid)
    return list(buckets)


async def run_batches(
    kind: PhaseKind,
    store: ProfileStore,
    items: Sequence[Any],
    ctx: PhaseContext,
    checksum: Checksum,
    batch_size: int,
    on_batch: BatchHook,
    worker: int = 0,
) -> int:
    """One worker's loop: a batch call and a fold per batch; returns the operation count."""
    call = kind.call
    assert call is not None, f"{kind.kind} is not an operation phase"
    fold = checksum.add_ints if kind.fold is Fold.IDS else checksum.add_profiles
    clock = perf_counter
    t0 = clock()
    total = len(items)
    for index, start in enumerate(range(0, total, batch_size)):
        chunk = items[start : start + batch_size]
        marks: Marks = []
        fold(await call(store, chunk, ctx, marks))
        t1 = clock()
        on_batch(worker, index, len(chunk), t1 - t0, marks)
        t0 = t1
    return total


async def run_batches_at(
    kind: PhaseKind,
    store: Any,
    items: Sequence[Any],
    ctx: PhaseContext,
    checksum: Checksum,
    batch_size: int,
    on_batch: BatchHook,
    schedule: WorkerSchedule,
    worker: int = 0,
    alone: bool = True,
    ledger: LoopLedger | None = None,
) -> int:
    """One worker's loop under a rate: each batch is the operations due now (at most
    ``batch_size``), issued back to back in plan order; then it waits for the next due time.
    Behind schedule, the batches grow and nothing is skipped. Same items, same order, same
    folds as :func:`run_batches`: only when they start differs. ``ledger``: the engine's time
    on the loop, shared by the phase's workers on this loop (one of its own if none)."""
    call = kind.call
    assert call is not None, f"{kind.kind} is not an operation phase"
    fold = checksum.add_ints if kind.fold is Fold.IDS else checksum.add_profiles
    clock = CLOCK
    total = len(items)
    done = index = 0
    ledger = ledger or LoopLedger()
    timed = ledger.timed
    seen = ledger.total  # the loop's engine time when this worker last stopped running its own
    while done < total:
        due = schedule.next_due()
        if due > clock():
            await wait_until(due, alone)
        t0 = clock()
        blocked = ledger.total - seen  # the other workers' engine calls held the loop this long
        intended = schedule.take(t0, min(batch_size, total - done))
        n = len(intended)
        chunk = items[done : done + n]
        marks: Marks = []
        result = await timed(call(store, chunk, ctx, marks))
        seen = ledger.total
        fold(result)
        on_batch(worker, index, n, (clock() - t0) / 1e9, marks, intended, blocked)
        done += n
        index += 1
    return total


async def run_operations(
    kind: PhaseKind,
    items: Sequence[Any],
    stores: Sequence[ProfileStore],
    ctx: PhaseContext,
    batch_size: int,
    on_batch: BatchHook,
    rate: Rate | None = None,
    seed: int = 0,
    phase: int = 0,
) -> PhaseOutcome:
    """One worker per store handle; P > 1 workers start together behind a gate.

    Each worker folds its own partition; the phase checksum is the fold of the active
    workers' hex checksums in worker order (one active worker: its own checksum).
    With a ``rate`` (ops/s over all workers), each worker issues its operations at
    intended times from the phase's start (:mod:`asyncbench.run.schedule`; ``seed`` and
    ``phase`` seed Poisson arrivals); without one, closed loop.
    """
    workers = len(stores)
    if workers == 1 and rate is None:
        cs = Checksum()
        t0 = perf_counter()
        ops = await run_batches(kind, stores[0], items, ctx, cs, batch_size, on_batch)
        return PhaseOutcome(ops=ops, checksum=cs.hex(), seconds=perf_counter() - t0)
    if workers == 1:
        assert rate is not None
        cs = Checksum()
        t0 = perf_counter()
        plan = WorkerSchedule(rate, CLOCK(), 0, 1, seed, phase)
        ops = await run_batches_at(kind, stores[0], items, ctx, cs, batch_size, on_batch, plan)
        return PhaseOutcome(ops=ops, checksum=cs.hex(), seconds=perf_counter() - t0)
    parts = bucket_by_uid(items, workers) if kind.split is Split.BY_UID else partition(items, workers)
    sums = [Checksum() for _ in range(workers)]
    ledger = LoopLedger()  # the workers share the loop, and so its engine time
    gate = anyio.Event()
    ready = 0
    start_ns = 0  # the schedules' origin, set as the gate opens

    async def worker(w: int) -> None:
        nonlocal ready
        ready += 1
        await gate.wait()
        if rate is None:
            await run_batches(kind, stores[w], parts[w], ctx, sums[w], batch_size, on_batch, w)
        else:
            plan = WorkerSchedule(rate, start_ns, w, workers, seed, phase)
            await run_batches_at(
                kind, stores[w], parts[w], ctx, sums[w], batch_size, on_batch, plan, w, alone=False, ledger=ledger
            )

    async with anyio.create_task_group() as tg:
        for w in range(workers):
            tg.start_soon(worker, w)
        while ready < workers:  # every worker is parked at the gate before the clock starts
            await anyio.sleep(0)
        t0 = perf_counter()
        start_ns = CLOCK()
        gate.set()
    seconds = perf_counter() - t0
    active = [sums[w].hex() for w in range(workers) if len(parts[w])]
    return PhaseOutcome(
        ops=len(items), checksum=combine(active) if active else Checksum().hex(), seconds=seconds
    )
