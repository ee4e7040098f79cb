"""The report's open-loop section: phases run at a target rate, their achieved rate and
their response time (from the intended start) beside the service time.

Only phases with a rate appear; a phase whose achieved rate fell more than 5 % below its
target is marked, since its response times then measure a queue that grew all phase long.
"""

from __future__ import annotations

from asyncbench import fmt
from asyncbench.measure.aggregate import EngineRuns
from asyncbench.measure.latency import format_us
from asyncbench.report import markdown as md
from asyncbench.result import RunResult

__all__ = ["OPEN_LOOP_NOTE", "open_loop_tables"]

OPEN_LOOP_NOTE = (
    "Phases run at a target rate (open loop): each operation has an intended start time and "
    "is issued then (late if the worker is behind, never skipped). Response time runs from the "
    "intended start, service time from the actual start; a stall shows in the response time of "
    "every operation intended during it. Schedule delay is the harness's own lateness, each "
    "operation's: from the later of its intended start and the worker's previous end to its "
    "batch's start, less the time the engine's other calls held the event loop. **missed**: the "
    "achieved rate is more than 5 % below the target."
)

HEADER = [
    "Phase",
    "Target /s",
    "Achieved /s",
    "Response p50 µs",
    "Response p99 µs",
    "Response max µs",
    "Service p99 µs",
    "Schedule delay p99 µs",
]


def open_loop_tables(run: RunResult, groups: dict[str, EngineRuns]) -> list[str]:
    """Per engine, one row per phase run at a rate (the measured repeats' histograms merged;
    the achieved rate and the schedule delay of the first measured repeat)."""
    out: list[str] = []
    for g in groups.values():
        rows = []
        for index, spec in enumerate(run.phases):
            phases = g.phases(index)
            timed = [p for p in phases if p.open_loop is not None]
            if not timed:
                continue
            first = timed[0]
            ol = first.open_loop
            assert ol is not None
            response, service = g.response(index), g.latency(index)
            r = response.summary() if response is not None else None
            achieved = fmt.count(round(first.ops_per_s)) + (" **missed**" if any(p.rate_missed for p in timed) else "")
            if first.skipped:  # a sweep's level above the one whose rate dipped
                achieved = "skipped: a lower rate dipped"
            rows.append(
                [
                    md.text(spec.name),
                    fmt.count(round(ol.rate)) + (" (Poisson)" if ol.arrivals.value == "poisson" else ""),
                    achieved,
                    format_us(r.p50) if r else "-",
                    format_us(r.p99) if r else "-",
                    format_us(r.max) if r else "-",
                    format_us(service.summary().p99) if service is not None else "-",
                    format_us(ol.delay_p99_ns) if not first.skipped else "-",
                ]
            )
        if rows:
            out += [f"### {md.text(g.engine)}", ""]
            out += ["| " + " | ".join(HEADER) + " |", "|" + "|".join(["---"] + ["---:"] * (len(HEADER) - 1)) + "|"]
            out += ["| " + " | ".join(row) + " |" for row in rows] + [""]
    return out
