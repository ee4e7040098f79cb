"""``compare --json``: the comparison as one JSON document, every figure the text shows
(and the p-values and intervals behind them) by name, for scripts and CI."""

from __future__ import annotations

from asyncbench.report import cost_compare, durability_compare, latency_compare
from asyncbench.report.compare.compared import Compared
from asyncbench.report.compare.rows import PACED_APART_WHY
from asyncbench.report.compare.summary import summaries

__all__ = ["json_document"]


def _changes(changes: list[cost_compare.CostChange]) -> list[dict[str, object]]:
    return [{"engine": c.engine, "figure": c.figure, "base": c.base, "new": c.new, "ratio": c.ratio} for c in changes]


def json_document(c: Compared) -> dict[str, object]:
    """The document ``compare --json`` prints."""
    rows, diffs, threshold, gone, apart = c.rows, c.diffs, c.threshold, c.gone, c.apart
    latency, costs, kinds = c.latency, c.costs, c.kinds
    return {
        "threshold": threshold,
        "rows": [
            {
                "engine": r.engine,
                "phase": r.phase,
                "base": r.comparison.base.to_dict(),
                "new": r.comparison.new.to_dict(),
                "ratio": r.comparison.ratio,
                "change_pct": r.comparison.change_pct,
                "verdict": r.comparison.verdict.value,
                "p_value": r.comparison.p_value,
                "with_spread": r.comparison.with_spread,
                "checksums_equal": r.checksums_equal,
            }
            for r in rows
        ],
        "differences": diffs,
        "not_compared": [
            {"engine": a.engine, "phase": a.phase, "base": a.base, "new": a.new, "reason": PACED_APART_WHY}
            for a in apart
        ],
        "latency": latency_compare.json_rows(latency),
        "cost": _changes(costs),
        "operation_kinds": _changes(kinds),
        "durability": durability_compare.json_rows(c.durability),
        "only_in_base": {
            "engines": gone.engines["base"], "phases": gone.phases["base"], "engine_phases": gone.pairs["base"]
        },
        "only_in_new": {
            "engines": gone.engines["new"], "phases": gone.phases["new"], "engine_phases": gone.pairs["new"]
        },
        "engines": [
            {
                "engine": s.engine,
                "phases": s.phases,
                "geomean_ratio": s.geomean,
                "ci95_low": s.low,
                "ci95_high": s.high,
                "interval": "95% Student t interval of the mean log ratio over the engine's phases",
                "faster": s.faster,
                "slower": s.slower,
                "verdict": s.verdict,
            }
            for s in summaries(rows)
        ],
    }
