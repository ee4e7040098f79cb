"""The README's example engine, registered the way a user registers one, reproduces the
spec's 17 reference checksums through the real CLI (isolated child included)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import orjson
from conftest import REFERENCE_PLAN, ROOT, status_line

from workloads.profile_store.reference import REFERENCE_CHECKSUMS


def test_example_engine_reproduces_the_reference_checksums(tmp_path: Path) -> None:
    env = {**os.environ, "ASYNCBENCH_ENGINES": "mine=examples.sorted_list_engine:SortedListEngine"}
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "asyncbench",
            str(REFERENCE_PLAN),
            "--engine",
            "mine",
            "--no-progress",
            "--output",
            str(tmp_path / "out"),
            "--data",
            str(tmp_path / "data"),
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (result,) = (tmp_path / "out").glob("profiles-*/asyncbench-*.json")
    (engine,) = orjson.loads(result.read_bytes())["engines"]
    assert status_line(engine) == "ok"
    assert {p["name"]: p["checksum"] for p in engine["phases"] if p["checksum"]} == REFERENCE_CHECKSUMS
