"""The estimate scales only from earlier runs paced as the run it estimates (issue 51,
finding 9: a closed-loop ``quick.toml --repeat 3`` was estimated "about 5 min (scaled from
the last runs of plan 'profile-store-quick')" from a ``--rate 2k,8k,32k`` sweep; it took
1 min 54 s). A paced run never calibrates an unpaced one, nor the other way round, and
only the same rates match."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
from conftest import ROOT

from asyncbench.config import BenchConfig, apply_run_key, load, pace_phases
from asyncbench.rate import Arrivals
from asyncbench.result import OpenLoop, RunResult
from asyncbench.run.estimate import from_history
from asyncbench.workload import Action

FIXTURE = Path(__file__).parent / "fixtures" / "result-sample.json"  # a profile-store-quick result
QUICK = ROOT / "benchmarks" / "quick.toml"


def _earlier(out: Path, rate: float | None) -> None:
    """The fixture's run as the only earlier result under ``out``, its operation phases
    but the insert at ``rate`` (as ``--rate`` paces them; None: closed loop)."""
    run = RunResult.from_json(FIXTURE.read_bytes())
    for e in run.engines:
        for p in e.phases:
            if rate is not None and p.action is Action.OPERATIONS and p.kind.kind != "insert":
                p.open_loop = OpenLoop(rate=rate, arrivals=Arrivals.UNIFORM)
    where = out / f"profiles-{run.profiles}-p{run.parallelism}"
    where.mkdir(parents=True)
    (where / "asyncbench-20260101T000000.000Z.json").write_bytes(copy.deepcopy(run).to_json())


def _plan(out: Path, rate: list[float]) -> BenchConfig:
    cfg = load(QUICK)
    cfg.output, cfg.engines = out, ["memory"]
    if rate:
        apply_run_key(cfg, "command line", "--rate", "rate", rate)
        pace_phases(cfg)
    return cfg


@pytest.mark.parametrize(
    ("earlier", "planned", "used"),
    [
        (None, [], True),  # closed loop from closed loop
        (2_000.0, [2_000.0], True),  # the same rate
        (2_000.0, [], False),  # a paced run never estimates a closed-loop one
        (None, [2_000.0], False),  # nor a closed-loop run a paced one
        (8_000.0, [2_000.0], False),  # other rates: other times per operation
    ],
)
def test_only_runs_paced_as_this_one_are_scaled_from(
    tmp_path: Path, earlier: float | None, planned: list[float], used: bool
) -> None:
    _earlier(tmp_path / "out", earlier)
    found = from_history(_plan(tmp_path / "out", planned))
    assert (found is not None) == used
    if found is not None:
        rates, basis = found
        assert "memory" in rates
        assert basis.startswith("scaled from the last runs of plan 'profile-store-quick'")
        assert ("at the same target rates as this run" if planned else "closed loop as this run") in basis


def test_a_sweep_matches_a_sweep_of_the_same_levels_only(tmp_path: Path) -> None:
    """A sweep's levels are one phase kind at several rates: a sweep at other levels, or one
    level of it, is another pacing."""
    run = RunResult.from_json(FIXTURE.read_bytes())
    reads = [i for i, p in enumerate(run.phases) if p.kind.kind == "read_by_id"]
    levels = {i: len(run.phases) + n for n, i in enumerate(reads)}  # each read's 8k level, as a plan phase of its own
    run.phases += [copy.deepcopy(run.phases[i]) for i in reads]
    for e in run.engines:
        for i in reads:
            p = e.phase_at(i)
            level = copy.deepcopy(p)
            p.open_loop = OpenLoop(rate=2_000.0, arrivals=Arrivals.UNIFORM)
            level.index, level.skipped = levels[i], True  # skipped above a dipped level, its rate kept
            level.open_loop = OpenLoop(rate=8_000.0, arrivals=Arrivals.UNIFORM)
            e.phases.append(level)
    out = tmp_path / "out" / f"profiles-{run.profiles}-p{run.parallelism}"
    out.mkdir(parents=True)
    (out / "asyncbench-20260101T000000.000Z.json").write_bytes(run.to_json())
    cfg = load(QUICK)
    cfg.output, cfg.engines = tmp_path / "out", ["memory"]
    cfg.phases = [p for p in cfg.phases if p.kind in ("insert", "read_by_id")]
    apply_run_key(cfg, "command line", "--rate", "rate", [2_000.0, 8_000.0])
    pace_phases(cfg)
    warnings: list[str] = []
    assert from_history(cfg, warnings) is not None, warnings
    cfg = load(QUICK)
    cfg.output, cfg.engines = tmp_path / "out", ["memory"]
    cfg.phases = [p for p in cfg.phases if p.kind in ("insert", "read_by_id")]
    apply_run_key(cfg, "command line", "--rate", "rate", [2_000.0])
    pace_phases(cfg)
    assert from_history(cfg) is None
