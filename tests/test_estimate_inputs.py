"""The size estimate reads earlier results as inputs: only regular files of bounded size
that parse as the result model; anything else is skipped with a warning.

Issue 23 item 10: a FIFO named like a result hung the run before it started, a dangling
symlink or a symlink loop gave a traceback, a result with ``profiles: 0`` a
ZeroDivisionError, and a symlink to an endless device was read without bound."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import orjson
from cli_process import QUICK, ROOT

from asyncbench.cli.main import main


def _plant(run_dir: Path, real_result: Path) -> dict[str, str]:
    """Result-named entries the estimate must skip, and the reason each warning gives."""
    os.mkfifo(run_dir / "asyncbench-20990101T000000.000Z-fifo.json")
    (run_dir / "asyncbench-20990101T000000.000Z-dangling.json").symlink_to(run_dir / "gone.json")
    loop = run_dir / "asyncbench-20990101T000000.000Z-loop.json"
    loop.symlink_to(loop)
    (run_dir / "asyncbench-20990101T000000.000Z-zero.json").symlink_to("/dev/zero")
    doc = orjson.loads(real_result.read_bytes())
    doc["profiles"] = 0
    (run_dir / "asyncbench-20990101T000000.000Z-noprofiles.json").write_bytes(orjson.dumps(doc))
    (run_dir / "asyncbench-20990101T000000.000Z-garbage.json").write_bytes(b'{"schema": 2, "engines": [1]}')
    return {
        "fifo": "not a regular file (a FIFO)",
        "dangling": "",
        "loop": "",
        "zero": "not a regular file (a character device)",
        "noprofiles": "result.profiles: 0 is below 1",  # the result model refuses it on load
        "garbage": "not a result asyncbench can read",
    }


def test_special_and_damaged_earlier_results_are_skipped_with_a_warning(tmp_path: Path) -> None:
    out, data = tmp_path / "out", tmp_path / "data"
    args = [QUICK, "--engine", "memory", "--profiles", "1k", "--no-isolate", "--no-progress", "--yes"]
    args += ["--output", str(out), "--data", str(data)]
    assert main(args) == 0
    run_dir = out / "profiles-1000-p1"
    (real,) = run_dir.glob("asyncbench-*.json")
    reasons = _plant(run_dir, real)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(
        [sys.executable, "-m", "asyncbench", *args],
        capture_output=True,
        text=True,
        timeout=240,
        env=env,
        cwd=ROOT,
    )
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output
    assert "Traceback" not in output
    for name, reason in reasons.items():
        line = next((ln for ln in output.splitlines() if f"-{name}.json" in ln), None)
        assert line is not None and "warning: skipped" in line and reason in line, (name, output)
    assert "scaled from the last runs of plan" in output  # the real result is still used
