"""Counts, seeds and names as a user means them (issue 23, item 12).

``int()`` reads ``１２`` (fullwidth) as 12 and ``٣`` (Arabic-Indic) as 3, and stripping
every ``_`` first made ``_1``, ``1__0`` and ``1_`` counts: all were accepted as flags.
Now they exit 2 naming the flag, before anything is created. A phase name with a control
character reached the console raw (an escape sequence could rewrite the terminal): the
plan is refused, and no message quotes input raw. The isolated engine's process
(``python -m asyncbench.run.child``) raised tracebacks on bad arguments (a missing config,
a level the plan does not have, a result directory that is not there) and created a log
directory: now exit 2 naming the argument, nothing created.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from asyncbench.cli.main import main
from asyncbench.parse import check_printable, escape_unprintable, parse_count, parse_int, parse_seconds

ROOT = Path(__file__).resolve().parent.parent
QUICK = ROOT / "benchmarks" / "quick.toml"
NOT_NUMBERS = [
    "１２",
    "٣",
    "_1",
    "1__0",
    "1_",
    "1_000_",
    "٣_000",
    "1 2",
    "1\u00a0000",
    "0x10",
    "1e3",
    "",
    "k",
]


@pytest.mark.parametrize("text", NOT_NUMBERS)
def test_counts_and_seeds_take_ascii_digits_with_inner_underscores_only(text: str) -> None:
    with pytest.raises(ValueError, match="is not a"):
        parse_count(text)
    with pytest.raises(ValueError, match="is not an integer"):
        parse_int(text)


@pytest.mark.parametrize(
    ("text", "count"),
    [("20k", 20_000), ("2M", 2_000_000), ("2_000_000", 2_000_000), ("1.5M", 1_500_000), ("7", 7)],
)
def test_the_documented_counts_still_parse(text: str, count: int) -> None:
    assert parse_count(text) == count


def test_seeds_and_seconds() -> None:
    assert parse_int("570_123_434") == 570_123_434 and parse_int("-7") == -7
    assert parse_seconds("1.5") == 1.5 and parse_seconds("3_600") == 3600
    assert parse_seconds("-1") == -1  # read, then refused by the range check ("must be positive")
    assert parse_seconds("1e3") == 1000 and parse_seconds("1e400") == float("inf")  # range-checked later
    for bad in ("٣", "_1", ".", "1.", "-", "+.", "infinite", "１", "e3", ".e3"):
        with pytest.raises(ValueError):
            parse_seconds(bad)
    with pytest.raises(ValueError, match="more than 30 digits"):
        parse_count("9" * 5000)  # not int()'s own 4_300-digit error


def _run(tmp_path: Path, capfd: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    out, data = tmp_path / "out", tmp_path / "data"
    code = main([*args, "--output", str(out), "--data", str(data), "--yes"])
    captured = capfd.readouterr()
    assert not out.exists() and not data.exists(), "bad input created a directory"
    return code, captured.out + captured.err


@pytest.mark.parametrize(
    "flag", ["--profiles", "--seed", "--batch-size", "--limit", "--parallelism", "--repeat"]
)
@pytest.mark.parametrize("text", ["１２", "٣", "_1", "1__0", "1_"])
def test_the_cli_refuses_them_naming_the_flag(
    flag: str, text: str, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    code, output = _run(tmp_path, capfd, str(QUICK), flag, text)
    assert code == 2, output
    assert f"asyncbench: command line: {flag}: {text!r} is not a" in output
    assert "Traceback" not in output


def test_timeout_seconds_in_unicode_digits_is_refused(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    code, output = _run(tmp_path, capfd, str(QUICK), "--timeout-seconds", "٣٠")
    assert code == 2 and "command line: --timeout-seconds: '٣٠' is not a number of seconds" in output


def _plan(tmp_path: Path, body: str) -> Path:
    plan = tmp_path / "plan.toml"
    plan.write_text('[run]\nprofiles = 1_000\nengines = ["memory"]\n' + body)
    return plan


@pytest.mark.parametrize(
    "name",
    ["red\\u001b[31m", "back\\rspace", "bell\\u0007", "rtl\\u202eevil", "line\\u2028sep", "zw\\u200bsp"],
)
def test_a_phase_name_with_a_control_character_is_refused(
    name: str, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    plan = _plan(tmp_path, f'[[phase]]\nkind = "insert"\nname = "{name}"\n')
    code, output = _run(tmp_path, capfd, str(plan))
    assert code == 2, output
    assert f"{plan}: phase[0].name: " in output and "which cannot be shown" in output
    assert check_printable(output.replace("\n", "")) is None, (
        f"raw control character on the console: {output!r}"
    )


def test_no_message_quotes_a_control_character_raw(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    plan = _plan(tmp_path, '"\\u001b[2Jwipe" = 1\n')  # an unknown [run] key, quoted back in the error
    code, output = _run(tmp_path, capfd, str(plan))
    assert code == 2, output
    assert "\\x1b[2Jwipe" in output and "\x1b" not in output
    assert escape_unprintable("a\x1bb\u202ec") == "a\\x1bb\\u202ec"


def test_a_printable_unicode_phase_name_is_fine(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    from asyncbench.config import load

    plan = _plan(tmp_path, '[[phase]]\nkind = "insert"\nname = "Einfügen 插入 ١"\n')
    assert [p.name for p in load(plan).phases] == ["Einfügen 插入 ١"]


# --- the isolated engine process's arguments ----------------------------------------------


@pytest.fixture
def child_config(tmp_path: Path) -> Path:
    """A real child config, as the parent writes it."""
    from asyncbench.config import load, to_json

    path = tmp_path / "child.json"
    path.write_bytes(to_json(load(QUICK)))
    return path


def _child_argv(config: Path, tmp_path: Path, **override: str | None) -> list[str]:
    flags: dict[str, str | None] = {
        "CONFIG": str(config),
        "--engine": "lsm",
        "--profiles": "20000",
        "--parallelism": "1",
        "--result-file": str(tmp_path / "r.json"),
        "--log-file": str(tmp_path / "c.log"),
        **override,
    }
    argv: list[str] = []
    for flag, value in flags.items():
        if value is not None:
            argv += [value] if flag == "CONFIG" else [flag, value]
    return argv


@pytest.mark.parametrize(
    ("flag", "value", "problem"),
    [
        ("--profiles", "abc", "'abc' is not an integer"),
        ("--profiles", "２００００", "is not an integer"),
        ("--profiles", "0", "must be at least 1"),
        ("--profiles", "5", "5 profiles at P1 is not a level of"),
        ("--parallelism", "٣", "is not an integer"),
        ("--engine", "nosuch", "'nosuch' is not an engine of"),
        ("--result-file", "/nonexistent-dir/r.json", "its directory does not exist"),
        ("--log-file", "NEWDIR/c.log", "its directory does not exist"),
        ("--parent-pipe", "x", "'x' is not an integer"),
        ("--parent-pipe", "987654", "is not an open file descriptor"),
        ("--parent-pipe", "99999999999999999999", "is not an open file descriptor"),
        ("--parent-pipe", "-1", "must be at least 0"),
        ("CONFIG", "/nonexistent.json", "is not a file"),
        ("CONFIG", "QUICK", "is not a run configuration written by asyncbench"),
    ],
)
def test_child_process_arguments_exit_2_naming_them(
    flag: str,
    value: str | None,
    problem: str,
    child_config: Path,
    tmp_path: Path,
    capfd: pytest.CaptureFixture[str],
) -> None:
    from asyncbench.run.child import main as child_main

    if value == "NEWDIR/c.log":
        value = str(tmp_path / "newdir" / "c.log")
    if value == "QUICK":
        value = str(QUICK)
    code = child_main(_child_argv(child_config, tmp_path, **{flag: value}))
    output = "".join(capfd.readouterr())
    assert code == 2, output
    assert f"asyncbench: python -m asyncbench.run.child: {flag}" in output and problem in output, output
    assert "Traceback" not in output
    assert not (tmp_path / "newdir").exists()
    assert not (tmp_path / "r.json").exists()


def test_child_process_arguments_the_parent_passes_are_accepted(child_config: Path, tmp_path: Path) -> None:
    """The checks refuse nothing the parent passes (every isolated test runs through them)."""
    import argparse

    from asyncbench.run.isolated.child_args import child_args

    argv = _child_argv(child_config, tmp_path)
    args = argparse.Namespace(
        config=argv[0],
        **{k.lstrip("-").replace("-", "_"): v for k, v in zip(argv[1::2], argv[2::2], strict=True)},
    )
    args.parent_pipe = "0"
    got = child_args(args)
    assert (got.engine, got.profiles, got.parallelism, got.parent_pipe) == ("lsm", 20_000, 1, 0)
