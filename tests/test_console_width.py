"""The console fits an 80-column terminal: run the CLI under a pseudo-terminal 80 columns
wide and read what a user would see."""

from __future__ import annotations

import fcntl
import os
import pty
import re
import select
import shutil
import struct
import subprocess
import sys
import termios

import pytest
from conftest import ROOT

from asyncbench.run.observe.observers import phase_line

ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b[()][A-Z0-9]")
#: Cursor moves and erases start a new place on the screen: a line break for measuring.
CURSOR = re.compile(r"\x1b\[[0-9;]*[ABCDEFGHJK]")


def run_in_pty(args: list[str], cwd, columns: int = 80) -> str:
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, columns, 0, 0))
    env = {k: v for k, v in os.environ.items() if k not in ("ASYNCBENCH_NO_PROGRESS", "COLUMNS", "LINES")}
    env["TERM"] = "xterm"
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    proc = subprocess.Popen(
        [sys.executable, "-m", "asyncbench", *args], cwd=cwd, stdin=slave, stdout=slave, stderr=slave, env=env
    )
    os.close(slave)
    chunks = []
    while True:
        ready, _, _ = select.select([master], [], [], 120)
        if not ready:
            proc.kill()
            break
        try:
            data = os.read(master, 65536)
        except OSError:  # the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    proc.wait(timeout=60)
    os.close(master)
    return b"".join(chunks).decode("utf-8", "replace")


def test_console_and_progress_fit_80_columns(tmp_path) -> None:
    shutil.copy(ROOT / "benchmarks" / "quick.toml", tmp_path / "quick.toml")
    raw = run_in_pty(
        ["quick.toml", "--engine", "memory", "--profiles", "60k", "--no-isolate", "--output", "out", "--data", "d"],
        tmp_path,
    )
    screen = ANSI.sub("", CURSOR.sub("\n", raw))
    segments = [seg for line in screen.split("\n") for seg in line.split("\r")]
    too_wide = [seg for seg in segments if len(seg.rstrip()) > 80]
    assert not too_wide, "\n".join(f"{len(s.rstrip())}: {s!r}" for s in too_wide)
    assert "-:--:--" not in screen
    assert "ops" in screen and "/s" in screen  # the progress figures carry their units
    # the long name is shortened in its middle (its end tells it from the other scans)
    phase_lines = [s for s in segments if s.startswith("  post-update s") and "utation index" in s[:30]]
    assert phase_lines and all(re.search(r" [0-9A-F]{16}$", s.rstrip()) for s in phase_lines), phase_lines


def test_phase_line_cuts_a_long_name_never_the_checksum() -> None:
    line = phase_line("a" * 70, "1.234 s", "1_234_567/s", "0123456789ABCDEF")
    assert len(line) <= 80 and line.endswith("0123456789ABCDEF") and "…" in line


@pytest.mark.parametrize("command", [[], ["run"], ["report"], ["compare"], ["engines"], ["floor"]])
def test_every_help_line_fits_80_columns(command, monkeypatch, capsys) -> None:
    from asyncbench.cli.main import main

    monkeypatch.setenv("COLUMNS", "80")
    with pytest.raises(SystemExit) as exit_:
        main([*command, "--help"])
    assert exit_.value.code == 0
    text = capsys.readouterr().out
    too_wide = [line for line in text.splitlines() if len(line) > 80]
    assert not too_wide, "\n".join(too_wide)
    if not command:  # the commands are named where a new user looks
        listed = {line.split()[0] for line in text.splitlines() if line.startswith("    ") and line.strip()}
        assert {"run", "report", "compare", "engines", "floor"} <= listed


def test_phase_table_shows_p50_and_p99_in_80_columns() -> None:
    from asyncbench.run.observe.observers import phase_header

    header = phase_header()
    line = phase_line("post-update scan country/status index", "1.234", "1_234_567/s", "0123456789ABCDEF", p50="4.2µs", p99="137ms")
    assert len(header) <= 80 and len(line) <= 80
    assert header.index("p50") < header.index("p99") < header.index("checksum")
    assert line.endswith(" 4.2µs  137ms 0123456789ABCDEF")


def test_a_cut_name_keeps_its_rate_suffix_and_its_end() -> None:
    """Issue 39: three sweep rows read "post-update read by user i…": the distinguishing
    "@ rate" suffix and the end of the name survive; the middle is shortened."""
    names = [f"post-update read by user id @ {r}/s" for r in ("2_000", "4_000", "8_000")]
    lines = [phase_line(n, "1.234", "1_234/s", "0123456789ABCDEF") for n in names]
    assert all(len(line) <= 80 for line in lines)
    assert all("…" in line and f"user id @ {r}/s " in line for line, r in zip(lines, ("2_000", "4_000", "8_000"), strict=True))
    assert len({line[:40] for line in lines}) == 3  # the rows are told apart where the name ends
    scan = phase_line("post-update scan country/status index", "1.234", "1_234/s", "0123456789ABCDEF")
    assert "…" in scan and scan.split()[0] == "post-update" and "index" in scan


def test_the_name_column_fits_the_names_on_a_wide_terminal() -> None:
    """Issue 39: with COLUMNS=200 the name column stretched to ~150 characters."""
    from asyncbench.run.observe.observers import ConsoleObserver

    lines: list[str] = []

    class Out:
        def write(self, text: str) -> int:
            lines.extend(text.splitlines())
            return len(text)

        def flush(self) -> None: ...

    console = ConsoleObserver(Out(), width=200)  # type: ignore[arg-type]
    console.fit_names(["insert profiles", "post-update scan country/status index"])
    console.engine_start("memory", 1000, "profiles")
    header = next(line for line in lines if "checksum" in line)
    assert header.index("time s") <= 2 + len("post-update scan country/status index") + 8, header
    from asyncbench.run.observe.observers import phase_header

    assert phase_header(200, names=["a" * 200]).index("time s") <= 70  # a cap, whatever the names
