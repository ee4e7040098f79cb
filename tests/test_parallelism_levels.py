"""Parallelism lists, as the reference's ``--parallelism 1,16``: every (profiles, P) pair
runs, each in its own ``profiles-N-pP/`` folder with the reference's title."""

from __future__ import annotations

import platform

from conftest import ROOT

from asyncbench import fmt
from asyncbench.cli.main import main

QUICK = str(ROOT / "benchmarks" / "quick.toml")


def test_every_profiles_parallelism_pair_runs(run_cli, tmp_path) -> None:
    code, results, output = run_cli(QUICK, "--engine", "memory", "--profiles", "1k,2k", "--parallelism", "1,4")
    assert code == 0, output
    assert [(r["profiles"], r["parallelism"]) for r in results] == [(1000, 1), (1000, 4), (2000, 1), (2000, 4)]
    out = tmp_path / "out"
    assert sorted(p.name for p in out.glob("profiles-*")) == [
        "profiles-1000-p1",
        "profiles-1000-p4",
        "profiles-2000-p1",
        "profiles-2000-p4",
    ]
    md = next((out / "profiles-2000-p4").glob("*.md")).read_text()
    assert md.splitlines()[1] == f"# Benchmark 2K Profiles / P4 - {platform.system()}"  # after the marker
    assert "| memory | Completed |" in md
    # P changes how the checksums of several workers fold, never the single-worker one
    p1, p4 = (r["engines"][0]["phases"][0]["checksum"] for r in results[2:])
    assert p1 != p4


def test_parallelism_list_in_the_plan_file(tmp_path) -> None:
    plan = tmp_path / "plan.toml"
    plan.write_text('[run]\nprofiles = 500\nparallelism = [2, 1]\n[[phase]]\nkind = "insert"\n')
    code = main([str(plan), "--engine", "memory", "--output", str(tmp_path / "o"), "--data", str(tmp_path / "d")])
    assert code == 0
    assert sorted(p.name for p in (tmp_path / "o").glob("profiles-*")) == ["profiles-500-p1", "profiles-500-p2"]


def test_repeated_level_is_rejected(tmp_path, capsys) -> None:
    assert main([QUICK, "--parallelism", "4,4", "--output", str(tmp_path / "o")]) == 2
    assert "--parallelism: repeats a level" in capsys.readouterr().err


def test_short_counts_as_in_reference_titles() -> None:
    assert [fmt.short_count(n) for n in (2_000_000, 100_000, 1_500_000, 20_000, 999, 100_000_000)] == [
        "2M",
        "100K",
        "1.5M",
        "20K",
        "999",
        "100M",
    ]
