"""A phase too short to measure is marked so, in the console, the phase tables and the
report (issue 51, finding 11: a 35 ms phase ranked lsm "2.50x faster" at load 6.4), and
:func:`asyncbench.measure.too_short.too_short` tells the headline which phases to leave
out of its races."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from conftest import ROOT

from asyncbench.measure.too_short import MIN_PHASE_SECONDS, too_short
from asyncbench.result import Capacity, PhaseResult
from asyncbench.workloads import workload


def _phase(kind: str, seconds: float, **more: object) -> PhaseResult:
    k = workload("profile_store").phases[kind]
    return dataclasses.replace(PhaseResult(0, kind, k, k.action, k.group, 1000, seconds), **more)  # type: ignore[arg-type]


def test_a_phase_under_the_floor_is_too_short_and_one_over_it_is_not() -> None:
    assert MIN_PHASE_SECONDS == 0.1
    assert too_short(_phase("read_by_id", 0.035)) and too_short(_phase("insert", 0.0999))
    assert not too_short(_phase("read_by_id", 0.1)) and not too_short(_phase("read_by_id", 2.0))
    assert too_short(_phase("settle", 0.001))  # a maintenance phase is raced too (its group)


def test_what_is_not_a_timed_race_is_never_too_short() -> None:
    assert not too_short(_phase("stabilize", 0.0, skipped=True))
    assert not too_short(_phase("verify", 0.001))
    assert not too_short(_phase("read_by_id", 0.01, capacity=Capacity.__new__(Capacity)))


def test_a_short_run_says_so_in_the_console_and_the_report(tmp_path: Path, run_cli) -> None:
    plan = tmp_path / "a.toml"  # 400 records, 1000 operations: every phase ends in milliseconds
    plan.write_text((ROOT / "benchmarks" / "ycsb" / "workloada-smoke.toml").read_text().replace("recordcount = 1000", "recordcount = 400"))
    code, (result,), output = run_cli(str(plan), "--engine", "memory,sqlite", "--no-isolate", "--yes")
    assert code == 0, output
    times = {(e["engine"], p["name"]): p["seconds"] for e in result["engines"] for p in e["phases"]}
    assert all(s < MIN_PHASE_SECONDS for (_, name), s in times.items() if name == "load"), times  # the premise
    memory = output[output.index("== memory") : output.index("== sqlite")]
    assert "too short to measure (under 0.1 s, not compared): load" in memory, memory
    (report,) = (tmp_path / "out" / "records-400-p1").glob("asyncbench-*.md")
    text = report.read_text()
    assert "| load | 400 | " in text and "ms (too short to measure) |" in text
    assert "/s (too short to measure) |" in text  # the throughput-by-phase table, engine by engine
    assert "> Too short to measure: a phase under 0.1 s" in text
