"""Issue 34, bad input to ``run``: values the run accepted although they cannot be meant
are refused before anything runs (exit 2, one message naming ``command line`` or the
file, the flag or key and the problem, nothing created).

Numbers go through one strict parser (asyncbench/parse.py): no surrounding or Unicode
whitespace, no sign where none is meant. Paths may hold no control character. A plan
is at most ``MAX_PLAN_BYTES`` and ``MAX_PHASES`` phases. Engine caches have documented
maxima. ``--arrivals`` needs a rate, ``all`` stands alone, a cluster address must be
one, and ``--reuse-data`` needs an engine with a store and a store to reuse.
"""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from conftest import ROOT

from asyncbench.cli.main import main

QUICK = ROOT / "benchmarks" / "quick.toml"
GOOD = '[run]\nprofiles = 100\n[[phase]]\nkind = "insert"\n[[phase]]\nkind = "read_by_id"\n[[phase]]\nkind = "verify"\n'


def refused(tmp_path: Path, capsys: pytest.CaptureFixture[str], *args: str, plan: Path = QUICK) -> str:
    """Run the CLI; assert exit 2 and that neither output nor data was created; the message."""
    out, data = tmp_path / "out", tmp_path / "data"
    engine = [] if "--engine" in args else ["--engine", "memory"]
    paths = [] if "--output" in args else ["--output", str(out)]
    paths += [] if "--data" in args else ["--data", str(data)]
    code = main([str(plan), *args, *paths, *engine, "--yes"])
    err = capsys.readouterr().err
    assert code == 2, err
    assert not out.exists() and not data.exists(), err
    return err


def plan_with(tmp_path: Path, run_lines: str = "", tail: str = "") -> Path:
    plan = tmp_path / "p.toml"
    plan.write_text(GOOD.replace("[run]\n", f"[run]\n{run_lines}\n") + tail)
    return plan


# --- one strict number parser ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("flags", "reason"),
    [
        (["--parallelism", "1k "], "--parallelism: '1k ' is not a count"),
        (["--parallelism", " 4"], "--parallelism: ' 4' is not a count"),
        (["--profiles", "1k\t"], "--profiles: '1k\\t' is not a count"),
        (["--batch-size", "100 "], "--batch-size: '100 ' is not a count"),
        (["--seed", " 7"], "--seed: ' 7' is not an integer"),
        (["--timeout-seconds", "+5"], "--timeout-seconds: '+5' is not a number of seconds"),
        (["--timeout-seconds", "5 "], "--timeout-seconds: '5 ' is not a number of seconds"),
        (["--rate", "20k\u00a0"], "--rate: must be operations per second: '20k\\xa0' is not a count"),
        (["--rate", "\u200320k"], "--rate: must be operations per second: '\\u200320k' is not a count"),
        (["--rate", "1k, 2k"], "--rate: must be operations per second: ' 2k' is not a count"),
        (["--rate", "\uff12\uff10k"], "--rate: must be operations per second: '\uff12\uff10k' is not a count"),
    ],
    ids=repr,
)
def test_numbers_with_whitespace_or_a_sign_are_refused(tmp_path: Path, capsys, flags, reason) -> None:
    assert f"command line: {reason}" in refused(tmp_path, capsys, *flags)


def test_a_rate_string_with_unicode_space_in_a_plan_is_refused(tmp_path: Path, capsys) -> None:
    plan = plan_with(tmp_path, 'rate = "20k\u00a0"')
    assert f"{plan}: run.rate: must be operations per second" in refused(tmp_path, capsys, plan=plan)


# --- paths ------------------------------------------------------------------------------------


@pytest.mark.parametrize("char", ["\n", "\x1b", "\r", "\x7f"], ids=repr)
@pytest.mark.parametrize("flag", ["--output", "--data"])
def test_output_and_data_with_a_control_character_are_refused(tmp_path: Path, capsys, flag, char) -> None:
    bad = tmp_path / f"out{char}x"
    err = refused(tmp_path, capsys, flag, str(bad))
    assert f"command line: {flag}: " in err and "cannot be shown" in err
    assert char not in err.rstrip("\n")  # the console shows it escaped
    assert not bad.exists()


