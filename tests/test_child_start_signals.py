"""Issue 52 item 7: three SIGINTs to the process group while an engine child starts (its
imports take a few hundred ms) printed a ``KeyboardInterrupt`` traceback from the child's
imports. The child now records stop signals from its first line and handles them once its
handlers are in place: the third SIGINT forces its exit (130), quietly, and nothing of it
is alive a second later."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest


@pytest.mark.parametrize("delay", [0.08, 0.15])
def test_three_sigints_during_a_childs_imports_print_no_traceback(tmp_path: Path, delay: float) -> None:
    cmd = [sys.executable, "-m", "asyncbench.run.child", str(tmp_path / "config.json"), "--engine", "memory"]
    cmd += ["--profiles", "1000", "--parallelism", "1", "--result-file", str(tmp_path / "r.json")]
    cmd += ["--log-file", str(tmp_path / "log")]
    proc = subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True, start_new_session=True)
    time.sleep(delay)  # python itself starts in ~20 ms; the child's imports take ~300 ms more
    assert proc.poll() is None
    for _ in range(3):
        os.killpg(proc.pid, signal.SIGINT)  # as Ctrl-C reaches the whole group
        time.sleep(0.01)
    try:
        _, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err
    assert proc.returncode == 130, (proc.returncode, err)
    time.sleep(1.0)
    assert not _alive(proc.pid)  # nothing of the child is alive a second later


def _alive(pid: int) -> bool:
    """Running (a zombie, killed and not yet reaped by whoever adopted it, is not)."""
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


SCRIPT = """
import subprocess, sys, time
from asyncbench.run.observe.signals import StopSignals
stop = StopSignals()
stop.install()
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])  # known to no cleanup
print(child.pid, flush=True)
time.sleep(60)
"""


def test_a_forced_exit_leaves_no_child_alive(tmp_path: Path) -> None:
    """A child the forced exit's cleanups do not know (one being started at that moment)
    is killed too: nothing of the run is alive a second after."""
    proc = subprocess.Popen([sys.executable, "-c", SCRIPT], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    child = int(proc.stdout.readline())
    for _ in range(3):
        proc.send_signal(signal.SIGINT)
        time.sleep(0.05)
    try:
        assert proc.wait(timeout=30) == 130
        time.sleep(1.0)
        assert not _alive(child)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(child, signal.SIGKILL)
