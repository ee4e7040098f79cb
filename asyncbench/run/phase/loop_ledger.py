"""How long the engine held the event loop, so a blocked loop is not called harness delay.

Under a rate, a worker that wakes late for its next operation is late either because of
the harness (its waits, its bookkeeping) or because something else held the event loop:
above all an engine whose batch call runs synchronously on the loop (an in-memory store, a
library without an async API) while another worker's operations came due. The open-loop
figures report the harness's own delay (issue 34): the engine's time on the loop belongs
to the engine.

A :class:`LoopLedger` is shared by the workers of one phase on one loop. Each engine batch
call runs through :meth:`LoopLedger.timed`, which times every step of the call's coroutine
(each stretch between two suspensions: the time it actually ran on the loop, not the time
it awaited I/O or a thread) and adds it to :attr:`LoopLedger.total`. A worker reads the
total when its call returns and again when it issues its next batch: the difference is the
engine time of the *other* workers that ran on the loop meanwhile, which
:class:`~asyncbench.measure.latency_recorder.PhaseRecorder` takes out of that batch's
delays. Engine work outside the batch calls (an engine's own background tasks on the loop)
is not seen, and still counts as harness delay.

The same step times give the phase's stall record (:mod:`asyncbench.run.phase.loop_stalls`): a
call whose longest step held the loop for a millisecond or more ran its operations there,
and its longest operation within that step (the batch's marks) is a hold of the loop by
the engine (a 1_000-read batch of 30 ms on the loop is a thousand operations served, not a
stall; one put of 80 ms inside it, a flush run inline, is).

Cost: two clock reads and a generator hop per step, i.e. per batch; the marks are looked
at only after a step of a millisecond or more.
"""

from __future__ import annotations

from collections.abc import Awaitable
from operator import sub
from typing import TypeVar

from asyncbench.run.phase.loop_stalls import THRESHOLDS_NS, LoopHolds, timed_steps

__all__ = ["LoopLedger"]

T = TypeVar("T")


class LoopLedger:
    """The engine's time on one event loop (ns), summed over the batch calls run through
    it, and its holds (:attr:`holds`)."""

    __slots__ = ("total", "step_max", "holds")

    def __init__(self, holds: LoopHolds | None = None) -> None:
        self.total = 0
        self.step_max = 0  # the longest step since the last :meth:`batch_done`
        self.holds = holds if holds is not None else LoopHolds()

    def add(self, ns: int) -> None:
        self.total += ns
        if ns > self.step_max:
            self.step_max = ns

    def timed(self, call: Awaitable[T]) -> Awaitable[T]:
        """``call``, with the time each of its steps runs on the loop added to :attr:`total`."""
        return timed_steps(call, self)

    def batch_done(self, marks: list[int]) -> None:
        """After a call run through :meth:`timed`: its longest operation on the loop is a
        hold (``marks``: the batch's start stamp, then one per operation's end)."""
        step, self.step_max = self.step_max, 0
        if step >= THRESHOLDS_NS[0]:  # else no operation of it held the loop for a millisecond
            self.holds.add(min(step, longest_gap(marks, THRESHOLDS_NS[0])))


#: Marks per window of :func:`longest_gap`'s first pass.
STRIDE = 16


def longest_gap(marks: list[int], floor: int) -> int:
    """The longest interval between two consecutive marks if it is ``floor`` or more, else
    some interval under ``floor``. Every STRIDE-th mark first: an interval lies inside one
    window of those, so only a window of ``floor`` or more can hold one; those alone are
    scanned. A batch of 1_000 quick operations costs one pass over 63 windows (~5 µs)
    instead of 1_000 subtractions."""
    n = len(marks)
    if n < 2:
        return 0
    coarse = marks[::STRIDE]
    if (n - 1) % STRIDE:
        coarse.append(marks[-1])
    wide = [i for i, gap in enumerate(map(sub, coarse[1:], coarse)) if gap >= floor]
    if not wide:
        return 0
    longest = 0
    for i in wide:
        window = marks[i * STRIDE : min((i + 1) * STRIDE, n - 1) + 1]
        longest = max(longest, *map(sub, window[1:], window))
    return longest
