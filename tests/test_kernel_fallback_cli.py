"""A run on the pure-Python kernels says so on the console and in the report's Correctness
section, and ``--require-accelerator`` refuses it before anything is created."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from conftest import REFERENCE_PLAN, ROOT


def run(tmp_path: Path, *flags: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "ASYNCBENCH_NO_KERNELS": "1"}
    cmd = [
        sys.executable,
        "-m",
        "asyncbench",
        str(REFERENCE_PLAN),
        "--engine",
        "memory",
        "--no-progress",
        "--no-isolate",
        "--output",
        str(tmp_path / "out"),
        "--data",
        str(tmp_path / "data"),
        *flags,
    ]
    return subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)


def test_fallback_run_is_loud(tmp_path: Path) -> None:
    proc = run(tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "WARNING: pure-Python fallback" in proc.stdout
    (md,) = (tmp_path / "out").glob("profiles-*/asyncbench-*.md")
    correctness = md.read_text().split("## Correctness", 1)[1].split("##", 1)[0]
    assert "pure-Python fallback" in correctness
    assert "pure-Python fallback" in md.read_text().split("## Environment", 1)[1]


def test_require_accelerator_refuses_the_fallback(tmp_path: Path) -> None:
    proc = run(tmp_path, "--require-accelerator")
    assert proc.returncode == 2
    assert "--require-accelerator" in proc.stderr and "pure-Python fallback" in proc.stderr
    assert not (tmp_path / "out").exists() and not (tmp_path / "data").exists()
