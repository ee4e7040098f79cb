"""The timed loop of an operation phase: batches, workers, checksum folds.

A phase runs its items in batches through the phase kind's one batch call each, folding
every batch's result into the worker's checksum; the phase is timed from the workers'
release to the last worker's end, checksum included, exactly as the reference times it.
Everything the loop needs to know about the phase comes from its phase-table row. How a
phase's workers are split and released is :mod:`asyncbench.run.phase.dispatch`'s.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from time import perf_counter
from typing import Any

import anyio.lowlevel

from asyncbench.measure.latency import CLOCK
from asyncbench.result import StallRecord
from asyncbench.run.phase.loop_ledger import LoopLedger
from asyncbench.run.phase.schedule import WorkerSchedule, wait_until
from asyncbench.workload import Fold, FoldTarget, LazyItems, PhaseKind

__all__ = ["BatchHook", "Deadline", "PhaseOutcome", "RanBatches", "bucket_by_uid", "partition", "run_batches", "run_batches_at"]

BatchHook = Callable[..., None]
"""Called after every batch with (worker, batch index, ops in batch, batch seconds, marks);
under a rate with a sixth argument, the batch's intended start times (an int64 array, ns on
the marks' clock, one per operation), and a seventh, the ns the engine's calls of the other
workers held the event loop between this worker's previous batch and this one
(:mod:`asyncbench.run.phase.loop_ledger`: taken out of the harness's delay)."""


#: The batches a worker ran, (items, what the batch call returned) each: kept only for a
#: time-bounded phase, whose checksums at a prefix of its stream are computed from them.
RanBatches = list[tuple[Sequence[Any], Sequence[Any]]]


@dataclass
class PhaseOutcome:
    ops: int  # the operations that ran (a time-bounded phase: at most its items)
    checksum: str | None
    seconds: float
    #: A time-bounded phase only: every worker's batches (:data:`RanBatches`), worker order.
    ran: RanBatches | None = None
    stalls: StallRecord | None = None


@dataclass(frozen=True)
class Deadline:
    """A time-bounded phase's end: a worker starts no batch once ``at`` (ns on the marks'
    clock, :data:`~asyncbench.measure.latency.CLOCK`) has passed, so the phase stops at the
    first batch boundary after its duration; ``ran`` keeps each batch for the checksums."""

    at: int
    ran: RanBatches

    def passed(self) -> bool:
        return CLOCK() >= self.at


def partition(items: Sequence[object], workers: int) -> list[Sequence[object]]:
    """Contiguous partitions: ``len // P`` each, the first ``len % P`` workers one more.

    A lazy plan stream is split into windows (streams of their own), never materialised.
    """
    base, extra = divmod(len(items), workers)
    cut = items.window if isinstance(items, LazyItems) else lambda a, b: items[a:b]
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
    if isinstance(uids, LazyItems):
        return list(uids.by_residue(workers))
    buckets: list[list[int]] = [[] for _ in range(workers)]
    for uid in uids:
        buckets[uid % workers].append(uid)
    return list(buckets)


async def run_batches(
    kind: PhaseKind,
    store: Any,
    items: Sequence[object],
    ctx: object,
    checksum: FoldTarget,
    batch_size: int,
    on_batch: BatchHook,
    worker: int = 0,
    deadline: Deadline | None = None,
    ledger: LoopLedger | None = None,
) -> int:
    """One worker's loop: a batch call and a fold per batch; returns the operations run
    (all of ``items``, or fewer when ``deadline`` passed first). ``ledger``: each call's
    steps timed, for the phase's holds of the loop (None: not)."""
    call = kind.call
    assert call is not None, f"{kind.kind} is not an operation phase"
    fold = checksum.add_ints if kind.fold is Fold.IDS else checksum.add_profiles
    clock = perf_counter
    t0 = clock()
    total = len(items)
    done = 0
    for index, start in enumerate(range(0, total, batch_size)):
        if deadline is not None and deadline.passed():
            break
        chunk = items[start : start + batch_size]
        marks: list[int] = []
        if ledger is None:
            result = await call(store, chunk, ctx, marks)
        else:
            result = await ledger.timed(call(store, chunk, ctx, marks))
            ledger.batch_done(marks)
        fold(result)
        t1 = clock()
        on_batch(worker, index, len(chunk), t1 - t0, marks)
        done += len(chunk)
        if deadline is not None:
            deadline.ran.append((chunk, result))
            # an engine whose calls never suspend (memory) would run this worker alone until
            # the deadline and the others not at all: the workers take turns, batch by batch
            await anyio.lowlevel.checkpoint()
            t1 = clock()
        t0 = t1
    return done


async def run_batches_at(
    kind: PhaseKind,
    store: Any,
    items: Sequence[object],
    ctx: object,
    checksum: FoldTarget,
    batch_size: int,
    on_batch: BatchHook,
    schedule: WorkerSchedule,
    worker: int = 0,
    alone: bool = True,
    ledger: LoopLedger | None = None,
    deadline: Deadline | None = None,
) -> int:
    """One worker's loop under a rate: each batch is the operations due now (at most
    ``batch_size``), issued back to back in plan order; then it waits for the next due time.
    Behind schedule, the batches grow and nothing is skipped. Same items, same order, same
    folds as :func:`run_batches`: only when they start differs. ``ledger``: the engine's time
    on the loop, shared by the phase's workers on this loop (one of its own if none).
    ``deadline``: no batch starts after it (the operations run are returned)."""
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
        if deadline is not None and (deadline.passed() or due >= deadline.at):
            break  # the next batch is due after the end: it would start past the duration
        if due > clock():
            await wait_until(due, alone)
        t0 = clock()
        blocked = ledger.total - seen  # the other workers' engine calls held the loop this long
        intended = schedule.take(t0, min(batch_size, total - done))
        n = len(intended)
        chunk = items[done : done + n]
        marks: list[int] = []
        result = await timed(call(store, chunk, ctx, marks))
        seen = ledger.total
        ledger.batch_done(marks)
        fold(result)
        if deadline is not None:
            deadline.ran.append((chunk, result))
        on_batch(worker, index, n, (clock() - t0) / 1e9, marks, intended, blocked)
        done += n
        index += 1
    return done
