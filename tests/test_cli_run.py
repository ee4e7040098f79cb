"""End-to-end runs through the CLI: outputs, logs, failures, timeouts, mismatches."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from conftest import REFERENCE_PLAN, ROOT, status_line

from asyncbench import engines
from asyncbench.cli.main import main

QUICK = str(ROOT / "benchmarks" / "quick.toml")


@pytest.fixture
def test_engines(monkeypatch: pytest.MonkeyPatch) -> None:
    """Register the broken engines here and, via the environment, in child processes."""
    pairs = [("faulty", "FaultyEngine"), ("wrong", "WrongEngine"), ("slow", "SlowEngine")]
    for name, cls in pairs:
        monkeypatch.setitem(engines.REGISTRY, name, f"engines_for_tests:{cls}")
    monkeypatch.setenv("ASYNCBENCH_ENGINES", ",".join(f"{n}=engines_for_tests:{c}" for n, c in pairs))
    monkeypatch.setenv("PYTHONPATH", str(Path(__file__).parent))


def test_quick_run_writes_json_markdown_and_log(tmp_path: Path, run_cli) -> None:
    log = tmp_path / "run.log"
    code, results, output = run_cli(QUICK, "--engine", "memory", "--profiles", "2k", "--log-file", str(log))
    assert code == 0, output
    (run,) = results
    assert run["profiles"] == 2000 and run["counts"]["queries"] == 2000
    md = next((tmp_path / "out" / "profiles-2000-p1").glob("asyncbench-*.md")).read_text()
    for section in (
        "## Total By Engine",
        "## Correctness",
        "## Write Readiness",
        "## Phase Results",
        "## Configuration",
        "## Environment",
        "## Engine Settings",
        "## Durability Settings",
        "## Interpretation Notes",
    ):
        assert section in md
    assert "| 2_000 |" in md  # reference number style
    events = [orjson.loads(line) for line in log.read_bytes().splitlines()]
    kinds = {e["event"] for e in events}
    assert {
        "run_start",
        "engine_start",
        "phase_start",
        "batch",
        "phase_end",
        "engine_end",
        "run_end",
    } <= kinds
    batches = [e for e in events if e["event"] == "batch" and e["phase"] == "read by user id"]
    assert len(batches) == 2 and batches[-1]["done"] == 2000
    assert {"engine", "phase", "batch", "ops", "elapsed_ms", "ops_per_s"} <= set(batches[0])
    # One human line per phase on the console.
    assert "read by user id" in output and "/s" in output


def test_several_profile_counts_write_one_report_each(run_cli) -> None:
    code, results, _ = run_cli(QUICK, "--engine", "memory", "--profiles", "1k,2k")
    assert code == 0
    assert [r["profiles"] for r in results] == [1000, 2000]


def test_engine_fault_keeps_completed_phases_and_other_engines_run(test_engines, run_cli) -> None:
    code, results, output = run_cli(QUICK, "--engine", "faulty,memory", "--profiles", "4k")
    assert code == 1
    faulty, memory = results[0]["engines"]
    assert status_line(faulty) == "Failed: query country/status: OSError: simulated device error"
    assert [p["name"] for p in faulty["phases"]][-1] == "scan country/status index"
    assert status_line(memory) == "ok" and memory["phases"][-1]["action"] == "verify"
    assert "Failed: query country/status" in output


def test_timeout_records_interrupted_phase_and_writes_partial_report(test_engines, run_cli, tmp_path) -> None:
    code, results, _ = run_cli(QUICK, "--engine", "slow", "--profiles", "2k", "--timeout-seconds", "1")
    assert code == 1
    (er,) = results[0]["engines"]
    assert status_line(er) == "Timed out after 1 seconds; interrupted: read by user id"
    assert [p["name"] for p in er["phases"]] == ["insert profiles", "pre-read stabilization"]
    md = next((tmp_path / "out" / "profiles-2000-p1").glob("*.md")).read_text()
    assert "Timed out after 1 seconds; interrupted: read by user id" in md


def test_checksum_mismatch_names_engine_and_phase(test_engines, run_cli, tmp_path) -> None:
    code, results, output = run_cli(str(REFERENCE_PLAN), "--engine", "memory,wrong")
    assert code == 1
    line = "CHECKSUM MISMATCH: engine wrong, phase 'lookup by email'"
    assert line in output
    md = next((tmp_path / "out" / "profiles-10000-p1").glob("*.md")).read_text()
    assert line in md


def test_report_command_rerenders_from_json(run_cli, tmp_path) -> None:
    code, _, _ = run_cli(QUICK, "--engine", "memory", "--profiles", "1k", charts=True)
    assert code == 0
    json_path = next((tmp_path / "out" / "profiles-1000-p1").glob("*.json"))
    md_path = json_path.with_suffix(".md")
    original = md_path.read_text()
    md_path.unlink()
    assert main(["report", str(json_path)]) == 0
    assert md_path.read_text() == original


def test_report_command_rejects_non_result(tmp_path, capsys) -> None:
    bogus = tmp_path / "x.json"
    bogus.write_text('{"hello": 1}')
    assert main(["report", str(bogus)]) == 2
    assert "not an asyncbench result" in capsys.readouterr().err


def test_missing_engine_library_names_the_package(monkeypatch: pytest.MonkeyPatch, run_cli) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "rocksdict", None)  # import rocksdict -> ModuleNotFoundError
    monkeypatch.delitem(sys.modules, "asyncbench.engines.rocksdb", raising=False)
    code, results, output = run_cli(QUICK, "--engine", "rocksdb,memory", "--profiles", "1k", "--no-isolate")
    assert code == 1
    rocks, memory = results[0]["engines"]
    assert (
        status_line(rocks)
        == "Failed: open: engine 'rocksdb' needs the Python package 'rocksdict': pip install rocksdict"
    )
    assert status_line(memory) == "ok"


def test_engine_skipped_by_all_is_not_a_failure(monkeypatch: pytest.MonkeyPatch, run_cli) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "asyncmy", None)
    monkeypatch.delitem(sys.modules, "asyncbench.engines.mysql", raising=False)
    monkeypatch.setattr(engines, "ALL_ENGINES", ("mysql", "memory"))
    code, results, output = run_cli(QUICK, "--engine", "all", "--profiles", "1k", "--no-isolate")
    assert code == 0, output
    mysql, memory = results[0]["engines"]
    assert status_line(mysql).startswith("Skipped: engine 'mysql' needs the Python package 'asyncmy'")


def test_skipped_engine_appears_once_in_a_one_line_note(monkeypatch: pytest.MonkeyPatch, run_cli, tmp_path) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "asyncmy", None)
    monkeypatch.delitem(sys.modules, "asyncbench.engines.mysql", raising=False)
    monkeypatch.setattr(engines, "ALL_ENGINES", ("mysql", "memory"))
    code, _, output = run_cli(QUICK, "--engine", "all", "--profiles", "1k", "--no-isolate", charts=True)
    assert code == 0, output
    assert output.count("needs the Python package 'asyncmy'") == 1, output
    folder = tmp_path / "out" / "profiles-1000-p1"
    md = next(folder.glob("*.md")).read_text()
    mysql_lines = [line for line in md.splitlines() if "mysql" in line]
    assert mysql_lines == [
        "Skipped (not available here): mysql: engine 'mysql' needs the Python package 'asyncmy': pip install asyncmy."
    ]
    svgs = list(folder.glob("*.svg"))
    assert svgs
    for svg in svgs:
        text = svg.read_text()
        assert "mysql" not in text and "not run" not in text, svg.name
        assert "memory" in text, svg.name  # the SVG text (comments of the drawn glyphs) names engines
