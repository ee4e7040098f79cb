"""Reading an input file (a plan, a result JSON) without trusting what the path names.

``Path.read_bytes`` on a FIFO waits for a writer forever, on a directory it raises, and on
a device it may read without end. Inputs are small regular files, so the file is opened
non-blocking, checked to be a regular file of a sane size through the same descriptor
(no window between check and read), and only then read.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

__all__ = ["MAX_INPUT_BYTES", "InputError", "read_input"]

#: Plans are a few KB and results a few MB; anything far larger is not one of them.
MAX_INPUT_BYTES = 256 * 1024 * 1024


class InputError(ValueError):
    """The path cannot be read as an input file; ``reason`` says why in a few words.
    ``errno`` is set when the operating system refused (the file vanished, cannot be
    opened or read), so a caller walking a tree can skip it rather than stop."""

    def __init__(self, reason: str, errno: int | None = None) -> None:
        super().__init__(reason)
        self.reason, self.errno = reason, errno


def read_input(path: Path, max_bytes: int = MAX_INPUT_BYTES, what: str = "an input file") -> bytes:
    """The bytes of the regular file at ``path``, at most ``max_bytes`` (``what`` names the
    kind of file in the message: a plan has a bound of its own); InputError otherwise."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError as exc:
        raise InputError("does not exist", exc.errno) from None
    except IsADirectoryError:
        raise InputError("is a directory, not a file") from None
    except OSError as exc:
        raise InputError(f"cannot be read: {exc.strerror}", exc.errno) from None
    try:
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):
            raise InputError("is a directory, not a file")
        if not stat.S_ISREG(st.st_mode):
            raise InputError(f"is not a regular file (a {_kind(st.st_mode)})")
        if st.st_size > max_bytes:
            raise InputError(f"is {st.st_size:_d} bytes, over the {max_bytes:_d} bytes {what} may have")
        chunks, size = [], 0
        while chunk := os.read(fd, 1 << 20):  # bounded: a file that grows while read (or a
            chunks.append(chunk)  # /proc file that reports size 0) is not read without end
            size += len(chunk)
            if size > max_bytes:
                raise InputError(f"is over the {max_bytes:_d} bytes {what} may have")
        return b"".join(chunks)
    except OSError as exc:
        raise InputError(f"cannot be read: {exc.strerror}", exc.errno) from None
    finally:
        os.close(fd)


def _kind(mode: int) -> str:
    for test, name in (
        (stat.S_ISFIFO, "FIFO"),
        (stat.S_ISCHR, "character device"),
        (stat.S_ISBLK, "block device"),
        (stat.S_ISSOCK, "socket"),
    ):
        if test(mode):
            return name
    return "special file"
