"""A failed engine's whole traceback is kept (issue 51): the console, the report and the
log's ``detail`` give one line (``IndexError: array index out of range``), which does not
say where it was raised. The log's ``engine_end`` carries a ``traceback`` field, an
isolated engine's child hands it to the parent in its result, and a ``.traceback`` file
beside the report holds each failed engine's, named on the console."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import orjson
import pytest
from conftest import ROOT

from asyncbench.fs.ownership import TRACEBACK_MARKER, is_own_traceback
from asyncbench.report import tracebacks
from asyncbench.result import EngineResult, RunResult, Status

PLUGIN_DIR = Path(__file__).parent / "plugins"
QUICK = ROOT / "benchmarks" / "quick.toml"
RAISING_FRAME = "_lookup_in_a_corrupt_index"  # the plug-in's function that raises


def _run(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``python -m asyncbench ARGS`` in ``tmp_path`` with the raising plug-in registered;
    a run's output and data under ``tmp_path``."""
    if args[0] != "report":
        args = (*args, "--no-progress", "--output", "out", "--data", "data")
    env = {**os.environ, "ASYNCBENCH_ENGINES": "failsmidrun=broken_plugins:FailsMidRun"}
    env["PYTHONPATH"] = os.pathsep.join([str(PLUGIN_DIR), str(ROOT)])
    return subprocess.run(
        [sys.executable, "-m", "asyncbench", *args],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.mark.parametrize("isolate", [True, False], ids=["isolated-child", "in-process"])
def test_a_failed_engines_traceback_reaches_the_log_and_a_file_beside_the_report(
    tmp_path: Path, isolate: bool
) -> None:
    args = [str(QUICK), "--engine", "memory,failsmidrun", "--profiles", "1k"]
    proc = _run(tmp_path, *args, *([] if isolate else ["--no-isolate"]))
    output = proc.stdout + proc.stderr
    assert proc.returncode == 1, output
    (result,) = (tmp_path / "out").glob("profiles-1000-p1/asyncbench-*.json")
    traced = result.with_suffix(".traceback")
    # the file: marker, the failed engine's header and status line, the raising frame
    text = traced.read_text()
    assert text.startswith(TRACEBACK_MARKER + "\n") and is_own_traceback(traced)
    assert "== failsmidrun · repeat 1 · phase " in text, text
    assert "Failed: " in text and "IndexError: array index out of range (uid " in text, text
    assert f"in {RAISING_FRAME}" in text and "Traceback (most recent call last):" in text, text
    assert "== memory" not in text  # an engine that did not fail has no section
    # the result, as the parent collected it (from the child's result file when isolated)
    engines = {e["engine"]: e for e in orjson.loads(result.read_bytes())["engines"]}
    assert RAISING_FRAME in engines["failsmidrun"]["traceback"] and engines["memory"]["traceback"] is None
    # the log's engine_end line, written by the engine's own process
    (log,) = (tmp_path / "out").glob("asyncbench-*.log")
    ends = [d for d in map(orjson.loads, log.read_bytes().splitlines()) if d.get("event") == "engine_end"]
    by_engine = {d["engine"]: d for d in ends}
    assert RAISING_FRAME in by_engine["failsmidrun"]["traceback"], by_engine["failsmidrun"]
    assert by_engine["failsmidrun"]["detail"].startswith("IndexError: ")
    assert by_engine["memory"]["traceback"] is None
    # the console names the file, under the failure line and with the run's other files
    assert f"!! failsmidrun: traceback in {traced.relative_to(tmp_path)}" in output, output
    assert output.count("!! failsmidrun: traceback in") == 1, output  # once, not at every save
    assert f"traceback: {traced.relative_to(tmp_path)}" in output, output


def test_report_writes_the_traceback_file_again_from_the_result(tmp_path: Path) -> None:
    run = _run(tmp_path, str(QUICK), "--engine", "failsmidrun", "--profiles", "1k", "--no-isolate")
    assert run.returncode == 1, run.stdout + run.stderr
    (result,) = (tmp_path / "out").glob("profiles-1000-p1/asyncbench-*.json")
    traced = result.with_suffix(".traceback")
    before = traced.read_text()
    traced.unlink()
    again = _run(tmp_path, "report", str(result.relative_to(tmp_path)))
    assert traced.read_text() == before
    assert f"traceback: {traced.relative_to(tmp_path)}" in again.stdout, again.stdout + again.stderr


def _run_result(*engines: EngineResult) -> RunResult:
    return RunResult(
        name="t",
        started_utc="2026-12-07T00:00:00+00:00",
        profiles=1_000,
        parallelism=1,
        seed=1,
        limit=50,
        batch_size=1_000,
        timeout_seconds=None,
        counts={},
        phases=[],
        source="test",
        engines=list(engines),
    )


def test_no_file_when_no_engine_failed_and_a_section_per_failed_repeat() -> None:
    ok = EngineResult(engine="lsm")
    timed_out = EngineResult(engine="rocksdb")
    timed_out.set_status(Status.TIMED_OUT, "mixed", "900 seconds")
    assert tracebacks.render(_run_result(ok, timed_out)) is None
    killed = EngineResult(engine="sqlite", repeat=1)
    killed.set_status(Status.FAILED, "mixed", "child process killed by SIGKILL")
    try:
        raise ValueError("broken")
    except ValueError as exc:
        raised = EngineResult(engine="sqlite", repeat=0)
        raised.fail_with("load", exc)
    text = tracebacks.render(_run_result(ok, raised, killed))
    assert text is not None
    assert "== sqlite · repeat 1 · phase load\nFailed: load: ValueError: broken\n\nTraceback" in text, text
    assert "== sqlite · repeat 2 · phase mixed\nFailed: mixed: child process killed by SIGKILL\n\n(no traceback" in text
    assert "test_no_file_when_no_engine_failed" in text  # the frame that raised
