"""What the latency charts of a run draw, gathered from its result: which phases get a
panel or a chart of their own, their merged histograms, time slices and sweep levels.

The drawing is :mod:`.latency_charts`' (over plain data); this module is the step from a
:class:`~asyncbench.result.RunResult` to that data, one function per chart, so that the
registry (:data:`asyncbench.report.charts.CHARTS`) lists the latency charts as rows like
every other chart. Each works on every measured repeat (histograms merged), not on the
repeats' medians the bar charts draw.
"""

from __future__ import annotations

from matplotlib.figure import Figure

from asyncbench import fmt
from asyncbench.measure.aggregate import EngineRuns, group_runs
from asyncbench.report import latency_charts
from asyncbench.report.chart_style import engine_colour
from asyncbench.result import PhaseCost, RunResult
from asyncbench.workload import Action, Group

__all__ = [
    "MAX_LATENCY_PANELS",
    "has_latency",
    "has_sweep",
    "over_time",
    "over_time_phases",
    "percentiles",
    "sweep",
]

#: Panels of the latency percentile chart at most (a 3-level sweep of the quick plan drew
#: 37 panels, 5_098 px tall); the rest are said on it and listed in the report's tables.
MAX_LATENCY_PANELS = 12


def _subtitle(run: RunResult) -> str:
    return f"{fmt.count(run.profiles)} {run.workload_impl.unit} · P{run.parallelism} · {run.environment.get('cpu_model', '')}".rstrip(
        " ·"
    )


def _colours(run: RunResult) -> dict[str, str]:
    return {e.engine: engine_colour(e) for e in run.engines}


def _main(run: RunResult, groups: list[EngineRuns]) -> tuple[list[int], int]:
    """(plan positions of the percentile chart's panels, in plan order; how many more were
    left out): the first phase of each group, every write phase and every phase at a rate,
    at most :data:`MAX_LATENCY_PANELS` (a sweep's higher levels left out first: the
    latency-vs-throughput chart shows every level)."""
    main: list[int] = []
    seen: set[Group] = set()
    for i, spec in enumerate(run.phases):
        kind = spec.kind
        if kind.action is not Action.OPERATIONS:
            continue
        if kind.group not in seen or kind.group is Group.WRITE:
            seen.add(kind.group)
            main.append(i)
    for i in range(len(run.phases)):  # phases run at a rate, their response beside the service time
        if any(g.response(i) is not None for g in groups):
            main += [] if i in main else [i]
    main.sort()
    left_out = max(0, len(main) - MAX_LATENCY_PANELS)
    if left_out:

        def level(i: int) -> int:  # 0 outside a sweep and for its first level, 1 for its second ...
            sweep = run.phases[i].sweep
            return 0 if sweep is None else sum(p.sweep == sweep for p in run.phases[:i])

        main = sorted(sorted(main, key=lambda i: (level(i), i))[:MAX_LATENCY_PANELS])
    return main, left_out


def has_latency(run: RunResult) -> bool:
    """Whether a phase the percentile chart shows recorded latency: without, no latency
    chart is drawn (results from before latency was recorded)."""
    groups = group_runs(run)
    main, _ = _main(run, groups)
    return any(p.latency for g in groups for i in main for p in g.phases(i))


def percentiles(run: RunResult) -> Figure:
    """The latency percentile chart (:func:`.latency_charts.percentile_distribution_figure`)."""
    groups = group_runs(run)
    main, left_out = _main(run, groups)
    responses: dict[str, dict[str, str]] = {}
    for i in range(len(run.phases)):
        for g in groups:
            r = g.response(i)
            if r is not None:
                responses.setdefault(g.engine, {})[run.phases[i].name] = r.encoded()
    series: dict[str, dict[str, str]] = {}
    for g in groups:
        for i in main:
            h = g.latency(i)
            if h is not None:
                series.setdefault(g.engine, {})[run.phases[i].name] = h.encoded()
    return latency_charts.percentile_distribution_figure(
        series,
        _subtitle(run),
        _colours(run),
        {e: {n: h for n, h in r.items() if any(n in s for s in series.values())} for e, r in responses.items()}
        or None,
        order=[run.phases[i].name for i in main],
        left_out=left_out,
    )


OverTime = tuple[
    dict[str, list[latency_charts.OverTimePoint]],
    dict[str, list[latency_charts.OverTimePoint]],
    dict[str, PhaseCost],
]


