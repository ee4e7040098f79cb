"""An engine's own process imports the installed package, never the working directory's
files: ``python -m`` puts the working directory first on ``sys.path``, so a run started in
a folder holding a file named like a module the child imports (here ``orjson.py``) ran that
file in every isolated engine's process (asyncbench/run/isolated/child_command.py: ``-P``)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import orjson
from conftest import ROOT

SHADOW = 'raise RuntimeError("the working directory\'s orjson.py was imported")\n'


def test_an_isolated_engine_ignores_the_working_directorys_modules(tmp_path: Path) -> None:
    (tmp_path / "orjson.py").write_text(SHADOW)
    script = Path(sys.executable).parent / "asyncbench"  # the console script: its own path first, not the cwd
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "ASYNCBENCH_ENGINES")}
    cmd = [str(script), str(ROOT / "benchmarks" / "quick.toml"), "--records", "2000", "--engine", "memory"]
    cmd += ["--yes", "--no-progress", "--output", "out", "--data", "data"]
    proc = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    (result,) = (tmp_path / "out").glob("profiles-*/asyncbench-*.json")
    doc = orjson.loads(result.read_bytes())
    assert doc["isolated"] is True and doc["engines"][0]["status"] == "ok"
