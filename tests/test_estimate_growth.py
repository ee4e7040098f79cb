"""The size estimate scales a measurement phase by phase, grows each engine's cost per
operation with the store above the knee, and calibrates every parallelism level (issue 24
item 4: "about 28 min" for a 38-min 2M run, "about 3 min" for a 6-min 100K P1,16 run)."""

from __future__ import annotations

import math

import pytest
from conftest import ROOT

from asyncbench.config import load
from asyncbench.engine import EngineUnavailable, cost_growth_problem
from asyncbench.engines import REGISTRY, engine_class
from asyncbench.run.estimate import GROWTH_KNEE, MeasuredCost, calibrate, cost_factor, growth

PLAN = ROOT / "benchmarks.toml"
QUERY = 100e-6  # a query phase's operation: many reads
POINT = 10e-6  # every other operation


def rate_at_1k() -> MeasuredCost:
    kinds = ["insert", "read_by_id", "lookup_by_email", "update", "scan_country_status", "scan_created_at"]
    kinds += ["scan_top_reputation"]
    per_op = dict.fromkeys(kinds, POINT)
    per_op |= dict.fromkeys(["query_country_status", "query_created_at", "query_top_reputation"], QUERY)
    return MeasuredCost(profiles=1_000, per_op=per_op, per_phase={}, overhead=0.0, bytes_per_profile=0.0)


def test_a_small_measurement_is_scaled_phase_by_phase_with_the_plans_mix() -> None:
    """At 1_000 profiles the plan's queries are as many as the profiles; at 200_000 a quarter.
    The reference plan at 200_000: six phases of 200_000 point operations, five scan phases
    and five query phases of 50_000 each (a linear scale of the 1_000-profile run's seconds
    per operation would say 64.8 s, the queries' share at 1_000 carried to 200_000)."""
    cfg = load(PLAN)
    expected = 6 * 200_000 * POINT + 5 * 50_000 * POINT + 5 * 50_000 * QUERY
    assert rate_at_1k().seconds("lsm", cfg, 200_000) == pytest.approx(expected)  # 39.5 s
    assert expected == pytest.approx(39.5)


def test_cost_per_operation_grows_above_the_knee_only() -> None:
    cfg = load(PLAN)
    flat = rate_at_1k().seconds("rocksdb", cfg, GROWTH_KNEE)
    ops_ratio = 10  # 2M against 200k: every count scales by 10 (queries stay a quarter)
    at_2m = rate_at_1k().seconds("rocksdb", cfg, 10 * GROWTH_KNEE)
    assert at_2m == pytest.approx(flat * ops_ratio * cost_factor(engine_class("rocksdb").cost_growth, 2_000_000))
    assert growth("lsm", 1_000, 150_000) == 1.0
    assert growth("lsm", 2_000_000, 200_000) == pytest.approx(1 / cost_factor(engine_class("lsm").cost_growth, 2_000_000))


def test_each_engine_states_its_own_growth_and_a_plugin_gets_the_default(monkeypatch) -> None:
    """The growth exponent is a fact of the engine class (``Engine.cost_growth``), not a
    table of names in the estimate: a plug-in engine that states one is scaled by it, one
    that does not gets the base class's default, an unknown name too."""
    from asyncbench import engines
    from asyncbench.engine import Engine

    monkeypatch.setitem(engines.REGISTRY, "steep", "engines_for_tests:SteepGrowthEngine")
    assert engine_class("steep").cost_growth == 0.5
    assert growth("steep", 200_000, 2_000_000) == pytest.approx(10**0.5)
    assert growth("some-plugin", 200_000, 2_000_000) == pytest.approx(10**Engine.cost_growth)
    assert engine_class("memory").cost_growth == 0.0


