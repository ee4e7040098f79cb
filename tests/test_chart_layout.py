"""Charts that are right to read (issue 22, item 5): every chart is rasterised and its
layout measured, not only its SVG text.

* A value label never sits on a whisker: each text's box, measured by matplotlib's own
  renderer on the figure as drawn, is clear of every error-bar segment.
* A whisker is explained by a line under the chart.
* A plan that runs no phase of a chart's kind gets no such chart (see test_report_outputs).
* The latency over time keeps each engine readable: one panel per engine on one time axis
  (or each its own, said, when their lengths are far apart), one shared latency axis.
* No Markdown escape reaches a chart's text.
"""

from __future__ import annotations

import copy
import io
from pathlib import Path

import matplotlib
import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.collections import LineCollection
from matplotlib.figure import Figure
from matplotlib.transforms import Bbox

from asyncbench.report import charts
from asyncbench.report.chart_style import RC
from asyncbench.result import DurabilityRow, RunResult

FIXTURES = Path(__file__).parent / "fixtures"


def _repeats() -> RunResult:
    return RunResult.from_json((FIXTURES / "result-repeats-latency.json").read_bytes())


def _crashed(run: RunResult) -> RunResult:
    """``run`` with a crash row per engine and repeat (one lost all, one held all, one torn),
    so the durability chart is drawn and measured with the others."""
    run = copy.deepcopy(run)
    for i, e in enumerate(run.engines):
        lost, torn = [(40_000, 0), (0, 0), (12, 3)][i % 3]
        e.durability = [DurabilityRow(phase="insert profiles", how="power", after=40_000, acknowledged=40_000,
                                      crash_seconds=1.5, opened=True, acknowledged_present=40_000 - lost,
                                      acknowledged_lost=lost, torn=torn, lost_seconds=0.44 if lost else None,
                                      promise="about once a second, and on settle/close")]  # fmt: skip
    return run


def _wide(run: RunResult) -> RunResult:
    """``run`` with every repeated phase's range stretched to 0.3x..2.5x its median: whiskers
    far past the bars, past the fastest engine's 100 %, as noisy repeats draw them."""
    run = copy.deepcopy(run)
    for rows in run.throughput.values():
        for row in rows:
            row.min, row.max = row.median * 0.3, row.median * 2.5
    return run


def _drawn(run: RunResult, only_bars: bool = False) -> list[tuple[str, Figure]]:
    """(slug, figure) of every chart of ``run`` (the bar charts only with ``only_bars``),
    drawn and rasterised (PNG) with Agg."""
    bars = {c.slug for c in charts.CHARTS if not c.repeats}
    out = []
    for slug, _title, draw in charts.drawings(run):
        if only_bars and slug not in bars:
            continue
        with matplotlib.rc_context(RC):
            fig = draw()
            FigureCanvasAgg(fig)
            fig.savefig(io.BytesIO(), format="png", dpi=60)  # lays the figure out as it is shipped
        out.append((slug, fig))
    return out


def _whiskers(ax) -> list[Bbox]:  # type: ignore[no-untyped-def]
    """Display-space boxes of every error-bar segment (the whisker and its caps)."""
    boxes = []
    for coll in ax.collections:
        if isinstance(coll, LineCollection):
            for seg in coll.get_segments():
                pts = ax.transData.transform(seg)
                boxes.append(Bbox.from_extents(*pts.min(axis=0), *pts.max(axis=0)).padded(1.0))
    for line in ax.lines:  # the caps are markers on Line2D
        if line.get_marker() in ("|", "_"):
            for x, y in zip(line.get_xdata(), line.get_ydata(), strict=True):
                px, py = ax.transData.transform((x, y))
                boxes.append(Bbox.from_extents(px - 1, py - 3, px + 1, py + 3))
    return boxes


def _text_box(fig: Figure, text) -> Bbox:  # type: ignore[no-untyped-def]
    """The box of a label's glyphs (its leading spaces are a gap, not ink)."""
    box = text.get_window_extent(fig.canvas.get_renderer())
    label = text.get_text()
    lead = len(label) - len(label.lstrip(" "))
    if lead and label.strip():  # shift the left edge past the leading spaces, proportionally
        box = Bbox.from_extents(box.x0 + box.width * lead / len(label), box.y0, box.x1, box.y1)
    return box


@pytest.fixture(scope="module")
def drawn() -> list[tuple[str, Figure]]:
    """Every chart of the repeats fixture (with crash rows: the durability chart too),
    drawn once for the module."""
    out = _drawn(_crashed(_repeats()))
    assert "durability" in [slug for slug, _ in out]
    return out


