"""One figure per engine: the geometric mean of its phases' new/base ops/s ratios, with a
95 % Student t interval of the mean log ratio over those phases (phases are the sample, so
the interval says how consistent the change is across phases, not how noisy one phase is).
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass

from asyncbench.measure.stats import Verdict, t_critical
from asyncbench.report.compare.rows import Row

__all__ = ["EngineSummary", "summaries"]


@dataclass
class EngineSummary:
    """One engine's phases in one figure: the geometric mean of the new/base ops/s ratios,
    with a 95 % Student t interval of the mean log ratio over the phases (None for one phase)."""

    engine: str
    phases: int
    geomean: float
    low: float | None
    high: float | None
    faster: int
    slower: int
    one_run: int = 0  # phases beyond the threshold with a single run on a side: not called

    @classmethod
    def of(cls, engine: str, rows: list[Row]) -> EngineSummary:
        logs = [math.log(r.comparison.ratio) for r in rows]
        mean = statistics.fmean(logs)
        low = high = None
        called = any(r.comparison.verdict in (Verdict.FASTER, Verdict.SLOWER) for r in rows)
        if len(logs) > 1 and called:
            half = t_critical(len(logs) - 1) * statistics.stdev(logs) / math.sqrt(len(logs))
            low, high = math.exp(mean - half), math.exp(mean + half)
        return cls(
            engine,
            len(rows),
            math.exp(mean),
            low,
            high,
            sum(r.comparison.verdict is Verdict.FASTER for r in rows),
            sum(r.comparison.verdict is Verdict.SLOWER for r in rows),
            sum(r.comparison.verdict is Verdict.ONE_RUN for r in rows),
        )

    @property
    def verdict(self) -> str:
        """What the phases' own verdicts say, which the summary follows."""
        if not self.faster and not self.slower:
            return "not called: a side has one run" if self.one_run else "no significant change"
        return "mixed" if self.faster and self.slower else ("faster" if self.faster else "slower")

    def line(self, name_width: int) -> str:
        """``sqlite   0.982x [0.951, 1.014]  17 phases: 1 faster, 2 slower``; with no phase
        faster or slower, no interval (it would read like a finding the phases do not back):
        ``sqlite   1.021x  17 phases: no significant change``."""
        plural = "s" if self.phases != 1 else ""
        if not self.faster and not self.slower:
            return f"  {self.engine:<{name_width}} {self.geomean:.3f}x  {self.phases} phase{plural}: {self.verdict}"
        interval = f"[{self.low:.3f}, {self.high:.3f}]" if self.low is not None else "(one phase: no interval)"
        return (
            f"  {self.engine:<{name_width}} {self.geomean:.3f}x {interval}  {self.phases} "
            f"phase{plural}: {self.faster} faster, {self.slower} slower"
        )


def summaries(rows: list[Row]) -> list[EngineSummary]:
    """An :class:`EngineSummary` per engine, in the rows' order."""
    by_engine: dict[str, list[Row]] = {}
    for r in rows:
        by_engine.setdefault(r.engine, []).append(r)
    return [EngineSummary.of(engine, engine_rows) for engine, engine_rows in by_engine.items()]