def test_stated_points_are_joined_on_a_log_log_scale_and_carried_past_the_last() -> None:
    """An engine whose cost does not grow as a power states measured points instead: flat
    to the knee, each point's factor at its size, a straight line between points on a
    log-log scale, the last stretch's slope past the last point; an exponent is the same
    as the one point it passes through at any size."""
    points = ((2_000_000, 1.2), (10_000_000, 2.4))
    assert cost_factor(points, 50_000) == 1.0
    assert cost_factor(points, GROWTH_KNEE) == pytest.approx(1.0)
    assert cost_factor(points, 2_000_000) == pytest.approx(1.2)
    assert cost_factor(points, 10_000_000) == pytest.approx(2.4)
    # halfway between the points on a log scale: the geometric mean of their factors
    assert cost_factor(points, int(math.sqrt(2e6 * 10e6))) == pytest.approx(math.sqrt(1.2 * 2.4), rel=1e-6)
    # past the last point, the last stretch's slope: 2x from 2M to 10M, so 2x again at 50M
    assert cost_factor(points, 50_000_000) == pytest.approx(4.8)
    assert cost_factor(0.3, 2_000_000) == pytest.approx(cost_factor(((2_000_000, 10**0.3),), 2_000_000))
    assert cost_factor(0.3, 20_000_000) == pytest.approx(cost_factor(((2_000_000, 10**0.3),), 20_000_000))


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_each_registered_engine_states_a_growth_the_estimate_can_read(name: str) -> None:
    """A stated growth is an exponent of at least 0, or points past the knee in increasing
    size with positive factors: a point at or below the knee or out of order would divide
    by zero or bend the line backwards."""
    try:
        stated = engine_class(name).cost_growth
    except EngineUnavailable:
        pytest.skip(f"{name} is not installed here")
    assert cost_growth_problem(stated) is None  # what a plug-in's is checked with
    if isinstance(stated, (int, float)):
        assert stated >= 0
        return
    sizes = [n for n, _ in stated]
    assert sizes == sorted(set(sizes)) and sizes[0] > GROWTH_KNEE
    assert all(f > 0 for _, f in stated)


def test_every_parallelism_level_is_calibrated(tmp_path) -> None:
    cfg = load(ROOT / "benchmarks" / "quick.toml")
    cfg.engines, cfg.parallelism, cfg.data = ["memory"], [1, 16], tmp_path
    rates, basis, failed = calibrate(cfg)
    assert failed == {}
    assert sorted(rates["memory"]) == [1, 16]
    assert all(
        math.isfinite(r.seconds("memory", cfg, 100_000)) for level in rates["memory"].values() for r in level
    )
    assert "phase by phase" in basis


def test_a_plan_is_calibrated_only_when_calibrating_costs_a_small_share_of_it(tmp_path) -> None:
    """The quick plan (20_000 profiles, three engines) was calibrated at 20_000 profiles:
    15 s of calibration before a run of about 30 s. A plan whose calibration would cost more
    than CALIBRATION_SHARE of its operations runs unestimated; the reference plan at 200k
    is still calibrated."""
    import dataclasses

    from asyncbench.run.estimate import estimate

    quick = dataclasses.replace(load(ROOT / "benchmarks" / "quick.toml"), output=tmp_path)
    est = estimate(quick, calibrate_fn=lambda c: pytest.fail("the quick plan was calibrated"))
    assert est.seconds is None and "small plan" in est.basis

    called = []
    ref = dataclasses.replace(load(PLAN), profiles=[200_000], engines=["lsm"], output=tmp_path)
    estimate(ref, calibrate_fn=lambda c: called.append(c) or ({}, "calibrated"))
    assert called


def test_an_engine_whose_calibration_fails_is_left_out_with_the_reason(tmp_path, monkeypatch) -> None:
    """A 2M PostgreSQL run on a loaded machine printed "time and disk: not estimated: no
    engine could be measured" and nothing else: its calibration had failed (timed out) and
    the reason was swallowed. The estimate names each engine left out and why."""
    import dataclasses

    from asyncbench import engines
    from asyncbench.run.estimate import estimate

    monkeypatch.setitem(engines.REGISTRY, "brokenctor", "engines_for_tests:BrokenConstructorEngine")
    cfg = dataclasses.replace(load(PLAN), output=tmp_path / "out", data=tmp_path / "data")
    cfg.engines = ["brokenctor"]
    est = estimate(cfg)
    assert est.seconds is None
    text = "\n".join(est.lines(cfg))
    assert "not estimated: no engine could be measured" in text
    assert "brokenctor (calibration Failed: open: ValueError: this plug-in cannot be constructed)" in text
    cfg.engines = ["memory", "brokenctor"]
    text = "\n".join(estimate(cfg).lines(cfg))
    assert "time: about" in text
    assert "not included: brokenctor (calibration Failed: open: ValueError" in text


