"""The clean-shutdown mark of an engine whose store is several files written one by one.

A key/value engine that keeps a workload's records in several stores (the profile store's
five: a profile and its four index entries are five puts) marks a clean close; an open
that finds no mark tells the workload (``KvPrimitives.unclean``), which repairs what a
crash left half written before its first batch. The mark is the engine's; the repair is
the workload's (``workloads/profile_store/kv_recovery.py``).
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["CleanShutdownMarker"]


class CleanShutdownMarker:
    """A file written last by a successful close and removed first by open.

    Its absence at open means the previous session did not close cleanly (killed, crashed,
    or its close failed), so the store may hold a profile's writes only in part.
    """

    NAME = "CLEAN_SHUTDOWN"

    def __init__(self, directory: Path) -> None:
        self.directory = Path(directory)
        self.path = self.directory / self.NAME

    def take(self) -> bool:
        """Remove the mark; True if it was there. Durable before the caller writes."""
        try:
            self.path.unlink()
        except FileNotFoundError:
            return False
        _fsync_dir(self.directory)
        return True

    def set(self) -> None:
        """Write the mark durably (after every store closed without error); never through
        a symlink planted in its place."""
        fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
        with os.fdopen(fd, "wb") as fh:
            fh.write(b"closed cleanly\n")
            fh.flush()
            os.fsync(fh.fileno())
        _fsync_dir(self.directory)


def _fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
