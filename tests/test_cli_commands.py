"""The command line only parses: argparse subcommands (run, report, compare, engines), run
the default, and the run's exit code is one outcome's."""

from __future__ import annotations

import pytest

from asyncbench.cli.main import COMMANDS, build_parser, main, parse_args
from asyncbench.cli.run import RunOutcome
from asyncbench.result import EXIT_FAILED, EXIT_INTERRUPTED, EXIT_OK, EngineResult, RunResult, Status


def test_help_lists_every_command_and_the_run_flags(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["--help"])
    assert exit_.value.code == 0
    out = capsys.readouterr().out
    for name in ("run", "report", "compare", "engines"):
        assert f"    {name} " in out, name
    assert "--batch-size" in out and "--check-reference" in out  # run, the default, in full
    assert set(COMMANDS) >= {"run", "report", "compare", "engines"}


def test_run_is_the_default_command() -> None:
    plain = parse_args(["plan.toml", "--engine", "memory", "--profiles", "1k"])
    explicit = parse_args(["run", "plan.toml", "--engine", "memory", "--profiles", "1k"])
    flags_first = parse_args(["--engine", "memory", "plan.toml", "--profiles", "1k"])
    for args in (plain, explicit, flags_first):
        assert args.command == "run" and args.plan == "plan.toml" and args.engine == "memory"
        assert args.handler is explicit.handler
    assert parse_args([]).plan is None  # a bare invocation is run's usage


@pytest.mark.parametrize("command", ["report", "compare", "engines"])
def test_each_command_has_its_own_help(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main([command, "--help"])
    assert exit_.value.code == 0
    assert f"usage: python -m asyncbench {command}" in capsys.readouterr().out


def test_a_bad_subcommand_argument_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["engines", "extra"])
    assert exit_.value.code == 2


def test_no_child_flags_on_the_command_line() -> None:
    """The isolated engine's process is python -m asyncbench.run.child, not a CLI mode."""
    assert "--child" not in build_parser().format_help()
    with pytest.raises(SystemExit):
        parse_args(["--child-run", "x.json"])


def _run(status: Status = Status.OK) -> RunResult:
    run = RunResult(
        name="n", started_utc="t", profiles=1, parallelism=1, seed=1, limit=1, batch_size=1,
        timeout_seconds=None, counts={}, phases=[], source="plan.toml",
    )
    e = EngineResult(engine="memory")
    if status is not Status.OK:
        e.set_status(status, "insert", "boom")
    run.engines.append(e)
    return run


def test_one_outcome_one_exit_code() -> None:
    assert RunOutcome([_run()]).exit_code() == EXIT_OK
    assert RunOutcome([_run(Status.FAILED)]).exit_code() == EXIT_FAILED
    assert RunOutcome([_run()], checksums_agree=False).exit_code() == EXIT_FAILED
    assert RunOutcome([_run()], save_failed=True).exit_code() == EXIT_FAILED
    assert RunOutcome([_run()], log_failed=True).exit_code() == EXIT_FAILED
    assert RunOutcome(log_failed=True).exit_code() == EXIT_FAILED  # the log could not even be opened
    # a stop signal wins over every failure: the run was cut short, its files are partial
    assert RunOutcome([_run(Status.FAILED)], interrupted=True, save_failed=True).exit_code() == EXIT_INTERRUPTED


def test_the_readme_names_every_flag_of_run_and_every_command() -> None:
    """docs/cli.md (the README's Running section before issue 54) stays true to the parser:
    each of run's flags (the RUN_KEYS rows' and the run's own options) and each command is
    named there."""
    import re
    from pathlib import Path

    running = (Path(__file__).resolve().parent.parent / "docs" / "cli.md").read_text()
    run = parse_args(["plan.toml"]).parser
    flags = {s for a in run._actions for s in a.option_strings if s.startswith("--") and s != "--help"}
    missing = sorted(f for f in flags if not re.search(rf"[`/]{re.escape(f)}[`/]", running))
    assert not missing, f"docs/cli.md does not name {missing}"
    for name in COMMANDS:
        assert f"`{name}`" in running, name
