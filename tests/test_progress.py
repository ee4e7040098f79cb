"""Live progress: bars per phase on a (forced) terminal console, console lines above them, off when not wanted."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from conftest import ROOT
from rich.console import Console

from asyncbench.cli.main import build_parser, main, parse_args
from asyncbench.result import EngineResult, PhaseResult
from asyncbench.run.observe import progress as progress_mod
from asyncbench.run.observe.observers import BatchDone, ConsoleObserver, ObserverGroup
from asyncbench.run.observe.progress import (
    NO_PROGRESS_ENV,
    ProgressObserver,
    progress_wanted,
    terminal_observers,
)
from asyncbench.workloads.profile_store.phases import PHASES, Action, Group

QUICK = str(ROOT / "benchmarks" / "quick.toml")


class FakeTTY(io.StringIO):
    def isatty(self) -> bool:
        return True


def forced_console() -> tuple[Console, io.StringIO]:
    buf = io.StringIO()
    return Console(file=buf, force_terminal=True, width=140, color_system=None), buf


def test_one_bar_per_phase_with_ops_rate_and_eta() -> None:
    console, buf = forced_console()
    obs = ProgressObserver(console)
    obs.engine_start("sqlite", 2000, "profiles")
    obs.phase_start("sqlite", "read by user id", 2000)
    task = obs.tasks[("sqlite", "read by user id")]
    for i in range(3):
        obs.batch(BatchDone("sqlite", "read by user id", i, 500, 0.01, 500 * (i + 1), 0, []))
    t = obs.progress.tasks[0]
    assert t.id == task and t.completed == 1500 and t.total == 2000
    assert t.description == "sqlite · read by user id"
    obs.progress.refresh()
    shown = buf.getvalue()
    assert "sqlite · read by user id" in shown
    assert "1_500/2_000 ops" in shown
    assert "/s" in shown and "ETA" in shown
    obs.phase_end("sqlite", PhaseResult(2, "read by user id", PHASES["read_by_id"], Action.OPERATIONS, Group.LOOKUP, 2000, 0.05))
    assert obs.tasks == {} and obs.progress.tasks == []
    obs.engine_end(EngineResult(engine="sqlite"))
    assert not obs.progress.live.is_started


def test_untimed_phase_gets_an_indeterminate_bar_and_unknown_batches_are_ignored() -> None:
    console, _ = forced_console()
    obs = ProgressObserver(console)
    obs.phase_start("rocksdb", "pre-read stabilization", 0)
    (t,) = obs.progress.tasks
    assert t.total is None
    obs.batch(BatchDone("rocksdb", "not a running phase", 0, 10, 0.1, 10, 0, []))  # no crash, no task
    assert len(obs.progress.tasks) == 1
    obs.run_end(exit_code=0)
    assert obs.progress.tasks == [] and not obs.progress.live.is_started


def test_console_lines_print_through_the_progress_console() -> None:
    console, buf = forced_console()
    obs = ProgressObserver(console)
    lines = ConsoleObserver(obs.stream)
    fan = ObserverGroup(obs, lines)
    fan.engine_start("memory", 2000, "profiles")
    fan.phase_start("memory", "insert profiles", 2000)
    fan.batch(BatchDone("memory", "insert profiles", 0, 2000, 0.01, 2000, 0, []))
    fan.phase_end(
        "memory", PhaseResult(0, "insert profiles", PHASES["insert"], Action.OPERATIONS, Group.WRITE, 2000, 0.5, "ABCDEF0123456789")
    )
    fan.engine_end(EngineResult(engine="memory", run_seconds=1.0))
    out = buf.getvalue()
    assert "== memory · 2_000 profiles" in out
    line = next(x for x in out.splitlines() if "ABCDEF0123456789" in x)
    assert "insert profiles" in line and "4_000/s" in line
    assert "run 1.00 s" in out
    # the partial-line buffer is flushed on demand
    obs.stream.write("no newline yet")
    assert "no newline yet" not in buf.getvalue()
    obs.stream.flush()
    assert "no newline yet" in buf.getvalue()


def test_progress_wanted_only_on_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(NO_PROGRESS_ENV, raising=False)
    assert progress_wanted(stream=FakeTTY())
    assert not progress_wanted(stream=io.StringIO())
    assert not progress_wanted(disabled=True, stream=FakeTTY())
    monkeypatch.setenv(NO_PROGRESS_ENV, "1")
    assert not progress_wanted(stream=FakeTTY())


def test_terminal_observers_wires_console_through_progress(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(NO_PROGRESS_ENV, raising=False)
    monkeypatch.setattr(progress_mod.sys, "stdout", FakeTTY())
    console, prog = terminal_observers()
    assert prog is not None and console.out is prog.stream
    console, prog = terminal_observers(disabled=True)
    assert prog is None
    monkeypatch.setattr(progress_mod.sys, "stdout", io.StringIO())
    # no terminal: no bars, but the status line every 10 s (issue 22), unless --quiet
    from asyncbench.run.observe.status import QUIET_ENV, StatusLineObserver

    assert isinstance(terminal_observers()[1], StatusLineObserver)
    monkeypatch.setenv(QUIET_ENV, "1")
    assert terminal_observers()[1] is None


def test_flags_parse_and_help_says_last_count_wins() -> None:
    args = parse_args(["plan.toml", "--no-progress", "--update-latest"])
    assert args.no_progress and args.update_latest
    args = parse_args(["plan.toml"])
    assert not args.no_progress and not args.update_latest
    assert "last one written wins" in " ".join(build_parser().format_help().split())


def test_run_with_update_latest_and_no_progress(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv(NO_PROGRESS_ENV, raising=False)
    out = tmp_path / "out"
    code = main(
        [QUICK, "--engine", "memory", "--profiles", "1k", "--output", str(out), "--data", str(tmp_path / "d")]
        + ["--no-progress", "--update-latest"]
    )
    monkeypatch.delenv(NO_PROGRESS_ENV, raising=False)  # the CLI set it for engine child processes
    text = capsys.readouterr().out
    assert code == 0, text
    assert "\x1b[" not in text  # no terminal control codes: bars were off
    latest = (out / "latest.md").read_text()
    (result,) = out.glob("profiles-1000-p1/asyncbench-*.json")
    assert f"(profiles-1000-p1/{result.name})" in latest
    svgs = sorted(p.name for p in out.glob("latest-*.svg"))
    assert len(svgs) == 7  # the six charts of a memory run, and the cost chart (issue 37)
    for name in svgs:
        assert f"]({name})" in latest
        stamped = result.parent / name.replace("latest-", f"{result.stem}-")
        assert (out / name).read_bytes() == stamped.read_bytes()


def test_a_long_phase_name_keeps_its_end_and_rate_at_80_columns() -> None:
    """Issue 39: the bar cut a phase name at its end, so three sweep rows all read
    "post-update read by user i…"; the bar shortens it in its middle, as the phase lines
    do, keeping what tells the rows apart (the end and the whole "@ rate" suffix)."""
    buf = io.StringIO()
    console = Console(file=buf, force_terminal=True, width=80, color_system=None)
    obs = ProgressObserver(console)
    name = "post-update read by user id and then again by email @ 32_000/s"
    obs.phase_start("rocksdb", name, 200_000)
    obs.batch(BatchDone("rocksdb", name, 0, 500, 0.01, 1_500, 0, []))
    obs.progress.refresh()
    shown = [line.removeprefix("\x1b[2K") for line in buf.getvalue().splitlines() if "rocksdb" in line]
    assert shown, buf.getvalue()
    line = shown[-1]
    assert "@ 32_000/s" in line and "…" in line and line.startswith("rocksdb · pos"), line
    assert "500/200_000 ops" in line, line
    assert len(line.rstrip()) <= 80, line
    obs.run_end(exit_code=0)
