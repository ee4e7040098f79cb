"""The Execution Time chart keeps the harness floor's marker inside its axis, so matplotlib
lays it out without a warning (issue 51, finding 11: the floor's marker lay far past the
axis' end, constrained layout shrank the axes to nothing to make room for its label and
printed ``UserWarning: constrained_layout not applied`` on the console; seen with the one
real engine failed early, ``quick.toml --engine memory,<a plug-in that raises>``, where the
scale was that engine's few completed phases; the same happens whenever the floor takes
longer than the fastest real engine by more than the axis' margin)."""

from __future__ import annotations

import warnings
from pathlib import Path

from asyncbench.report import chart_style, charts
from asyncbench.result import RunResult

FIXTURE = Path(__file__).parent / "fixtures" / "result-sample.json"


def _floor_far_past_the_real_engines() -> RunResult:
    """memory (the harness floor) 2000 times slower than it ran: far past sqlite and rocksdb."""
    run = RunResult.from_json(FIXTURE.read_bytes())
    for p in next(e for e in run.engines if e.engine == "memory").phases:
        p.seconds *= 2000
    return run


def test_the_floor_marker_past_every_real_engine_is_drawn_without_a_layout_warning() -> None:
    run = _floor_far_past_the_real_engines()
    assert any(e.facts.harness_floor for e in run.engines)
    (drawing,) = [d for d in charts.drawings(run) if d[0] == "execution-time"]
    _, title, draw = drawing
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the layout warning fails the test
        fig = draw()
        chart_style.svg(lambda: fig, title)
    (ax,) = fig.axes
    marker = next(t for t in ax.texts if "harness floor (memory)" in t.get_text())
    assert ax.get_xlim()[0] <= marker.get_position()[0] <= ax.get_xlim()[1]
    assert ax.get_position().width > 0.5 and ax.get_position().height > 0.05  # not collapsed
