"""The durability chart: per engine and crash point, the acknowledged writes a crash lost,
as a bar, with the engine's stated promise in its label (docs/durability.md). Drawn only
for results with durability rows (a plan with a ``crash``).

Why a chart beside the report's table: several crash points (``crash.points``) and
engines make a distribution that a table of numbers hides; bars set the engines' losses
side by side, and the promise beside each says whether a loss broke it (a FAIL: an engine
promising synced commits) or was within it. A torn record or a store that did not open is
written on its row, never drawn as a short bar that would read as a good result.

Its own module so that :mod:`asyncbench.report.charts` only registers it; the figures are
the result's :class:`~asyncbench.result.DurabilityRow`, as the report's table shows them.
"""

from __future__ import annotations

import textwrap
from collections.abc import Callable

from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from asyncbench import fmt
from asyncbench.measure.verdicts import durability_failed
from asyncbench.report.chart_style import AXIS_IN, MUTED, TEXT, figure_frame
from asyncbench.result import DurabilityRow, EngineResult, RunResult

__all__ = ["TITLE", "draw", "wanted"]

TITLE = "Durability After A Crash"
#: The height of one crash's bar and its two-line label.
ROW_IN = 0.5
#: A label's promise is wrapped to this many characters a line.
PROMISE_CHARS = 48


def wanted(run: RunResult) -> bool:
    """Any engine has a durability row (the plan crashed it)."""
    return any(e.durability for e in run.engines)


def _label(e: EngineResult, d: DurabilityRow, repeats: bool) -> str:
    name = f"{e.engine}#{e.repeat + 1}" if repeats else e.engine
    promise = textwrap.shorten(f"promise: {d.promise or 'not stated'}", PROMISE_CHARS, placeholder="...")
    return f"{name} · {d.how} in {d.phase} at {fmt.count(d.after)}\n{promise}"


def _value(d: DurabilityRow) -> str:
    if not d.opened:
        text = "the store did not open"
    else:
        text = f"lost {fmt.count(d.acknowledged_lost)} of {fmt.count(d.acknowledged)}"
        if d.lost_seconds is not None:
            text += f", the last {d.lost_seconds:.2f} s"
        if d.torn:
            text += f"; {fmt.count(d.torn)} torn"
    return text + (" · FAIL" if durability_failed(d) else "")


def draw(run: RunResult, colour: Callable[[EngineResult], str]) -> Figure:
    rows = [(e, d) for e in run.engines for d in e.durability]
    repeats = run.repeat > 1
    notes = [
        "Each bar: the acknowledged writes the crash lost (the store read back record by record against the "
        "plan). A kill loses what the engine itself buffered; a power cut also what it never synced. FAIL: "
        "a store that did not open, a torn record, or a loss by an engine whose promise is synced commits.",
    ]
    body = max(len(rows), 1) * ROW_IN + AXIS_IN
    fig = figure_frame(TITLE, "Acknowledged writes lost per engine and crash point · fewer is better", body, notes, run)
    ax = fig.subplots()
    ax.spines[["top", "right"]].set_visible(False)
    ax.tick_params(colors=TEXT, labelsize=8.5)
    most = max((d.acknowledged_lost for _, d in rows if d.opened), default=0)
    for y, (e, d) in enumerate(rows):
        lost = d.acknowledged_lost if d.opened else 0
        if lost:
            ax.barh(y, lost, height=0.6, color=colour(e), linewidth=0)
        style = "normal" if d.opened and not d.torn else "italic"
        ax.text(lost, y, f"  {_value(d)}", va="center", ha="left", fontsize=8, color=TEXT if d.opened else MUTED,
                style=style)  # fmt: skip
    ax.set_xlim(0, max(most, 1) * 1.9)  # room for the longest value label right of its bar
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))  # writes are whole: no 0.25 of one
    ax.set_xlabel("acknowledged writes lost")
    ax.set_yticks(range(len(rows)), [_label(e, d, repeats) for e, d in rows], fontsize=8.5)
    ax.set_ylim(max(len(rows), 1) - 0.5, -0.5)
    return fig