def test_a_log_file_with_a_control_character_is_refused(tmp_path: Path, capsys) -> None:
    err = refused(tmp_path, capsys, "--log-file", str(tmp_path / "run\x1b[2J.log"))
    assert "command line: --log-file: " in err and "cannot be shown" in err and "\x1b" not in err


def test_a_nul_in_a_plan_path_is_refused(tmp_path: Path, capsys) -> None:
    plan = plan_with(tmp_path, 'output = "out\\u0000x"')
    err = refused(tmp_path, capsys, plan=plan)
    assert f"{plan}: run.output: " in err and "U+0000" in err


@pytest.mark.parametrize("key", ["output", "data"])
@pytest.mark.parametrize("path", ["/proc", "/sys", "/dev", "/proc/self", "/sys/fs/cgroup", "/dev/new-dir"])
def test_a_pseudo_file_system_is_not_a_data_or_output_directory(tmp_path: Path, capsys, key, path) -> None:
    plan = plan_with(tmp_path, f'{key} = "{path}"')
    out, data = tmp_path / "out", tmp_path / "data"
    code = main([str(plan), "--engine", "memory", "--yes", *(["--data", str(data)] if key == "output" else ["--output", str(out)])])
    err = capsys.readouterr().err
    assert code == 2, err
    assert f"command line: {key}: {path} is on a pseudo file system" in err
    assert not out.exists() and not data.exists() and not Path("/dev/new-dir").exists()


@pytest.mark.parametrize("key", ["--data", "--output"])
def test_a_device_is_not_a_directory(tmp_path: Path, capsys, key) -> None:
    err = refused(tmp_path, capsys, key, "/dev/null")
    assert f"command line: {key.lstrip('-')}: /dev/null is not a directory" in err


def test_a_log_file_in_a_missing_directory_is_refused(tmp_path: Path, capsys) -> None:
    log = tmp_path / "no" / "such" / "run.log"
    err = refused(tmp_path, capsys, "--log-file", str(log))
    assert f"command line: --log-file: {log.parent} does not exist" in err
    assert not (tmp_path / "no").exists()


def test_a_log_file_in_the_output_directory_the_run_creates_is_accepted(tmp_path: Path) -> None:
    from asyncbench.cli.run_command import apply_flags
    from asyncbench.config import load

    plan = plan_with(tmp_path)
    apply_flags(load(plan), _args(plan, tmp_path, "--log-file", str(tmp_path / "out" / "run.log")))
    assert not (tmp_path / "out").exists()


# --- plan size ----------------------------------------------------------------------------------


def test_a_plan_over_the_size_bound_is_refused(tmp_path: Path, capsys) -> None:
    from asyncbench.config import MAX_PLAN_BYTES

    plan = tmp_path / "p.toml"
    plan.write_text(GOOD + "#" * MAX_PLAN_BYTES + "\n")
    err = refused(tmp_path, capsys, plan=plan)
    assert f"{plan}: file: is " in err and f"over the {MAX_PLAN_BYTES:_d} bytes a plan may have" in err


def test_a_plan_of_ten_thousand_phases_is_refused(tmp_path: Path, capsys) -> None:
    from asyncbench.config import MAX_PHASES

    plan = plan_with(tmp_path, tail='[[phase]]\nkind = "read_by_id"\n' * 10_000)
    err = refused(tmp_path, capsys, plan=plan)
    assert f"{plan}: phase: 10_003 phases; a plan runs at most {MAX_PHASES:_d}" in err


