"""``compare``'s console output: fits the terminal (80 columns at least; ``COLUMNS``
honoured). It first names every engine and phase present on one side only and every phase
paced differently, then what the sides measured differently, then one table per engine,
and ends with the counts, the slower phases by name and one summary line per engine.
"""

from __future__ import annotations

import shutil
import textwrap

from asyncbench import fmt
from asyncbench.measure.stats import Comparison, Verdict
from asyncbench.report import cost_compare, durability_compare, latency_compare, mix_compare
from asyncbench.report.compare.compared import Compared
from asyncbench.report.compare.legends import (
    DIFFERS_HEAD,
    NOT_SIGNIFICANT_LEGEND,
    ONE_RUN_LEGEND,
    SUMMARY_HEAD,
    one_sided_lines,
)
from asyncbench.report.compare.rows import PACED_APART_WHY, OneSided, PacedApart, Row
from asyncbench.report.compare.summary import summaries

__all__ = ["render_text", "text_output"]

PACED_APART_HEAD = f"not compared, paced differently ({PACED_APART_WHY}):"
#: Regressed phases listed by name at the end (the tables show them all).
SLOWER_LISTED = 8


def text_output(c: Compared) -> str:
    """The whole console output: :func:`render_text`, then the informational latency,
    cost and operation-kind tables and the durability table (each only when it has a row)."""
    rows, diffs, threshold, gone, apart = c.rows, c.diffs, c.threshold, c.gone, c.apart
    latency, costs, kinds = c.latency, c.costs, c.kinds
    render = render_text(rows, diffs, threshold, gone, apart=apart)
    render += "\n".join(["", *latency_compare.text_lines(latency)]) if latency else ""
    render += "\n".join(["", *cost_compare.text_lines(costs)]) if costs else ""
    render += "\n".join(["", *cost_compare.text_lines(kinds, title=mix_compare.TITLE)]) if kinds else ""
    render += "\n".join(["", *durability_compare.text_lines(c.durability)]) if c.durability else ""
    return render


def _paced_apart_lines(apart: list[PacedApart], width: int) -> list[str]:
    """The head, then per engine and change of pacing one entry naming every phase (a
    sweep against a closed-loop run is a dozen phases: one line each said the same)."""
    if not apart:
        return []
    groups: dict[tuple[str, str, str], list[str]] = {}
    for a in apart:
        groups.setdefault((a.engine, a.base, a.new), []).append(a.phase)
    lines = textwrap.wrap(PACED_APART_HEAD, width)
    for (engine, base, new), phases in groups.items():
        text = f"  {engine}: base {base}; new {new}: {', '.join(phases)}"
        lines += textwrap.wrap(text, width, subsequent_indent="      ", break_on_hyphens=False)
    return lines


def _verdict(c: Comparison, checksums_equal: bool | None) -> str:
    """``faster +21.3% p=0.004``, ``slower -7.2%``, ``same``, ``n.s. +6.0% p=0.35`` (and
    ``CHECKSUM DIFFERS``): the verdict column in at most 21 characters."""
    word = {
        Verdict.FASTER: "faster",
        Verdict.SLOWER: "slower",
        Verdict.SAME: "same",
        Verdict.NOT_SIGNIFICANT: "n.s.",
        Verdict.ONE_RUN: "one run",
    }
    text = f"{word[c.verdict]} {c.change_pct:+.1f}%"
    if c.p_value is not None and c.verdict is not Verdict.SAME:
        text += f" p={c.p_value:.3f}" if c.p_value >= 0.001 else " p<0.001"
    if checksums_equal is False:
        text += " CHECKSUM DIFFERS"
    return text


def _median(c: Comparison, side: str) -> str:
    return fmt.count(round((c.base if side == "base" else c.new).median))


def _repeats(side: str, rows: list[Row]) -> str:
    """How many runs a side pooled for an engine (the most over its phases)."""
    n = max((r.comparison.base.n if side == "base" else r.comparison.new.n) for r in rows)
    return f"{n} run{'s' if n != 1 else ''}"


def render_text(
    rows: list[Row],
    diffs: list[str],
    threshold: float,
    gone: OneSided,
    width: int | None = None,
    apart: list[PacedApart] | None = None,
) -> str:
    """The console table: fits ``width`` columns (default: the terminal's, 80 at least)."""
    width = width or max(80, shutil.get_terminal_size((80, 24)).columns)
    figures = 1 + 10 + 1 + 10 + 1 + 8 + 1 + 21  # base, new, ratio, verdict
    room = max(width - 2 - figures, 12)
    lines = one_sided_lines(gone, width) + _paced_apart_lines(apart or [], width)
    if diffs:  # first: a reader must know before any figure that the runs measured different things
        lines += textwrap.wrap(DIFFERS_HEAD, width)
        for d in diffs:
            lines += textwrap.wrap(f"  {d}", width, subsequent_indent="      ")
    by_engine: dict[str, list[Row]] = {}
    for r in rows:
        by_engine.setdefault(r.engine, []).append(r)
    for engine, engine_rows in by_engine.items():
        runs = f"base {_repeats('base', engine_rows)} (median), new {_repeats('new', engine_rows)}"
        lines += ["", _cut(f"== {engine} · {runs}", width)]
        lines.append(f"  {'phase (ops/s)':<{room}} {'base':>10} {'new':>10} {'new/base':>8} verdict")
        for r in engine_rows:
            c = r.comparison
            name = r.phase if len(r.phase) <= room else r.phase[: room - 1] + "…"
            lines.append(
                f"  {name:<{room}} {_median(c, 'base'):>10} {_median(c, 'new'):>10} {c.ratio:>7.3f}x "
                f"{_verdict(c, r.checksums_equal)}"
            )
    slower = [r for r in rows if r.comparison.verdict is Verdict.SLOWER]
    faster = [r for r in rows if r.comparison.verdict is Verdict.FASTER]
    lines.append("")
    if any(r.comparison.verdict is Verdict.NOT_SIGNIFICANT for r in rows):
        lines += textwrap.wrap(NOT_SIGNIFICANT_LEGEND, width)
    one_run = sum(r.comparison.verdict is Verdict.ONE_RUN for r in rows)
    if one_run:
        lines += textwrap.wrap(ONE_RUN_LEGEND, width)
    same = sum(r.comparison.verdict is Verdict.SAME for r in rows)
    lines += textwrap.wrap(
        f"{len(rows)} phases compared (threshold {threshold * 100:g}%): {len(faster)} faster, "
        f"{len(slower)} slower, {same} same, {len(rows) - len(faster) - len(slower) - same - one_run} n.s."
        + (f", {one_run} one run (not called)" if one_run else "")
        + ("; CHECKSUMS DIFFER" if any(r.checksums_equal is False for r in rows) else ""),
        width,
    )
    shown = slower if len(slower) <= SLOWER_LISTED else slower[: SLOWER_LISTED - 1]
    for i, r in enumerate(shown):  # one per line: a name is never broken across lines
        lines.append(_cut(("slower: " if i == 0 else "        ") + f"{r.engine} {r.phase}", width))
    if len(shown) < len(slower):
        lines.append(f"        … and {len(slower) - len(shown)} more (see the tables above)")
    sums = summaries(rows)
    name_width = max(len(s.engine) for s in sums)
    lines += textwrap.wrap(SUMMARY_HEAD, width)
    lines += [s.line(name_width) for s in sums]
    return "\n".join(lines)


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"
