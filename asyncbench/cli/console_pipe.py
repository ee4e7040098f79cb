"""A console whose reader went away costs the run its console, never its work.

``asyncbench run PLAN | head`` closes the pipe after a few lines; the next ``print`` raised
``BrokenPipeError`` from deep inside an observer, and the run ended with a traceback, exit
1 and no result (issue 52's trust: a run that fails or is interrupted still writes its
partial report, and a reader closing the console is neither). As a terminal that hung up
(``asyncbench.run.observe.signals``), the console then goes to ``/dev/null``: file descriptor 1 is
pointed there, so the rest of the run's lines (and any child process started later) write
nowhere, and the run goes on to write its result, reports and log as usual.
"""

from __future__ import annotations

import contextlib
import os
import sys
from typing import Any, TextIO

__all__ = ["PipeSafeStream", "guard_stdout"]


class PipeSafeStream:
    """``sys.stdout``, except that a broken pipe sends it, and fd 1, to ``/dev/null``."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream
        self.broken = False

    def _lost(self) -> None:
        self.broken = True
        with contextlib.suppress(OSError):
            null = os.open(os.devnull, os.O_WRONLY)
            try:
                os.dup2(null, self._stream.fileno())
            finally:
                os.close(null)

    def write(self, text: str) -> int:
        if self.broken:
            return len(text)
        try:
            return self._stream.write(text)
        except BrokenPipeError:
            self._lost()
            return len(text)

    def flush(self) -> None:
        if self.broken:
            return
        try:
            self._stream.flush()
        except BrokenPipeError:
            self._lost()

    def __getattr__(self, name: str) -> Any:  # isatty, fileno, encoding, buffer...
        return getattr(self._stream, name)


def guard_stdout() -> PipeSafeStream:
    """Wrap ``sys.stdout`` (once) so that a closed reader does not end the command."""
    if isinstance(sys.stdout, PipeSafeStream):
        return sys.stdout
    guarded = PipeSafeStream(sys.stdout)
    sys.stdout = guarded  # a TextIO in every way the callers use (sys.stdout is typed loosely)
    return guarded