def _over_time_data(run: RunResult, groups: list[EngineRuns], i: int) -> OverTime:
    """(engine -> time slices, engine -> response slices under a rate, engine -> its cost)
    of the phase at ``i``, from each engine's first measured repeat."""
    points, over_response, costs = {}, {}, {}
    for g in groups:
        p = g.first.phase_at(i)
        if p is None:
            continue
        if p.cost is not None and p.cost.series:
            costs[g.engine] = p.cost
        # slices of a width chosen from the phase's length; a result from before them:
        # per second (seconds without an operation left out)
        rows = p.latency_over_time or p.time_series
        if rows:
            points[g.engine] = [(t, p50, p99, mx) for t, ops, p50, p99, mx in rows if ops]
        if p.open_loop is not None:
            rows = p.open_loop.response_over_time or p.open_loop.response_series
            if rows:
                over_response[g.engine] = [(t, p50, p99, mx) for t, ops, p50, p99, mx in rows if ops]
    return points, over_response, costs


def over_time_phases(run: RunResult) -> list[int]:
    """Plan positions of the phases that get a latency-over-time chart: the write phases,
    the phases run at a rate and the ones the plan or ``report --over-time`` chose
    (``over_time``), each with time slices recorded; a sweep's level only when chosen (it
    is a point of the latency-vs-throughput chart)."""
    groups = group_runs(run)
    main, _ = _main(run, groups)
    out = []
    for i, spec in enumerate(run.phases):
        at_rate = any(g.response(i) is not None for g in groups)
        write = i in main and spec.kind.group is Group.WRITE
        if not (write or at_rate or spec.over_time):
            continue
        if spec.sweep is not None and not spec.over_time:
            continue
        if _over_time_data(run, groups, i)[0]:
            out.append(i)
    return out


def over_time(run: RunResult, i: int) -> Figure:
    """The latency over time of the phase at ``i`` (:func:`.latency_charts.latency_over_time_figure`)."""
    groups = group_runs(run)
    points, over_response, costs = _over_time_data(run, groups, i)
    stalls = {}
    for g in groups:  # the first measured repeat's, as the points
        p = g.first.phase_at(i)
        if p is not None and p.stalls is not None and p.stalls.marks:
            stalls[g.engine] = p.stalls.marks
    return latency_charts.latency_over_time_figure(
        points, run.phases[i].name, _subtitle(run), _colours(run), over_response or None, costs or None, stalls or None
    )


def _sweep_skips(run: RunResult, groups: list[EngineRuns]) -> dict[str, dict[str, list[str]]]:
    """Sweep -> engine -> the levels (``8_000/s``) it skipped above a missed one."""
    out: dict[str, dict[str, list[str]]] = {}
    for i, spec in enumerate(run.phases):
        if spec.sweep is None:
            continue
        title = run.phases[spec.sweep].name.rsplit(" @ ", 1)[0]
        level = spec.name.rsplit(" @ ", 1)[-1]
        for g in groups:
            p = g.first.phase_at(i)
            if p is not None and p.skipped:
                out.setdefault(title, {}).setdefault(g.engine, []).append(level)
    return out


def _sweeps(run: RunResult, groups: list[EngineRuns]) -> dict[str, dict[str, list[latency_charts.SweepPoint]]]:
    """Sweep (its first level's name, the rate cut off) -> engine -> its measured levels."""
    out: dict[str, dict[str, list[latency_charts.SweepPoint]]] = {}
    for i, spec in enumerate(run.phases):
        if spec.sweep is None:
            continue
        title = run.phases[spec.sweep].name.rsplit(" @ ", 1)[0]
        for g in groups:
            p = g.first.phase_at(i)
            r = g.response(i)
            if p is None or p.skipped or p.open_loop is None or r is None:
                continue
            s = r.summary()
            out.setdefault(title, {}).setdefault(g.engine, []).append(
                (p.open_loop.rate, p.ops_per_s, s.p50, s.p99)
            )
    return out


def has_sweep(run: RunResult) -> bool:
    """Whether the run measured a level of a rate sweep (and recorded latency)."""
    return has_latency(run) and bool(_sweeps(run, group_runs(run)))


def sweep(run: RunResult) -> Figure:
    """The latency-vs-throughput chart of the run's sweeps (:func:`.latency_charts.latency_vs_throughput_figure`)."""
    groups = group_runs(run)
    return latency_charts.latency_vs_throughput_figure(
        _sweeps(run, groups), _subtitle(run), _colours(run), _sweep_skips(run, groups)
    )
