"""Hostile and mistaken input is refused before anything runs (exit 2, one message naming
the input, nothing created): plan values and files, profile lists, engine settings, and
every path the run will write.

Issue items 4 (duplicate profile counts), 5 (the log, latest files and outputs never
overwrite what is not the tool's), 6 (an output profiles-N that is a file), 14 (a log
file that cannot be written), 15 (inf, overflow, nesting, BOM, FIFO, non-UTF-8 paths)
and 17 (engine settings out of range)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from conftest import ROOT

from asyncbench.cli.main import main

QUICK = ROOT / "benchmarks" / "quick.toml"
GOOD = '[run]\nprofiles = 100\n[[phase]]\nkind = "insert"\n[[phase]]\nkind = "verify"\n'


def refused(tmp_path: Path, capsys: pytest.CaptureFixture[str], *args: str, plan: Path = QUICK) -> str:
    """Run the CLI; assert exit 2 and that neither output nor data was created; the message."""
    out, data = tmp_path / "out", tmp_path / "data"
    engine = [] if "--engine" in args else ["--engine", "memory"]
    code = main([str(plan), *args, "--output", str(out), "--data", str(data), *engine])
    err = capsys.readouterr().err
    assert code == 2, err
    assert not out.exists() and not data.exists(), err
    return err


# --- item 4 --------------------------------------------------------------------------------


@pytest.mark.parametrize("profiles", ["1k,1k", "1000,2k,1_000"])
def test_duplicate_profile_counts_are_rejected(tmp_path: Path, capsys, profiles: str) -> None:
    err = refused(tmp_path, capsys, "--profiles", profiles)
    assert "command line: --profiles: 1_000 is listed twice" in err


def test_duplicate_profile_counts_in_a_plan_are_rejected(tmp_path: Path, capsys) -> None:
    plan = tmp_path / "p.toml"
    plan.write_text(GOOD.replace("profiles = 100", "profiles = [100, 200, 100]"))
    assert "run.profiles: 100 is listed twice" in refused(tmp_path, capsys, plan=plan)


# --- item 15: numbers, TOML, files, paths ---------------------------------------------------


@pytest.mark.parametrize(
    ("flags", "reason"),
    [
        (["--timeout-seconds", "inf"], "--timeout-seconds: must be at most"),
        (["--timeout-seconds", "1e999"], "--timeout-seconds: must be at most"),
        (["--timeout-seconds", "nan"], "--timeout-seconds: must be positive"),
        (["--profiles", "1.e400"], "--profiles: '1.e400' is not a count"),
        (["--parallelism", "9.9e999"], "--parallelism: '9.9e999' is not a count"),
        (["--batch-size", "1.5e999k"], "--batch-size: '1.5e999k' is not a count"),
    ],
    ids=lambda v: "=".join(v) if isinstance(v, list) else None,
)
def test_infinite_and_overflowing_numbers_are_rejected(tmp_path: Path, capsys, flags, reason) -> None:
    assert f"command line: {reason}" in refused(tmp_path, capsys, *flags)


@pytest.mark.parametrize(
    ("toml", "key", "reason"),
    [
        ("timeout_seconds = inf", "run.timeout_seconds", "must be at most"),
        ("timeout_seconds = 1e12", "run.timeout_seconds", "must be at most"),
        ("timeout_seconds = nan", "run.timeout_seconds", "must be positive"),
    ],
)
def test_infinite_timeout_in_a_plan_is_rejected(tmp_path: Path, capsys, toml, key, reason) -> None:
    plan = tmp_path / "p.toml"
    plan.write_text(GOOD.replace("[run]\n", f"[run]\n{toml}\n"))
    assert f"{plan}: {key}: {reason}" in refused(tmp_path, capsys, plan=plan)


@pytest.mark.parametrize(
    ("body", "key"),
    [
        ('[[phase]]\nkind = ["insert"]\n', "phase[0].kind"),
        ('[[phase]]\nkind = {x = 1}\n', "phase[0].kind"),
        ('[[phase]]\nkind = "insert"\n[[phase]]\nkind = "read_by_id"\nstream = ["reads"]\n', "phase[1].stream"),
        ('[[phase]]\nkind = "insert"\n[[phase]]\nkind = "read_by_id"\nname = ["x"]\n', "phase[1].name"),
        ('[run]\nengines = [["memory"]]\n[[phase]]\nkind = "insert"\n', "run.engines"),
    ],
)
def test_unhashable_values_are_rejected_not_crashed_on(tmp_path: Path, capsys, body: str, key: str) -> None:
    plan = tmp_path / "p.toml"
    plan.write_text(body)
    code = main([str(plan), "--output", str(tmp_path / "out"), "--data", str(tmp_path / "data")])
    assert code == 2
    assert f"{plan}: {key}:" in capsys.readouterr().err


def test_deeply_nested_toml_is_a_syntax_error(tmp_path: Path, capsys) -> None:
    plan = tmp_path / "deep.toml"
    plan.write_text("a = " + "[" * 100_000 + "]" * 100_000 + "\n")
    assert f"{plan}: syntax: arrays or tables are nested too deeply" in refused(tmp_path, capsys, plan=plan)


def test_utf8_byte_order_mark_is_accepted(tmp_path: Path, run_cli) -> None:
    plan = tmp_path / "bom.toml"
    plan.write_bytes(b"\xef\xbb\xbf" + GOOD.encode())
    code, results, output = run_cli(str(plan), "--engine", "memory", "--no-isolate")
    assert code == 0, output
    assert results[0]["profiles"] == 100


def test_fifo_as_plan_is_refused_without_waiting(tmp_path: Path, capsys) -> None:
    fifo = tmp_path / "plan.toml"
    os.mkfifo(fifo)
    # On the old code this call blocked for ever in open(); the test would hang, not pass.
    assert f"{fifo}: file: is not a regular file (a FIFO)" in refused(tmp_path, capsys, plan=fifo)


def test_device_as_plan_is_refused(tmp_path: Path, capsys) -> None:
    assert "file: is not a regular file (a character device)" in refused(tmp_path, capsys, plan=Path("/dev/zero"))


@pytest.mark.parametrize("flag", ["--output", "--data", "--log-file"])
def test_non_utf8_path_is_rejected(tmp_path: Path, capsys, flag: str) -> None:
    bad = os.fsdecode(bytes(tmp_path) + b"/x\xff")
    out, data = str(tmp_path / "out"), str(tmp_path / "data")
    paths = {"--output": out, "--data": data, "--log-file": str(tmp_path / "run.log")}
    paths[flag] = bad
    args = [str(QUICK), "--engine", "memory", "--profiles", "1k", "--no-isolate"]
    code = main([*args, *(x for kv in paths.items() for x in kv)])
    err = capsys.readouterr().err
    assert code == 2, err
    assert "contains bytes that are not UTF-8" in err
    assert not os.listdir(tmp_path)


def test_non_utf8_plan_path_is_rejected(tmp_path: Path, capsys) -> None:
    plan = Path(os.fsdecode(bytes(tmp_path) + b"/p\xff.toml"))
    plan.write_text(GOOD)
    assert "plan: " in refused(tmp_path, capsys, plan=plan)


# --- item 17: engine settings out of range -------------------------------------------------


@pytest.mark.parametrize(
    ("table", "key"),
    [
        ("[engines.rocksdb]\nwrite_buffer_size_mb = 0\n", "engines.rocksdb.write_buffer_size_mb"),
        ("[engines.rocksdb]\nwrite_buffer_size_mb = 9223372036854775807\n", "engines.rocksdb.write_buffer_size_mb"),
        ("[engines.rocksdb]\nmax_write_buffer_number = 0\n", "engines.rocksdb.max_write_buffer_number"),
        ("[engines.rocksdb]\nmax_write_buffer_number = 100000\n", "engines.rocksdb.max_write_buffer_number"),
        ("[engines.mysql]\nport = 70000\n", "engines.mysql.port"),
        ("[engines.mysql]\nport = 65536\n", "engines.mysql.port"),
    ],
)
def test_out_of_range_engine_settings_are_rejected(tmp_path: Path, capsys, table: str, key: str) -> None:
    plan = tmp_path / "p.toml"
    plan.write_text(GOOD + table)
    assert f"{plan}: {key}:" in refused(tmp_path, capsys, plan=plan)


# --- items 6 and 5: output and data paths ---------------------------------------------------


def test_output_profiles_dir_that_is_a_file_is_rejected_before_running(tmp_path: Path, capsys) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "profiles-1000-p1").write_text("a file")
    args = [str(QUICK), "--engine", "memory", "--profiles", "1k", "--no-isolate"]
    code = main([*args, "--output", str(out), "--data", str(tmp_path / "data")])
    err = capsys.readouterr().err
    assert code == 2 and "output: " in err and "profiles-1000-p1 exists and is not a directory" in err
    assert not (tmp_path / "data").exists()  # nothing ran
    assert (out / "profiles-1000-p1").read_text() == "a file" and os.listdir(out) == ["profiles-1000-p1"]


@pytest.mark.parametrize("key", ["output", "data"])
def test_symlinked_profiles_dir_is_rejected(tmp_path: Path, capsys, key: str) -> None:
    base = tmp_path / key
    base.mkdir()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (base / ("profiles-1000-p1" if key == "output" else "profiles-1000")).symlink_to(elsewhere)
    args = [str(QUICK), "--engine", "memory", "--profiles", "1k", "--no-isolate"]
    other = "data" if key == "output" else "output"
    code = main([*args, f"--{key}", str(base), f"--{other}", str(tmp_path / other)])
    err = capsys.readouterr().err
    assert code == 2 and f"{key}: " in err and "is a symlink" in err
    assert os.listdir(elsewhere) == []


def test_output_inside_an_engine_data_dir_is_rejected(tmp_path: Path, capsys) -> None:
    data = tmp_path / "data"
    args = [str(QUICK), "--engine", "sqlite", "--profiles", "1k", "--no-isolate", "--data", str(data)]
    code = main([*args, "--output", str(data / "profiles-1000" / "sqlite" / "results")])
    err = capsys.readouterr().err
    assert code == 2 and "output: " in err and "inside the engine data directory" in err
    assert not data.exists()


def test_log_inside_an_engine_data_dir_is_rejected(tmp_path: Path, capsys) -> None:
    log = tmp_path / "data" / "profiles-1000" / "lsm" / "run.log"
    err = refused(tmp_path, capsys, "--engine", "lsm", "--profiles", "1k", "--log-file", str(log))
    assert "--log-file: " in err and "inside the engine data directory" in err


def test_log_file_that_is_the_plan_is_refused_and_the_plan_unchanged(tmp_path: Path, capsys) -> None:
    plan = tmp_path / "plan.toml"
    plan.write_text(QUICK.read_text())
    before = plan.read_bytes()
    err = refused(tmp_path, capsys, "--profiles", "1k", "--log-file", str(plan), plan=plan)
    assert f"--log-file: {plan} is the plan file" in err
    assert plan.read_bytes() == before


@pytest.mark.parametrize("content", [b"my notes\n", b'{"schema": 2}\n'])
def test_log_file_must_be_new_or_an_asyncbench_log(tmp_path: Path, capsys, content: bytes) -> None:
    log = tmp_path / "existing.log"
    log.write_bytes(content)
    err = refused(tmp_path, capsys, "--profiles", "1k", "--log-file", str(log))
    assert "is not an asyncbench log" in err
    assert log.read_bytes() == content


def test_an_asyncbench_log_is_appended_to(tmp_path: Path, run_cli) -> None:
    log = tmp_path / "run.log"
    for _ in range(2):
        code, _, output = run_cli(str(QUICK), "--engine", "memory", "--profiles", "1k", "--log-file", str(log))
        assert code == 0, output
    starts = [line for line in log.read_text().splitlines() if '"event":"run_start"' in line]
    assert len(starts) == 2


def test_symlinked_log_file_is_refused(tmp_path: Path, capsys) -> None:
    target = tmp_path / "target"
    target.write_text("not a log")
    (tmp_path / "run.log").symlink_to(target)
    err = refused(tmp_path, capsys, "--profiles", "1k", "--log-file", str(tmp_path / "run.log"))
    assert "is a symlink" in err and target.read_text() == "not a log"


# --- item 14: a log that cannot be written ----------------------------------------------------


@pytest.mark.parametrize(
    ("log", "reason"),
    [
        ("{tmp}/file/run.log", "is not a directory"),
        ("/proc/asyncbench.log", "is on a pseudo file system"),
        ("/proc/self/status", "is not an asyncbench log"),
        ("/dev/full", "is not a regular file"),
        ("{tmp}", "is a directory"),
    ],
)
def test_unwritable_log_file_is_refused_before_anything_is_created(
    tmp_path: Path, capsys, log: str, reason: str
) -> None:
    (tmp_path / "file").write_text("x")
    err = refused(tmp_path, capsys, "--profiles", "1k", "--log-file", log.format(tmp=tmp_path))
    assert "command line: --log-file: " in err and reason in err


# --- item 5: latest files -----------------------------------------------------------------------


def test_update_latest_refuses_a_foreign_latest_md(tmp_path: Path, capsys) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "latest.md").write_text("# my own notes\n")
    args = [str(QUICK), "--engine", "memory", "--profiles", "1k", "--no-isolate", "--update-latest"]
    code = main([*args, "--output", str(out), "--data", str(tmp_path / "data")])
    err = capsys.readouterr().err
    assert code == 2 and "latest.md exists and is not an asyncbench report" in err
    assert (out / "latest.md").read_text() == "# my own notes\n"
    assert not (tmp_path / "data").exists()


def test_update_latest_rewrites_its_own_latest_files(tmp_path: Path, run_cli) -> None:
    for _ in range(2):
        code, _, output = run_cli(str(QUICK), "--engine", "memory", "--profiles", "1k", "--update-latest", charts=True)
        assert code == 0, output
    assert (tmp_path / "out" / "latest.md").read_text().startswith("<!-- asyncbench report")
