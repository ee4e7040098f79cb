"""A first-time user: no plan prints usage and the plans; a plan prints its estimate and,
on a terminal, a long run asks before it starts."""

from __future__ import annotations

import io

import pytest
from conftest import ROOT

from asyncbench.cli.main import build_parser, main
from asyncbench.cli.run import confirm_start
from asyncbench.config import load
from asyncbench.run.estimate import estimate, plan_operations

QUICK = str(ROOT / "benchmarks" / "quick.toml")


class Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_no_plan_prints_usage_and_the_shipped_plans(capsys, monkeypatch) -> None:
    monkeypatch.chdir(ROOT)
    assert main([]) == 2
    err = capsys.readouterr().err
    assert err.startswith("usage: python -m asyncbench")
    assert "benchmarks/quick.toml" in err and "20_000 profiles" in err
    assert "2_000_000 profiles" in err  # benchmarks.toml is listed, not started


def test_operations_count_every_item_of_the_plan() -> None:
    cfg = load(ROOT / "benchmarks" / "reference.toml")
    # insert, update and 4 read phases of 10_000; 10 scan/query phases of 2_500; verify's 4
    assert plan_operations(cfg, 10_000) == 6 * 10_000 + 10 * 2_500 + 4


def test_estimate_is_printed_before_the_run(run_cli) -> None:
    code, _, output = run_cli(QUICK, "--engine", "memory", "--profiles", "2k")
    assert code == 0
    assert "operations: " in output.split("== memory")[0]


def test_estimate_scales_the_last_run_of_the_plan(run_cli, tmp_path) -> None:
    code, _, _ = run_cli(QUICK, "--engine", "memory", "--profiles", "2k")
    assert code == 0
    cfg = load(QUICK)
    cfg.output, cfg.engines, cfg.profiles = tmp_path / "out", ["memory"], [200_000]
    est = estimate(cfg, calibrate_fn=lambda c: pytest.fail("history should have been used"))
    assert est.basis.startswith("scaled from the last runs of plan 'profile-store-quick'")
    assert est.seconds is not None and est.seconds > 0 and est.storage_bytes == 0


def test_estimate_calibrates_without_history(tmp_path) -> None:
    cfg = load(QUICK)
    cfg.output, cfg.engines, cfg.profiles = tmp_path / "none", ["memory"], [500_000]
    est = estimate(cfg)
    assert "calibration at 20_000 records" in est.basis
    assert est.seconds is not None and est.seconds > 0


def _long_plan(run_cli, tmp_path):
    run_cli(QUICK, "--engine", "memory", "--profiles", "2k")
    cfg = load(QUICK)
    cfg.output, cfg.engines, cfg.profiles = tmp_path / "out", ["memory"], [900_000_000]
    return cfg


def test_a_long_run_asks_on_a_terminal(run_cli, tmp_path) -> None:
    cfg = _long_plan(run_cli, tmp_path)
    out = Tty()
    assert confirm_start(cfg, yes=False, stdin=Tty("n\n"), stdout=out) is False
    assert "Start this run of about" in out.getvalue() and "not started" in out.getvalue()
    assert confirm_start(cfg, yes=False, stdin=Tty("y\n"), stdout=Tty()) is True
    assert confirm_start(cfg, yes=True, stdin=Tty(""), stdout=Tty()) is True
    # not a terminal: the estimate is printed and the run starts
    piped = io.StringIO()
    assert confirm_start(cfg, yes=False, stdin=io.StringIO(""), stdout=piped) is True
    assert "time: about" in piped.getvalue() and "Start this run" not in piped.getvalue()


def test_yes_is_a_documented_flag() -> None:
    assert "--yes" in build_parser().format_help()
