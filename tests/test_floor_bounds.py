"""Issue 34, ``floor``: absurd sizes are refused or asked about, and a stop by SIGTERM or
SIGHUP removes the temporary stores as Ctrl-C does.

Every count flag has a maximum (exit 2 from argparse, naming the flag); within them, the
command prints an estimate of its time first, and on a terminal a run estimated over 10
minutes asks before it starts (``--yes`` skips the question), as ``run`` does.
"""

from __future__ import annotations

import io
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from cli_process import ROOT, wait_for

from asyncbench.cli.main import main
from asyncbench.tools.floor_estimate import FLAG_MAXIMA


def _exit(argv: list[str]) -> int:
    try:
        return main(argv)
    except SystemExit as exc:  # argparse's own refusal
        return int(exc.code or 0)


@pytest.mark.parametrize(("flag", "value"), [("--repeats", "5 "), ("--profiles", "\u00a01k"), ("--pin", " 0"), ("--pin", "+0")])
def test_counts_with_whitespace_or_a_sign_are_refused(flag: str, value: str, capsys) -> None:
    assert _exit(["floor", flag, value, "--yes"]) == 2
    err = capsys.readouterr().err
    assert f"argument {flag}: " in err and "is not a count" in err


@pytest.mark.parametrize(
    ("flag", "value"),
    [("--profiles", "2000000000"), ("--repeats", "100000"), ("--slices", "1M"), ("--point-ops", "1000000000")],
)
def test_counts_beyond_their_maximum_are_refused(flag: str, value: str, capsys, monkeypatch, tmp_path) -> None:
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    assert _exit(["floor", flag, value, "--yes"]) == 2
    err = capsys.readouterr().err
    most = FLAG_MAXIMA[flag[2:].replace("-", "_")]
    assert f"argument {flag}: " in err and f"is more than the {most:_d} this flag allows" in err
    assert not list(tmp_path.iterdir())


class Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_long_floor_run_prints_its_estimate_and_asks(capsys, monkeypatch, tmp_path) -> None:
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr(sys, "stdin", Tty("n\n"))
    monkeypatch.setattr(sys, "stdout", Tty())
    assert main(["floor", "--profiles", "10M", "--repeats", "100"]) == 0
    out = sys.stdout.getvalue()
    assert "estimate: about " in out and "Start this floor run of about" in out and "not started" in out
    assert not list(tmp_path.iterdir())  # nothing was built


def test_the_estimate_grows_with_the_flags() -> None:
    import argparse

    from asyncbench.run.estimate import ASK_ABOVE_SECONDS
    from asyncbench.tools.floor import add_arguments, estimate

    parser = argparse.ArgumentParser()
    add_arguments(parser)
    default = estimate(parser.parse_args([]))
    assert 60 < default < 600  # the documented run: a few minutes
    assert estimate(parser.parse_args(["--repeats", "100"])) > 10 * default
    assert estimate(parser.parse_args(["--profiles", "10M", "--repeats", "100"])) > ASK_ABOVE_SECONDS


@pytest.mark.parametrize("twice", [False, True], ids=["once", "twice"])
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT], ids=lambda s: s.name)
def test_a_stop_signal_removes_the_temporary_stores(tmp_path: Path, sig: signal.Signals, twice: bool) -> None:
    """The first stop signal closes the engines and removes the temporary stores; a second
    one soon after is absorbed (the run's stop policy, asyncbench.run.observe.signals), never a
    default action halfway through the clean-up."""
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    cmd = [sys.executable, "-m", "asyncbench", "floor", "--engine", "sqlite", "--profiles", "200k", "--yes"]
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        def building() -> bool:
            stores = list(tmp_path.glob("asyncbench-floor-*/sqlite/*/store.db"))
            return bool(stores) and any(p.stat().st_size > 0 for p in stores if p.is_file())

        wait_for(building, "the floor's store being built")
        proc.send_signal(sig)
        if twice:
            time.sleep(0.05)
            proc.send_signal(sig)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    # twice: a second signal that lands after the clean-up, while the interpreter exits
    # (CPython puts the default handlers back as it finalizes), ends it by that signal
    assert proc.returncode == 130 or (twice and proc.returncode == -sig), err
    assert not list(tmp_path.glob("asyncbench-floor-*")), err


def test_a_dir_with_an_escape_character_is_shown_escaped(tmp_path: Path, capsys) -> None:
    assert main(["floor", "--dir", str(tmp_path / "a\x1b[2Jb"), "--yes"]) == 2
    err = capsys.readouterr().err
    assert "a\\x1b[2Jb: not an existing directory" in err and "\x1b" not in err


def _engine_threads() -> set[object]:
    import threading

    return {t for t in threading.enumerate() if not t.daemon and t is not threading.main_thread()}


@pytest.mark.parametrize("engine", ["sqlite", "rocksdb"])
@pytest.mark.parametrize("how", ["error", "cancel"])
def test_a_stop_inside_the_build_closes_the_half_built_floor(tmp_path: Path, monkeypatch, engine: str, how: str) -> None:
    """CI hang (SIGINT twice, 60 s timeout): the stop signal landed while the floor was
    building its store, which ``measure`` did outside the try whose ``finally`` closes the
    floor. The engine stayed open, and SQLite's aiosqlite worker (not a daemon thread) could
    hold the interpreter at exit. Now the build is inside, and a half-built floor closes."""
    import argparse

    import anyio

    from asyncbench.tools import floor, floor_engines

    real_load = floor_engines.load

    async def load_then_stop(handles, profiles, batch=1_000):  # type: ignore[no-untyped-def]
        await real_load(handles, profiles, batch)  # the store is open and written to
        if how == "error":
            raise RuntimeError("stopped inside the build")
        await anyio.sleep_forever()  # until the scope below is cancelled, as a signal does

    monkeypatch.setattr(floor_engines, "load", load_then_stop)
    parser = argparse.ArgumentParser()
    floor.add_arguments(parser)
    args = parser.parse_args(["--engine", engine, "--profiles", "2k", "--dir", str(tmp_path)])
    before = _engine_threads()

    async def run() -> None:
        with anyio.move_on_after(3 if how == "cancel" else 60):
            await floor.measure(args)

    if how == "error":
        with pytest.raises(RuntimeError, match="inside the build"):
            anyio.run(run)
    else:
        anyio.run(run)
    left = [t for t in _engine_threads() - before if (t.join(5) or t.is_alive())]  # type: ignore[func-returns-value]
    assert not left, f"threads of an unclosed engine: {left}"
    assert not list(tmp_path.iterdir())  # the temporary stores are removed


def test_closing_a_floor_between_fresh_and_drop_closes_the_fresh_store(tmp_path: Path) -> None:
    """A stop between ``fresh`` and ``drop_fresh`` (an insert kind's round) leaves a fresh
    engine open; the floor's close drops it too."""
    import anyio

    from asyncbench.tools.floor_engines import SqliteFloor
    from asyncbench.tools.store import draw

    before = _engine_threads()

    async def run() -> None:
        f = SqliteFloor()
        try:
            await f.build(tmp_path / "sqlite", draw(2_000), 100)
            await f.fresh("0")
        finally:
            await f.close()

    anyio.run(run)
    left = [t for t in _engine_threads() - before if (t.join(5) or t.is_alive())]  # type: ignore[func-returns-value]
    assert not left, f"threads of an unclosed engine: {left}"
