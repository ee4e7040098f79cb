"""The report's loop-stall section: per engine and operation phase, how long the engine held
the event loop (:class:`~asyncbench.result.StallRecord`), so an engine whose flushes stop
every operation for 80 ms every few seconds is named, with how often, beside its latency.

A phase's row is over its measured repeats: the longest hold of any, the holds counted in
all. Phases without a record (older results, scaled-out runs) are left out; no record at
all, no section.
"""

from __future__ import annotations

from operator import itemgetter

from asyncbench import fmt
from asyncbench.measure.aggregate import EngineRuns
from asyncbench.report import markdown as md
from asyncbench.report.columns import Column, markdown
from asyncbench.result import RunResult, StallRecord

__all__ = ["STALL_NOTE", "stall_tables"]

STALL_NOTE = (
    "How long the engine held the event loop, while every operation waited: an operation of a "
    "batch run on the loop, or the engine's own work there between batches (a flush, a merge; "
    "seen by a 1 ms timer running late, a lower bound by up to 2 ms). Over the measured repeats: "
    "the longest hold, and how many lasted at least 1, 10 and 100 ms. Holds of 10 ms or more are "
    "marked on the latency-over-time charts. The last column is how long the loop's thread "
    "waited for a CPU in the phase (the most of any repeat): on a loaded machine that share of "
    "the holds is the machine's, not the engine's."
)

HEADER = ["Phase", "Longest ms", "≥ 1 ms", "≥ 10 ms", "≥ 100 ms", "Loop waited for a CPU ms"]


def stall_tables(run: RunResult, groups: dict[str, EngineRuns]) -> list[str]:
    """One table per engine with a stall record in any phase."""
    out: list[str] = []
    for g in groups.values():
        rows = []
        for index, spec in enumerate(run.phases):
            records = [p.stalls for p in g.phases(index) if p.stalls is not None]
            if not records:
                continue
            rows.append([md.text(spec.name)] + cells(records))
        if rows:
            out += [f"### {md.text(g.engine)}", ""]
            columns = [Column(h, "l" if i == 0 else "r", itemgetter(i)) for i, h in enumerate(HEADER)]
            out += markdown(columns, rows) + [""]
    return out


def cells(records: list[StallRecord]) -> list[str]:
    """Longest (ms) and the counts over 1 / 10 / 100 ms, over ``records``."""
    longest = max(r.longest_ns for r in records)
    counts = [sum(getattr(r, name) for r in records) for name in ("over_1ms", "over_10ms", "over_100ms")]
    waits = [r.cpu_wait_ns for r in records if r.cpu_wait_ns is not None]
    waited = f"{max(waits) / 1e6:.0f}" if waits else "–"
    return [f"{longest / 1e6:.1f}"] + [fmt.count(c) for c in counts] + [waited]
