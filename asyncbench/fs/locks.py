"""Exclusive locks on the directories a run writes, so two runs never share one.

Without them two runs on one ``--data`` reset each other's stores mid-phase and both
report "ok" with contaminated timings. A lock is ``fcntl.flock`` on a small file that
records the holder's pid (for the error message); the kernel drops it when the last
descriptor closes, so a killed run never leaves a stale lock. Lock files are never
deleted: a second process may hold the old file open and would then lock a file nobody
else sees. An isolated engine child inherits its lock's descriptor (``fd``), so the lock
holds for as long as the child runs, even if the parent is killed first.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import stat
from dataclasses import dataclass
from pathlib import Path

__all__ = ["DirLock", "Locked", "acquire"]


class Locked(RuntimeError):
    """Another process holds the lock; the message names what is locked and its pid."""

    def __init__(self, what: Path, pid: int | None) -> None:
        holder = f"pid {pid}" if pid else "another process (pid not recorded yet)"
        super().__init__(f"{what} is in use by another asyncbench run: locked by {holder}")
        self.what, self.pid = what, pid


@dataclass
class DirLock:
    """A held lock: ``what`` is the directory it guards, ``fd`` the open lock file."""

    what: Path
    path: Path
    fd: int

    def release(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


def acquire(what: Path, lock_file: Path) -> DirLock:
    """Lock ``what`` through ``lock_file`` (created if missing, never through a symlink).

    Raises :class:`Locked` if another process holds it, OSError if the file cannot be
    created or is not a regular file.
    """
    flags = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
    fd = os.open(lock_file, flags, 0o644)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(f"{lock_file} is not a regular file")
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise Locked(what, _holder(fd)) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
    except BaseException:
        os.close(fd)
        raise
    return DirLock(what, lock_file, fd)


def _holder(fd: int) -> int | None:
    with contextlib.suppress(OSError, ValueError, IndexError):
        return int(os.pread(fd, 32, 0).split()[0])
    return None
