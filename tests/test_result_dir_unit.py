"""A run's result folder is named by what its workload counts: ``profiles-N-pP`` for the
profile store (as the reference names it), ``records-N-pP`` for YCSB (it was
``profiles-N-pP``, though a YCSB run writes no profile). The estimate still finds the
earlier runs of a YCSB plan there."""

from __future__ import annotations

from pathlib import Path

from conftest import ROOT


def test_a_ycsb_run_writes_records_n_pp_and_its_next_run_is_scaled_from_it(tmp_path: Path, run_cli) -> None:
    plan = tmp_path / "a.toml"
    plan.write_text((ROOT / "benchmarks" / "ycsb" / "workloada.toml").read_text().replace("recordcount = 1000", "recordcount = 400"))
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
