"""Isolated runs: each engine in a child process; a crashed child costs only its own row."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import ROOT, status_line

from asyncbench import engines

QUICK = str(ROOT / "benchmarks" / "quick.toml")
TESTS = str(Path(__file__).parent)


@pytest.fixture
def crash_engine(monkeypatch: pytest.MonkeyPatch) -> None:
    target = "crashing=engines_for_tests:CrashingEngine"
    monkeypatch.setenv("ASYNCBENCH_ENGINES", target)
    monkeypatch.setenv("PYTHONPATH", TESTS)
    monkeypatch.setitem(engines.REGISTRY, "crashing", "engines_for_tests:CrashingEngine")


def test_killed_child_yields_failed_row_and_others_complete(crash_engine, run_cli) -> None:
    code, results, output = run_cli(QUICK, "--engine", "crashing,memory", "--profiles", "2k", "--isolate")
    assert code == 1, output
    crashed, memory = results[0]["engines"]
    assert status_line(crashed) == "Failed: lookup by email: child process killed by SIGKILL"
    assert [p["name"] for p in crashed["phases"]][-1] == "read by user id"
    assert status_line(memory) == "ok" and len([p for p in memory["phases"] if p["checksum"]]) == 17


def test_isolated_and_in_process_runs_agree(run_cli) -> None:
    code, results, _ = run_cli(QUICK, "--engine", "memory", "--profiles", "3k", "--isolate")
    assert code == 0
    isolated = {p["name"]: p["checksum"] for p in results[0]["engines"][0]["phases"]}
    code, results, _ = run_cli(QUICK, "--engine", "memory", "--profiles", "3k", "--no-isolate")
    assert code == 0
    assert len(results) == 2
    in_process = {p["name"]: p["checksum"] for p in results[-1]["engines"][0]["phases"]}
    assert isolated == in_process
    # The child measured its own memory.
    assert results[0]["engines"][0]["peak_rss_bytes"] > 10_000_000


def test_a_result_the_parent_cannot_read_is_named_as_such(tmp_path: Path) -> None:
    """A child that completed and wrote a result the parent's model refuses (a capacity
    interval below zero did so) failed its row as "child process ended without a
    result": the reason the parent had (in a note nobody sees on the console) must be
    the row's reason."""
    from asyncbench.config import BenchConfig
    from asyncbench.result import EngineResult, Status
    from asyncbench.run.isolated.isolation import ChildEngineRun

    run = ChildEngineRun.__new__(ChildEngineRun)  # only the result collection is exercised
    run.cfg = BenchConfig(source="plan.toml")  # its workload's phase kinds read the child's result
    run.result = EngineResult(engine="lsm", status=Status.RUNNING)
    bad = tmp_path / "result.json"
    bad.write_text('{"engine": "lsm", "status": "ok", "phases": "not a list"}')
    run._collect(bad, 0, None)
    assert run.result.status is Status.FAILED
    assert "unreadable" in run.result.status_text(), run.result.status_text()
