"""Structured JSON logs: one line per operation batch, phase and run event.

structlog renders with orjson; each line goes to the file in one ``os.write`` on an
``O_APPEND`` descriptor, so ``tail -f`` shows progress as it happens and an isolated
engine child appending to the same file never interleaves with the parent inside a line.

The log is a by-product: a write that fails (a full disk) must not abort the benchmark
(the old logger raised out of the runner's ``finally`` and lost every engine after it).
The first failure is kept in :attr:`LogFile.error`, the log stops there, and the run
reports it at the end. The file is opened without following a symlink and only if it is
a regular file (the CLI checked before the run that it is new or an asyncbench log). A new
log starts with an identifying record (:func:`~asyncbench.fs.ownership.log_first_record`);
an existing file is appended to only if it starts with one, checked again on the open
descriptor, so an empty file, a store's WAL or another tool's log is never written.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

import orjson
import structlog

from asyncbench.fs.ownership import is_own_log_head, log_first_record

__all__ = ["LogFile", "open_log"]


class LogFile:
    """An append-only JSON-lines file that records its first write error instead of raising."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.error: OSError | None = None
        flags = os.O_APPEND | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
        try:  # a new log starts with the record that proves later that we started it
            self._fd = os.open(path, flags | os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
            first: bytes | None = log_first_record()
        except FileExistsError:  # append only to a log this tool started
            self._fd = os.open(path, flags | os.O_RDWR)
            first = None
        try:
            if not stat.S_ISREG(os.fstat(self._fd).st_mode):
                raise OSError(f"{path} is not a regular file; the log must be one")
            if first is not None:
                os.write(self._fd, first)
            elif not is_own_log_head(os.pread(self._fd, 4096, 0)):
                raise OSError(
                    f"{path} is not a log asyncbench started (no asyncbench first record); not appended to"
                )
        except BaseException:
            os.close(self._fd)
            raise

    def msg(self, message: bytes) -> None:
        if self.error is not None or self._fd < 0:
            return
        data = message + b"\n"
        try:
            while data:
                data = data[os.write(self._fd, data) :]
        except OSError as exc:
            self.error = exc

    info = msg  # the one level the observers log at

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


def open_log(path: Path) -> tuple[Any, LogFile]:
    """A bound structlog logger writing JSON lines to ``path`` (appending), and its file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fh = LogFile(path)
    logger = structlog.wrap_logger(
        fh,
        processors=[
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.processors.JSONRenderer(serializer=orjson.dumps),
        ],
        cache_logger_on_first_use=True,
    )
    return logger, fh
