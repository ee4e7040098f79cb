"""The cost chart: per engine, what its run cost beyond time (three panels: CPU µs per
operation over the whole run, client and server stacked with the engine's own threads
marked inside the client's; write amplification of each write phase and of the run;
space amplification at the end). Drawn only for results that measured cost. A figure of
data not on disk yet (:func:`asyncbench.result.off_disk`) is no bar but the words "not on
disk yet": as a 0.00 bar it read as the best.

Its own module so that :mod:`asyncbench.report.charts` only registers it; the rows are
:mod:`asyncbench.report.cost_table`'s, so the chart, the report's table and ``compare``
show the same figures.
"""

from __future__ import annotations

from collections.abc import Callable

from matplotlib.figure import Figure

from asyncbench.report.chart_style import AXIS_IN, MUTED, TEXT, figure_frame
from asyncbench.report.cost_table import CostRow, cost_rows, off_disk_note
from asyncbench.result import ON_DISK_SHARE, EngineResult, RunResult
from asyncbench.workload import Group

__all__ = ["draw", "wanted"]


def wanted(run: RunResult) -> bool:
    """Any engine measured its cost (results from before it have none)."""
    return any(p.cost is not None for e in run.engines for p in e.phases)


def _total(e: EngineResult) -> CostRow | None:
    return next((r for r in cost_rows(e) if r.label == "all phases"), None)


def draw(run: RunResult, colour: Callable[[EngineResult], str]) -> Figure:
    engines = [e for e in run.engines if _total(e) is not None]
    writes = [p.name for p in run.phases if p.kind.group is Group.WRITE]
    notes = [
        "CPU: µs per operation over every phase (maintenance phases' CPU included), client process "
        "(solid; the engine's own background threads hatched inside it) then the server's processes on "
        "this machine (lighter). Write amplification: device bytes written over the logical bytes the "
        "workload wrote (docs/workload.md's encoding), per write phase and over the run. Space "
        "amplification: storage over the live data's logical bytes, at the end. 'not measured' is never 0; "
        f"'not on disk yet': the engine still held the data in memory (under {ON_DISK_SHARE:.0%} of its logical "
        "bytes on disk), so there is nothing to compare.",
    ]
    body = max(len(engines), 1) * (0.45 + 0.18 * len(writes)) + AXIS_IN
    fig = figure_frame("Cost", "What each engine's operations cost beyond time · lower is better", body, notes, run)
    axes = fig.subplots(1, 3, sharey=True)
    ys = list(range(len(engines)))
    cpu_ax, write_ax, space_ax = axes
    for ax in axes:
        ax.spines[["top", "right"]].set_visible(False)
        ax.tick_params(colors=TEXT, labelsize=8.5)
    for y, e in zip(ys, engines, strict=True):
        t = _total(e)
        assert t is not None
        client, engine, server = (t.per_op_us(v) for v in (t.client_cpu_s, t.engine_cpu_s, t.server_cpu_s))
        c = colour(e)
        left = 0.0
        if client is not None:
            cpu_ax.barh(y, client, height=0.62, color=c, linewidth=0)
            if engine:
                cpu_ax.barh(y, engine, height=0.62, color="none", edgecolor="white", hatch="///", linewidth=0)
            left = client
        if server is not None:
            cpu_ax.barh(y, server, left=left, height=0.62, color=c, alpha=0.45, linewidth=0)
        label = " + ".join(f"{v:.1f}" for v in (client, server) if v is not None) or "not measured"
        cpu_ax.text(left + (server or 0), y, f"  {label}", va="center", ha="left", fontsize=8, color=TEXT)
        rows = {r.label: r for r in cost_rows(e)}
        bars = [(name, rows[name].write_amplification if name in rows else None) for name in writes]
        bars.append(("run", t.write_amplification))
        step = 0.8 / len(bars)
        off = off_disk_note(e) is not None  # a figure of data not on disk yet: never a bar (it read as best)
        for i, (name, amp) in enumerate(bars):
            yy = y - 0.4 + step * (i + 0.5)
            if amp is None:
                row = t if name == "run" else rows.get(name)
                why = "not on disk yet" if off and row is not None and row.writes_off_disk else "not measured"
                write_ax.text(0, yy, f"  {name}: {why}", va="center", fontsize=7, color=MUTED, style="italic")
                continue
            write_ax.barh(yy, amp, height=step * 0.85, color=c, alpha=1.0 if name == "run" else 0.6, linewidth=0)
            write_ax.text(amp, yy, f"  {name} {amp:.2f}", va="center", fontsize=7, color=TEXT)
        space = t.space_amplification
        if space is None:
            why = "not on disk yet" if off else "not measured"
            space_ax.text(0, y, f"  {why}", va="center", fontsize=8, color=MUTED, style="italic")
        else:
            space_ax.barh(y, space, height=0.62, color=c, linewidth=0)
            space_ax.text(space, y, f"  {space:.2f}", va="center", fontsize=8, color=TEXT)
    cpu_ax.set_xlabel("CPU µs per operation")
    write_ax.set_xlabel("write amplification (×)")
    space_ax.set_xlabel("space amplification (×)")
    for ax in axes:
        lo, hi = ax.get_xlim()
        ax.set_xlim(0, max(hi, 1.0) * 1.35)
    cpu_ax.set_yticks(ys, [e.engine for e in engines], fontsize=10)
    cpu_ax.set_ylim(max(len(engines), 1) - 0.5, -0.5)
    return fig
