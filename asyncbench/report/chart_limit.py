"""How many engines a chart draws, and the run a chart is drawn from.

A chart's height grows with its engines (one bar per engine in every group, one panel per
engine over time), and matplotlib's layout and SVG text cost grow with it: a result of
1_000 engines took over 15 minutes and 1.5 GB to chart, for figures hundreds of inches
tall that nobody can read. So a chart draws at most :data:`MAX_CHART_ENGINES` engines, the
first in report order, says so on the chart, and the report says so above the charts; the
report's tables list every engine. Kept apart from the charts so the Markdown report can
say it without importing matplotlib.
"""

from __future__ import annotations

import dataclasses

from asyncbench.result import RunResult

__all__ = ["MAX_CHART_ENGINES", "charted", "engine_names", "note"]

#: Engines drawn per chart (the palette has 11 distinct colours; 20 bars per group is
#: already the limit of a readable 10-inch chart).
MAX_CHART_ENGINES = 20


def engine_names(run: RunResult) -> list[str]:
    """Each engine once (repeats share a name), in report order."""
    return list(dict.fromkeys(e.engine for e in run.engines))


def charted(run: RunResult) -> RunResult:
    """``run`` with only the engines a chart draws (every repeat of each)."""
    names = engine_names(run)
    if len(names) <= MAX_CHART_ENGINES:
        return run
    keep = set(names[:MAX_CHART_ENGINES])
    return dataclasses.replace(
        run,
        engines=[e for e in run.engines if e.engine in keep],
        throughput={k: v for k, v in run.throughput.items() if k in keep},
    )


def note(run: RunResult) -> str | None:
    """``charts show the first 20 of 1_000 engines ...`` when the charts leave engines out."""
    total = len(engine_names(run))
    if total <= MAX_CHART_ENGINES:
        return None
    return f"charts show the first {MAX_CHART_ENGINES} of {total:_d} engines (report order); the tables list every engine"
