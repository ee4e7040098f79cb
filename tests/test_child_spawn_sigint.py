"""Issue 52 item 7, the window left: a SIGINT to the process group while an engine child's
interpreter is still starting (importing ``site``: 20 ms on a quiet machine, over 400 ms
on a loaded one) printed ``Fatal Python error: init_import_site`` and a
``KeyboardInterrupt`` traceback. The parent now starts the child with SIGINT ignored until
the child's first line takes it back (asyncbench/run/isolated/child_command.py). The window is
forced: a ``sitecustomize`` on the child's path marks a file and sleeps inside ``site``'s
import, and the SIGINTs are sent once the mark is there."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

from asyncbench.run.isolated.child_command import child_command

SITECUSTOMIZE = """
import os, time
open(os.environ["ASYNCBENCH_TEST_MARK"], "w").close()
time.sleep(1.0)
"""


def test_sigints_while_the_childs_interpreter_starts_print_no_traceback(tmp_path: Path) -> None:
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(SITECUSTOMIZE)
    mark = tmp_path / "mark"
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(site), os.environ.get("PYTHONPATH")])),
        "ASYNCBENCH_TEST_MARK": str(mark),
    }
    args = [str(tmp_path / "config.json"), "--engine", "memory", "--profiles", "1000", "--parallelism", "1"]
    args += ["--result-file", str(tmp_path / "r.json"), "--log-file", str(tmp_path / "log")]
    proc = subprocess.Popen(child_command(args), stderr=subprocess.PIPE, text=True, env=env, start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while not mark.exists():  # the interpreter is inside site's import now, for a second
            assert proc.poll() is None and time.monotonic() < deadline
            time.sleep(0.005)
        for _ in range(3):
            os.killpg(proc.pid, signal.SIGINT)  # as Ctrl-C reaches the whole group
            time.sleep(0.01)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert "Traceback" not in err and "KeyboardInterrupt" not in err and "Fatal Python error" not in err, err
    # the parent owns the stop (it got the same Ctrl-C): the child went on to its own checks,
    # and refused the config file this test does not give it, as it would any bad argument
    assert proc.returncode == 2 and "config" in err, (proc.returncode, err)
