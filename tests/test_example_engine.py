"""docs/extending.md's example engines (a key/value one and a SQL one), registered the way a user
registers one, reproduce the spec's 17 reference checksums through the real CLI (isolated
child included)."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from conftest import REFERENCE_PLAN, run_asyncbench, status_line

from asyncbench.workloads.profile_store.reference import REFERENCE_CHECKSUMS


@pytest.mark.parametrize(
    "target", ["examples.sorted_list_engine:SortedListEngine", "examples.sqlite_memory_engine:SqliteMemoryEngine"]
)
def test_example_engine_reproduces_the_reference_checksums(tmp_path: Path, target: str) -> None:
    proc = run_asyncbench(tmp_path, str(REFERENCE_PLAN), "--engine", "mine", engines=f"mine={target}")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (result,) = (tmp_path / "out").glob("profiles-*/asyncbench-*.json")
    (engine,) = orjson.loads(result.read_bytes())["engines"]
    assert status_line(engine) == "ok"
    assert {p["name"]: p["checksum"] for p in engine["phases"] if p["checksum"]} == REFERENCE_CHECKSUMS
