"""SIGINT / SIGTERM during a run: partial report written, exit code 130."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import orjson
import pytest
from conftest import ROOT, status_line

TESTS = str(Path(__file__).parent)


def _wait_for(predicate, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.05)
    raise AssertionError("condition not reached in time")


@pytest.mark.parametrize(
    ("signum", "isolate"),
    [(signal.SIGINT, "--no-isolate"), (signal.SIGTERM, "--no-isolate"), (signal.SIGINT, "--isolate")],
    ids=["sigint", "sigterm", "sigint-isolated"],
)
def test_signal_writes_partial_report_and_exits_130(tmp_path: Path, signum: int, isolate: str) -> None:
    out, log = tmp_path / "out", tmp_path / "run.log"
    env = {
        **os.environ,
        "ASYNCBENCH_ENGINES": "slow=engines_for_tests:SlowEngine",
        "PYTHONPATH": TESTS + os.pathsep + os.environ.get("PYTHONPATH", ""),
    }
    cmd = [
        sys.executable,
        "-m",
        "asyncbench",
        str(ROOT / "benchmarks" / "quick.toml"),
        "--engine",
        "slow,memory",
    ]
    cmd += [
        "--profiles",
        "2k",
        "--output",
        str(out),
        "--data",
        str(tmp_path / "data"),
        "--log-file",
        str(log),
        isolate,
    ]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, cwd=ROOT)
    try:
        # The slow engine sleeps in its first read batch: wait until that phase started.
        _wait_for(lambda: log.exists() and b'"phase":"read by user id","kind":"read_by_id"' in log.read_bytes())
        proc.send_signal(signum)
        stdout, _ = proc.communicate(timeout=90)
    finally:
        proc.kill()
    assert proc.returncode == 130, stdout.decode()
    (result_file,) = out.glob("profiles-2000-p1/asyncbench-*.json")
    run = orjson.loads(result_file.read_bytes())
    name = signal.Signals(signum).name
    assert run["interrupted"] == f"interrupted by {name}"
    slow, memory = run["engines"]  # memory never started: listed as such (issue 39)
    assert status_line(slow).startswith("Interrupted during read by user id")
    assert [p["name"] for p in slow["phases"]] == ["insert profiles", "pre-read stabilization"]
    assert memory["engine"] == "memory" and memory["phases"] == []
    assert status_line(memory) == "Not started: the run was interrupted before it"
    md = result_file.with_suffix(".md").read_text()
    assert f"Partial report: interrupted by {name}" in md
    assert "Not started: the run was interrupted before it" in md
    assert "== memory · not started: the run was interrupted before it" in stdout.decode()
