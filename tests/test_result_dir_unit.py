"""A run's result folder, store folder and report title are named by what its workload
counts: ``profiles-N-pP``, ``DATA/profiles-N`` and "Benchmark 1K Profiles" for the profile
store (as the reference names them), ``records-N-pP``, ``DATA/records-N`` and "Benchmark
1K Records" for YCSB (they were the profile store's, though a YCSB run writes no profile).
The estimate still finds the earlier runs of a YCSB plan there, a reused store is found
and proven where it was built."""

from __future__ import annotations

from pathlib import Path

from conftest import ROOT


def test_a_ycsb_run_writes_records_n_pp_and_its_next_run_is_scaled_from_it(tmp_path: Path, run_cli) -> None:
    plan = tmp_path / "a.toml"
    plan.write_text((ROOT / "benchmarks" / "ycsb" / "workloada-smoke.toml").read_text().replace("recordcount = 1000", "recordcount = 400"))
    code, results, output = run_cli(str(plan), "--engine", "memory", "--parallelism", "2", "--no-isolate", "--yes")
    assert code == 0, output
    out = tmp_path / "out"
    assert sorted(p.name for p in out.iterdir() if p.is_dir()) == ["records-400-p2"], output
    assert len(list((out / "records-400-p2").glob("asyncbench-*.json"))) == 1 and len(results) == 1
    assert f"result: {out / 'records-400-p2'}" in output
    code, _, output = run_cli(str(plan), "--engine", "memory", "--parallelism", "2", "--no-isolate", "--yes")
    assert code == 0, output
    assert "scaled from the last runs of plan 'ycsb-workloada'" in output, output


def test_a_profile_store_run_still_writes_profiles_n_pp(tmp_path: Path, run_cli) -> None:
    code, _, output = run_cli(str(ROOT / "benchmarks" / "quick.toml"), "--engine", "memory", "--profiles", "1k",
                              "--no-isolate", "--yes")
    assert code == 0, output
    assert sorted(p.name for p in (tmp_path / "out").iterdir() if p.is_dir()) == ["profiles-1000-p1"]


def _ycsb_plan(tmp_path: Path) -> Path:
    plan = tmp_path / "a.toml"
    plan.write_text((ROOT / "benchmarks" / "ycsb" / "workloada-smoke.toml").read_text().replace("recordcount = 1000", "recordcount = 400"))
    return plan


def test_a_ycsb_report_is_titled_by_records_not_profiles(tmp_path: Path, run_cli) -> None:
    code, _, output = run_cli(str(_ycsb_plan(tmp_path)), "--engine", "memory", "--no-isolate", "--yes")
    assert code == 0, output
    (report,) = (tmp_path / "out" / "records-400-p1").glob("asyncbench-*.md")
    text = report.read_text()
    assert "# Benchmark 400 Records / P1" in text, text[:400]
    assert "| Records | 400 |" in text  # the settings row names the size as well
    assert "Profiles" not in text
    assert "plan for 400 records drawn" in output and "400 profiles" not in output
    (page,) = (tmp_path / "out" / "records-400-p1").glob("asyncbench-*.html")
    assert "<title>Benchmark 400 Records / P1" in page.read_text()


def test_a_ycsb_store_lives_under_records_n_and_is_reused_from_there(tmp_path: Path, run_cli) -> None:
    """Its store folder is ``DATA/records-N`` (it was ``profiles-N``); a --reuse-data run
    finds the store a --keep-data run left there (it failed with KeyError 'profiles') and,
    since a YCSB store keeps no verify checksum to prove what it holds (issue 52), refuses
    it by name and leaves it as it is."""
    plan = str(_ycsb_plan(tmp_path))
    code, _, output = run_cli(plan, "--engine", "lsm", "--no-isolate", "--yes", "--keep-data")
    assert code == 0, output
    data = tmp_path / "data"
    assert sorted(p.name for p in data.iterdir() if p.is_dir()) == ["records-400"], output
    assert (data / "records-400" / "lsm").is_dir()
    code, results, output = run_cli(plan, "--engine", "lsm", "--no-isolate", "--yes", "--reuse-data", "--keep-data")
    assert code == 1, output  # it was "Failed: open: KeyError: 'profiles'" (run.reuse's update counts)
    flat = " ".join(output.split())
    assert "KeyError" not in output and "records-400/lsm" in flat, output
    assert "a YCSB store is not reused" in flat and "nothing proves what the store holds" in flat, output
    assert sorted(p.name for p in data.iterdir() if p.is_dir()) == ["records-400"], output
    assert (data / "records-400" / "lsm").is_dir()  # left as it is


def test_a_profile_store_report_and_store_keep_their_profile_names(tmp_path: Path, run_cli) -> None:
    code, _, output = run_cli(str(ROOT / "benchmarks" / "quick.toml"), "--engine", "lsm", "--profiles", "1k",
                              "--no-isolate", "--yes", "--keep-data")
    assert code == 0, output
    assert sorted(p.name for p in (tmp_path / "data").iterdir() if p.is_dir()) == ["profiles-1000"]
    assert (tmp_path / "data" / "profiles-1000" / "lsm").is_dir()
    (report,) = (tmp_path / "out" / "profiles-1000-p1").glob("asyncbench-*.md")
    assert "# Benchmark 1K Profiles / P1" in report.read_text()
