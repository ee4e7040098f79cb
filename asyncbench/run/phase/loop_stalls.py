"""How long the engine held the event loop in a phase: its longest hold and the holds over
1 / 10 / 100 ms (:class:`~asyncbench.result.StallRecord`), so a flush or merge that stops
every operation for 80 ms shows in the result, not only as a p99.9 nobody can explain.

Two sources, each the cheapest that sees its kind of hold:

- **The engine's batch calls**, timed step by step (:class:`~asyncbench.run.phase.loop_ledger.LoopLedger`:
  each stretch of a call's coroutine between two suspensions is a hold, exactly; an engine
  whose batch runs synchronously on the loop holds it for the whole batch). Two clock reads
  and a generator hop per step, i.e. per batch of ``batch_size`` operations: nothing a
  phase can measure.
- **Everything else on the loop** (an engine's own background tasks: an in-process
  engine's flush or merge slices, its log writer; they run while the workers wait), by a
  lag monitor (:class:`StallMonitor`): a timer every :data:`INTERVAL_NS` whose lateness
  is a hold of the loop. One timer callback per millisecond (a few µs on uvloop, under
  0.5 % of one core) whatever the operation rate, where timing every callback of the loop
  would cost per operation and needs the loop's internals (uvloop has no hook). The time
  the phase's own workers ran in the late window (their steps are timed too,
  :meth:`StallMonitor.worker`) is taken out: a worker that never yields (a synchronous
  engine in a closed loop) is the engine's batch calls, counted above, and the harness's
  own bookkeeping, not a stall. A monitored hold is a lower bound: by up to one interval
  (the hold began after the timer's previous turn) plus :data:`SLACK_NS` (the event loop's
  timers tick in whole milliseconds, libuv's), so a background hold under about 2 ms may
  go uncounted; the batch calls' holds are exact.

Both feed one :class:`LoopHolds` per phase; the harness's other tasks on the loop (the
progress line, the memory sampler) take microseconds and stay under the 1 ms floor.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Generator
from typing import Any, TypeVar, cast

from asyncbench.measure.latency import CLOCK
from asyncbench.result import StallRecord

__all__ = ["INTERVAL_NS", "MAX_MARKS", "SLACK_NS", "LoopHolds", "StallMonitor", "cpu_wait_ns", "timed_steps"]

T = TypeVar("T")

#: The thresholds a hold is counted over (ns): 1, 10 and 100 ms.
THRESHOLDS_NS = (1_000_000, 10_000_000, 100_000_000)
#: Holds over this long are kept with their time for the over-time chart (ns): 10 ms.
MARK_NS = THRESHOLDS_NS[1]
#: At most this many marked holds per phase (the first ones; the counts stay whole).
MAX_MARKS = 500
#: The lag monitor's period (ns).
INTERVAL_NS = 1_000_000
#: What the loop's millisecond timers may add to a wake-up on an idle loop (ns).
SLACK_NS = 1_000_000


def cpu_wait_ns() -> int | None:
    """How long this thread has waited for a CPU while runnable (ns, Linux's schedstat), or
    None where the kernel does not say. Why: on a shared machine a hold of the loop is
    partly the machine's (the loop's thread was ready and no core was free); the phase's
    total of that wait, beside its holds, says how much (two reads a phase: free)."""
    try:
        with open(f"/proc/self/task/{threading.get_native_id()}/schedstat", "rb") as f:
            return int(f.read().split()[1])
    except (OSError, ValueError, IndexError):
        return None


class LoopHolds:
    """The holds of one phase: the longest, the counts over each threshold and the marked
    ones (end time from :attr:`origin`, ns; length, ns)."""

    __slots__ = ("longest", "over", "marks", "origin", "_waited")

    def __init__(self, origin: int | None = None) -> None:
        self.longest = 0
        self.over = [0, 0, 0]
        self.marks: list[tuple[int, int]] = []
        self.origin = CLOCK() if origin is None else origin
        self._waited: int | None = None

    def begin(self, origin: int) -> None:
        """The phase starts now (``origin``: ns on the marks' clock), on the loop's thread."""
        self.origin = origin
        self._waited = cpu_wait_ns()

    def add(self, ns: int, end: int | None = None) -> None:
        """One hold of ``ns`` that ended at ``end`` (now if None)."""
        if ns > self.longest:
            self.longest = ns
        if ns < THRESHOLDS_NS[0]:
            return
        over = self.over
        for i, limit in enumerate(THRESHOLDS_NS):
            if ns >= limit:
                over[i] += 1
        if ns >= MARK_NS and len(self.marks) < MAX_MARKS:
            self.marks.append(((CLOCK() if end is None else end) - self.origin, ns))

    def record(self) -> StallRecord:
        """The record, taken on the loop's thread when the phase ended."""
        now = cpu_wait_ns()
        waited = None if now is None or self._waited is None else max(0, now - self._waited)
        return StallRecord(
            cpu_wait_ns=waited,
            longest_ns=self.longest,
            over_1ms=self.over[0],
            over_10ms=self.over[1],
            over_100ms=self.over[2],
            marks=[[round(at / 1e9, 6), round(ns / 1e6, 3)] for at, ns in self.marks],
        )


class StallMonitor:
    """The lag monitor of one phase on the running loop (see the module doc): started with
    :meth:`start` at the workers' release, stopped with :meth:`stop`."""

    __slots__ = ("holds", "_handle", "_due", "_ran")

    def __init__(self, holds: LoopHolds) -> None:
        self.holds = holds
        self._handle: asyncio.TimerHandle | None = None
        self._due = 1 << 62  # not started: no worker step counts
        self._ran = 0  # the workers' time on the loop since the timer was due (ns)

    def worker(self, call: Awaitable[T]) -> Awaitable[T]:
        """``call`` (a worker's whole loop), its steps' time kept out of the lag."""
        return timed_steps(call, self)

    def add(self, ns: int) -> None:
        """A worker's step of ``ns`` just ended: its part after the timer was due."""
        after = CLOCK() - self._due
        if after > 0:
            self._ran += ns if ns < after else after

    def start(self) -> None:
        self._ran = 0
        self._due = CLOCK() + INTERVAL_NS
        self._handle = asyncio.get_running_loop().call_later(INTERVAL_NS / 1e9, self._turn)

    def stop(self) -> None:
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None
            self._turn(again=False)  # a hold still going at the phase's end

    def _turn(self, again: bool = True) -> None:
        now = CLOCK()
        late = now - self._due - SLACK_NS - self._ran
        if late > 0:
            self.holds.add(late, now)
        self._ran = 0
        if again:
            self._due = now + INTERVAL_NS
            self._handle = asyncio.get_running_loop().call_later(INTERVAL_NS / 1e9, self._turn)
        else:
            self._due = 1 << 62


def timed_steps(call: Awaitable[T], sink: Any) -> Awaitable[T]:
    """``call``, each of its steps' time on the loop (ns) handed to ``sink.add``."""
    return _Timed(call, sink)


class _Timed(Awaitable[T]):
    __slots__ = ("_call", "_sink")

    def __init__(self, call: Awaitable[T], sink: Any) -> None:
        self._call, self._sink = call, sink

    def __await__(self) -> Generator[Any, Any, T]:
        inner = self._call.__await__()
        add = self._sink.add
        clock = CLOCK
        value: Any = None
        error: BaseException | None = None
        while True:
            t = clock()
            try:
                step = inner.send(value) if error is None else inner.throw(error)
            except StopIteration as done:
                add(clock() - t)
                return cast(T, done.value)  # StopIteration.value is typed Any
            except BaseException:
                add(clock() - t)
                raise
            add(clock() - t)
            value, error = None, None
            try:
                value = yield step
            except GeneratorExit:
                close = getattr(inner, "close", None)
                if close is not None:
                    close()
                raise
            except BaseException as exc:  # cancellation and the like: the call's to handle
                error = exc
