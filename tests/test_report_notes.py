"""The report's captions say what was measured: storage per method and plan, verify's ops."""

from __future__ import annotations

import copy

from conftest import ROOT

from asyncbench.facts import StorageMethod
from asyncbench.report import markdown_report as report
from asyncbench.result import RunResult

FIXTURE = ROOT / "tests" / "fixtures" / "result-sample.json"


def sample() -> RunResult:
    return RunResult.from_json(FIXTURE.read_bytes())


def test_storage_caption_follows_the_plan_and_the_method() -> None:
    run = sample()
    assert "measured after the settle phase" in report.storage_note(run)
    no_settle = copy.deepcopy(run)
    no_settle.phases = [p for p in no_settle.phases if p.kind.kind != "settle"]
    note = report.storage_note(no_settle)
    assert "measured after the last phase (this plan has no settle phase" in note
    assert "after the settle phase" not in note
    server = copy.deepcopy(run)
    server.engines[1].facts.storage_method = StorageMethod.SERVER_ESTIMATE
    note = report.storage_note(server)
    assert f"for {server.engines[1].engine} it is the server's own size estimate" in note
    assert "not bytes on disk" in note


def test_report_explains_the_four_operations_of_verify() -> None:
    md = report.render(sample())
    assert "final (verify) counts 4 operations" in md
    assert "one count of the stored profiles and three point reads" in md


def test_the_verify_note_is_the_runs_own_workloads() -> None:
    """The note on what verify reads is the workload's (Verifies.verify_note): a workload
    without one (YCSB has no verify phase) gets no profile-store sentence in its report."""
    import dataclasses

    md = report.render(dataclasses.replace(sample(), workload="ycsb"))
    assert "three point reads" not in md and "final (verify) counts" not in md
