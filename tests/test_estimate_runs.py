"""The estimate is of what will run, at its rates (issue 39, item 4).

* ``--reuse-data`` skips the write phases (and the reads of the other side of the updates):
  the estimate left them in (29 s printed, 8.6 s taken).
* A rate sweep of a small plan printed "not estimated: a small plan" and then ran for
  2.5 minutes: its levels cannot finish sooner than their operations at their rates, which
  is known without any measurement."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from conftest import ROOT

from asyncbench.config import apply_run_key, load, pace_phases
from asyncbench.run.estimate import (
    MeasuredCost,
    estimate,
    growth,
    paced_seconds,
    phase_operations,
    stream_operations,
)
from asyncbench.run.reuse import reuse
from asyncbench.workloads.profile_store.phases import PHASES, Action

QUICK = ROOT / "benchmarks" / "quick.toml"
PER_OP = 1e-5


def _rates(cfg):  # type: ignore[no-untyped-def]
    kinds = {s.kind for s in cfg.phases if PHASES[s.kind].action is Action.OPERATIONS}
    rate = MeasuredCost(20_000, dict.fromkeys(kinds, PER_OP), {}, 0.0, 100.0)
    return {"memory": {1: [rate]}}, "a fixed rate"


def test_a_reuse_run_is_estimated_without_the_phases_it_skips(tmp_path: Path) -> None:
    full = dataclasses.replace(load(QUICK), profiles=[2_000_000], engines=["memory"], output=tmp_path)
    reused = dataclasses.replace(full, reuse_data=True, clean_data=False)
    est_full = estimate(full, calibrate_fn=_rates)
    est_reused = estimate(reused, calibrate_fn=_rates)
    runs = [
        (spec, ops)
        for spec, ops in phase_operations(full, 2_000_000)
        if reuse.skip_reason(spec, True, full.workload_impl) is None
    ]
    assert any(PHASES[s.kind].rewrites for s in full.phases)  # the store holds updated profiles
    expected = sum(ops for spec, ops in runs if PHASES[spec.kind].action is Action.OPERATIONS)
    grow = growth("memory", 20_000, 2_000_000)
    assert est_reused.seconds == pytest.approx(expected * PER_OP * grow)
    assert est_full.seconds is not None and est_reused.seconds < est_full.seconds / 2
    assert est_reused.operations == sum(ops for _spec, ops in runs)


def test_a_small_sweep_is_estimated_at_its_rates(tmp_path: Path) -> None:
    cfg = dataclasses.replace(load(QUICK), engines=["memory", "sqlite"], output=tmp_path)
    apply_run_key(cfg, "command line", "--rate", "rate", [2_000.0, 8_000.0, 32_000.0])
    pace_phases(cfg)
    est = estimate(cfg, calibrate_fn=lambda c: pytest.fail("a small plan is not calibrated"))
    assert est.seconds is not None and est.at_least
    assert est.seconds == pytest.approx(paced_seconds(cfg, 20_000) * 2)
    assert est.seconds > 60  # the sweep's levels at 2k/s alone take minutes
    assert "a small plan" not in " ".join(est.lines(cfg))


CAPACITY = ROOT / "benchmarks" / "capacity.toml"


def _probe_seconds(cfg, sustained: float) -> float:  # type: ignore[no-untyped-def]
    """The time of one search of ``cfg``'s bounds and range on an engine that passes every
    probe up to ``sustained`` ops/s: each probe's operations at its rate (at most ``sustained``)."""
    import anyio
    import numpy as np

    from asyncbench.run.capacity.capacity import ProbeRun, probe_length, search, start_rate
    from asyncbench.slo import make_slo

    slo = make_slo(cfg.slo)
    low, high = cfg.capacity_range

    async def ideal(number: int, rate: float) -> ProbeRun:
        return ProbeRun(np.zeros(1, dtype=np.int64), rate if rate <= sustained else rate / 2, None)

    found = anyio.run(search, ideal, slo, start_rate(low, high), low, high)
    length = sum(probe_length(slo))
    return sum(length / min(p.rate, sustained) for p in found.probes)


def test_a_capacity_search_is_estimated_from_its_probe_bound_and_length(tmp_path: Path) -> None:
    """A searched phase runs probes, not its stream: at most its probe bound of probes of
    the probe length (the operations), each its operations at its rate on an engine whose
    capacity is its measured closed-loop rate (the time)."""
    from asyncbench.run.capacity.capacity import needed_operations
    from asyncbench.slo import make_slo

    cfg = dataclasses.replace(load(CAPACITY), engines=["memory"], output=tmp_path, profiles=[200_000])
    searched = [s for s in cfg.phases if s.capacity]
    assert [s.kind for s in searched] == ["read_by_id", "lookup_by_email"]
    bound = needed_operations(make_slo(cfg.slo), cfg.capacity_range, 1)
    assert bound == 22 * 11_000  # 11 rates, each failure confirmed by a second probe
    ops = dict((s.name, n) for s, n in phase_operations(cfg, 200_000))
    streams = dict((s.name, n) for s, n in stream_operations(cfg, 200_000))
    assert all(ops[s.name] == streams[s.name] + bound for s in searched)  # the warm-up, then the probes
    est = estimate(cfg, calibrate_fn=_rates)
    grow = growth("memory", 20_000, 200_000)
    closed = sum(n for s, n in phase_operations(cfg, 200_000) if not s.capacity and PHASES[s.kind].action is Action.OPERATIONS)
    probes = _probe_seconds(cfg, 1 / (PER_OP * grow))
    assert probes > 1  # 11_000-operation probes at rates near 100k/s
    warm = sum(streams[s.name] for s in searched)  # each searched phase's stream once, closed loop
    assert est.seconds == pytest.approx((closed + warm) * PER_OP * grow + 2 * probes)
    # and at most: every probe at the range's lowest rates (an engine that sustains only 500/s)
    slowest = _probe_seconds(cfg, cfg.capacity_range[0])
    assert slowest > 60 and est.searches_at_most == pytest.approx(2 * slowest)
    assert any(x.startswith("  capacity searches: up to ") for x in est.lines(cfg))
    # without a measurement, a search takes at least its probes at the highest rates they
    # can take (every probe passing: the ramp up to the range's top)
    assert paced_seconds(cfg, 1_500) == pytest.approx(2 * _probe_seconds(cfg, float("inf")))
