"""The sentences the text and Markdown renderings of ``compare`` share (one wording, so
the two outputs never say a thing two ways), and the lines naming what one side only has.
"""

from __future__ import annotations

import textwrap

from asyncbench.report.compare.rows import OneSided

__all__ = ["DIFFERS_HEAD", "NOT_SIGNIFICANT_LEGEND", "ONE_RUN_LEGEND", "SUMMARY_HEAD", "one_sided_lines"]

SUMMARY_HEAD = "geometric mean of new/base ops/s, [95% t interval of the mean log ratio]:"
NOT_SIGNIFICANT_LEGEND = "n.s.: not significant: the repeats' spread can explain the change (Welch's t, p >= 0.05)"
ONE_RUN_LEGEND = (
    "one run: beyond the threshold, but a side has a single run, so there is no spread to test the change "
    "against: not called faster or slower (run both sides with --repeat 3 or more)"
)
DIFFERS_HEAD = "measured differently (the figures below may not compare):"


def one_sided_lines(gone: OneSided, width: int) -> list[str]:
    """``only in base, not compared: engine memory``, wrapped at ``width``."""
    lines: list[str] = []
    for label in ("base", "new"):
        for what, items in (
            ("engine", gone.engines[label]),
            ("phase", gone.phases[label]),
            ("engine's phase", gone.pairs[label]),
        ):
            if items:
                plural = "s" if len(items) != 1 else ""
                text = f"only in {label}, not compared: {what}{plural} " + ", ".join(items)
                lines += textwrap.wrap(text, width, subsequent_indent="    ", break_on_hyphens=False)
    return lines
