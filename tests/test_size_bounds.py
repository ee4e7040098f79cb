"""Issue 52 item 3: sizes with no upper bound. YCSB's ``fieldcount``, ``fieldlength`` and
``zeropadding`` took 10**9 / 10**6 in files and plans and the run failed with MemoryError
(or grew past 2.9 GB until killed); ``plan --from-ycsb`` converted ``recordcount`` 10**30
that the run then refused; ``latest`` with ``--profiles 1`` failed after the load. One
table of bounds (``asyncbench/limits.py``) is checked by the converter and the plan reader
alike, and the size the run will use is checked with the plan's phases, before anything
runs: exit 2, file, key and problem named, nothing created."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import ROOT

from asyncbench.cli.main import main

WORKLOADD = ROOT / "benchmarks" / "ycsb" / "workloadd-smoke.toml"
BASE = "recordcount=1000\noperationcount=100\nworkload=site.ycsb.workloads.CoreWorkload\n"


@pytest.mark.parametrize(
    ("extra", "key", "problem"),
    [
        ("fieldcount=1000000000\n", "fieldcount", "must be between 1 and 1_024, got 1_000_000_000"),
        ("fieldlength=1000000\n", "fieldlength", "more than the 1_048_576 a record may hold"),
        ("zeropadding=1000000\n", "zeropadding", "must be between 1 and 64"),
        ("recordcount=" + "1" + "0" * 30 + "\n", "recordcount", "must be between 1 and 1_000_000_000"),
        ("operationcount=" + "9" * 5000 + "\n", "operationcount", "(5000 digits)"),
    ],
)
def test_the_converter_refuses_sizes_past_the_bounds(tmp_path: Path, capfd, extra: str, key: str, problem: str) -> None:
    path = tmp_path / "workloadx"
    path.write_text("".join(line for line in BASE.splitlines(keepends=True) if not line.startswith(f"{key}=")) + extra)
    assert main(["plan", "--from-ycsb", str(path)]) == 2
    out = capfd.readouterr()
    assert out.out == "" and f"{path}: key {key!r}" in out.err and problem in out.err, out.err


@pytest.mark.parametrize(
    ("old", "new", "key", "problem"),
    [
        ("fieldcount = 10", "fieldcount = 1_000_000_000", "ycsb.fieldcount", "must be between 1 and 1_024"),
        ("fieldlength = 100", "fieldlength = 1_000_000", "ycsb.fieldlength", "more than the 1_048_576"),
        ("zeropadding = 1", "zeropadding = 1_000_000", "ycsb.zeropadding", "must be between 1 and 64"),
    ],
)
def test_the_plan_reader_refuses_the_same_sizes_before_anything_runs(
    tmp_path: Path, capfd, old: str, new: str, key: str, problem: str
) -> None:
    plan = tmp_path / "plan.toml"
    plan.write_text(WORKLOADD.read_text().replace(old, new))
    out_dir, data = tmp_path / "out", tmp_path / "data"
    code = main([str(plan), "--engine", "memory", "--output", str(out_dir), "--data", str(data), "--yes"])
    assert code == 2
    err = capfd.readouterr().err
    assert str(plan) in err and key in err and problem in err, err
    assert not out_dir.exists() and not data.exists()


def test_latest_with_one_record_from_the_command_line_is_refused_before_the_load(tmp_path: Path, capfd) -> None:
    out_dir, data = tmp_path / "out", tmp_path / "data"
    code = main(
        [str(WORKLOADD), "--engine", "memory", "--profiles", "1", "--output", str(out_dir), "--data", str(data), "--yes"]
    )
    assert code == 2
    err = capfd.readouterr().err
    assert "the latest distribution needs at least 2 records (at 1 records)" in err, err
    assert not out_dir.exists() and not data.exists()
