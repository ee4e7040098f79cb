"""The report's charts: the one registry of them (:data:`CHARTS`: every chart a row with
its file name, title, when it applies and how it is drawn), and the throughput and
footprint charts themselves, drawn with matplotlib's object-oriented API and SVG canvas.

No pyplot: figures are plain ``Figure`` objects rendered by ``FigureCanvasSVG``, so rendering
while a run is in progress touches no global figure state. Every chart goes through the one
renderer, :func:`asyncbench.report.chart_style.svg`: output is deterministic for the same
input (fixed hash salt, no date), text is drawn as paths so every viewer sees the same
layout, and each file carries its title as the SVG ``<title>``. The latency charts are
drawn by :mod:`.latency_charts` from the data :mod:`.latency_data` gathers, the cost chart
by :mod:`.cost_chart`, the durability chart (a plan with a crash) by :mod:`.durability_chart`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.patches import Patch

from asyncbench import fmt
from asyncbench.facts import MemoryScope, StorageMethod
from asyncbench.fs.ownership import Proof, is_own_svg, write_set
from asyncbench.measure.aggregate import collapse
from asyncbench.report import chart_limit, cost_chart, durability_chart, latency_charts, latency_data
from asyncbench.report import markdown_report as report
from asyncbench.report.capacity_chart import TITLE as CAPACITY_TITLE
from asyncbench.report.capacity_chart import capacity_figure, searched_phases
from asyncbench.report.chart_style import (
    AXIS_IN,
    BAR_IN,
    GROUP_GAP_IN,
    MUTED,
    TEXT,
    engine_colour,
    figure_frame,
    svg,
)
from asyncbench.result import NOT_STARTED, EngineResult, PhaseResult, RunResult
from asyncbench.workload import Action, Group

#: A chart of a run, not drawn yet: (slug, title, draw); :func:`~.chart_style.svg` draws it.
Drawing = tuple[str, str, Callable[[], Figure]]


@dataclass(frozen=True)
class Chart:
    """One row of the registry: a chart, its file (``asyncbench-<stamp>-<slug>.svg``), its
    title (the SVG ``<title>``, and how ``report`` knows the file is its own), when it
    applies and how it is drawn."""

    slug: str
    title: str
    #: ``draw(run)``, or ``draw(run, index)`` for a chart drawn per phase (``per_phase``)
    draw: Callable[..., Figure]
    #: the phase groups the chart shows; a plan running none of them gets no such chart
    groups: tuple[Group, ...] = ()
    #: another condition for drawing it (the cost chart: a result that measured cost)
    when: Callable[[RunResult], bool] | None = None
    #: drawn from every measured repeat (latency histograms merged), not from the view of
    #: the repeats' medians (:func:`~asyncbench.measure.aggregate.collapse`) the bars draw
    repeats: bool = False
    #: the plan positions of the phases it is drawn for, one file each
    #: (``<slug>-<phase name's words>``, title ``<title>: <phase>``); None: one per run
    per_phase: Callable[[RunResult], list[int]] | None = None
    #: ``--update-latest`` copies it to ``latest-<slug>.svg`` (the charts of a fixed name)
    latest: bool = True

    def wanted(self, run: RunResult) -> bool:
        """Whether the plan runs a phase this chart shows (always, for a chart of no group)."""
        if self.when is not None and not self.when(run):
            return False
        return not self.groups or bool(_plan_indexes(run, self.groups))

    def drawings(self, run: RunResult) -> list[Drawing]:
        """This chart of ``run``, one per phase for a per-phase chart, none when it does
        not apply."""
        if not self.wanted(run):
            return []
        if self.per_phase is None:
            return [(self.slug, self.title, partial(self.draw, run))]
        out: list[Drawing] = []
        taken: set[str] = set()
        for i in self.per_phase(run):
            name = run.phases[i].name
            slug = f"{self.slug}-{phase_slug(name)}"
            if slug in taken:  # two names alike but for characters a file name leaves out
                slug = f"{slug}-{i + 1}"
            taken.add(slug)
            out.append((slug, f"{self.title}: {name}", partial(self.draw, run, i)))
        return out


#: The longest phase part of a chart's file name (a name is bounded at load too, but a
#: file name must hold whatever a result says).
MAX_SLUG_CHARS = 80


def phase_slug(name: str) -> str:
    """A phase name as part of a file name: its words of ASCII letters, digits and ``_ .
    ( ) +`` joined by ``-`` (so no ``/ < > " ' # @``, space or control character), at most
    :data:`MAX_SLUG_CHARS`, never empty, never starting with a dot."""
    words = re.split(r"[^A-Za-z0-9_.()+-]+", name)
    slug = "-".join(w for w in words if w)[:MAX_SLUG_CHARS].strip("-").lstrip(".")
    return slug or "phase"


def _incomplete(e: EngineResult) -> bool:
    return not e.ok


def _status_note(e: EngineResult, drawn: str = "hatched") -> str:
    """An incomplete engine's note under a chart; ``drawn``: how the chart shows it."""
    text = e.status_text()
    status = text if len(text) <= 150 else text[:147] + "..."
    return f"{e.engine} ({drawn}): {status} — charted phases are the ones it completed."


def _style_axis(ax: Axes) -> None:
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    ax.tick_params(axis="y", length=0)
    ax.grid(axis="x", color="#e6e6e6", linewidth=0.8)
    ax.set_axisbelow(True)


def _ratio(r: float) -> str:
    """Delta to the fastest: ``1.00x`` for it and near it, ``2.6x`` further off."""
    if r < 1.995:
        return f"{r:.2f}x"
    return f"{r:.1f}x" if r < 99.5 else f"{r:.0f}x"


def _pct(p: float) -> str:
    return f"{p:.0f}%" if p >= 9.95 else f"{p:.1f}%"


def _speed(ops: int, seconds: float) -> float:
    return ops / seconds if seconds > 0 else 0.0


# -- 1. Execution Time ------------------------------------------------------------------------


def _floor_names(run: RunResult) -> set[str]:
    """Harness-floor engines (they store nothing): markers, never the 100% bar, when the
    run has a real engine to scale to; alone, the floor is drawn like any engine."""
    floors = {e.engine for e in run.engines if e.facts.harness_floor}
    return floors if any(e.engine not in floors for e in run.engines) else set()


def _closed_loop_seconds(e: EngineResult) -> float:
    """The engine's completed operation phases run in the closed loop: a phase at a target
    rate lasts as long as the rate says, whatever the engine, so its time ranks nothing."""
    return sum(p.seconds for p in e.phases if p.action is Action.OPERATIONS and not p.skipped and p.open_loop is None)


def _timed(run: RunResult) -> bool:
    """The Execution Time chart has a race to draw: not a run whose every operation phase
    ran at a target rate (their times are the rate's)."""
    ops = [p for e in run.engines for p in e.phases if p.action is Action.OPERATIONS and p.ops]
    return not ops or any(p.open_loop is None for p in ops)


def execution_time(run: RunResult) -> Figure:
    """Completed closed-loop phase time per engine against the fastest complete engine's. An
    engine that failed or stopped is drawn without a bar: what it completed is less work,
    and a short bar of it read as the fastest (issue 51)."""
    floor_names = _floor_names(run)
    engines = [e for e in run.engines if e.engine not in floor_names]
    floors = [e for e in run.engines if e.engine in floor_names]
    times = {e.engine: _closed_loop_seconds(e) for e in run.engines}
    baseline_pool = [times[e.engine] for e in engines if not _incomplete(e) and times[e.engine] > 0]
    fastest = min(baseline_pool, default=0.0)
    order = sorted(engines, key=lambda e: (_incomplete(e), times[e.engine]))
    notes = [_status_note(e, "no bar, not ranked") for e in order if _incomplete(e)]
    if any(p.open_loop is not None for e in run.engines for p in e.phases):
        notes.append("Phases at a target rate are left out: the rate, not the engine, sets their time.")
    notes += [_floor_note(e, f"{fmt.ms(times[e.engine])} phases") for e in floors]
    notes.append(
        "Completed phase time sums the timed closed-loop operation phases (stabilize, settle, reopen and verify excluded); "
        "run time is the engine's whole run, open to close."
    )
    body = max(len(order), 1) * 0.45 + AXIS_IN
    fig = figure_frame(
        "Execution Time",
        "Completed phase time per engine relative to the fastest · shorter is better",
        body,
        notes,
        run,
    )
    ax = fig.add_subplot()
    _style_axis(ax)
    ratios = [times[e.engine] / fastest if fastest > 0 and not _incomplete(e) else 0.0 for e in order]
    ys = range(len(order))
    for y, e, r in zip(ys, order, ratios, strict=True):
        ax.barh(
            y,
            r,
            height=0.62,
            color=engine_colour(e),
            hatch="//" if _incomplete(e) else None,
            edgecolor="white",
            linewidth=0,
        )
        label = f"{_ratio(r)}   {fmt.ms(times[e.engine])} phases · {fmt.ms(e.run_seconds)} run"
        if e.detail == NOT_STARTED and not e.phases:  # Ctrl-C before it: no ratio of nothing
            label = "not started"
        elif _incomplete(e) and times[e.engine] == 0:
            label = f"no operation phase completed · {fmt.ms(e.run_seconds)} run"
        elif _incomplete(e):  # no bar: its completed phases are not the whole run's work
            where = f" in {e.phase}" if e.phase else ""
            label = f"{e.status.value.upper()}{where}: not ranked ({fmt.ms(times[e.engine])} phases completed)"
        ax.text(r, y, "  " + label, va="center", ha="left", fontsize=9, color=TEXT)
    for e in floors:  # a dashed line where the harness alone would finish
        if fastest > 0 and times[e.engine] > 0:
            x = times[e.engine] / fastest
            ax.axvline(x, color=MUTED, linestyle="--", linewidth=1)
            ax.text(x, -0.45, f" harness floor ({e.engine})", fontsize=8, color=MUTED, va="bottom")
    # the floor's marker inside the axis too: past its end, its label lay outside the axes,
    # and constrained layout shrank them to nothing to make room (matplotlib's "constrained_layout
    # not applied" warning on the console) when the real engines failed early
    marks = [times[e.engine] / fastest for e in floors if fastest > 0 and times[e.engine] > 0]
    top = max([*ratios, *marks], default=1.0) or 1.0
    ax.set_xlim(0, top * 1.55)
    ax.set_yticks(list(ys), [e.engine for e in order], fontsize=10)
    ax.set_ylim(max(len(order), 1) - 0.5, -0.5)
    ax.set_xlabel("completed phase time ÷ fastest engine's")
    ax.xaxis.set_major_formatter(lambda v, _: f"{v:g}x")
    return fig


def _floor_note(e: EngineResult, figure: str) -> str:
    return (
        f"{e.engine} is the harness floor (it stores nothing): {figure}; drawn as a marker, "
        "and the scale is the fastest real engine."
    )


# -- 2.–5. Throughput bars, grouped by phase --------------------------------------------------


@dataclass
class PhaseBars:
    """One phase's bars in a throughput chart: a cell per engine, with its spread, skip or
    target rate. (Not :class:`asyncbench.workload.Group`, the kind of phase a chart shows.)"""

    label: str
    values: dict[str, tuple[int, float] | None]  # engine -> (ops, seconds), None when not run
    #: engine -> (min, max) ops/s over the measured repeats: drawn as a min-max error bar
    ranges: dict[str, tuple[float, float]] = field(default_factory=dict)
    #: engines that skipped the phase (a sweep's level above its first miss): said, no bar
    skipped: set[str] = field(default_factory=set)
    #: engine -> the phase's target rate (ops/s): its bar is the achieved rate as % of the
    #: target, since at a rate every engine that keeps up achieves the same
    targets: dict[str, float] = field(default_factory=dict)

    def take(self, engine: str, p: PhaseResult | None, value: tuple[int, float] | None) -> None:
        """``engine``'s cell from its phase ``p``: a skipped phase is "skipped", not 0/s."""
        if p is not None and p.skipped:
            self.skipped.add(engine)
            value = None
        elif p is not None and p.open_loop is not None:
            self.targets[engine] = p.open_loop.rate
        self.values[engine] = value


def _throughput(
    run: RunResult, title: str, subtitle: str, groups: Sequence[PhaseBars], extra_notes: Sequence[str] = ()
) -> Figure:
    floors = sorted(_floor_names(run))
    engines = [e.engine for e in run.engines if e.engine not in floors]
    notes = [_status_note(e) for e in run.engines if _incomplete(e) and e.engine not in floors]
    for f in floors:
        notes.append(
            f"{f} is the harness floor (it stores nothing): its rate is written beside each phase, "
            "and 100% is the fastest real engine."
        )
    missing = sorted(
        {e for g in groups for e, v in g.values.items() if v is None and e not in floors and e not in g.skipped}
    )
    if any(g.skipped for g in groups):
        notes.append("'skipped': the engine did not run that phase (a sweep stops above its first missed level).")
    if any(g.targets for g in groups):
        notes.append(
            "A phase at a target rate (open loop) is drawn as the rate achieved, % of its target: every engine "
            "that keeps up achieves the target, so % of the fastest would read 100% for all of them."
        )
    if missing:
        notes.append(f"No bar: the engine did not complete that phase ({', '.join(missing)}).")
    notes += extra_notes
    repeats = sorted({row.n for rows in run.throughput.values() for row in rows if row.n > 1})
    if any(g.ranges for g in groups):
        n_text = f"{repeats[0]}" if len(repeats) == 1 else f"{repeats[0]}-{repeats[-1]}"
        notes.append(
            f"Bar: the median of the engine's {n_text} measured repeats; whisker: their slowest to "
            "fastest (min to max)."
        )
    if not groups:
        notes.append("The plan has no phase of this kind.")
    colours = {e.engine: engine_colour(e) for e in run.engines}
    n = max(len(engines), 1)
    body = max(len(groups), 1) * (n * BAR_IN + GROUP_GAP_IN) + AXIS_IN
    fig = figure_frame(title, subtitle, body, notes, run)
    ax = fig.add_subplot()
    _style_axis(ax)
    centers = []
    right = 100.0  # the right end of the longest bar or whisker, % of the fastest
    for gi, g in enumerate(groups):
        base = gi * (n + 1)
        centers.append(base + (n - 1) / 2)
        speeds = {e: _speed(*v) for e, v in g.values.items() if v is not None and e not in floors}
        best = max(speeds.values(), default=0.0)
        floor_rates = [f"{f} {round(_speed(*v)):_d}/s" for f in floors if (v := g.values.get(f))]
        if floor_rates:  # the floor is a note on the group, never a bar
            ax.text(
                101, base - 0.55, "harness floor: " + ", ".join(floor_rates),
                va="center", ha="left", fontsize=7.5, color=MUTED, style="italic",
            )
        for ei, engine in enumerate(engines):
            y = base + ei
            if engine not in speeds:
                ax.text(
                    1,
                    y,
                    f"{engine}: {'skipped' if engine in g.skipped else 'not run'}",
                    va="center",
                    ha="left",
                    fontsize=8,
                    color=MUTED,
                    style="italic",
                )
                continue
            target = g.targets.get(engine)
            scale = target or best  # 100 % is the target at a rate, else the fastest engine
            pct = 100 * speeds[engine] / scale if scale > 0 else 0.0
            incomplete = any(e.engine == engine and _incomplete(e) for e in run.engines)
            ax.barh(
                y,
                pct,
                height=0.82,
                color=colours[engine],
                hatch="//" if incomplete else None,
                linewidth=0,
            )
            label_x = pct
            if engine in g.ranges and scale > 0:
                lo, hi = (100 * v / scale for v in g.ranges[engine])
                ax.errorbar(
                    pct,
                    y,
                    xerr=[[max(pct - lo, 0)], [max(hi - pct, 0)]],
                    fmt="none",
                    ecolor=TEXT,
                    elinewidth=0.8,
                    capsize=2,
                )
                label_x = max(pct, hi)  # the label starts past the whisker, never under it
            right = max(right, label_x)
            ax.text(
                label_x,
                y,
                f"  {engine}  {round(speeds[engine]):_d}/s · {_pct(pct)}"
                + (f" of the {round(target):_d}/s target" if target else ""),
                va="center",
                ha="left",
                fontsize=8,
                color=TEXT,
            )
    ax.set_yticks(centers, [g.label for g in groups], fontsize=9)
    rows = max(len(groups), 1) * (n + 1) - 1
    ax.set_ylim(rows - 0.5, -0.6)
    ax.set_xlim(0, right + 65)  # room for the label after the longest bar or whisker
    ax.set_xticks([0, 25, 50, 75, 100])
    ax.xaxis.set_major_formatter(lambda v, _: f"{v:.0f}%")
    ax.set_xlabel(
        "throughput: % of the phase's target rate, else of the fastest engine (harness floor excluded)"
        if any(g.targets for g in groups)
        else "throughput, % of the fastest engine in the phase (100% = fastest; harness floor excluded)"
    )
    handles = [Patch(color=colours[e], label=e) for e in engines]
    ax.legend(
        handles=handles,
        loc="lower right",
        bbox_to_anchor=(1.0, 1.0),
        frameon=False,
        fontsize=8.5,
        ncols=min(len(engines), 6),
        handlelength=1.2,
        borderaxespad=0.2,
    )
    return fig


def _plan_indexes(run: RunResult, groups: tuple[Group, ...]) -> list[int]:
    """Plan positions of the operation phases in ``groups``, in plan order; a capacity
    search's phase is left out (its probes ran at many rates: their mean throughput is no
    bar; the capacity chart shows it)."""
    searched = {p.index for e in run.engines for p in e.phases if p.capacity is not None}
    return [i for i, p in enumerate(run.phases) if p.kind.group in groups and i not in searched]


def _ops_groups(run: RunResult, groups: tuple[Group, ...]) -> list[PhaseBars]:
    out = []
    for i in _plan_indexes(run, groups):
        g = PhaseBars(run.phases[i].name, {}, _ranges(run, i))
        for e in run.engines:
            p = e.phase_at(i)
            g.take(e.engine, p, (p.ops, p.seconds) if p and p.action is Action.OPERATIONS else None)
        out.append(g)
    return out


def _ranges(run: RunResult, index: int) -> dict[str, tuple[float, float]]:
    """Min and max ops/s of the phase at ``index`` per engine, when it ran more than once."""
    out = {}
    for engine, rows in run.throughput.items():
        row = next((r for r in rows if r.index == index), None)
        if row is not None and row.n > 1:
            out[engine] = (row.min, row.max)
    return out


def _stabilize_after(run: RunResult, index: int) -> int | None:
    """Plan position of the stabilize phase that directly follows the write phase at
    ``index`` (maintenance phases in between allowed), if the plan has one."""
    for i in range(index + 1, len(run.phases)):
        kind = run.phases[i].kind
        if kind.action is Action.STABILIZE:
            return i
        if kind.group is not Group.MAINTENANCE:
            return None
    return None


def write_throughput(run: RunResult) -> Figure:
    groups: list[PhaseBars] = []
    for index in _plan_indexes(run, (Group.WRITE,)):
        name = run.phases[index].name
        stab = _stabilize_after(run, index)
        raw = PhaseBars(name, {}, _ranges(run, index))
        ready = PhaseBars(f"{name} ready\n(+ {run.phases[stab].name})" if stab is not None else name, {})
        for e in run.engines:
            p = e.phase_at(index)
            raw.take(e.engine, p, (p.ops, p.seconds) if p else None)
            st = e.phase_at(stab) if stab is not None else None
            if p is None or st is None or p.skipped:
                ready.take(e.engine, p, None)
            else:
                ready.values[e.engine] = (p.ops, p.seconds + (0.0 if st.skipped else st.seconds))
        groups.append(raw)
        if stab is not None:
            groups.append(ready)
    return _throughput(
        run,
        "Write Throughput",
        "Inserts and updates per second; 'ready' also counts the stabilization (flush, compaction) that "
        "follows, until the writes are ready to read · higher is better",
        groups,
        ["Engines that need no stabilization have ready = phase throughput."],
    )


def lookup_throughput(run: RunResult) -> Figure:
    return _throughput(
        run,
        "Lookup Throughput",
        "Point reads per second: profile by user id (primary key) and by email (unique index), before and "
        "after the update phase · higher is better",
        _ops_groups(run, (Group.LOOKUP,)),
    )


def scan_throughput(run: RunResult) -> Figure:
    return _throughput(
        run,
        "Index Scan Throughput",
        f"Index-only scans per second, each returning up to {run.limit} user ids in key order "
        "(no profile fetch) · higher is better",
        _ops_groups(run, (Group.SCAN,)),
    )


def mixed_throughput(run: RunResult) -> Figure:
    return _throughput(
        run,
        "Mixed Phase Throughput",
        "Operations per second of a mixed phase, each of a kind drawn as the plan's proportions "
        "say (each kind's share and latency: the report's Operation Kinds) · higher is better",
        _ops_groups(run, (Group.MIXED,)),
    )


def query_throughput(run: RunResult) -> Figure:
    return _throughput(
        run,
        "Query Throughput",
        f"Queries per second; each returns up to {run.limit} whole profiles found through a secondary "
        "index (key/value engines: index scan, then a get per id; SQL: one SELECT) · higher is better",
        _ops_groups(run, (Group.QUERY,)),
    )


# -- 6. Resource Footprint --------------------------------------------------------------------


def _client_only(e: EngineResult) -> bool:
    return e.facts.memory_scope is MemoryScope.CLIENT_ONLY


def resource_footprint(run: RunResult) -> Figure:
    engines = run.engines
    notes = [_status_note(e) for e in engines if _incomplete(e)]
    for e in engines:
        if _client_only(e):
            notes.append(
                f"{e.engine}: process peak memory is the benchmark (client) process only; the database "
                "server's memory is not included."
            )
    for e in engines:
        if e.facts.storage_method is StorageMethod.NONE:
            notes.append(f"{e.engine}: writes no files, so its storage is 0 B.")
    notes.append(
        f"{report.storage_note(run, markdown=False)} Process peak memory: "
        "peak RSS of the benchmark process while the engine ran (interpreter and harness included). "
        + fmt.SIZE_UNIT_NOTE
    )
    body = max(len(engines), 1) * 0.45 + AXIS_IN
    fig = figure_frame(
        "Resource Footprint",
        "Storage on disk and process peak memory per engine · lower is better",
        body,
        notes,
        run,
    )
    axes = fig.subplots(1, 2, sharey=True)
    panels: tuple[tuple[str, Callable[[EngineResult], int | None], Callable[[EngineResult], str]], ...] = (
        ("Storage (MB)", lambda e: e.storage_bytes, lambda e: ""),
        (
            "Process peak memory (MB)",
            lambda e: e.peak_rss_bytes,
            lambda e: " (client only)" if _client_only(e) else "",
        ),
    )
    ys = list(range(len(engines)))
    for ax, (xlabel, value, suffix) in zip(axes, panels, strict=True):
        _style_axis(ax)
        vals = [value(e) for e in engines]
        top = max((v for v in vals if v), default=0) / fmt.MB or 1.0
        for y, e, v in zip(ys, engines, vals, strict=True):
            off = value is panels[0][1] and e.storage_off_disk  # a store that holds no data yet: no bar
            if v is None or off:
                why = f"{fmt.size(v)}: not on disk yet" if off else "not measured"
                ax.text(0, y, f"  {why}", va="center", ha="left", fontsize=8, color=MUTED, style="italic")
                continue
            ax.barh(
                y,
                v / fmt.MB,
                height=0.62,
                color=engine_colour(e),
                hatch="//" if _incomplete(e) else None,
                linewidth=0,
            )
            ax.text(
                v / fmt.MB, y, f"  {fmt.size(v)}{suffix(e)}", va="center", ha="left", fontsize=8.5, color=TEXT
            )
        ax.set_xlim(0, top * 1.55)
        ax.set_xlabel(xlabel)
    axes[0].set_yticks(ys, [e.engine for e in engines], fontsize=10)
    axes[0].set_ylim(max(len(engines), 1) - 0.5, -0.5)
    return fig


def _capacity(run: RunResult) -> Figure:
    colours = {e.engine: engine_colour(e) for e in run.engines}
    return capacity_figure(run, lambda name: colours.get(name, MUTED))


def _searched(run: RunResult) -> bool:
    return bool(searched_phases(run))


def _of_repeats(
    slug: str,
    title: str,
    draw: Callable[..., Figure],
    when: Callable[[RunResult], bool],
    per_phase: Callable[[RunResult], list[int]] | None = None,
) -> Chart:
    """A chart drawn from every measured repeat (the latency and capacity charts): only
    when the run recorded what it draws, and never copied to ``latest-*`` (the bar charts'
    fixed names are what a README links to)."""
    return Chart(slug, title, draw, when=when, repeats=True, per_phase=per_phase, latest=False)


CHARTS: tuple[Chart, ...] = (
    Chart("execution-time", "Execution Time", execution_time, when=_timed),
    Chart("write-throughput", "Write Throughput", write_throughput, (Group.WRITE,)),
    Chart("lookup-throughput", "Lookup Throughput", lookup_throughput, (Group.LOOKUP,)),
    Chart("scan-throughput", "Index Scan Throughput", scan_throughput, (Group.SCAN,)),
    Chart("query-throughput", "Query Throughput", query_throughput, (Group.QUERY,)),
    Chart("mixed-throughput", "Mixed Phase Throughput", mixed_throughput, (Group.MIXED,)),
    Chart("resource-footprint", "Resource Footprint", resource_footprint),
    Chart("cost", "Cost", partial(cost_chart.draw, colour=engine_colour), when=cost_chart.wanted),
    # a crash's rows, every repeat's (a loss in one repeat is the finding, not a median's)
    Chart(
        "durability",
        durability_chart.TITLE,
        partial(durability_chart.draw, colour=engine_colour),
        when=durability_chart.wanted,
        repeats=True,
        latest=False,
    ),
    _of_repeats(
        "latency-percentiles", latency_charts.DISTRIBUTION_TITLE, latency_data.percentiles, latency_data.has_latency
    ),
    _of_repeats(
        "latency-over-time",
        "Latency Over Time",
        latency_data.over_time,
        latency_data.has_latency,
        per_phase=latency_data.over_time_phases,
    ),
    _of_repeats("latency-vs-throughput", latency_charts.SWEEP_TITLE, latency_data.sweep, latency_data.has_sweep),
    # capacity searches: every measured repeat's probes, the bound and the capacity
    _of_repeats("capacity", CAPACITY_TITLE, _capacity, _searched),
)
"""Every chart, in report order. The bar charts: one bar per engine, the median of its
measured repeats, with a min-max error bar when it ran several times; a throughput chart
only when the plan runs a phase of its kind. The durability chart when the plan crashed
an engine. Then, when the run recorded latency, the
percentile distribution of the main phases, the latency over time of each write phase,
phase at a rate and chosen phase, and the latency against throughput of a rate sweep."""


def chart_file(stamp: str, slug: str) -> str:
    return f"asyncbench-{stamp}-{slug}.svg"


def write_charts(run: RunResult, directory: Path, stamp: str) -> list[tuple[str, str]]:
    """Write the charts beside the report, all or none; (title, path relative to
    ``directory``) of each (see :func:`chart_files`)."""
    directory.mkdir(parents=True, exist_ok=True)
    files = chart_files(run, directory, stamp)
    write_set([(path, data, own) for _, path, data, own in files])
    return [(title, path.name) for title, path, _, _ in files]


def drawings(run: RunResult) -> list[Drawing]:
    """Every chart of ``run`` that applies (:data:`CHARTS`), in report order, as figures
    still to draw: engines that were skipped left out (the report's one-line note names
    them), at most :data:`~.chart_limit.MAX_CHART_ENGINES` engines per chart (said on it)."""
    run = run.without_skipped()
    capped = chart_limit.note(run)
    run = chart_limit.charted(run)
    view = collapse(run)
    out = [d for chart in CHARTS for d in chart.drawings(run if chart.repeats else view)]
    if capped is None:
        return out
    return [(slug, title, partial(_noted, draw, capped)) for slug, title, draw in out]


def _noted(draw: Callable[[], Figure], text: str) -> Figure:
    """The figure ``draw`` makes, with ``text`` in its top right corner, above the title."""
    fig = draw()
    top = 1 - 0.06 / fig.get_figheight()
    fig.text(1 - 0.12 / fig.get_figwidth(), top, text, fontsize=8, color=MUTED, ha="right", va="top")
    return fig


def chart_files(run: RunResult, directory: Path, stamp: str) -> list[tuple[str, Path, bytes, Proof]]:
    """(title, path, SVG bytes, ownership proof) of every chart (:func:`drawings`), drawn,
    not yet written."""
    out: list[tuple[str, Path, bytes, Proof]] = []
    for slug, title, draw in drawings(run):
        own = is_own_svg(title, *FORMER_TITLES.get(slug, ()))
        out.append((title, directory / chart_file(stamp, slug), svg(draw, title), own))
    return out


#: Titles a chart's SVG carried in earlier versions, so ``report`` still knows those files.
FORMER_TITLES = {"latency-percentiles": ("Latency Distribution",)}
