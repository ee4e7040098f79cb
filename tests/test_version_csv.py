"""--version prints the package version; --csv writes one row per engine x phase."""

from __future__ import annotations

import csv
import tomllib
from pathlib import Path

import pytest
from conftest import REFERENCE_PLAN, ROOT

import asyncbench
from asyncbench.cli.main import main
from asyncbench.report.csv_export import COLUMNS
from asyncbench.workloads.profile_store.reference import REFERENCE_CHECKSUMS


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["--version"])
    assert exc.value.code == 0
    assert capsys.readouterr().out.strip() == f"asyncbench {asyncbench.__version__}"
    assert (
        tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"] == asyncbench.__version__
    )


def test_csv_rows(tmp_path: Path) -> None:
    out = tmp_path / "out"
    code = main(
        [
            str(REFERENCE_PLAN),
            "--engine",
            "memory",
            "--no-isolate",
            "--no-progress",
            "--repeat",
            "2",
            "--csv",
            "--output",
            str(out),
            "--data",
            str(tmp_path / "d"),
        ]
    )
    assert code == 0
    # the phase table; the per-second series is written beside it as *-series.csv
    series, path = sorted(out.glob("profiles-*/asyncbench-*.csv"))  # "-series.csv" sorts first
    assert series.name == path.name.removesuffix(".csv") + "-series.csv"
    rows = list(csv.DictReader(path.open()))
    assert tuple(rows[0]) == COLUMNS
    assert {r["phase"]: r["checksum"] for r in rows} == REFERENCE_CHECKSUMS
    read = next(r for r in rows if r["phase"] == "read by user id")
    assert read["repeats"] == "2" and float(read["ops_per_s_min"]) <= float(read["ops_per_s_median"])
    assert int(read["latency_p50_ns"]) <= int(read["latency_p99_ns"]) <= int(read["latency_max_ns"])
