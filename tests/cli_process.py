"""The real CLI in a child process, for tests that signal or kill it.

Output is read line by line by a thread, so a test can wait for a line before it sends
the next signal; every wait has a generous deadline and fails with the output so far.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

from engines_for_tests import VARIANTS

ROOT = Path(__file__).resolve().parent.parent
TESTS = str(Path(__file__).parent)
QUICK = str(ROOT / "benchmarks" / "quick.toml")
#: Test engines every child process can load.
TEST_ENGINES = {
    "slow": "engines_for_tests:SlowEngine",
    "slowclose": "engines_for_tests:SlowCloseEngine",
    "slowstorage": "engines_for_tests:SlowStorageEngine",
    "paced": "engines_for_tests:PacedEngine",
    **VARIANTS,
}
READ_PHASE_STARTED = b'"phase":"read by user id","kind":"read_by_id","stream":"reads","total_ops"'


#: How long a wait may take before the test fails (generous: CI machines are slow).
WAIT_SECONDS = float(os.environ.get("ASYNCBENCH_TEST_WAIT_SECONDS", "90"))


def wait_for(predicate: Callable[[], bool], what: str, timeout: float | None = None) -> None:
    timeout = WAIT_SECONDS if timeout is None else min(timeout, WAIT_SECONDS)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.05)
    raise AssertionError(f"{what}: not reached in {timeout:g} s")


def child_env(tmp: Path | None = None, gate: Path | None = None) -> dict[str, str]:
    env = {
        **os.environ,
        "ASYNCBENCH_ENGINES": ",".join(f"{k}={v}" for k, v in TEST_ENGINES.items()),
        "PYTHONPATH": TESTS + os.pathsep + os.environ.get("PYTHONPATH", ""),
    }
    if tmp is not None:  # a private TMPDIR shows whether child temp dirs leak
        env["TMPDIR"] = str(tmp)
    if gate is not None:  # the slowclose engine's close waits for this file
        env["ASYNCBENCH_TEST_CLOSE_GATE"] = str(gate)
    return env


class BackgroundRun:
    """``python -m asyncbench ARGS`` started now; ``lines`` fills as it prints."""

    def __init__(self, args: list[str], log: Path, tmp: Path | None = None, gate: Path | None = None) -> None:
        self.log = log
        cmd = [sys.executable, "-m", "asyncbench", *args, "--log-file", str(log), "--no-progress"]
        self.proc = subprocess.Popen(
            cmd, env=child_env(tmp, gate), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, cwd=ROOT
        )
        self.lines: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for raw in self.proc.stdout:
            self.lines.append(raw.decode(errors="replace"))

    @property
    def output(self) -> str:
        return "".join(self.lines)

    def wait_for_log(self, needle: bytes = READ_PHASE_STARTED) -> None:
        wait_for(lambda: self.log.exists() and needle in self.log.read_bytes(), f"log line {needle!r}")

    def wait_for_output(self, text: str, count: int = 1) -> None:
        """Until ``text`` was printed ``count`` times, or the process ended (the caller's
        checks of its exit code and output then say what went wrong)."""
        wait_for(
            lambda: self.output.count(text) >= count or self.proc.poll() is not None,
            f"{count} x output {text!r}\n{self.output}",
        )

    def wait_for_file(self, path: Path) -> None:
        """Until ``path`` exists, or the process ended."""
        wait_for(lambda: path.exists() or self.proc.poll() is not None, f"file {path}\n{self.output}")

    def send(self, signum: int) -> None:
        self.proc.send_signal(signum)

    def finish(self, timeout: float = 120.0) -> int:
        try:
            code = self.proc.wait(timeout=timeout)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()
        self._reader.join(timeout=10)
        return code


def kill_quietly(run: BackgroundRun) -> None:
    if run.proc.poll() is None:
        run.proc.send_signal(signal.SIGKILL)
        run.proc.wait()
