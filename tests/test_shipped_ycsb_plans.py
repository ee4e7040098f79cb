"""The shipped YCSB plans (issue 55): ``benchmarks/ycsb/workload{a..f}.toml`` at a size that
measures something (100_000 records; 1_000_000 operations, E 10_000 of its long scans), the 1_000
operation ones kept only as smoke plans named so, and ``-P workloadb`` (YCSB's name for
workload B) the measuring one."""

from __future__ import annotations

import tomllib

import pytest
from conftest import ROOT

from asyncbench.config.native import resolve_plan

PLANS = ROOT / "benchmarks" / "ycsb"


@pytest.mark.parametrize("letter", "abcdef")
def test_each_workload_ships_at_a_measuring_size_beside_its_smoke_plan(letter: str) -> None:
    measuring = tomllib.loads((PLANS / f"workload{letter}.toml").read_text())
    smoke = tomllib.loads((PLANS / f"workload{letter}-smoke.toml").read_text())
    assert smoke["ycsb"]["recordcount"] == 1000 and smoke["phase"][1]["operations"] == 1000
    assert measuring["ycsb"]["recordcount"] == 100_000
    assert measuring["phase"][1]["operations"] == (10_000 if letter == "e" else 1_000_000)
    # the same workload otherwise: only the two sizes differ
    measuring["ycsb"]["recordcount"] = measuring["phase"][1]["operations"] = 1000
    assert measuring == smoke


def test_p_workloadb_is_the_measuring_plan() -> None:
    assert resolve_plan("workloadb").resolve() == (PLANS / "workloadb.toml").resolve()
    assert resolve_plan("workloadb-smoke").resolve() == (PLANS / "workloadb-smoke.toml").resolve()
