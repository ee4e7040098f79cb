"""``compare``'s cost table: per engine, base against new for what the phases cost
(CPU µs per operation of the client, the engine's threads and the server over the whole
run; write amplification of each write phase and of the run; space amplification at the
end), from :mod:`asyncbench.report.cost_table`'s rows.

Informational: the exit code stays the throughput verdict's (a cost figure has no repeats
to test a difference with); each side's figure is the median over its runs (repeats and
files pooled, warm-ups left out). A figure either side did not measure is left out.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from asyncbench.report.cost_table import CostRow, cost_rows
from asyncbench.result import EngineResult, RunResult
from asyncbench.workload import Group

__all__ = ["TITLE", "CostChange", "cost_changes", "markdown_lines", "text_lines"]

#: The tables' title; another informational base/new table (report/mix_compare.py) gives its own.
TITLE = "Cost (median of each side; informational, not part of the verdict)"


@dataclass
class CostChange:
    engine: str
    figure: str
    base: float
    new: float

    @property
    def ratio(self) -> float | None:
        return self.new / self.base if self.base > 0 else None


def _figures(e: EngineResult, writes: set[str]) -> dict[str, float]:
    """One engine run's comparable cost figures, by label."""
    rows = cost_rows(e)
    out: dict[str, float] = {}
    total = next((r for r in rows if r.label == "all phases"), None)
    if total is None:
        return out
    per_op: list[tuple[str, Callable[[CostRow], float | None]]] = [
        ("CPU µs/op client (all)", lambda r: r.per_op_us(r.client_cpu_s)),
        ("CPU µs/op engine (all)", lambda r: r.per_op_us(r.engine_cpu_s)),
        ("CPU µs/op server (all)", lambda r: r.per_op_us(r.server_cpu_s)),
        ("write amp. (all)", lambda r: r.write_amplification),
        ("space amp. (end)", lambda r: r.space_amplification),
    ]
    for label, get in per_op:
        v = get(total)
        if v is not None:
            out[label] = v
    for r in rows:
        if r.label in writes and r.write_amplification is not None:
            out[f"write amp. {r.label}"] = r.write_amplification
    return out


def _side(runs: Sequence[RunResult], engines: set[str] | None) -> dict[str, dict[str, list[float]]]:
    side: dict[str, dict[str, list[float]]] = {}
    for run in runs:
        writes = {p.name for p in run.phases if p.kind.group is Group.WRITE}
        for e in run.engines:
            if e.warmup or (engines and e.engine not in engines):
                continue
            for label, v in _figures(e, writes).items():
                side.setdefault(e.engine, {}).setdefault(label, []).append(v)
    return side


def cost_changes(base: Sequence[RunResult], new: Sequence[RunResult], engines: set[str] | None = None) -> list[CostChange]:
    """Every cost figure both sides measured for an engine, base and new medians."""
    return median_changes(_side(base, engines), _side(new, engines))


#: Per engine, per figure label, that figure's values over a side's runs.
Side = dict[str, dict[str, list[float]]]


def median_changes(base: Side, new: Side) -> list[CostChange]:
    """Every figure both sides have for an engine, base and new medians (the cost table's
    and the operation-kind table's rows: :mod:`asyncbench.report.mix_compare`)."""
    out = []
    for engine, figures in base.items():
        for label, values in figures.items():
            other = new.get(engine, {}).get(label)
            if other:
                out.append(CostChange(engine, label, statistics.median(values), statistics.median(other)))
    return out


def _num(v: float) -> str:
    return f"{v:.2f}" if v < 100 else f"{v:.0f}"


def text_lines(changes: list[CostChange], width: int = 80, title: str = TITLE) -> list[str]:
    """The console's cost table, per engine, within ``width`` columns."""
    if not changes:
        return []
    room = max(width - 2 - 31, 12)
    lines = ["", title]
    engine = None
    for c in changes:
        if c.engine != engine:
            engine = c.engine
            lines += [f"== {engine}", f"  {'figure':<{room}} {'base':>10} {'new':>10} {'new/base':>8}"]
        name = c.figure if len(c.figure) <= room else c.figure[: room - 1] + "…"
        ratio = f"{c.ratio:.3f}x" if c.ratio is not None else "-"
        lines.append(f"  {name:<{room}} {_num(c.base):>10} {_num(c.new):>10} {ratio:>8}")
    return lines


def markdown_lines(changes: list[CostChange], escape: Callable[[str], str], title: str = TITLE) -> list[str]:
    if not changes:
        return []
    out = ["", f"{title}:", ""]
    out += ["| Engine | Figure | Base | New | Ratio |", "| --- | --- | ---: | ---: | ---: |"]
    for c in changes:
        ratio = f"{c.ratio:.3f}x" if c.ratio is not None else "-"
        out.append(f"| {escape(c.engine)} | {escape(c.figure)} | {_num(c.base)} | {_num(c.new)} | {ratio} |")
    return out
