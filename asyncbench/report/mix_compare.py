"""``compare``'s operation-kind table: per engine, base against new for each mixed phase's
kinds (p50, p99 and p99.9 service time, µs) and the skew that was run (the share of the
operations on the hottest 1 % of keys), from ``PhaseResult.mix``.

Informational, as the cost table (:mod:`asyncbench.report.cost_compare`, whose rows and
rendering it reuses): each side's figure is the median over its runs (warm-ups left out);
a figure either side lacks is left out; the exit code stays the throughput verdict's.
"""

from __future__ import annotations

from collections.abc import Sequence

from asyncbench.report.cost_compare import CostChange, median_changes
from asyncbench.result import RunResult

__all__ = ["TITLE", "kind_changes"]

TITLE = "Operation kinds (median of each side; informational, not part of the verdict)"
_LATENCY = (("p50", "p50"), ("p99", "p99"), ("p99.9", "p99_9"))


def _side(runs: Sequence[RunResult], engines: set[str] | None) -> dict[str, dict[str, list[float]]]:
    side: dict[str, dict[str, list[float]]] = {}
    for run in runs:
        for e in run.engines:
            if e.warmup or (engines and e.engine not in engines):
                continue
            for p in e.phases:
                if p.mix is None:
                    continue
                figures = side.setdefault(e.engine, {})
                for kind, k in p.mix.kinds.items():
                    if k.latency is not None and k.latency.count:
                        for label, field in _LATENCY:
                            figures.setdefault(f"{p.name} {kind} {label} µs", []).append(getattr(k.latency, field) / 1000)
                if "1%" in p.mix.hot_shares:
                    figures.setdefault(f"{p.name} ops on hottest 1% keys", []).append(p.mix.hot_shares["1%"])
    return side


def kind_changes(base: Sequence[RunResult], new: Sequence[RunResult], engines: set[str] | None = None) -> list[CostChange]:
    """Every kind figure both sides have for an engine, base and new medians."""
    return median_changes(_side(base, engines), _side(new, engines))
