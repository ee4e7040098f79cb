"""A mixed phase's operation kinds and skew (``PhaseResult.mix``) as the console, the
Markdown report and the CSV show them.

A mixed phase (YCSB's) runs several operation kinds; its phase row gives the whole
phase, and these give each kind's share of the operations and its latency (service time:
p50, p99, p99.9), and the skew that reached the engine (the share of the operations on
the hottest 0.1 %, 1 % and 10 % of the keys). One module, so the three outputs say the
same thing in the same order.
"""

from __future__ import annotations

from collections.abc import Sequence
from operator import itemgetter

from asyncbench import fmt
from asyncbench.report import markdown as md
from asyncbench.report.columns import Column, markdown
from asyncbench.result import KindFigures, PhaseResult, RunResult

__all__ = ["MIX_NOTE", "console_lines", "csv_kinds", "markdown_lines", "skew_text"]

MIX_NOTE = (
    "A mixed phase runs several operation kinds: each kind's share of its operations and "
    "its latency (service time, µs), and the skew that was run (the share of the phase's "
    "operations on its hottest 0.1 %, 1 % and 10 % of keys). YCSB's kinds are counted as YCSB "
    "counts them: a read-modify-write also counts under read and under update (its latency is "
    "the pair's, under readmodifywrite), so the shares can add up to more than 100 %."
)


def _table(header: Sequence[str], rows: Sequence[Sequence[str]], align: str) -> list[str]:
    return markdown([Column(h, a, itemgetter(i)) for i, (h, a) in enumerate(zip(header, align, strict=True))], rows)


def _share(part: int, whole: int) -> str:
    return f"{100 * part / whole:.1f}%" if whole else "-"


def skew_text(p: PhaseResult) -> str:
    """``hottest 0.1% of keys: 5.1% of ops · 1%: 11% · 10%: 30%``."""
    if p.mix is None or not p.mix.hot_shares:
        return ""
    parts = [f"{k}: {100 * v:.1f}%" for k, v in p.mix.hot_shares.items()]
    return "hottest keys' share of ops: " + " · ".join(parts)


def console_lines(p: PhaseResult) -> list[str]:
    """Under a mixed phase's console row: one line per kind, then the skew (80 columns)."""
    if p.mix is None:
        return []
    out = []
    if p.open_loop is not None:  # at a rate the kinds' figures are service times: say so first
        out.append("    per kind: service time (the response time, judged, is the line above)")
    for name, k in p.mix.kinds.items():
        lat = k.latency
        figures = (
            f"p50 {fmt.latency(lat.p50):>6}  p99 {fmt.latency(lat.p99):>6}  p99.9 {fmt.latency(lat.p99_9):>6}"
            if lat is not None and lat.count
            else "no latency of its own measured here"  # client processes, or counted with another kind (YCSB F)
        )
        out.append(f"    {name:<15} {fmt.count(k.ops):>11} {_share(k.ops, p.ops):>6}  {figures}")
    skew = skew_text(p)
    if skew:
        out.append(f"    {skew}")
    return out


def _us(k: KindFigures, key: str) -> str:
    lat = k.latency
    return "-" if lat is None or not lat.count else f"{getattr(lat, key) / 1000:_.1f}"


def markdown_lines(run: RunResult) -> list[str]:
    """The report's "Operation Kinds" tables: per engine, each mixed phase's kinds, and the
    skew; [] when no phase ran a mix."""
    rows: list[list[str]] = []
    for e in run.engines:
        for p in e.phases:
            if p.mix is None:
                continue
            for name, k in p.mix.kinds.items():
                rows.append(
                    [md.text(e.engine), md.text(p.name), name, fmt.count(k.ops), _share(k.ops, p.ops),
                     _us(k, "p50"), _us(k, "p99"), _us(k, "p99_9")]
                )
    if not rows:
        return []
    out = _table(["Engine", "Phase", "Kind", "Ops", "Share", "p50 µs", "p99 µs", "p99.9 µs"], rows, "lllrrrrr")
    skews: list[list[str]] = []
    for e in run.engines:
        for p in e.phases:
            if p.mix is not None and p.mix.hot_shares:
                skews.append([md.text(e.engine), md.text(p.name), *(f"{100 * v:.1f}%" for v in p.mix.hot_shares.values())])
    if skews:
        fractions = next(p.mix.hot_shares for e in run.engines for p in e.phases if p.mix is not None)
        head = ["Engine", "Phase", *(f"ops on hottest {k} of keys" for k in fractions)]
        out += ["", *_table(head, skews, "ll" + "r" * len(fractions))]
    return out


def csv_kinds(p: PhaseResult) -> list[tuple[str, KindFigures]]:
    """A mixed phase's kinds, in the result's order, for the CSV's per-kind rows."""
    return [] if p.mix is None else list(p.mix.kinds.items())
