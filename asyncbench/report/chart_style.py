"""The look every chart shares: page geometry, colours (an engine's, and the one fallback
for an engine that states none), matplotlib settings, the frame (title, subtitle with the
run's context, footnotes) around a chart's body, and the one renderer that turns a drawn
figure into the SVG bytes the tool writes (:func:`svg`).

Its own module so the bar charts (:mod:`.charts`), the latency charts
(:mod:`.latency_charts`) and the cost chart (:mod:`.cost_chart`) all build on it without
importing each other.
"""

from __future__ import annotations

import io
import textwrap
import zlib
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import matplotlib
from matplotlib.backends.backend_svg import FigureCanvasSVG
from matplotlib.figure import Figure
from matplotlib.layout_engine import ConstrainedLayoutEngine

from asyncbench import fmt
from asyncbench.result import EngineResult, RunResult

if TYPE_CHECKING:
    from matplotlib.typing import RcKeyType

WIDTH_IN = 10.0
HEADER_IN = 0.95  # title + one subtitle line
SUBTITLE_LINE_IN = 0.2
FOOTNOTE_LINE_IN = 0.19
BAR_IN = 0.27  # one engine's bar in a group
GROUP_GAP_IN = 0.3
AXIS_IN = 0.75  # x tick labels + x label below the bars
TEXT = "#222222"
MUTED = "#666666"
RC: dict[RcKeyType, Any] = {
    "svg.hashsalt": "asyncbench",
    "svg.fonttype": "path",
    "font.family": "DejaVu Sans",
    "font.size": 9,
    "axes.edgecolor": "#999999",
    "axes.labelcolor": TEXT,
    "xtick.color": MUTED,
    "ytick.color": TEXT,
    "hatch.color": "#ffffff",
    "text.parse_math": False,  # plan names are text: "$" must not start math (or a parse error)
}
#: Colours for engines that state none in their facts, picked by a stable hash of the name.
FALLBACK_COLOURS = ("#7b4fb0", "#8c564b", "#d45fb4", "#17a2b8", "#a0a000")


def fallback_colour(engine: str) -> str:
    """The colour of an engine that states none: stable across runs and charts (by name)."""
    return FALLBACK_COLOURS[zlib.crc32(engine.encode()) % len(FALLBACK_COLOURS)]


def engine_colour(e: EngineResult) -> str:
    """The colour the engine states in its facts; others get :func:`fallback_colour`."""
    return e.facts.colour or fallback_colour(e.engine)


def svg(draw: Callable[[], Figure], title: str) -> bytes:
    """The SVG bytes of the figure ``draw`` makes, drawn in the project's style (:data:`RC`);
    ``title`` is the SVG ``<title>``, and no date is written, so the same input gives the
    same bytes. The one renderer of every chart the tool writes."""
    with matplotlib.rc_context(RC):
        fig = draw()
        buf = io.BytesIO()
        fig.savefig(buf, format="svg", metadata={"Title": title, "Date": None})
    return buf.getvalue()


def _context(run: RunResult) -> str:
    """Profile count, P and machine: what a copied SVG needs to explain itself."""
    env = run.environment
    machine = ", ".join(
        x
        for x in (
            env.get("cpu_model"),
            f"{env['logical_cpus']} CPUs" if env.get("logical_cpus") else "",
            env.get("os"),
        )
        if x
    )
    return f"{fmt.count(run.profiles)} {run.workload_impl.unit} · P{run.parallelism}" + (f" · {machine}" if machine else "")


def figure_frame(
    title: str, subtitle: str, body_in: float, notes: Sequence[str], run: RunResult | None = None
) -> Figure:
    """A figure with a fixed header (title, subtitle + the run's context) and footer (notes)
    around a constrained body."""
    sub_lines = (textwrap.wrap(subtitle, 125) or [""]) + (textwrap.wrap(_context(run), 125) if run else [])
    note_lines: list[str] = []
    for n in notes:
        note_lines += textwrap.wrap(n, 165, subsequent_indent="    ")
    header = HEADER_IN + SUBTITLE_LINE_IN * (len(sub_lines) - 1)
    footer = 0.12 + FOOTNOTE_LINE_IN * len(note_lines)
    height = header + body_in + footer
    fig = Figure(figsize=(WIDTH_IN, height), facecolor="white")
    FigureCanvasSVG(fig)
    fig.set_layout_engine(
        ConstrainedLayoutEngine(rect=(0.0, footer / height, 1.0, body_in / height), w_pad=0.08, h_pad=0.05)
    )
    x0 = 0.12 / WIDTH_IN
    fig.text(x0, 1 - 0.4 / height, title, fontsize=15, fontweight="bold", color=TEXT, va="baseline")
    fig.text(
        x0, 1 - 0.66 / height, "\n".join(sub_lines), fontsize=9.5, color=MUTED, va="top", linespacing=1.45
    )
    if note_lines:
        fig.text(
            x0, 0.1 / height, "\n".join(note_lines), fontsize=8, color=MUTED, va="bottom", linespacing=1.5
        )
    return fig
