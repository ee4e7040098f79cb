"""The console's closing table of a ``--repeat`` run: per engine, median and spread per phase.

Each repeat printed its own phase lines as it ran (under a ``repeat k/N`` label); what a
reader wants at the end is one table per engine over the measured repeats (warm-ups left
out, as in the report): the median throughput of each operation phase (the median time of
the others) and its spread (± half the range, relative to the median), an operation phase
whose throughput spread is over 10 % (unstable, as the report says) marked ``*``, and one
legend line for the mark. It fits 80 columns:
a long phase name is cut with an ellipsis, as on the phase lines.
"""

from __future__ import annotations

from asyncbench import fmt
from asyncbench.measure.aggregate import group_runs
from asyncbench.measure.stats import UNSTABLE_THRESHOLD, Summary
from asyncbench.result import RunResult

__all__ = ["repeat_summary"]

WIDTH = 80
_FIGURES = 12 + 1 + 8 + 2  # median, space, spread, mark


def _spread(s: Summary) -> str:
    pct = s.spread_pct
    return "" if pct is None else f"±{pct:.1f}%"


def _name(name: str, room: int) -> str:
    return name if len(name) <= room else name[: room - 1] + "…"


def repeat_summary(run: RunResult, width: int = WIDTH) -> list[str]:
    """The closing lines for a run whose engines repeated (none when every engine ran once)."""
    groups = group_runs(run)
    if all(len(g.measured) < 2 for g in groups):
        return []
    room = width - 2 - 1 - _FIGURES
    lines: list[str] = []
    marked = False
    for g in groups:
        n = len(g.measured)
        lines.append(f"\n== {g.engine} · median of {n} repeat{'s' if n != 1 else ''}")
        lines.append(f"  {'phase':<{room}} {'median':>12} {'spread':>8}")
        for index, spec in enumerate(run.phases):
            tp = g.throughput(index)
            if tp is not None:
                median, summary = f"{fmt.count(round(tp.median))}/s", tp
            else:  # no operations: the time, never marked (as in the report)
                seconds = g.seconds(index)
                if seconds is None:
                    continue
                median, summary = f"{seconds.median:.3f} s", seconds
            unstable = tp is not None and tp.unstable(UNSTABLE_THRESHOLD)
            marked = marked or unstable
            mark = " *" if unstable else ""
            lines.append(f"  {_name(spec.name, room):<{room}} {median:>12} {_spread(summary):>8}{mark}")
    if marked:
        lines.append(f"* unstable: throughput spread (± half the range) over {UNSTABLE_THRESHOLD:.0%} of the median")
    return lines
