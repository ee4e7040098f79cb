"""Two runs never share a data or output directory: the second stops before it changes
anything (exit 2) and names the first one's pid.

Issue item 3: two runs on one --data deleted each other's files and both reported ok."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest
from cli_process import QUICK, TEST_ENGINES, BackgroundRun, kill_quietly

from asyncbench import engines
from asyncbench.cli.main import main
from asyncbench.fs.locks import Locked, acquire


@pytest.fixture
def first_run(tmp_path: Path):  # noqa: ANN201 - a BackgroundRun holding its directories
    run = BackgroundRun(
        [QUICK, "--engine", "slow", "--profiles", "2k", "--no-isolate", "--output", str(tmp_path / "out1")]
        + ["--data", str(tmp_path / "data")],
        tmp_path / "first.log",
    )
    try:
        run.wait_for_log()
        yield run
    finally:
        kill_quietly(run)


def _second(tmp_path: Path, output: str, data: str, engine: str = "slow") -> int:
    # --timeout-seconds: were the lock missing, the second run would time out (exit 1)
    # instead of sleeping through the slow engine's reads
    args = [QUICK, "--engine", engine, "--profiles", "2k", "--no-isolate", "--timeout-seconds", "2"]
    return main([*args, "--output", str(tmp_path / output), "--data", str(tmp_path / data)])


def test_second_run_on_the_same_data_is_refused_naming_the_holder(
    tmp_path: Path, first_run: BackgroundRun, capfd, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(engines.REGISTRY, "slow", TEST_ENGINES["slow"])
    before = sorted(os.listdir(tmp_path / "data" / "profiles-2000"))
    assert _second(tmp_path, "out2", "data") == 2
    err = capfd.readouterr().err
    assert f"locked by pid {first_run.proc.pid}" in err and "profiles-2000/slow" in err
    assert sorted(os.listdir(tmp_path / "data" / "profiles-2000")) == before
    assert not (tmp_path / "out2").exists() or not any((tmp_path / "out2").rglob("*.json"))
    first_run.send(signal.SIGTERM)
    assert first_run.finish() == 130, first_run.output  # the first run is unharmed
    assert list((tmp_path / "out1").glob("profiles-2000-p1/asyncbench-*.json"))


def test_second_run_into_the_same_output_is_refused(tmp_path: Path, first_run: BackgroundRun, capfd) -> None:
    assert _second(tmp_path, "out1", "other-data", engine="memory") == 2
    err = capfd.readouterr().err
    assert f"locked by pid {first_run.proc.pid}" in err and "out1/profiles-2000-p1" in err
    assert not (tmp_path / "other-data" / "profiles-2000" / "memory").exists()


def test_a_lock_names_its_holder_and_is_free_after_release(tmp_path: Path) -> None:
    lock = acquire(tmp_path, tmp_path / ".lock")
    with pytest.raises(Locked, match=f"locked by pid {os.getpid()}"):
        acquire(tmp_path, tmp_path / ".lock")
    lock.release()
    acquire(tmp_path, tmp_path / ".lock").release()


def test_a_symlinked_lock_file_is_not_followed(tmp_path: Path) -> None:
    target = tmp_path / "target"
    target.write_text("precious")
    (tmp_path / ".lock").symlink_to(target)
    with pytest.raises(OSError):
        acquire(tmp_path, tmp_path / ".lock")
    assert target.read_text() == "precious"
