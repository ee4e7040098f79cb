"""Capacity probes across client processes (``--processes K``, ``--cluster``): the capacity
of a server driven by many clients.

The search (:mod:`asyncbench.run.capacity`) takes a probe function; here is the one the
coordinator (:mod:`asyncbench.run.distributed`) gives it. Probe ``number`` at a rate: every
client process is sent (phase, probe number, rate, length, release instant); each takes the
same slice of the phase's stream as in one process (:func:`~asyncbench.run.capacity.probe_items`),
the same partition over the P workers, runs the workers it hosts at their share of the
rate from the common release instant (the schedule of one process, as a phase with
``rate`` does), and returns its operations' response times with their intended offsets
from the release. The coordinator merges them in intended order and folds the workers'
checksums in worker order, so probe k's checksum is the same as in one process.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

import anyio
import numpy as np

from asyncbench.rate import Arrivals, Rate
from asyncbench.run.batch_lines import clock_offset_ns
from asyncbench.run.capacity import ProbeFn, ProbeRun, probe_items, stream_rest
from asyncbench.run.dispatch import shares, split
from asyncbench.run.loop_ledger import LoopLedger
from asyncbench.run.phase_loop import run_batches, run_batches_at
from asyncbench.run.schedule import WorkerSchedule
from asyncbench.workloads import workload

__all__ = ["ProbePart", "coordinated_probe", "merged_probe", "run_probe_part"]


@dataclass
class ProbePart:
    """One client process's share of a probe: its workers' checksums (worker -> hex, only
    workers with items), when it released them and when its last one ended (wall clock),
    per operation its intended offset from the release (ns) and response time (ns), and
    how many operations it ran (the closed-loop rest of a writing phase has no response times)."""

    process: int
    release: float
    end: float
    checksums: dict[int, str]
    offsets: np.ndarray
    responses: np.ndarray
    ops: int = 0  # the operations its workers ran


async def run_probe_part(
    process: int,
    kind: Any,
    items: Sequence[object],
    handles: dict[int, Any],
    ctx: object,
    workers: int,
    batch_size: int,
    arrivals: str,
    seed: int,
    index: int,
    number: int,
    rate: float | None,
    length: int,
    release_at: float,
) -> ProbePart:
    """The client side: this process's hosted workers (``handles``) run their shares of
    probe ``number``'s slice at ``rate`` (over all P workers) from ``release_at``, split as
    the phase splits (a mixed phase's by key owner). ``rate`` None: the stream's rest after
    ``number`` probes of ``length``, closed loop (a writing phase's finish,
    :func:`~asyncbench.run.capacity.stream_rest`)."""
    part = probe_items(items, number, length) if rate is not None else stream_rest(items, number, length)
    parts = split(kind, part, workers)
    share = shares(kind, parts)
    start_ns = round(release_at * 1e9) - clock_offset_ns()
    offsets: list[np.ndarray] = []
    responses: list[np.ndarray] = []

    def on_batch(worker: int, i: int, ops: int, seconds: float, marks: list[int], intended: Any = None, blocked: int = 0) -> None:
        if ops and intended is not None:  # (the closed-loop rest has no intended times)
            offsets.append(np.asarray(intended, dtype=np.int64) - start_ns)
            responses.append(np.asarray(marks[1:], dtype=np.int64) - np.asarray(intended, dtype=np.int64))

    sums = {w: workload().checksum() for w in handles}
    ends: list[float] = []
    ledger = LoopLedger()

    async def worker(w: int) -> None:
        if rate is None:
            await run_batches(kind, handles[w], parts[w], ctx, sums[w], batch_size, on_batch, w)
        else:
            target = Rate(rate, Arrivals(arrivals))
            plan = WorkerSchedule(target, start_ns, w, workers, seed, index, None if share is None else share[w])
            await run_batches_at(kind, handles[w], parts[w], ctx, sums[w], batch_size, on_batch, plan, w, len(handles) == 1, ledger)
        ends.append(time.time())

    wait = release_at - time.time()
    if wait > 0:
        await anyio.sleep(wait)
    release = time.time()
    async with anyio.create_task_group() as tg:
        for w in handles:
            tg.start_soon(worker, w)
    empty = np.empty(0, dtype=np.int64)
    return ProbePart(
        process,
        release,
        max(ends, default=release),
        {w: sums[w].hex() for w in handles if len(parts[w])},
        np.concatenate(offsets) if offsets else empty,
        np.concatenate(responses) if responses else empty,
        sum(len(parts[w]) for w in handles),
    )


def merged_probe(parts: Sequence[ProbePart]) -> ProbeRun:
    """The processes' shares of one probe as one: response times in intended order, the
    achieved rate from the first release to the last end, the checksum folded in worker order."""
    offsets = np.concatenate([p.offsets for p in parts])
    responses = np.concatenate([p.responses for p in parts])
    order = np.argsort(offsets, kind="stable")
    seconds = max(p.end for p in parts) - min(p.release for p in parts)
    sums = {w: cs for p in parts for w, cs in p.checksums.items()}
    checksum = workload().combine([sums[w] for w in sorted(sums)]) if sums else workload().checksum().hex()
    return ProbeRun(responses[order], responses.size / seconds if seconds > 0 else float("inf"), checksum)


def coordinated_probe(
    send: Callable[[int, float, float], Awaitable[Sequence[ProbePart]]], lead_seconds: float
) -> ProbeFn:
    """The coordinator's probe function: ``send(number, rate, release_at)`` runs the probe
    on every client process (released together ``lead_seconds`` from now) and returns their parts."""

    async def probe(number: int, rate: float) -> ProbeRun:
        return merged_probe(await send(number, rate, time.time() + lead_seconds))

    return probe
