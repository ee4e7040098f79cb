"""``compare``'s latency view: per engine and phase, base against new for the p50, p99 and
p99.9 latency (µs), each with a verdict from :func:`asyncbench.measure.stats.compare`
(lower is better: Welch's test on the per-run percentiles when both sides have repeats;
with one run on a side no winner is called, as for throughput).

Why a view of its own: the throughput table says nothing about a phase at a target rate
(it runs at its rate on both sides), where the latency is the finding, and a closed-loop
phase can keep its ops/s while its tail grows. The figure is what the phase measured: the
response time (from each intended start) at a target rate, the service time closed loop;
a row says which. Only phases paced alike on both sides get here (``compare`` refuses
the others, phase by phase).

Informational: the exit code stays the throughput verdict's (a percentile of a few runs
is noisier than their throughput, and a tail verdict that failed CI on noise would teach
people to ignore it); each side's figure is the median over its runs.
"""

from __future__ import annotations

import textwrap
from collections.abc import Callable, Hashable
from dataclasses import dataclass

from asyncbench.measure.stats import Comparison, Verdict, compare
from asyncbench.result import LatencyStats, PhaseResult

__all__ = ["TITLE", "LatencyRow", "LatencySamples", "add_phase", "json_rows", "latency_rows", "markdown_lines", "text_lines"]

TITLE = (
    "Latency, µs (median of each side; response time at a target rate, service time closed loop; "
    "informational, not part of the exit code):"
)
PERCENTILES = (("p50", "p50"), ("p99", "p99"), ("p99.9", "p99_9"))
#: The verdict words for a latency, where lower is better.
WORDS = {
    Verdict.FASTER: "lower",
    Verdict.SLOWER: "higher",
    Verdict.SAME: "same",
    Verdict.NOT_SIGNIFICANT: "n.s.",
    Verdict.ONE_RUN: "one run",
}
JSON_WORDS = {**WORDS, Verdict.NOT_SIGNIFICANT: "not significant"}

#: Per (engine, phase key): which time it is ("response" or "service") and, per
#: percentile label, the µs of each run of the side.
LatencySamples = dict[tuple[str, Hashable], tuple[str, dict[str, list[float]]]]


def _measured(p: PhaseResult) -> tuple[str, LatencyStats] | None:
    """The latency a phase is judged by: response time at a rate, else service time."""
    if p.open_loop is not None:
        r = p.open_loop.response
        return ("response", r) if r is not None and r.count else None
    return ("service", p.latency) if p.latency is not None and p.latency.count else None


def add_phase(samples: LatencySamples, engine: str, key: Hashable, p: PhaseResult) -> None:
    """One run's percentiles of ``p`` into a side's samples (nothing if it measured none;
    a side pooling response and service times of one phase keeps the first's kind only)."""
    found = _measured(p)
    if found is None:
        return
    measure, stats = found
    held = samples.setdefault((engine, key), (measure, {label: [] for label, _ in PERCENTILES}))
    if held[0] != measure:
        return
    for label, name in PERCENTILES:
        held[1][label].append(getattr(stats, name) / 1000)


@dataclass
class LatencyRow:
    engine: str
    phase: str
    measure: str  # "response" or "service"
    percentile: str
    comparison: Comparison

    @property
    def change_pct(self) -> float:
        """How much the latency changed (+: new is higher), in percent."""
        return (self.comparison.ratio - 1) * 100


def latency_rows(
    base: LatencySamples, new: LatencySamples, pairs: list[tuple[str, Hashable, str]], threshold: float
) -> list[LatencyRow]:
    """A row per percentile of each (engine, phase key, name) in ``pairs`` (the pairs the
    throughput table compared) that both sides measured the same way."""
    rows = []
    for engine, key, name in pairs:
        a, b = base.get((engine, key)), new.get((engine, key))
        if a is None or b is None or a[0] != b[0]:
            continue
        for label, _ in PERCENTILES:
            xs, ys = a[1][label], b[1][label]
            if xs and ys and min(xs) > 0 and min(ys) > 0:
                c = compare(xs, ys, threshold, higher_is_better=False)
                rows.append(LatencyRow(engine, name, a[0], label, c))
    return rows


def _verdict(row: LatencyRow) -> str:
    """``lower -12.0% p=0.004``, ``higher +30.1%``, ``same``, ``one run +6.0%``."""
    c = row.comparison
    text = WORDS[c.verdict] if c.verdict is Verdict.SAME else f"{WORDS[c.verdict]} {row.change_pct:+.1f}%"
    if c.p_value is not None and c.verdict is not Verdict.SAME:
        text += f" p={c.p_value:.3f}" if c.p_value >= 0.001 else " p<0.001"
    return text


def _us(value: float) -> str:
    return f"{value:_.1f}" if value < 10_000 else f"{round(value):_d}"


def text_lines(rows: list[LatencyRow], width: int = 80) -> list[str]:
    """The console's latency table, per engine, within ``width`` columns: a phase's name and
    which time it is on a line of their own, its percentiles beneath."""
    if not rows:
        return []
    room = max(width - 2 - (1 + 10 + 1 + 10 + 1 + 8 + 1 + 23), 12)  # a verdict: "higher +202.5% p<0.001"
    lines = ["", *textwrap.wrap(TITLE, width)]
    engine = phase = None
    for r in rows:
        if r.engine != engine:
            engine, phase = r.engine, None
            lines += [f"== {engine}", f"  {'phase: percentile':<{room}} {'base':>10} {'new':>10} {'new/base':>8} verdict"]
        if r.phase != phase:
            phase = r.phase
            name = f"  {r.phase}: {r.measure} time"
            lines.append(name if len(name) <= width else name[: width - 1] + "…")
        c = r.comparison
        lines.append(
            f"  {'  ' + r.percentile:<{room}} {_us(c.base.median):>10} {_us(c.new.median):>10} "
            f"{c.ratio:>7.3f}x {_verdict(r)}"
        )
    return lines


def markdown_lines(rows: list[LatencyRow], escape: Callable[[str], str]) -> list[str]:
    if not rows:
        return []
    out = ["", TITLE, ""]
    out += [
        "| Engine | Phase | Time | Percentile | Base µs | New µs | Ratio | Verdict |",
        "| --- | --- | --- | --- | ---: | ---: | ---: | --- |",
    ]
    for r in rows:
        c = r.comparison
        out.append(
            f"| {escape(r.engine)} | {escape(r.phase)} | {r.measure} | {r.percentile} | {_us(c.base.median)} | "
            f"{_us(c.new.median)} | {c.ratio:.3f}x | {_verdict(r)} |"
        )
    return out


def json_rows(rows: list[LatencyRow]) -> list[dict[str, object]]:
    return [
        {
            "engine": r.engine,
            "phase": r.phase,
            "measure": r.measure,
            "percentile": r.percentile,
            "base_us": r.comparison.base.to_dict(),
            "new_us": r.comparison.new.to_dict(),
            "ratio": r.comparison.ratio,
            "change_pct": r.change_pct,
            "verdict": JSON_WORDS[r.comparison.verdict],
            "p_value": r.comparison.p_value,
            "with_spread": r.comparison.with_spread,
        }
        for r in rows
    ]
