"""``compare --markdown``: the comparison as Markdown (for a pull request or a note),
saying what the console output says, in the same words (:mod:`.legends`)."""

from __future__ import annotations

from asyncbench.measure.stats import Verdict
from asyncbench.report import cost_compare, durability_compare, latency_compare, mix_compare
from asyncbench.report.compare.compared import Compared
from asyncbench.report.compare.legends import DIFFERS_HEAD, ONE_RUN_LEGEND, SUMMARY_HEAD, one_sided_lines
from asyncbench.report.compare.rows import OneSided, PacedApart, Row
from asyncbench.report.compare.summary import summaries

__all__ = ["markdown_output", "render_markdown"]


def _escape(text: str) -> str:
    return text.replace("|", "\\|")


def markdown_output(c: Compared) -> str:
    """The whole Markdown output: :func:`render_markdown`, then the informational
    latency, cost and operation-kind tables and the durability table."""
    rows, diffs, threshold, gone, apart = c.rows, c.diffs, c.threshold, c.gone, c.apart
    latency, costs, kinds = c.latency, c.costs, c.kinds
    render = render_markdown(rows, diffs, threshold, gone, apart)
    render += "\n".join(latency_compare.markdown_lines(latency, _escape))
    render += "\n".join(cost_compare.markdown_lines(costs, _escape))
    render += "\n".join(cost_compare.markdown_lines(kinds, _escape, mix_compare.TITLE))
    render += "\n".join(durability_compare.markdown_lines(c.durability, _escape))
    return render


def render_markdown(
    rows: list[Row], diffs: list[str], threshold: float, gone: OneSided, apart: list[PacedApart] | None = None
) -> str:
    """The throughput table, what only one side has, what was measured differently, the
    counts and the per-engine summary."""
    header = ["Engine", "Phase", "Base", "New", "Ratio", "Verdict", "Checksums"]
    table = [
        [
            r.engine,
            r.phase,
            r.comparison.base.format(),
            r.comparison.new.format(),
            f"{r.comparison.ratio:.3f}x",
            r.comparison.describe(),
            {True: "equal", False: "DIFFER", None: "-"}[r.checksums_equal],
        ]
        for r in rows
    ]
    lines = [f"- {line}" for line in one_sided_lines(gone, 10_000)]
    lines += [f"- {a.line()}" for a in apart or []]
    if diffs:
        lines += ["", DIFFERS_HEAD, ""] + [f"- {d}" for d in diffs]
    lines += ["", "| " + " | ".join(header) + " |", "| " + " | ".join("---" for _ in header) + " |"]
    lines += ["| " + " | ".join(_escape(c) for c in row) + " |" for row in table]
    slower = [f"{r.engine} {r.phase}" for r in rows if r.comparison.verdict is Verdict.SLOWER]
    faster = sum(r.comparison.verdict is Verdict.FASTER for r in rows)
    one_run = sum(r.comparison.verdict is Verdict.ONE_RUN for r in rows)
    lines += [
        "",
        f"{len(rows)} phases compared (threshold {threshold * 100:g}%): {faster} faster, {len(slower)} slower, "
        f"{len(rows) - faster - len(slower) - one_run} same or not significant"
        + (f", {one_run} one run (not called)" if one_run else "")
        + (f"; slower: {', '.join(slower)}" if slower else "")
        + ("; CHECKSUMS DIFFER" if any(r.checksums_equal is False for r in rows) else ""),
    ]
    if any(r.comparison.verdict is Verdict.ONE_RUN for r in rows):
        lines += ["", ONE_RUN_LEGEND]
    lines += ["", SUMMARY_HEAD, ""]
    lines += [f"- {s.line(0).strip()}" for s in summaries(rows)]
    return "\n".join(lines)
