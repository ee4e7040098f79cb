"""Phases are compared by identity (their position in the plan), never by display name,
and display names cannot collide.

Issue item 18: two phases whose display names collided (an explicit name equal to
another phase's automatic one) were compared as one, so a checksum mismatch in the second
was hidden and the run exited 0."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import status_line

from asyncbench import engines
from asyncbench.measure.correctness import judge
from asyncbench.result import EngineResult, PhaseResult, PlanPhase, RunResult
from asyncbench.workloads.profile_store.phases import PHASES, Action, Group

HEAD = '[run]\nprofiles = 2000\n[[phase]]\nkind = "insert"\n'


@pytest.fixture
def late_wrong(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(engines.REGISTRY, "latewrong", "engines_for_tests:LateWrongEngine")


def _run(tmp_path: Path, run_cli, body: str):  # noqa: ANN202 - (code, results, output)
    plan = tmp_path / "plan.toml"
    plan.write_text(HEAD + body)
    return run_cli(str(plan), "--engine", "memory,latewrong", "--no-isolate")


def test_colliding_display_names_cannot_hide_a_mismatch(tmp_path: Path, run_cli, late_wrong) -> None:
    """The old renaming gave the third phase the second's explicit name: judged by name,
    its mismatch was compared as the second phase's agreement. Now the plan is refused."""
    body = (
        '[[phase]]\nkind = "lookup_by_email"\ncount = 500\nname = "check (2)"\n'  # agrees
        '[[phase]]\nkind = "read_by_id"\nname = "check"\n'
        '[[phase]]\nkind = "lookup_by_email"\nname = "check"\n'  # the engine is wrong here
    )
    code, results, output = _run(tmp_path, run_cli, body)
    assert code != 0, output  # never "all agree"
    assert code == 2 and "already the name of another phase" in output
    assert results == []


def test_a_mismatch_in_a_repeated_phase_is_found(tmp_path: Path, run_cli, late_wrong) -> None:
    body = '[[phase]]\nkind = "lookup_by_email"\ncount = 500\n[[phase]]\nkind = "lookup_by_email"\n'
    code, results, output = _run(tmp_path, run_cli, body)
    assert code == 1, output
    assert "CHECKSUM MISMATCH: engine latewrong, phase 'lookup by email (2)' (#3)" in output
    assert "phase 'lookup by email' " not in output  # the first one agreed
    assert [status_line(e) for e in results[0]["engines"]] == ["ok", "ok"]


def test_judge_matches_phases_by_position_not_by_name() -> None:
    def phase(index: int, checksum: str) -> PhaseResult:
        return PhaseResult(index, "same name", PHASES["read_by_id"], Action.OPERATIONS, Group.LOOKUP, 10, 0.1, checksum)

    run = RunResult(
        name="r",
        started_utc="x",
        profiles=10,
        parallelism=1,
        seed=1,
        limit=50,
        batch_size=10,
        timeout_seconds=1.0,
        counts={},
        phases=[PlanPhase(PHASES["read_by_id"], "same name")] * 2,
        source="p.toml",
        engines=[
            EngineResult("a", phases=[phase(0, "AAAA"), phase(1, "BBBB")]),
            EngineResult("b", phases=[phase(0, "AAAA"), phase(1, "CCCC")]),
        ],
    )
    verdict = judge(run)
    assert not verdict.ok
    assert any("(#2)" in f for f in verdict.failures), verdict.failures
