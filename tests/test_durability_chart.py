"""The durability chart (issue 57, ``asyncbench/report/durability_chart.py``): per engine and
crash point, the acknowledged writes lost as a bar with the engine's promise in its label;
drawn only for a result with durability rows, and written as a file by a run that crashed
an engine (beside the charts every run writes)."""

from __future__ import annotations

import copy
import io
from pathlib import Path

import matplotlib
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle
from test_chart_files import _written
from test_chart_layout import _crashed, _repeats, _text_box

from asyncbench.report import charts
from asyncbench.report.chart_style import RC
from asyncbench.result import RunResult


def durability_figure(run: RunResult) -> Figure | None:
    found = [draw for slug, _title, draw in charts.drawings(run) if slug == "durability"]
    if not found:
        return None
    (draw,) = found
    with matplotlib.rc_context(RC):
        fig = draw()
        FigureCanvasAgg(fig)
        fig.savefig(io.BytesIO(), format="png", dpi=60)
    return fig


def test_one_bar_per_engine_and_crash_its_length_the_writes_lost_with_the_promise_in_its_label() -> None:
    run = _crashed(_repeats())
    fig = durability_figure(run)
    assert fig is not None
    (ax,) = [a for a in fig.axes if a.get_xlabel() == "acknowledged writes lost"]
    rows = [(e, d) for e in run.engines for d in e.durability]
    labels = [t.get_text() for t in ax.get_yticklabels()]
    assert len(labels) == len(rows) == len(run.engines)
    for label, (e, _) in zip(labels, rows, strict=True):
        assert label.startswith(f"{e.engine}#{e.repeat + 1} · power in insert profiles at 40_000")
        assert "promise: about once a second" in label
    bars = sorted((round(p.get_y() + p.get_height() / 2), p.get_width()) for p in ax.patches if isinstance(p, Rectangle))
    assert bars == [(y, d.acknowledged_lost) for y, (_, d) in enumerate(rows) if d.acknowledged_lost]
    values = [t.get_text().strip() for t in ax.texts]
    assert "lost 40_000 of 40_000, the last 0.44 s" in values and "lost 0 of 40_000" in values
    assert any(v.startswith("lost 12 of 40_000") and "3 torn · FAIL" in v for v in values)
    assert all(_text_box(fig, t).x1 <= fig.bbox.x1 + 1 for t in ax.texts)  # every label inside the figure


def test_a_store_that_did_not_open_is_said_not_drawn_as_a_short_bar() -> None:
    run = _crashed(_repeats())
    for e in run.engines:
        e.durability[0].opened, e.durability[0].open_error = False, "CorruptionError: bad block"
    fig = durability_figure(run)
    assert fig is not None
    (ax,) = [a for a in fig.axes if a.get_xlabel() == "acknowledged writes lost"]
    assert not [p for p in ax.patches if isinstance(p, Rectangle) and p.get_width() > 0]
    assert {t.get_text().strip() for t in ax.texts} == {"the store did not open · FAIL"}


def test_no_durability_chart_without_a_crash() -> None:
    assert durability_figure(copy.deepcopy(_repeats())) is None
    row = next(c for c in charts.CHARTS if c.slug == "durability")
    assert row.title == "Durability After A Crash" and not row.latest


CRASH = """[run]
profiles = 300
engines = ["sqlite"]

[[phase]]
kind = "insert"
crash = { after = 200, how = "kill" }

[[phase]]
kind = "recover"
"""


def test_a_run_that_crashed_an_engine_writes_the_durability_chart(tmp_path: Path, run_cli) -> None:  # type: ignore[no-untyped-def]
    plan = tmp_path / "plan.toml"
    plan.write_text(CRASH)
    code, _results, output = run_cli(str(plan), "--no-progress", charts=True)
    assert code == 0, output
    drawn, on_disk = _written(tmp_path / "out")
    assert drawn.count("durability") == 1 and "durability" in on_disk
    assert drawn[drawn.index("durability") - 1] in ("resource-footprint", "cost"), drawn  # in report order
