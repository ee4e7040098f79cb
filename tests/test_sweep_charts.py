"""Sweep charts a person can read (issue 39, item 6).

A skipped sweep level was drawn as a "0/s · 0.0 %" bar; at a target rate every engine that
keeps up read ~100 % of the fastest; a 3-level sweep drew a latency-over-time chart per
level (45 SVGs for the quick plan) and a 37-panel percentile chart with phases out of plan
order."""

from __future__ import annotations

from pathlib import Path

import matplotlib
import orjson
from test_compare import READ, sample

from asyncbench.measure.aggregate import collapse
from asyncbench.rate import Arrivals
from asyncbench.report import charts
from asyncbench.report.chart_style import RC
from asyncbench.report.latency_data import MAX_LATENCY_PANELS
from asyncbench.result import OpenLoop, RunResult


def _texts(fig) -> list[str]:  # type: ignore[no-untyped-def]
    return [t.get_text() for ax in fig.axes for t in ax.texts] + [t.get_text() for t in fig.texts]


def _latency_drawings(run: RunResult) -> list[charts.Drawing]:
    return [d for c in charts.CHARTS if c.repeats for d in c.drawings(run)]


def _lookup(run: RunResult) -> list[str]:
    with matplotlib.rc_context(RC):
        return _texts(charts.lookup_throughput(collapse(run)))


def test_a_skipped_level_says_skipped_not_zero() -> None:
    run = sample()
    p = next(e for e in run.engines if e.engine == "sqlite").phase_at(READ)
    p.skipped, p.ops, p.seconds, p.checksum = True, 0, 0.0, None
    texts = _lookup(run)
    assert "sqlite: skipped" in texts
    assert not [t for t in texts if "0/s · 0.0%" in t]


def test_a_phase_at_a_rate_is_drawn_against_its_target() -> None:
    run = sample()
    for e in run.engines:
        p = e.phase_at(READ)
        p.open_loop = OpenLoop(rate=2 * p.ops / p.seconds, arrivals=Arrivals.UNIFORM)  # each achieved half
    texts = _lookup(run)
    at_rate = [t for t in texts if "target" in t and "/s ·" in t]
    assert len(at_rate) == len([e for e in run.engines if not e.facts.harness_floor]), texts
    assert all("· 50% of the" in t for t in at_rate), at_rate
    with matplotlib.rc_context(RC):
        fig = charts.lookup_throughput(collapse(run))
    assert "% of the phase's target rate" in fig.axes[0].get_xlabel()


PLAN = """
[run]
profiles = 1000
engines = ["memory"]
isolate = false

[[phase]]
kind = "insert"

[[phase]]
kind = "read_by_id"
rate = [1000, 2000, 4000]
count = 400

[[phase]]
kind = "lookup_by_email"
rate = [1000, 2000, 4000]
count = 400

[[phase]]
kind = "scan_country_status"
rate = [1000, 2000, 4000]
count = 400

[[phase]]
kind = "query_country_status"
rate = [1000, 2000, 4000]
count = 400

[[phase]]
kind = "scan_created_at"
rate = [1000, 2000, 4000]
count = 400
"""


def test_a_sweep_draws_no_chart_per_level_and_a_capped_percentile_chart_in_plan_order(tmp_path: Path, run_cli) -> None:  # type: ignore[no-untyped-def]
    plan = tmp_path / "sweep.toml"
    plan.write_text(PLAN)
    code, results, output = run_cli(str(plan), charts=True)
    assert code == 0, output
    run = RunResult.from_json(orjson.dumps(results[0]))
    slugs = [slug for slug, _t, _d in _latency_drawings(run)]
    sweep_levels = [p.name for p in run.phases if p.sweep is not None]
    assert len(sweep_levels) == 15
    ran = [p for p in run.engines[0].phases if p.open_loop is not None and not p.skipped]
    assert len(ran) > MAX_LATENCY_PANELS  # no level dipped at these low rates
    over_time = [s for s in slugs if s.startswith("latency-over-time-")]
    assert over_time == ["latency-over-time-insert-profiles"], over_time
    assert "latency-vs-throughput" in slugs
    draw = next(d for slug, _t, d in _latency_drawings(run) if slug == "latency-percentiles")
    with matplotlib.rc_context(RC):
        fig = draw()
    panels = [ax.get_title(loc="left") for ax in fig.axes if ax.get_visible() and ax.get_title(loc="left")]
    assert len(panels) <= MAX_LATENCY_PANELS
    plan_order = [p.name for p in run.phases]
    assert panels == sorted(panels, key=plan_order.index)
    notes = " ".join(" ".join(t.get_text() for t in fig.texts).split())
    assert "more phases not drawn" in notes, notes


def test_the_sweep_chart_says_skipped_levels_and_caps_its_panels() -> None:
    from asyncbench.report.latency_charts import MAX_SWEEP_PANELS, latency_vs_throughput_figure

    point = [(2_000.0, 1_990.0, 10_000, 50_000)]
    sweeps = {f"phase {i}": {"sqlite": point} for i in range(14)}
    skipped = {"phase 0": {"sqlite": ["8_000/s", "32_000/s"]}}
    with matplotlib.rc_context(RC):
        fig = latency_vs_throughput_figure(sweeps, "P1", None, skipped)
    panels = [ax for ax in fig.axes if ax.get_visible() and ax.get_title(loc="left")]
    assert [ax.get_title(loc="left") for ax in panels] == [f"phase {i}" for i in range(MAX_SWEEP_PANELS)]
    assert "skipped: sqlite 8_000/s, 32_000/s" in [t.get_text() for t in panels[0].texts]
    notes = " ".join(" ".join(t.get_text() for t in fig.texts).split())
    assert "2 more swept phases not drawn" in notes
