"""Structured JSON logs: one line per operation batch, phase and run event.

structlog renders with orjson to a line-buffered file so ``tail -f`` shows progress as it
happens; the console stays human (see ``console``).
"""

from __future__ import annotations

from pathlib import Path
from typing import IO, Any

import orjson
import structlog


class _FlushingBytesLogger:
    """Writes each rendered event as one line and flushes, so tail -f sees it at once."""

    def __init__(self, fh: IO[bytes]) -> None:
        self._fh = fh

    def msg(self, message: bytes) -> None:
        self._fh.write(message + b"\n")
        self._fh.flush()

    info = warning = error = debug = msg


def open_log(path: Path) -> tuple[Any, IO[bytes]]:
    """A bound structlog logger writing JSON lines to ``path`` (appending), and its file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fh = open(path, "ab")  # noqa: SIM115 - closed by the caller at run end
    logger = structlog.wrap_logger(
        _FlushingBytesLogger(fh),
        processors=[
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.processors.JSONRenderer(serializer=orjson.dumps),
        ],
        cache_logger_on_first_use=True,
    )
    return logger, fh