def test_each_phase_costs_the_median_of_the_calibration_rounds() -> None:
    """A 2M run's estimate printed 0.77x (lsm) and 0.63x (rocksdb) of its measured time on
    a quiet machine, where the same plan's had been 0.98x and 0.90x: one calibration is one
    moment of the machine. The rounds' median drops the odd moment, phase by phase."""
    from asyncbench.run.estimate import MeasuredCost

    def at(read: float, query: float, settle: float, overhead: float) -> MeasuredCost:
        per_op = {"read_by_id": read, "query_country_status": query}
        return MeasuredCost(20_000, per_op, {"settle": settle}, overhead, 100.0)

    fast, usual, slow = at(1e-6, 50e-6, 0.01, 0.5), at(2e-6, 60e-6, 0.02, 0.6), at(9e-6, 300e-6, 0.9, 3.0)
    got = MeasuredCost.median([slow, fast, usual])
    assert got.per_op == {"read_by_id": 2e-6, "query_country_status": 60e-6}
    assert got.per_phase == {"settle": 0.02}
    assert (got.overhead, got.bytes_per_profile, got.profiles) == (0.6, 100.0, 20_000)
    # a phase only some rounds measured: the median of those that did
    only_two = MeasuredCost(20_000, {"read_by_id": 4e-6, "update": 7e-6}, {}, 0.6, 100.0)
    want = {"read_by_id": 2.5e-6, "query_country_status": 50e-6, "update": 7e-6}
    assert MeasuredCost.median([fast, only_two]).per_op == pytest.approx(want)


def test_the_calibration_runs_rounds_with_the_engines_taking_turns(tmp_path, monkeypatch) -> None:
    """Each engine is calibrated CALIBRATION_ROUNDS times, interleaved with the others (so
    its rounds are moments apart), and gets one rate per parallelism level: the median."""
    from asyncbench.run import estimate as est
    from asyncbench.run import runner

    ran: list[str] = []
    real = runner.EngineRun

    class Recording(real):  # type: ignore[misc, valid-type]
        def __init__(self, cfg, level, name, *rest) -> None:  # noqa: ANN001
            ran.append(name)
            super().__init__(cfg, level, name, *rest)

    monkeypatch.setattr(runner, "EngineRun", Recording)
    cfg = load(ROOT / "benchmarks" / "quick.toml")
    cfg.engines, cfg.parallelism, cfg.data = ["memory", "sqlite"], [1], tmp_path
    cfg.profiles = [200_000]  # big enough for every round (est.calibration_rounds)
    assert est.calibration_rounds(cfg) == est.CALIBRATION_ROUNDS
    rates, basis, failed = calibrate(cfg)
    assert failed == {}
    assert ran == ["memory", "sqlite"] * est.CALIBRATION_ROUNDS
    assert est.CALIBRATION_ROUNDS >= 3
    assert {name: [len(v) for v in levels.values()] for name, levels in rates.items()} == {
        "memory": [1],
        "sqlite": [1],
    }
    assert f"{est.CALIBRATION_ROUNDS} rounds" in basis


def test_a_plan_gets_as_many_calibration_rounds_as_fit_in_its_share() -> None:
    """Three rounds cost three times one. The capacity plan's searches at 50k fit two
    rounds in CALIBRATION_SHARE: with three always, it lost its estimate to the rounds
    (tests/test_estimate_runs.py's capacity test failed at 200k, before a search's bound
    counted confirmations: a lower bound instead). A plan too small for one round is not
    calibrated; the reference plan gets every round."""
    import dataclasses

    from asyncbench.run import estimate as est

    capacity = dataclasses.replace(load(ROOT / "benchmarks" / "capacity.toml"), engines=["memory"], profiles=[50_000])
    one = est.plan_operations(est.calibration_config(capacity, ROOT), est.CALIBRATION_PROFILES)
    fit = est.CALIBRATION_SHARE * est.per_engine_operations(capacity) // one
    assert 1 <= fit < est.CALIBRATION_ROUNDS
    assert est.calibration_rounds(capacity) == fit
    assert est.calibration_rounds(load(ROOT / "benchmarks" / "quick.toml")) == 0
    assert est.calibration_rounds(dataclasses.replace(load(PLAN), profiles=[200_000])) == est.CALIBRATION_ROUNDS
