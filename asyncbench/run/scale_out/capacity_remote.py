"""Capacity probes across client processes (``--processes K``, ``--cluster``): the capacity
of a server driven by many clients.

The search (:mod:`asyncbench.run.capacity.capacity`) takes a probe function; here is the one the
coordinator (:mod:`asyncbench.run.scale_out.distributed`) gives it. Probe ``number`` at a rate: every
client process is sent (phase, probe number, rate, length, release instant); each takes the
same slice of the phase's stream as in one process (:func:`~asyncbench.run.capacity.capacity.probe_items`),
the same partition over the P workers, runs the workers it hosts at their share of the
rate from the common release instant (the schedule of one process, as a phase with
``rate`` does), and returns its operations' response times with their intended offsets
from the release. The coordinator merges them in intended order and folds the workers'
checksums in worker order, so probe k's checksum is the same as in one process. The
workers run through :func:`~asyncbench.run.phase.dispatch.run_workers`, the one worker loop of
every phase (in one process, in a client process, in a probe).
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import anyio
import numpy as np

from asyncbench.rate import Arrivals, Rate
from asyncbench.run.capacity.capacity import (
    ProbeFn,
    ProbeMarks,
    ProbeRun,
    probe_items,
    stream_rest,
    wait_share,
)
from asyncbench.run.capacity.saturation import thread_wait_seconds
from asyncbench.run.phase.dispatch import OperationPhase, run_workers, shares, split
from asyncbench.run.scale_out.batch_lines import clock_offset_ns
from asyncbench.workload import Workload

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
    #: In the order of ``responses``: each operation's service time and the harness's
    #: schedule delay (ns, :class:`~asyncbench.run.capacity.capacity.ProbeMarks`); empty: not measured.
    services: np.ndarray = field(default_factory=lambda: np.empty(0, dtype=np.int64))
    delays: np.ndarray = field(default_factory=lambda: np.empty(0, dtype=np.int64))
    #: The share of the probe this process's threads waited for a CPU (None: not known).
    wait_share: float | None = None
    #: The engine's own response time per operation (a punctual client's), same order.
    owns: np.ndarray = field(default_factory=lambda: np.empty(0, dtype=np.int64))


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
    wl: Workload,
) -> ProbePart:
    """The client side: this process's hosted workers (``handles``) run their shares of
    probe ``number``'s slice at ``rate`` (over all P workers) from ``release_at``, split as
    the phase splits (a mixed phase's by key owner). ``rate`` None: the stream's rest after
    ``number`` probes of ``length``, closed loop (a writing phase's finish,
    :func:`~asyncbench.run.capacity.capacity.stream_rest`)."""
    part = probe_items(items, number, length) if rate is not None else stream_rest(items, number, length)
    parts = split(kind, part, workers)
    start_ns = round(release_at * 1e9) - clock_offset_ns()
    marks_of = ProbeMarks()

    def on_batch(worker: int, i: int, ops: int, seconds: float, marks: list[int], intended: Any = None, blocked: int = 0) -> None:
        if ops and intended is not None:  # (the closed-loop rest has no intended times)
            marks_of.add(worker, marks, intended, blocked)

    sums = {w: wl.checksum() for w in handles}
    release = release_at
    waited: float | None = None

    async def released() -> int:
        """At ``release_at`` (the same instant for every process): the schedules' origin,
        that instant on this process's clock."""
        nonlocal release, waited
        wait = release_at - time.time()
        if wait > 0:
            await anyio.sleep(wait)
        release = time.time()
        waited = thread_wait_seconds()
        return start_ns

    target = None if rate is None else Rate(rate, Arrivals(arrivals))
    phase = OperationPhase(kind, ctx, batch_size, on_batch, target, seed, index, workers, shares(kind, parts))
    ends = (await run_workers(phase, {w: parts[w] for w in handles}, handles, sums, released)).values()
    end = max(ends, default=release)
    intended, responses, services, delays, owns = marks_of.arrays()
    return ProbePart(
        process,
        release,
        end,
        {w: sums[w].hex() for w in handles if len(parts[w])},
        intended - start_ns,
        responses,
        sum(len(parts[w]) for w in handles),
        services,
        delays,
        wait_share(waited, end - release),
        owns,
    )


def merged_probe(parts: Sequence[ProbePart], wl: Workload) -> ProbeRun:
    """The processes' shares of one probe as one: response times in intended order, the
    achieved rate from the first release to the last end, the checksum folded in worker
    order by the workload ``wl``."""
    offsets = np.concatenate([p.offsets for p in parts])
    responses = np.concatenate([p.responses for p in parts])
    order = np.argsort(offsets, kind="stable")
    seconds = max(p.end for p in parts) - min(p.release for p in parts)
    sums = {w: cs for p in parts for w, cs in p.checksums.items()}
    checksum = wl.combine([sums[w] for w in sorted(sums)]) if sums else wl.checksum().hex()
    achieved = responses.size / seconds if seconds > 0 else float("inf")
    if not all(p.services.size == p.responses.size == p.delays.size == p.owns.size for p in parts):
        return ProbeRun(responses[order], achieved, checksum)  # (a part without the split)
    services = np.concatenate([p.services for p in parts])[order]
    delays = np.concatenate([p.delays for p in parts])[order]
    owns = np.concatenate([p.owns for p in parts])[order]
    shares = [p.wait_share for p in parts]
    worst = None if any(x is None for x in shares) else max((x for x in shares if x is not None), default=None)
    return ProbeRun(responses[order], achieved, checksum, (), services, delays, worst, owns)


def coordinated_probe(
    send: Callable[[int, float, float], Awaitable[Sequence[ProbePart]]], lead_seconds: float, wl: Workload
) -> ProbeFn:
    """The coordinator's probe function: ``send(number, rate, release_at)`` runs the probe
    on every client process (released together ``lead_seconds`` from now) and returns their parts."""

    async def probe(number: int, rate: float) -> ProbeRun:
        return merged_probe(await send(number, rate, time.time() + lead_seconds), wl)

    return probe