@pytest.mark.parametrize("stretch", [False, True], ids=["as-measured", "wide-whiskers"])
def test_no_label_box_overlaps_a_whisker(stretch: bool, drawn: list[tuple[str, Figure]]) -> None:
    checked = 0
    for slug, fig in _drawn(_wide(_repeats()), only_bars=True) if stretch else drawn:
        for ax in fig.axes:
            whiskers = _whiskers(ax)
            if not whiskers:
                continue
            for text in ax.texts:
                if not text.get_text().strip():
                    continue
                box = _text_box(fig, text)
                hits = [w for w in whiskers if box.overlaps(w)]
                assert not hits, f"{slug}: label {text.get_text()!r} at {box} overlaps a whisker at {hits[0]}"
                checked += 1
            # the labels stay inside the figure, whiskers included
            assert all(_text_box(fig, t).x1 <= fig.bbox.x1 + 1 for t in ax.texts), slug
    assert checked > 20  # the repeats drew whiskers and labels beside them


def test_a_whisker_is_explained_under_the_chart(drawn: list[tuple[str, Figure]]) -> None:
    for slug, fig in drawn:
        whiskers = any(_whiskers(ax) for ax in fig.axes)
        text = "\n".join(t.get_text() for t in fig.texts)
        assert ("whisker" in text) == whiskers, slug
        if whiskers:
            assert "median of the engine's 2 measured repeats" in text and "min to max" in text, text


def test_latency_over_time_is_one_panel_per_engine_on_a_time_axis_that_fits(drawn: list[tuple[str, Figure]]) -> None:
    over_time = [(slug, fig) for slug, fig in drawn if slug.startswith("latency-over-time-")]
    assert over_time
    for slug, fig in over_time:
        axes = [ax for ax in fig.axes if ax.get_title(loc="left")]
        assert sorted(ax.get_title(loc="left") for ax in axes) == ["memory", "sqlite"], slug
        assert len({ax.get_ylim() for ax in axes}) == 1  # one latency scale to compare heights
        ends = [max(x for line in ax.lines for x in line.get_xdata() if x == x) for ax in axes]
        shared = len({ax.get_xlim() for ax in axes}) == 1
        notes = " ".join(" ".join(t.get_text() for t in fig.texts).split())
        assert shared == ("x axes differ" not in notes), slug  # a separate axis is explained
        for ax, end in zip(axes, ends, strict=True):  # the longest (or each engine) fills the width
            assert ax.get_xlim()[1] == pytest.approx(max(ends) if shared else end)


def test_no_markdown_escape_in_chart_text(drawn: list[tuple[str, Figure]]) -> None:
    for slug, fig in drawn:
        texts = [t.get_text() for t in fig.texts] + [t.get_text() for ax in fig.axes for t in ax.texts]
        assert not [t for t in texts if "\\(" in t or "\\_" in t or "\\|" in t], slug


NO_SCANS = """
[run]
name = "no-scans"
profiles = 2_000
seed = 570123434
limit = 50
batch_size = 500
engines = ["memory"]

[[phase]]
kind = "insert"

[[phase]]
kind = "read_by_id"
stream = "reads"
count = 1_000
"""


def test_no_chart_for_a_kind_the_plan_does_not_run_and_titles_match_files_and_alt_text(
    run_cli, tmp_path, monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    import re
    import xml.etree.ElementTree as ET

    from asyncbench.run.observe.progress import NO_PROGRESS_ENV
    from asyncbench.run.observe.status import QUIET_ENV

    for name in (NO_PROGRESS_ENV, QUIET_ENV):  # the in-process run sets them: restored after the test
        monkeypatch.setenv(name, "1")

    plan = tmp_path / "plan.toml"
    plan.write_text(NO_SCANS)
    code, _, out = run_cli(str(plan), "--no-isolate", "--no-progress", "--quiet", charts=True)
    assert code == 0, out
    folder = tmp_path / "out" / "profiles-2000-p1"
    md = next(folder.glob("asyncbench-*.md")).read_text()
    svgs = sorted(folder.glob("asyncbench-*.svg"))
    slugs = {re.sub(r"^asyncbench-[^-]+-", "", p.stem) for p in svgs}
    assert slugs == {
        "execution-time",
        "write-throughput",
        "lookup-throughput",
        "resource-footprint",
        "cost",
        "latency-percentiles",
        "latency-over-time-insert-profiles",
    }
    assert "Index Scan Throughput" not in md and "Query Throughput" not in md  # nothing embedded either
    embeds = dict((file, alt) for alt, file in re.findall(r"!\[([^\]]*)\]\(([^)]+)\)", md))
    assert set(embeds) == {p.name for p in svgs}
    for path in svgs:
        title = ET.fromstring(path.read_bytes()).find("{http://www.w3.org/2000/svg}title").text
        assert embeds[path.name] == title  # the alt text is the chart's own title
        slug = re.sub(r"^asyncbench-[^-]+-", "", path.stem)
        assert set(slug.split("-")) <= set(re.split(r"[\s:]+", title.lower())), (slug, title)
