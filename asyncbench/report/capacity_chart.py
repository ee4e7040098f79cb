"""The capacity chart: each searched phase's probes, response time against target rate,
the bound drawn and each engine's capacity marked.

A person checks a capacity by its curve: the probes below it meet the bound, those above
break it (or miss the rate, or let the backlog grow), and the capacity sits between. Drawn
in the shared style (:mod:`.chart_style`); the colours come from the caller, so this module
needs nothing of :mod:`.charts` (which lists it among the report's drawings).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping

from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.ticker import FuncFormatter, NullFormatter

from asyncbench import fmt
from asyncbench.report.chart_style import MUTED, TEXT, figure_frame
from asyncbench.result import RunResult

__all__ = ["TITLE", "capacity_figure", "searched_phases"]

TITLE = "Capacity Under The Latency Bound"
_PANEL_IN = 3.4
#: Panels at most (one per searched phase); the rest are said on the chart.
MAX_PANELS = 8


def searched_phases(run: RunResult) -> list[int]:
    """The plan indexes of the phases some engine searched, in plan order."""
    return sorted({p.index for e in run.engines for p in e.phases if p.capacity is not None})


def capacity_figure(run: RunResult, colour: Callable[[str], str]) -> Figure:
    """One panel per searched phase: per engine its probes (the tightest bound's
    percentile, ms, log scale, against the target rate): a filled dot passed, a cross
    failed; the bound a dashed line; the capacity a vertical line in the engine's colour.
    Call inside ``matplotlib.rc_context(RC)``."""
    indexes = searched_phases(run)
    shown = indexes[:MAX_PANELS]
    notes = [
        "Each point is one probe: a fixed number of the phase's operations at a target rate (open loop), "
        "judged on response time from each intended start. Filled: it passed (every bound met, the rate "
        "achieved within 5 %, the backlog bounded); a cross: it failed. Dashed: the bound; solid vertical: "
        "the capacity (the highest passing rate; the mean of the searches when repeated).",
    ]
    if len(indexes) > len(shown):
        notes.append(f"{len(indexes) - len(shown)} more searched phases not drawn (at most {MAX_PANELS} panels).")
    cols = 2 if len(shown) > 1 else 1
    rows = max(1, math.ceil(len(shown) / cols))
    fig = figure_frame(TITLE, "response time of each probe against its target rate", rows * _PANEL_IN, notes, run)
    axes = fig.subplots(rows, cols, squeeze=False)
    engines: list[str] = []
    for i, ax in enumerate(axes.flat):
        if i >= len(shown):
            ax.set_visible(False)
            continue
        index = shown[i]
        name = ""
        bounds: Mapping[str, int] = {}
        for e in run.engines:
            p = e.phase_at(index)
            if p is None or p.capacity is None or e.warmup:
                continue
            cap = p.capacity
            name, bounds = p.name, cap.slo_ns
            tight = list(bounds)[-1]  # the highest percentile bounded (the bounds are in rising order)
            c = colour(e.engine)
            engines += [] if e.engine in engines else [e.engine]
            ok = [(q.rate, q.percentiles_ns[tight] / 1e6) for q in cap.probes if q.verdict == "pass"]
            bad = [(q.rate, q.percentiles_ns[tight] / 1e6) for q in cap.probes if q.verdict == "fail"]
            # the client's lateness decided these (issue 51): hollow, never drawn as the engine's failures
            unsure = [(q.rate, q.percentiles_ns[tight] / 1e6) for q in cap.probes if q.verdict == "inconclusive"]
            if ok:
                ax.scatter(*zip(*ok, strict=True), color=c, s=22, zorder=3)
            if bad:
                ax.scatter(*zip(*bad, strict=True), color=c, marker="x", s=26, zorder=3)
            if unsure:
                ax.scatter(*zip(*unsure, strict=True), facecolors="none", edgecolors=c, marker="s", s=26, zorder=3)
            if cap.capacity is not None:
                ax.axvline(cap.capacity, color=c, linewidth=1.4)
        for label, ns in bounds.items():
            ax.axhline(ns / 1e6, color=MUTED, linestyle="--", linewidth=1.0)
            ax.text(0.005, ns / 1e6, f" {label} ≤ {ns / 1e6:g} ms", transform=ax.get_yaxis_transform(), color=MUTED,
                    fontsize=7.5, va="bottom")  # fmt: skip
        ax.set_title(name, fontsize=10, color=TEXT, loc="left")
        ax.set_xscale("log")
        ax.set_yscale("log")
        # plain numbers (the style turns math text off, so log ticks would show their TeX source)
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _pos: fmt.count(round(v))))
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _pos: f"{v:g}"))
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.yaxis.set_minor_formatter(NullFormatter())
        ax.set_xlabel("target rate (ops/s)")
        ax.set_ylabel(f"response {list(bounds)[-1] if bounds else ''} (ms)")
        for side in ("top", "right"):
            ax.spines[side].set_visible(False)
    handles = [Line2D([], [], color=colour(e), linewidth=2, label=e) for e in engines]
    handles += [
        Line2D([], [], color=MUTED, marker="o", linestyle="", label="passed"),
        Line2D([], [], color=MUTED, marker="x", linestyle="", label="failed"),
    ]
    if any(q.inconclusive for e in run.engines for p in e.phases if p.capacity for q in p.capacity.probes):
        handles.append(Line2D([], [], color=MUTED, marker="s", markerfacecolor="none", linestyle="", label="client late"))
    fig.legend(handles=handles, loc="upper right", ncols=len(handles), frameon=False, fontsize=9)
    return fig
