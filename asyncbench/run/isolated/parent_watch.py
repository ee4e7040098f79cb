"""An isolated engine child dies with its parent.

Killed with SIGKILL, the parent cannot stop its child, which would go on running its
engine and writing to the data directory for as long as its phases last, with nobody to
read its result. Two mechanisms, so each covers the other's gap:

- Linux: ``prctl(PR_SET_PDEATHSIG, SIGTERM)``: the kernel sends SIGTERM when the parent
  dies; set first thing in the child.
- everywhere: a pipe whose write end only the parent holds. The child blocks on the read
  end in a daemon thread; end-of-file means the parent is gone (it also catches a parent
  that died before ``prctl`` ran). The thread then sends the child SIGTERM.

SIGTERM starts the child's ordinary graceful stop: the engine is cancelled and its store
closed. The data directory stays locked meanwhile: the child inherited the parent's lock
descriptor, so the lock ends only when the child does.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import sys
import threading

__all__ = ["ParentWatch", "parent_pipe"]

PR_SET_PDEATHSIG = 1


def parent_pipe() -> tuple[int, int]:
    """(read end for the child, write end the parent keeps). Both close on exec; the
    parent passes the read end explicitly (``pass_fds``), so no other child inherits
    the write end and keeps the pipe open after the parent died."""
    return os.pipe()


class ParentWatch:
    """Child side: SIGTERM to this process when the parent dies. ``parent_gone`` tells
    afterwards whether that is why the child stopped."""

    def __init__(self, read_fd: int | None) -> None:
        self.read_fd = read_fd
        self.parent_gone = threading.Event()

    def start(self) -> None:
        _set_parent_death_signal(signal.SIGTERM)
        if self.read_fd is None:
            return
        threading.Thread(target=self._wait, name="asyncbench-parent-watch", daemon=True).start()

    def _wait(self) -> None:
        fd = self.read_fd
        assert fd is not None
        with contextlib.suppress(OSError):
            while os.read(fd, 1):  # the parent never writes; only EOF (or an error) returns
                pass
        self.parent_gone.set()
        os.kill(os.getpid(), signal.SIGTERM)


def _set_parent_death_signal(signum: int) -> None:
    if not sys.platform.startswith("linux"):
        return
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, int(signum), 0, 0, 0)
