"""Why a tree refuses to open: the store on disk is damaged or missing.

Open never repairs damage away: it raises one of these, naming the file and (where one
applies) the byte offset, and leaves every file as it found it, so the user decides what
to do. The only things open drops on its own are the ones it can prove were never
committed or are no longer needed: a torn last log frame after an unclean stop, unlisted
``seg-*.sst.tmp`` and ``meta.json.tmp`` files (a segment is renamed into place only
after the checksummed manifest lists it), and merge sources that manifest names as
obsolete (see ``meta.py`` and ``wal.py``). An unlisted ``seg-*.sst`` is refused.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["CorruptLog", "CorruptMeta", "CorruptSegment", "CorruptStore", "MissingStore"]


class CorruptStore(Exception):
    """A file of a tree is damaged (or, for :class:`MissingStore`, gone).

    ``path`` is the file (or directory), ``offset`` the byte offset of the damage when
    one is known (else None), ``reason`` what is wrong."""

    def __init__(self, path: Path | str, offset: int | None, reason: str) -> None:
        self.path = Path(path)
        self.offset = offset
        self.reason = reason
        where = f"{self.path}" if offset is None else f"{self.path} at offset {offset}"
        super().__init__(f"{where}: {reason}")

    def __reduce__(self) -> tuple[type, tuple[Path, int | None, str]]:
        # picklable with its fields (the isolated runner sends errors across processes)
        return type(self), (self.path, self.offset, self.reason)


class CorruptLog(CorruptStore):
    """A write-ahead log frame is damaged where a crash cannot have torn it."""


class CorruptSegment(CorruptStore):
    """A segment file failed a magic, length or checksum test."""


class CorruptMeta(CorruptStore):
    """``meta.json`` is missing, unreadable, or disagrees with the files present."""


class MissingStore(CorruptStore):
    """A tree, segment or log that the caller or ``meta.json`` says exists is gone."""