def test_a_sweep_that_expands_past_the_phase_bound_is_refused(tmp_path: Path, capsys) -> None:
    from asyncbench.config import MAX_PHASES

    plan = plan_with(tmp_path, tail='[[phase]]\nkind = "read_by_id"\n' * (MAX_PHASES // 3))
    rates = ",".join(f"{n}k" for n in range(1, 5))
    err = refused(tmp_path, capsys, "--rate", rates, plan=plan)
    assert "command line: --rate: the rate sweep makes " in err and f"at most {MAX_PHASES:_d}" in err


# --- flag combinations ----------------------------------------------------------------------------


def test_arrivals_without_a_rate_is_refused(tmp_path: Path, capsys) -> None:
    err = refused(tmp_path, capsys, "--arrivals", "poisson")
    assert "command line: --arrivals: paces the phases of --rate or run.rate, and there is none" in err


def test_arrivals_without_a_rate_in_a_plan_is_refused(tmp_path: Path, capsys) -> None:
    plan = plan_with(tmp_path, 'arrivals = "poisson"')
    assert f"{plan}: run.arrivals: paces the phases of" in refused(tmp_path, capsys, plan=plan)


def test_arrivals_with_a_rate_from_the_flag_is_accepted(tmp_path: Path) -> None:
    plan = plan_with(tmp_path, 'arrivals = "poisson"')
    from asyncbench.cli.run_command import apply_flags
    from asyncbench.config import load

    args = _args(plan, tmp_path, "--rate", "1M")
    cfg = load(plan)
    apply_flags(cfg, args)
    assert {s.arrivals for s in cfg.phases if s.rate is not None} == {"poisson"}


@pytest.mark.parametrize("engines", ["all,memory", "memory,all", "all,all"])
def test_all_with_other_engine_names_is_refused(tmp_path: Path, capsys, engines) -> None:
    err = refused(tmp_path, capsys, "--engine", engines)
    assert "command line: --engine: 'all' stands alone" in err


# --- engine settings ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("engine", "key", "value"),
    [
        ("sqlite", "cache_size_mb", 99_999_999_999),
        ("sqlite", "mmap_size_mb", 99_999_999_999),
        ("sqlite", "cache_size_mb", 65_537),
        ("lsm", "key_cache_size", 2**63 - 1),
        ("lsm", "value_cache_size", 2**63 - 1),
        ("lsm", "block_cache_size", 100_000_001),
    ],
)
def test_engine_cache_sizes_have_a_maximum(tmp_path: Path, capsys, engine, key, value) -> None:
    plan = plan_with(tmp_path, tail=f"[engines.{engine}]\n{key} = {value}\n")
    err = refused(tmp_path, capsys, "--engine", engine, plan=plan)
    assert f"{plan}: engines.{engine}.{key}: " in err and "at most" in err


def _args(plan: Path, tmp_path: Path, *flags: str):  # noqa: ANN202
    from asyncbench.cli.main import parse_args

    return parse_args(
        [str(plan), "--output", str(tmp_path / "out"), "--data", str(tmp_path / "data"), "--engine", "memory", *flags]
    )


# --- runs of absurd length: the estimate says so and asks -----------------------------------


class Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize(("run_lines", "flags"), [("", ["--rate", "5", "--profiles", "20k"]), ("rate = 0.01", [])])
def test_a_slow_rate_makes_the_estimate_a_lower_bound_and_asks(tmp_path: Path, run_lines, flags) -> None:
    from asyncbench.cli.run import confirm_start
    from asyncbench.cli.run_command import apply_flags
    from asyncbench.config import load
    from asyncbench.run.estimate import ASK_ABOVE_SECONDS, estimate, phase_operations

    plan = plan_with(tmp_path, run_lines)
    cfg = load(plan)
    apply_flags(cfg, _args(plan, tmp_path, *flags))
    reads = sum(ops / spec.rate for spec, ops in phase_operations(cfg, cfg.profiles[0]) if spec.rate)
    assert reads > ASK_ABOVE_SECONDS

    def no_calibration(_cfg):  # noqa: ANN001, ANN202 - so small a plan is never calibrated
        raise AssertionError("calibrated")

    est = estimate(cfg, calibrate_fn=no_calibration)
    assert est.seconds == pytest.approx(reads) and est.at_least
    out = Tty()
    assert confirm_start(cfg, yes=False, stdin=Tty("n\n"), stdout=out) is False
    assert "time: at least" in out.getvalue() and "Start this run of at least" in out.getvalue()
    assert confirm_start(cfg, yes=True, stdin=Tty(""), stdout=Tty()) is True


def test_a_measured_rate_is_never_faster_than_the_target_rate(tmp_path: Path) -> None:
    from asyncbench.cli.run_command import apply_flags
    from asyncbench.config import load
    from asyncbench.run.estimate import MeasuredCost, calibration_config, phase_operations

    plan = plan_with(tmp_path)
    cfg = load(plan)
    apply_flags(cfg, _args(plan, tmp_path, "--rate", "5"))
    fast = MeasuredCost(100, {"insert": 1e-6, "read_by_id": 1e-6}, {}, 0.0, 100.0)
    paced = sum(ops / 5 for spec, ops in phase_operations(cfg, 100) if spec.rate)
    assert fast.seconds("memory", cfg, 100) >= paced > 1
    # the calibration measures closed loop: it would otherwise run at 5 ops/s
    assert all(p.rate is None for p in calibration_config(cfg, tmp_path).phases)


# --- checked before the run, not after its report -----------------------------------------------


@pytest.mark.parametrize(
    ("address", "reason"),
    [
        ("tcp://", "has no port"),
        ("tcp://127.0.0.1", "has no port"),
        ("tcp://127.0.0.1:", "has no port"),
        ("tcp://:8786", "'' is not a host name or address"),
        ("tcp://127.0.0.1:99999", "the port must be a number from 1 to 65535"),
        ("tcp://127.0.0.1:0", "the port must be a number from 1 to 65535"),
        ("tcp://127.0.0.1:87 86", "the port must be a number"),
        ("http://127.0.0.1:8786", "the scheme must be tcp or tls"),
        ("tcp://local host:8786", "'local host' is not a host name"),
        ("tcp://[::1:8786", "is not a host name or address"),
        ("tcp://[nope]:8786", "[nope] is not an IPv6 address"),
        ("tcp://127.0.0.1:8786\x1b", "cannot be shown"),
    ],
)
def test_a_malformed_cluster_address_is_refused_before_the_run(tmp_path: Path, capsys, address, reason) -> None:
    err = refused(tmp_path, capsys, "--cluster", address, "--engine", "postgres")
    assert "command line: --cluster: " in err and reason in err


@pytest.mark.parametrize("address", ["tcp://127.0.0.1:8786", "127.0.0.1:8786", "tls://sched.example:8786", "tcp://[::1]:8786"])
def test_a_well_formed_cluster_address_is_accepted(address: str) -> None:
    from asyncbench.config import RUN_KEYS

    assert RUN_KEYS["cluster"].type.read("command line", "--cluster", address) == address


def test_a_path_in_a_console_line_is_escaped(tmp_path: Path, capfd) -> None:
    plan = tmp_path / "p\x1b[2J\nx.toml"
    plan.write_text(GOOD)
    out, data = tmp_path / "out", tmp_path / "data"
    code = main([str(plan), "--engine", "memory", "--output", str(out), "--data", str(data), "--yes", "--quiet"])
    captured = capfd.readouterr()
    assert code == 0, captured.err
    console = captured.out + captured.err
    assert "p\\x1b[2J\\nx.toml" in console
    assert "\x1b" not in console


def test_the_plans_listed_without_a_plan_are_shown_escaped(tmp_path: Path) -> None:
    from asyncbench.cli.main import build_parser
    from asyncbench.cli.plans import usage

    (tmp_path / "a\x1b[2J.toml").write_text(GOOD)
    (tmp_path / "b.toml").write_text('[run]\nname = "x\\u001b[2J"\n')
    text = usage(build_parser("run"), tmp_path)
    assert "a\\x1b[2J.toml" in text and "\x1b" not in text
