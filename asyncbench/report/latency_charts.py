"""The report's latency charts, over plain data so they render without a run or the runner.

* :func:`percentile_distribution_figure`: one panel per phase, one line per engine, latency
  (µs, log scale) against the percentile on the "nines" scale HdrHistogram plots use: x is
  ``-log10(1 - p/100)``, so 0, 90, 99, 99.9 and 99.99 are evenly spaced and the tail,
  where engines differ most, gets as much room as the median. Drawn from each phase's
  encoded HdrHistogram, so a saved JSON result is enough to redraw it.
* :func:`latency_over_time_figure`: one phase, p50/p99/max per time bucket against seconds
  since the phase start, one panel per engine (small multiples: a short phase is not
  squashed beside a long one), so compaction or merge stalls show where they happened.
* :func:`latency_vs_throughput_figure`: a rate sweep's response time against the
  throughput each level achieved.

Each returns a figure; :func:`asyncbench.report.chart_style.svg` renders it, as every chart,
and :data:`asyncbench.report.charts.CHARTS` says when each is drawn from a run. Engine
colours are an argument (engine -> colour), so the caller passes the colours the other
charts use (an engine keeps one colour across the report); engines without one get
:func:`~asyncbench.report.chart_style.fallback_colour`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence

import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.ticker import FixedLocator, FuncFormatter, LogLocator, NullFormatter

from asyncbench.measure.latency import LatencyHistogram
from asyncbench.report.chart_style import MUTED, TEXT, fallback_colour
from asyncbench.report.chart_style import figure_frame as _figure
from asyncbench.result import NO_SERVER, PhaseCost

__all__ = [
    "DISTRIBUTION_TITLE",
    "SWEEP_TITLE",
    "OverTimePoint",
    "latency_over_time_figure",
    "latency_vs_throughput_figure",
    "nines",
    "nines_label",
    "percentile_distribution_figure",
]

DISTRIBUTION_TITLE = "Latency Percentiles"  # its file is ...-latency-percentiles.svg
OverTimePoint = tuple[float, float, float, float]
"""(seconds since the phase start, p50 ns, p99 ns, max ns) of one time bucket."""

_PANEL_IN = 2.7
_POINTS = 240  # percentile samples per line
_MIN_NINES = 4  # the x axis always reaches 99.99
_MAX_NINES = 7  # 10 million operations


def _colour_of(colours: Mapping[str, str] | None) -> Callable[[str], str]:
    """engine -> its colour in ``colours``, else the one fallback."""

    def colour(engine: str) -> str:
        if colours and engine in colours:
            return colours[engine]
        return fallback_colour(engine)

    return colour


def nines(percentile: float) -> float:
    """Percentile (0..100) -> position on the nines axis: 0 -> 0, 90 -> 1, 99.9 -> 3."""
    return -math.log10(1 - percentile / 100) if percentile < 100 else math.inf


def nines_label(n: int) -> str:
    """Tick label of whole nines ``n``: 0 -> "0", 1 -> "90", 4 -> "99.99"."""
    if n == 0:
        return "0"
    return f"{100 - 10 ** (2 - n):.{max(0, n - 2)}f}"


def _us_label(v: float, _pos: object = None) -> str:
    if v >= 1:
        return f"{v:_.0f}"
    return f"{v:.3f}".rstrip("0").rstrip(".")


def _style(ax: Axes) -> None:
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    ax.grid(which="major", color="#e6e6e6", linewidth=0.8)
    ax.set_axisbelow(True)
    ax.set_yscale("log")
    ax.yaxis.set_major_locator(LogLocator(base=10))
    ax.yaxis.set_major_formatter(FuncFormatter(_us_label))
    ax.yaxis.set_minor_formatter(NullFormatter())


def _curve(h: LatencyHistogram) -> tuple[np.ndarray, np.ndarray]:
    """(nines, latency µs) sampled from the 0th percentile to the last operation."""
    top = math.log10(h.count) if h.count > 1 else 0.0
    xs = np.linspace(0.0, top, _POINTS)
    ps = [100.0 * (1.0 - 10.0 ** (-x)) for x in xs]
    ps[-1] = 100.0  # the last point is the maximum
    values = np.array(h.values_at_percentiles(ps), dtype=np.float64) / 1e3
    return xs, np.maximum(values, 1e-3)  # log axis: a 0 ns bucket shows at 1 ns


def percentile_distribution_figure(
    series: Mapping[str, Mapping[str, str]],
    subtitle: str,
    colours: Mapping[str, str] | None = None,
    responses: Mapping[str, Mapping[str, str]] | None = None,
    order: Sequence[str] = (),
    left_out: int = 0,
) -> Figure:
    """Latency by percentile: ``series`` is engine -> phase -> encoded HdrHistogram
    (``PhaseLatency.encoded()``); one panel per phase, in first-seen order; ``colours`` is
    engine -> colour. ``responses`` (same shape): the response time of phases run at a
    rate, drawn dashed in the engine's colour beside its service time. ``order``: the
    panels' order (the plan's; phases not in it follow, first seen first); ``left_out``:
    phases not drawn, said in the notes. Call inside ``matplotlib.rc_context(RC)``."""
    engine_colour = _colour_of(colours)
    present = {phase for by_phase in series.values() for phase in by_phase}
    phases: list[str] = [p for p in order if p in present]
    for by_phase in series.values():
        for phase in by_phase:
            if phase not in phases:
                phases.append(phase)
    hists = {
        (engine, phase): LatencyHistogram.from_encoded(text)
        for engine, by_phase in series.items()
        for phase, text in by_phase.items()
    }
    counts = [h.count for h in hists.values() if h.count]
    # The axis ends where the longest line does (its slowest operation), and at 99.99 at least.
    span = min(max(float(_MIN_NINES), math.log10(max(counts)) if counts else 0.0), float(_MAX_NINES))
    cols = 2 if len(phases) > 1 else 1
    rows = max(1, math.ceil(len(phases) / cols))
    notes = [
        "x: percentile of the phase's operations on a log scale: each step right is ten times rarer "
        "(90 -> 99 -> 99.9 ...); a line ends at its slowest operation (100 %).",
        "Per-operation latency measured inside each engine's own loop (no thread hop); HdrHistogram, "
        "3 significant digits. Lower is better.",
    ]
    if left_out:
        notes.append(
            f"{left_out} more phase{'s' if left_out != 1 else ''} not drawn (at most {len(phases)} panels; a "
            "sweep's higher levels left out first): the report's Latency tables list every phase."
        )
    fig = _figure(DISTRIBUTION_TITLE, subtitle, rows * _PANEL_IN + 0.35, notes)
    if not phases:
        fig.text(0.5, 0.5, "no latency data", ha="center", color=MUTED, fontsize=11)
        return fig
    axes = fig.subplots(rows, cols, squeeze=False)
    for i, ax in enumerate(axes.flat):
        if i >= len(phases):
            ax.set_visible(False)
            continue
        phase = phases[i]
        _style(ax)
        for engine in series:
            h = hists.get((engine, phase))
            if h is None or h.count == 0:
                continue
            xs, ys = _curve(h)
            ax.plot(
                xs, ys, color=engine_colour(engine), linewidth=1.6, drawstyle="steps-post", label=engine
            )
            response = (responses or {}).get(engine, {}).get(phase)
            if response is not None:  # open loop: from the intended start, dashed
                xs, ys = _curve(LatencyHistogram.from_encoded(response))
                ax.plot(xs, ys, color=engine_colour(engine), linewidth=1.4, linestyle="--", drawstyle="steps-post")
        ax.set_xlim(0, span)
        ax.xaxis.set_major_locator(FixedLocator(list(range(math.floor(span) + 1))))
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _p: nines_label(round(v))))
        ax.set_title(phase, fontsize=10, color=TEXT, loc="left")
        ax.set_ylabel("latency (µs)")
        ax.set_xlabel("percentile (%)")
    handles = [Line2D([], [], color=engine_colour(e), linewidth=2, label=e) for e in series]
    if responses:
        handles.append(Line2D([], [], color=MUTED, linewidth=1.4, linestyle="--", label="response (at a rate)"))
    fig.legend(handles=handles, loc="upper right", ncols=len(handles), frameon=False, fontsize=9)
    return fig


def _with_gaps(points: Sequence[OverTimePoint]) -> tuple[np.ndarray, ...]:
    """(t, p50 µs, p99 µs, max µs), with a NaN row wherever slices are missing (no operation
    ended there), so the lines break across a stall instead of drawing a slope through it."""
    pts = sorted(points)
    t = np.array([p[0] for p in pts], dtype=np.float64)
    cols = [np.maximum(np.array([p[k] for p in pts], dtype=np.float64) / 1e3, 1e-3) for k in (1, 2, 3)]
    if t.size < 2:
        return (t, *cols)
    step = float(np.min(np.diff(t))) if t.size > 1 else 0.0
    gaps = np.flatnonzero(np.diff(t) > step * 1.5) + 1 if step > 0 else np.array([], dtype=np.int64)
    if gaps.size:
        t = np.insert(t, gaps, t[gaps - 1] + step)
        cols = [np.insert(c, gaps, np.nan) for c in cols]
    return (t, *cols)


_OVER_TIME_PANEL_IN = 1.55
#: Panels share one time axis unless the longest engine's phase is more than this many
#: times the shortest's (then each has its own, and the chart says so).
_SHARED_RATIO = 3.0
_DOTS_BELOW = 3  # a line of fewer points gets dots: a single slice draws nothing as a line


def _secs(v: float) -> str:
    return f"{v:.2g} s" if v < 10 else f"{v:_.0f} s"


def latency_over_time_figure(
    series: Mapping[str, Sequence[OverTimePoint]],
    phase: str,
    subtitle: str,
    colours: Mapping[str, str] | None = None,
    responses: Mapping[str, Sequence[OverTimePoint]] | None = None,
    costs: Mapping[str, PhaseCost] | None = None,
    stalls: Mapping[str, Sequence[Sequence[float]]] | None = None,
) -> Figure:
    """One phase's latency over time as small multiples: ``series`` is engine -> points
    (``(t_s, p50_ns, p99_ns, max_ns)`` per time bucket); one panel per engine, on one time
    axis (seconds since the phase start) unless the engines' phase lengths are more than
    :data:`_SHARED_RATIO` apart (then each its own, so a 0.3 s phase is not a sliver beside
    a 4 s one, and the notes say why), and one shared latency axis; per
    engine p99 (solid), max (thin) and p50 (dotted); ``colours`` is engine -> colour.
    ``responses`` (same shape): under a rate, the response time's points, whose p99 is
    drawn dashed. ``costs`` (engine -> the phase's ``PhaseCost``, with its series): the CPU cores the client
    and server used and the device MB/s written, second by second, on two right-hand axes.
    ``stalls`` (engine -> ``[end s, ms]`` of each hold of the event loop of 10 ms or more,
    ``StallRecord.marks``): each drawn as a shaded span with a tick at the panel's top.
    Call inside ``matplotlib.rc_context(RC)``."""
    engine_colour = _colour_of(colours)
    title = f"Latency Over Time: {phase}"
    engines = [e for e, points in series.items() if points]
    lengths = {e: max(p[0] for p in series[e]) for e in engines}
    shared = not lengths or max(lengths.values()) <= _SHARED_RATIO * max(min(lengths.values()), 1e-9)
    if shared:
        axis = "One panel per engine on one time axis and one latency axis, so lengths and heights compare."
    else:
        axis = (
            f"One panel per engine; the x axes differ: the engines' phases took {_secs(min(lengths.values()))} "
            f"to {_secs(max(lengths.values()))}, more than {_SHARED_RATIO:g}x apart, and on one axis the "
            "shorter would be squashed to a sliver (the latency axis is shared)."
        )
    notes = [
        f"{axis} Each point summarises the operations that ended in one time slice (1 s, 100 ms or 10 ms, "
        "from the phase's length); a break in a line is a slice in which no operation ended, and the tall "
        "max right after it is the stalled operation (a memtable flush, compaction or merge).",
        "Per-operation latency measured inside each engine's own loop; p50/p99/max exact per slice.",
    ]
    held = {e: marks for e, marks in (stalls or {}).items() if marks}
    if held:
        notes.append(
            "Red spans with a tick at the top: the engine held the event loop for 10 ms or more there "
            "(every operation waited; the report's Loop Stalls section counts them)."
        )
    if costs:
        notes.append(
            "Right-hand axes, per second: CPU cores used by the client process and the server's processes "
            "together (grey steps), and device MB/s written by them (brown dashes); a figure not measured is "
            "not drawn, and the panel says so."
        )
    fig = _figure(title, subtitle, max(len(engines), 1) * _OVER_TIME_PANEL_IN + 0.45, notes)
    if not engines:
        fig.text(0.5, 0.5, "no latency data", ha="center", color=MUTED, fontsize=11)
        return fig
    axes = fig.subplots(len(engines), 1, squeeze=False, sharey=True)[:, 0]
    for ax, engine in zip(axes, engines, strict=True):
        _style(ax)
        colour = engine_colour(engine)
        t, p50, p99, mx = _with_gaps(series[engine])
        dots = {"marker": "o", "markersize": 3.5} if t.size < _DOTS_BELOW else {}  # one slice is no line
        ax.plot(t, mx, color=colour, linewidth=0.8, alpha=0.55, **dots)
        ax.plot(t, p99, color=colour, linewidth=1.7, **dots)
        ax.plot(t, p50, color=colour, linewidth=1.0, linestyle=":", **dots)
        response = (responses or {}).get(engine)
        if response:  # open loop: from each operation's intended start
            _t, _p50, rp99, _mx = _with_gaps(response)
            ax.plot(_t, rp99, color=colour, linewidth=1.4, linestyle="--", **dots)
        ax.set_xlim(0, max(max(lengths.values()) if shared else lengths[engine], 1e-3))
        for end, ms in held.get(engine, ()):
            ax.axvspan(max(end - ms / 1e3, 0.0), end, color=_STALL_COLOUR, alpha=0.18, linewidth=0)
            ax.plot([end], [1.0], marker="v", markersize=4, color=_STALL_COLOUR, transform=ax.get_xaxis_transform(), clip_on=False)
        cost = (costs or {}).get(engine)
        if cost is not None and cost.series:
            _cost_axes(ax, cost)
        ax.set_title(engine, fontsize=9.5, color=TEXT, loc="left", pad=3)
        ax.set_ylabel("latency (µs)")
    axes[-1].set_xlabel("seconds since the phase start")
    handles = [
        Line2D([], [], color=MUTED, linewidth=1.7, label="p99"),
        Line2D([], [], color=MUTED, linewidth=0.8, alpha=0.55, label="max"),
        Line2D([], [], color=MUTED, linewidth=1.0, linestyle=":", label="p50"),
    ]
    if responses:
        handles.append(Line2D([], [], color=MUTED, linewidth=1.4, linestyle="--", label="response p99"))
    if held:
        handles.append(Line2D([], [], color=_STALL_COLOUR, marker="v", linestyle="", label="loop held ≥ 10 ms"))
    axes[0].legend(
        handles=handles,
        loc="lower right",
        bbox_to_anchor=(1.0, 1.0),
        ncols=len(handles),
        frameon=False,
        fontsize=8.5,
        borderaxespad=0.1,
    )
    return fig


_CPU_COLOUR, _WRITE_COLOUR = "#7f7f7f", "#8c564b"
_STALL_COLOUR = "#c0392b"


def _cost_axes(ax: Axes, cost: PhaseCost) -> None:
    """CPU cores (client + server) and device MB/s written per second of the phase, on two
    right-hand axes of a latency panel (``cost.series``). The series holds 0 for a figure
    not measured: the server's CPU left out is said in the axis label, and device bytes
    not measured are not drawn (a line at 0 would read as "wrote nothing")."""
    rows = cost.series or []
    server_missing = cost.server_cpu_seconds is None and cost.not_measured.get("server_cpu") != NO_SERVER
    t = np.array([r[0] for r in rows], dtype=np.float64)
    cores = np.array([r[1] + r[3] for r in rows], dtype=np.float64)  # client + server CPU s in ~1 s
    span = np.diff(np.concatenate(([0.0], t)))
    span[span <= 0] = 1.0
    # each row covers the time since the previous one: a step from 0 to the first row's end
    t = np.concatenate(([0.0], t))
    cores = np.concatenate((cores[:1], cores))
    span = np.concatenate((span[:1], span))
    cpu = ax.twinx()
    cpu.step(t, cores / span, where="pre", color=_CPU_COLOUR, linewidth=1.0, alpha=0.8)
    cpu.set_ylim(0, max(float(np.max(cores / span)) * 1.15, 1.0))
    cpu.set_ylabel("client CPU cores" if server_missing else "CPU cores", fontsize=8, color=_CPU_COLOUR)
    cpu.tick_params(labelsize=7.5, colors=_CPU_COLOUR)
    missing = [what for what, gone in (("server CPU", server_missing), ("write MB/s", cost.write_bytes is None)) if gone]
    if missing:
        ax.text(0.99, 0.95, f"{', '.join(missing)} not measured", transform=ax.transAxes, ha="right", va="top", fontsize=7.5, color=MUTED)
    if cost.write_bytes is None:
        return
    io = ax.twinx()
    io.spines["right"].set_position(("axes", 1.07))
    written = np.array([r[5] for r in rows], dtype=np.float64)
    mbs = np.concatenate((written[:1], written)) / (1024 * 1024) / span
    io.step(t, mbs, where="pre", color=_WRITE_COLOUR, linewidth=1.0, linestyle="--", alpha=0.8)
    io.set_ylim(0, max(float(np.max(mbs)) * 1.15, 1.0))
    io.set_ylabel("write MB/s", fontsize=8, color=_WRITE_COLOUR)
    io.tick_params(labelsize=7.5, colors=_WRITE_COLOUR)


SWEEP_TITLE = "Latency vs Throughput"

#: One sweep level of one engine: (target ops/s, achieved ops/s, response p50 ns, response p99 ns).
SweepPoint = tuple[float, float, int, int]


#: Panels of the latency-vs-throughput chart at most (one per swept phase); the rest are said.
MAX_SWEEP_PANELS = 12


def latency_vs_throughput_figure(
    sweeps: Mapping[str, Mapping[str, Sequence[SweepPoint]]],
    subtitle: str,
    colours: Mapping[str, str] | None = None,
    skipped: Mapping[str, Mapping[str, Sequence[str]]] | None = None,
) -> Figure:
    """Saturation sweeps: ``sweeps`` is sweep (phase) name -> engine -> its levels;
    one panel per sweep (at most :data:`MAX_SWEEP_PANELS`, in plan order), per engine
    response p99 (solid, dots) and p50 (dotted) against the achieved throughput: the
    classic curve that turns up where the engine saturates. ``skipped``: sweep -> engine ->
    the levels it skipped (above a missed one), written in the panel, not left to look like
    a line that ends. Call inside ``matplotlib.rc_context(RC)``."""
    engine_colour = _colour_of(colours)
    names = list(sweeps)[:MAX_SWEEP_PANELS]
    left_out = len(sweeps) - len(names)
    cols = 2 if len(names) > 1 else 1
    rows = max(1, math.ceil(len(names) / cols))
    notes = [
        "Each point is one level of the sweep: the same phase at a target rate (open loop), placed at the "
        "throughput it achieved; a sweep stops above the first level more than 5 % short of its target.",
        "Response time from each operation's intended start (queueing behind a slow engine included). "
        "Lower and further right is better.",
    ]
    if left_out:
        notes.append(f"{left_out} more swept phase{'s' if left_out != 1 else ''} not drawn (at most {len(names)} panels).")
    engines: list[str] = []
    fig = _figure(SWEEP_TITLE, subtitle, rows * _PANEL_IN + 0.35, notes)
    axes = fig.subplots(rows, cols, squeeze=False)
    for i, ax in enumerate(axes.flat):
        if i >= len(names):
            ax.set_visible(False)
            continue
        _style(ax)
        for engine, points in sweeps[names[i]].items():
            if not points:
                continue
            engines += [] if engine in engines else [engine]
            pts = sorted(points)
            x = np.array([p[1] for p in pts], dtype=np.float64)
            p50 = np.maximum(np.array([p[2] for p in pts], dtype=np.float64) / 1e3, 1e-3)
            p99 = np.maximum(np.array([p[3] for p in pts], dtype=np.float64) / 1e3, 1e-3)
            ax.plot(x, p99, color=engine_colour(engine), linewidth=1.7, marker="o", markersize=3.5)
            ax.plot(x, p50, color=engine_colour(engine), linewidth=1.0, linestyle=":")
        ax.set_title(names[i], fontsize=10, color=TEXT, loc="left")
        gone = [f"{e} {', '.join(levels)}" for e, levels in (skipped or {}).get(names[i], {}).items() if levels]
        if gone:
            ax.text(
                0.99, 0.02, "skipped: " + "; ".join(gone), transform=ax.transAxes,
                ha="right", va="bottom", fontsize=7.5, color=MUTED, style="italic",
            )  # fmt: skip
        ax.set_xlim(left=0)
        ax.set_xlabel("achieved throughput (ops/s)")
        ax.set_ylabel("response time (µs)")
    handles = [Line2D([], [], color=engine_colour(e), linewidth=2, label=e) for e in engines]
    handles += [
        Line2D([], [], color=MUTED, linewidth=1.7, marker="o", markersize=3.5, label="p99"),
        Line2D([], [], color=MUTED, linewidth=1.0, linestyle=":", label="p50"),
    ]
    fig.legend(handles=handles, loc="upper right", ncols=len(handles), frameon=False, fontsize=9)
    return fig
