"""Faults outside the engines cost what they touch, not the benchmark: a log or an output on
a full disk, no temporary directory, a plug-in that cannot be built. Failures before open
name the step they happened in.

Issue items 13 (an exception in EngineRun.run's finally aborted every later engine; output
on a full disk gave an ENOSPC traceback) and 17 (failures before open were labelled
"after the last phase")."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import orjson
import pytest
from conftest import ROOT, status_line

from asyncbench import engines
from asyncbench.cli.main import main
from asyncbench.cli.run import run as run_command
from asyncbench.config import load

QUICK = str(ROOT / "benchmarks" / "quick.toml")


def _tmpfs(path: Path, size: str) -> None:
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs needs root")
    path.mkdir(parents=True, exist_ok=True)
    proc = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)], capture_output=True)
    if proc.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {proc.stderr.decode().strip()}")


def _umount(path: Path) -> None:
    if subprocess.run(["umount", str(path)], capture_output=True).returncode != 0:
        subprocess.run(["umount", "-l", str(path)], capture_output=True)


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "asyncbench", QUICK, "--no-progress", *args]
    return subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=600)


def test_log_on_a_full_disk_costs_the_log_not_the_engines(tmp_path: Path) -> None:
    disk = tmp_path / "full"
    _tmpfs(disk, "24k")
    try:
        out = tmp_path / "out"
        proc = _cli(
            "--engine", "memory,sqlite", "--profiles", "2k", "--batch-size", "10", "--no-isolate",
            "--output", str(out), "--data", str(tmp_path / "data"), "--log-file", str(disk / "run.log"),
        )  # fmt: skip
    finally:
        _umount(disk)
    console = proc.stdout + proc.stderr
    assert "Traceback" not in console, console
    assert proc.returncode == 1, console  # an output the run promised is incomplete
    assert "is incomplete: writing it failed" in console and "No space left on device" in console
    (result,) = out.glob("profiles-2000-p1/asyncbench-*.json")
    run = orjson.loads(result.read_bytes())
    assert [status_line(e) for e in run["engines"]] == ["ok", "ok"]  # both engines ran to the end


def test_output_on_a_full_disk_is_reported_without_a_traceback(tmp_path: Path) -> None:
    disk = tmp_path / "full"
    _tmpfs(disk, "48k")
    try:
        proc = _cli(
            "--engine", "memory", "--profiles", "2k", "--no-isolate",
            "--output", str(disk), "--data", str(tmp_path / "data"), "--log-file", str(tmp_path / "run.log"),
        )  # fmt: skip
    finally:
        _umount(disk)
    console = proc.stdout + proc.stderr
    assert "Traceback" not in console, console
    assert proc.returncode == 1, console
    assert "could not save the results" in console and "No space left on device" in console
    assert "engine_end" in (tmp_path / "run.log").read_text()  # the run itself completed


def test_no_temporary_directory_refuses_an_isolated_run(tmp_path: Path, capsys, monkeypatch) -> None:
    args = [QUICK, "--engine", "memory", "--profiles", "1k", "--isolate"]
    with monkeypatch.context() as m:  # only around the call: pytest needs its own temp files
        m.setattr(tempfile, "tempdir", str(tmp_path / "no-such-dir"))
        code = main([*args, "--output", str(tmp_path / "out"), "--data", str(tmp_path / "data")])
    assert code == 2
    err = capsys.readouterr().err
    assert "temporary directory" in err and "--no-isolate" in err
    assert not (tmp_path / "out").exists()


def test_no_temporary_directory_at_run_time_fails_rows_not_the_benchmark(tmp_path: Path, monkeypatch) -> None:
    """Past validation (the directory went away since): every isolated engine's row fails
    at setup, the results are still written and the command ends normally."""
    cfg = load(QUICK)
    cfg.engines, cfg.profiles, cfg.isolate = ["memory", "sqlite"], [1000], True
    cfg.output, cfg.data = tmp_path / "out", tmp_path / "data"
    with monkeypatch.context() as m:  # only around the call: pytest needs its own temp files
        m.setattr(tempfile, "tempdir", str(tmp_path / "no-such-dir"))
        code = run_command(cfg, None, no_progress=True)
    assert code == 1
    (result,) = (tmp_path / "out").glob("profiles-1000-p1/asyncbench-*.json")
    rows = [status_line(e) for e in orjson.loads(result.read_bytes())["engines"]]
    assert len(rows) == 2 and all(r.startswith("Failed: setup: no temporary directory") for r in rows), rows


# --- item 17: failures before open name their step ------------------------------------------


@pytest.fixture
def broken_plugin(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(engines.REGISTRY, "brokenctor", "engines_for_tests:BrokenConstructorEngine")
    monkeypatch.setitem(engines.REGISTRY, "notanengine", "json:JSONDecoder")


@pytest.mark.parametrize(
    ("engine", "status"),
    [
        ("brokenctor", "Failed: open: ValueError: this plug-in cannot be constructed"),
        ("notanengine", "Failed: open: TypeError: "),
    ],
)
def test_a_plugin_that_cannot_be_built_fails_at_open(broken_plugin, run_cli, engine: str, status: str) -> None:
    code, results, output = run_cli(QUICK, "--engine", f"{engine},memory", "--profiles", "1k", "--no-isolate")
    assert code == 1, output
    row, memory = results[0]["engines"]
    assert status_line(row).startswith(status), status_line(row)
    assert status_line(memory) == "ok"


def test_engine_directory_that_is_a_file_fails_at_setup(tmp_path: Path, run_cli) -> None:
    blocker = tmp_path / "data" / "profiles-1000" / "sqlite"
    blocker.parent.mkdir(parents=True)
    blocker.write_text("a file")
    code, results, output = run_cli(QUICK, "--engine", "sqlite,memory", "--profiles", "1k", "--no-isolate")
    assert code == 1, output
    row, memory = results[0]["engines"]
    assert status_line(row).startswith("Failed: setup: ") and "is not a directory" in status_line(row)
    assert blocker.read_text() == "a file" and status_line(memory) == "ok"


def test_data_profiles_dir_that_is_a_file_is_refused_before_running(tmp_path: Path, capsys) -> None:
    blocker = tmp_path / "data" / "profiles-1000"
    blocker.parent.mkdir(parents=True)
    blocker.write_text("a file")
    args = [QUICK, "--engine", "memory", "--profiles", "1k", "--no-isolate"]
    assert main([*args, "--output", str(tmp_path / "out"), "--data", str(tmp_path / "data")]) == 2
    assert "data: " in capsys.readouterr().err and blocker.read_text() == "a file"
    assert not (tmp_path / "out").exists()
