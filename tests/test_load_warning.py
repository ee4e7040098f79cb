"""A single run on a loaded machine says so (issue 39): the load average it started at and
the other busy processes, as ``--repeat`` does, since its figures vary with them."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import ROOT

from asyncbench.measure.stats import BusyProcess, NoiseSnapshot
from asyncbench.run.capacity.saturation import loaded_machine_warning


def _snap(load: float, *busy: BusyProcess) -> NoiseSnapshot:
    return NoiseSnapshot(cpu_count=2, load_avg=(load, load, load), governors={}, turbo=None, busy=busy)


def test_an_idle_machine_gets_no_warning() -> None:
    assert loaded_machine_warning(_snap(0.3, BusyProcess(7, "sshd", 2.0)), load_at_start=0.4) is None


def test_a_loaded_machine_is_named_with_its_load_and_busy_processes() -> None:
    snap = _snap(5.1, BusyProcess(11, "pytest", 97.0), BusyProcess(12, "mariadbd", 60.0), BusyProcess(7, "sshd", 1.0))
    warning = loaded_machine_warning(snap, load_at_start=6.5)
    assert warning is not None
    assert "6.50" in warning and "2 CPUs" in warning
    assert "pytest (pid 11) 97%" in warning and "mariadbd (pid 12) 60%" in warning and "sshd" not in warning
    assert "--repeat" in warning


def test_busy_processes_alone_warn_but_our_own_load_does_not() -> None:
    """The load at the end counts this run's own work; the load at its start and the other
    processes' CPU do not."""
    assert loaded_machine_warning(_snap(3.0), load_at_start=0.5) is None
    assert loaded_machine_warning(_snap(1.0, BusyProcess(11, "yes", 100.0)), load_at_start=0.5) is not None


def test_a_single_run_prints_the_warning(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd) -> None:  # type: ignore[no-untyped-def]
    import os

    from asyncbench.cli import run as run_cli
    from asyncbench.cli.main import main

    monkeypatch.setattr(run_cli, "snapshot", lambda interval=0.2: _snap(6.0, BusyProcess(11, "stress", 180.0)))
    monkeypatch.setattr(os, "getloadavg", lambda: (6.0, 5.0, 4.0))
    code = main(
        [
            str(ROOT / "benchmarks" / "quick.toml"), "--engine", "memory", "--profiles", "2k", "--no-isolate",
            "--no-progress", "--quiet", "--output", str(tmp_path / "out"), "--data", str(tmp_path / "data"),
        ]
    )  # fmt: skip
    out = capfd.readouterr().out
    assert code == 0, out
    assert "WARNING" in out and "load average 6.00" in out and "stress (pid 11) 180%" in out, out
    assert all(len(line) <= 80 for line in out.splitlines() if "WARNING" in line or "stress" in line)
