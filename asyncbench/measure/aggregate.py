"""Repeats of one engine, seen together: medians, spread and merged latency per phase.

A run with ``repeat = N`` holds N :class:`EngineResult` per engine (interleaved A B C A B
C ...). The report and charts read one row per engine: :func:`collapse` gives that view
(phase times at the median throughput of the measured repeats, the first measured
repeat's checksums, storage and memory), and :class:`EngineRuns` gives the spread and
the merged latency histogram behind each cell. Warm-up repeats stay in the JSON and are
left out of every statistic.
"""

from __future__ import annotations

import copy
import statistics
from dataclasses import dataclass

from asyncbench.measure.latency import LatencyHistogram
from asyncbench.measure.stats import Summary
from asyncbench.result import EngineResult, PhaseResult, RunResult, Status, ThroughputRow
from asyncbench.workload import Action

__all__ = ["EngineRuns", "collapse", "group_runs"]


@dataclass
class EngineRuns:
    engine: str
    runs: list[EngineResult]  # every repeat, in order

    @property
    def measured(self) -> list[EngineResult]:
        """The repeats that count: all but the declared warm-ups (all, if only warm-ups ran)."""
        return [r for r in self.runs if not r.warmup] or self.runs

    @property
    def first(self) -> EngineResult:
        return self.measured[0]

    def phases(self, index: int) -> list[PhaseResult]:
        return [p for r in self.measured if (p := r.phase_at(index)) is not None]

    def throughput(self, index: int) -> Summary | None:
        """Operations per second of an operation phase over the measured repeats."""
        samples = [p.ops_per_s for p in self.phases(index) if p.action is Action.OPERATIONS and p.seconds > 0]
        return Summary.of(samples) if samples else None

    def seconds(self, index: int) -> Summary | None:
        samples = [p.seconds for p in self.phases(index) if not p.skipped]
        return Summary.of(samples) if samples else None

    def latency(self, index: int) -> LatencyHistogram | None:
        """The phase's per-operation latency over every measured repeat (histograms merged)."""
        encoded = [p.latency.histogram for p in self.phases(index) if p.latency]
        if not encoded:
            return None
        return LatencyHistogram.merge(LatencyHistogram.from_encoded(e) for e in encoded)

    def response(self, index: int) -> LatencyHistogram | None:
        """Under a rate: the phase's response time (from each intended start) over every
        measured repeat (histograms merged); None for a closed-loop phase."""
        encoded = [p.open_loop.response.histogram for p in self.phases(index) if p.open_loop and p.open_loop.response]
        if not encoded:
            return None
        return LatencyHistogram.merge(LatencyHistogram.from_encoded(e) for e in encoded)


def group_runs(run: RunResult) -> list[EngineRuns]:
    """One :class:`EngineRuns` per engine, in order of first appearance."""
    groups: dict[str, EngineRuns] = {}
    for e in run.engines:
        groups.setdefault(e.engine, EngineRuns(e.engine, [])).runs.append(e)
    return list(groups.values())


def _worst(runs: list[EngineResult]) -> EngineResult:
    return next((r for r in runs if not r.ok), runs[0])


def collapse(run: RunResult) -> RunResult:
    """The same run with one engine row per engine (see the module docstring)."""
    if all(len(g.runs) == 1 for g in group_runs(run)):
        return run
    view = copy.copy(run)
    view.engines = []
    for g in group_runs(run):
        base = copy.deepcopy(g.first)
        worst = _worst(g.runs)
        if worst is not g.first and worst.status is not Status.OK:
            base.set_status(worst.status, worst.phase, worst.detail)
        for p in base.phases:
            if p.action is Action.OPERATIONS:
                tp = g.throughput(p.index)
                if tp is not None and tp.median > 0:
                    p.seconds = p.ops / tp.median
            elif not p.skipped:
                sec = g.seconds(p.index)
                if sec is not None:
                    p.seconds = sec.median
        base.run_seconds = statistics.median(r.run_seconds for r in g.measured)
        view.engines.append(base)
    return view


def throughput_stats(run: RunResult) -> dict[str, list[ThroughputRow]]:
    """Per engine, per operation phase of the plan: its throughput summary (for the JSON)."""
    out: dict[str, list[ThroughputRow]] = {}
    for g in group_runs(run):
        rows = []
        for index, spec in enumerate(run.phases):
            tp = g.throughput(index)
            if tp is not None:
                rows.append(
                    ThroughputRow(
                        index=index,
                        name=spec.name,
                        n=tp.n,
                        median=tp.median,
                        min=tp.min,
                        max=tp.max,
                        mean=tp.mean,
                        stdev=tp.stdev,
                        ci95_low=tp.ci_low,
                        ci95_high=tp.ci_high,
                        spread_pct=tp.spread_pct,
                        samples=list(tp.samples),
                        unstable=tp.unstable(),
                    )
                )
        out[g.engine] = rows
    return out


def unstable_phases(run: RunResult, threshold: float = 0.10) -> list[tuple[str, str, Summary]]:
    """(engine, phase name, summary) of every phase whose spread exceeds ``threshold``."""
    found = []
    for g in group_runs(run):
        for index, spec in enumerate(run.phases):
            tp = g.throughput(index)
            if tp is not None and tp.unstable(threshold):
                found.append((g.engine, spec.name, tp))
    return found
