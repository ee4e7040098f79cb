"""Engine stores are deleted after each engine's run (the engine deletes only what it
created), unless --keep-data / clean_data = false keeps them."""

from __future__ import annotations

from pathlib import Path

from conftest import ROOT

QUICK = str(ROOT / "benchmarks" / "quick.toml")
ENGINES = ("lsm", "rocksdb", "sqlite")


def test_stores_are_deleted_by_default_and_foreign_files_survive(run_cli, tmp_path: Path) -> None:
    data = tmp_path / "data" / "profiles-1000"
    data.mkdir(parents=True)
    (data / "notes.txt").write_text("mine, not the engine's")
    code, (run,), output = run_cli(QUICK, "--engine", ",".join(ENGINES), "--profiles", "1k")
    assert code == 0, output
    assert all(e["storage_bytes"] > 0 for e in run["engines"])  # measured before the clean-up
    assert sorted(p.name for p in data.iterdir() if not p.name.endswith(".lock")) == ["notes.txt"]


def test_keep_data_keeps_every_store(run_cli, tmp_path: Path) -> None:
    code, _, _ = run_cli(QUICK, "--engine", ",".join(ENGINES), "--profiles", "1k", "--keep-data")
    assert code == 0
    for name in ENGINES:
        assert any((tmp_path / "data" / "profiles-1000" / name).iterdir()), name


def test_contradicting_flags_are_refused(run_cli) -> None:
    code, _, output = run_cli(QUICK, "--keep-data", "--clean-data")
    assert code == 2 and "--keep-data: contradicts --clean-data" in output
