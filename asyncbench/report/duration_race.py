"""The headline's line for a phase group run for a ``duration``: a race of operations per
second, not of time.

Every engine runs such a phase for about as long (it stops at the first batch boundary
after the duration), so its time says nothing of the engine: a phase that ran 236k
operations in 1.005 s and one that ran 20k in 1.047 s "tied" in a time race. What differs
is how many operations each ran in that time, so the engines are ranked by the group's
operations over its time in each measured repeat, with the same significance test as the
time race (:func:`asyncbench.measure.stats.compare`, higher is better).
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence

from asyncbench import fmt
from asyncbench.measure.aggregate import EngineRuns
from asyncbench.measure.stats import Verdict, compare
from asyncbench.result import EngineResult, RunResult

__all__ = ["duration_line", "run_for_duration"]


def run_for_duration(run: RunResult, index: int) -> bool:
    """Some engine ran phase ``index`` for a duration (the plan's, so every engine did)."""
    return any((p := e.phase_at(index)) is not None and p.prefix is not None for e in run.engines)


def _rate(e: EngineResult, indexes: Sequence[int]) -> float | None:
    """The engine's operations per second over the group's phases in one repeat; None when
    it did not complete every one of them."""
    ops, seconds = 0, 0.0
    for i in indexes:
        p = e.phase_at(i)
        if p is None:
            return None
        ops, seconds = ops + p.ops, seconds + p.seconds
    return ops / seconds if seconds > 0 else None


def _ratio(r: float) -> str:
    return f"{r:.2f}x" if r < 9.995 else f"{r:.0f}x"


def duration_line(label: str, groups: Sequence[EngineRuns], indexes: Sequence[int], failed: Sequence[str]) -> str:
    """``mixed, run for a duration: lsm most operations, 11.8x sqlite's (236_000/s vs 20_000/s)...``
    (``failed``: engines that failed before completing the group, left out)."""
    seconds = max((p.prefix.duration_seconds for g in groups for i in indexes for p in g.phases(i) if p.prefix), default=0)
    head = f"{label}, run for {seconds:g} s each (ranked by operations per second, not time)"
    done = [
        (g.engine, rates)
        for g in groups
        if g.engine not in failed and (rates := [r for e in g.measured if (r := _rate(e, indexes)) is not None])
    ]
    failed_note = "".join(f"; {engine} FAILED" for engine in failed)
    if not done:
        return f"{head}: no engine completed it{failed_note}"
    median = {name: statistics.median(r) for name, r in done}
    done.sort(key=lambda d: -median[d[0]])
    first, first_r = done[0]
    if len(done) == 1:
        return f"{head}: {first} {fmt.count(round(median[first]))}/s; no other engine to compare with{failed_note}"
    second, second_r = done[1]
    if median[second] <= 0:
        return f"{head}: {first} {fmt.count(round(median[first]))}/s; {second} ran no operation{failed_note}"
    ratio = _ratio(median[first] / median[second])
    figures = f"({fmt.count(round(median[first]))}/s vs {fmt.count(round(median[second]))}/s)"
    c = compare(second_r, first_r, higher_is_better=True)
    if c.verdict is Verdict.SAME:
        line = f"{head}: {first} and {second} tie, {ratio} apart within ±{c.threshold:.0%} {figures}"
    elif c.verdict is Verdict.ONE_RUN:
        line = f"{head}: {first} fastest, {ratio} the rate of {second} {figures}, one run each (untested)"
    elif c.verdict is Verdict.FASTER:
        line = f"{head}: {first} fastest, {ratio} the rate of {second} {figures}; significant (p = {c.p_value:.2g})"
    else:
        line = f"{head}: {first} ahead of {second} by {ratio} {figures}, not significant (p = {c.p_value:.2g})"
    return f"{line}{failed_note}"
