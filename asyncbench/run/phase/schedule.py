"""Intended start times of a phase's operations under a target rate, and waiting for them.

Open loop (wrk2, YCSB's intended-time measurement): with a rate of R operations per
second over P workers, worker ``w`` owes its ``k``-th operation at an *intended* time laid
down before the phase, whatever the engine does. A worker that falls behind issues late
but never skips, so the operations, their order per worker and the checksums are those of
the closed loop; only when each operation starts changes.

The harness's hop cost stays per batch: a batch is every operation of the worker that is
due now (up to the batch size), the worker then sleeps until the next one is due. Sleeping
on the event loop is coarse (epoll_wait takes whole milliseconds and rounds up), so a wait
sleeps whole milliseconds up to :data:`SPIN_MARGIN_NS` before the due time and spends the
rest (under a millisecond plus the margin) in a blocking nanosleep when the phase has one
worker, or yielding to the loop (``sleep(0)``, other workers run) when it has several: CPU
spent only while a rate is set, never in the closed loop. On a machine whose cores are
oversubscribed a spinning worker waits for its turn on a core and the tail of the error
grows to the scheduler's slices (measured, docs/open-loop.md).

Poisson arrivals draw their gaps from a generator of their own, seeded from the run's seed,
the phase and the worker: the plan's streams are untouched.
"""

from __future__ import annotations

import time

import anyio
import numpy as np

from asyncbench.measure.latency import CLOCK
from asyncbench.rate import Arrivals, Rate

__all__ = ["SPIN_MARGIN_NS", "WorkerSchedule", "wait_until"]

#: How long before a due time a wait's sleep ends at the latest (the event loop's wake-up);
#: the rest, under a millisecond more (epoll's unit), is spent yielding in a loop.
SPIN_MARGIN_NS = 200_000
_MS = 1_000_000
#: A lone worker's last stretch before a due time, busy-waited (nanosleep's wake-up slack).
NAP_NS = 120_000
#: Intended times computed at a time (uniform or Poisson alike), 8 bytes each.
BLOCK = 4096


class WorkerSchedule:
    """One worker's intended start times (ns on :data:`~asyncbench.measure.latency.CLOCK`).

    Uniform: ``start + (k + w / P) * P / R``, the workers staggered by ``1 / R``. Poisson:
    ``start`` plus the running sum of exponential gaps of mean ``P / R``, seeded by
    ``(seed, phase, worker)``, the first operation at ``start``.

    ``share``: the worker's fraction of the phase's operations when the split is uneven (a
    key-owner split, YCSB's mixed phase: the hot keys' owners get more); its operations are
    then ``1 / (R * share)`` apart instead of ``P / R``, so every worker's share spans the
    same N / R and the phase runs at R. Paced at R / P, the busiest worker would end last
    and the phase would miss its rate at every R. None: ``1 / P`` (an even split).
    """

    __slots__ = ("_rate", "_start", "_interval", "_offset", "_rng", "_times", "_next", "_made", "_last")

    def __init__(
        self,
        rate: Rate,
        start_ns: int,
        worker: int = 0,
        workers: int = 1,
        seed: int = 0,
        phase: int = 0,
        share: float | None = None,
    ):
        self._rate = rate
        self._start = start_ns
        per = 1 / workers if share is None or share <= 0 else share
        self._interval = 1e9 / (rate.ops_per_s * per)  # ns between this worker's operations
        self._offset = worker * 1e9 / rate.ops_per_s
        self._rng = (
            np.random.Generator(np.random.PCG64(np.random.SeedSequence([seed & (2**63 - 1), phase, worker])))
            if rate.arrivals is Arrivals.POISSON
            else None
        )
        self._times = np.empty(0, dtype=np.int64)
        self._next = 0  # index into _times of the next operation
        self._made = 0  # intended times computed so far
        self._last = 0.0  # Poisson: the running sum of gaps (ns after start)

    def _extend(self) -> None:
        if self._rng is None:
            k = np.arange(self._made, self._made + BLOCK, dtype=np.float64)
            more = self._start + np.rint(self._offset + k * self._interval).astype(np.int64)
        else:
            gaps = self._rng.exponential(self._interval, BLOCK)
            if self._made == 0:
                gaps[0] = 0.0  # the first operation at the phase's start
            sums = self._last + np.cumsum(gaps)
            self._last = float(sums[-1])
            more = self._start + np.rint(sums).astype(np.int64)
        self._made += BLOCK
        self._times = np.concatenate([self._times[self._next :], more])
        self._next = 0

    def next_due(self) -> int:
        """The intended time of the next operation."""
        if self._next >= self._times.size:
            self._extend()
        return int(self._times[self._next])

    def take(self, now_ns: int, limit: int) -> np.ndarray:
        """The intended times of the next operations due by ``now_ns``: at least one, at
        most ``limit`` (the caller has waited for the first)."""
        if self._next >= self._times.size:
            self._extend()
        while self._times.size - self._next < limit and int(self._times[-1]) <= now_ns:
            self._extend()
        window = self._times[self._next : self._next + limit]
        n = max(1, int(np.searchsorted(window, now_ns, side="right")))
        self._next += n
        return window[:n]


async def wait_until(due_ns: int, alone: bool = False) -> None:
    """Return at ``due_ns`` or just after: sleep whole milliseconds on the loop (epoll's
    unit, so it does not round the sleep up past the due time), then the rest (under
    1.2 ms): ``alone`` (the phase's only worker, nothing else to run on the loop) in one
    blocking ``time.sleep`` to :data:`NAP_NS` before it, then a busy wait (a sleeping task
    is woken promptly even on a loaded machine, where a spinning one waits for its turn), else
    yielding to the loop (``sleep(0)``) so the other workers run meanwhile."""
    whole_ms = (due_ns - CLOCK() - SPIN_MARGIN_NS) // _MS
    if whole_ms > 0:
        await anyio.sleep(whole_ms / 1e3)
    if alone:
        left = due_ns - CLOCK()
        if left > NAP_NS:
            time.sleep((left - NAP_NS) / 1e9)  # nanosleep wakes ~50-70 µs late (timer slack)
        while CLOCK() < due_ns:  # the last ~0.1 ms: a short busy wait
            pass
        return
    while CLOCK() < due_ns:
        await anyio.sleep(0)
