"""Everything one ``compare`` found, as one value: what each rendering (text, Markdown,
JSON) is drawn from, so the three take the same thing and cannot drift apart in what
they are given."""

from __future__ import annotations

from dataclasses import dataclass, field

from asyncbench.report import cost_compare, durability_compare, latency_compare
from asyncbench.report.compare.rows import OneSided, PacedApart, Row

__all__ = ["Compared"]


@dataclass(frozen=True)
class Compared:
    rows: list[Row]  # the phases both sides ran, compared
    diffs: list[str]  # what the two sides measured differently
    threshold: float  # the change a verdict calls a regression or an improvement
    gone: OneSided  # what only one side has
    apart: list[PacedApart]  # phases left out: paced differently on the two sides
    latency: list[latency_compare.LatencyRow]
    costs: list[cost_compare.CostChange]
    kinds: list[cost_compare.CostChange]  # a mixed phase's operation kinds
    #: each crash either side made (none without crash rows: the outputs are unchanged)
    durability: list[durability_compare.DurabilityChange] = field(default_factory=list)
