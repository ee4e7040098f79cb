"""``meta.json``: the tree's manifest, the one record of what is committed.

Why it exists: segments and logs are plain files, and a crash can leave files that were
never committed (a flush or merge that wrote its segment but died before saying so) or
files that are no longer needed (the sources of a committed merge). Open must tell those
apart from damage, so the manifest records enough to *prove* a file is garbage before
anything is deleted:

``segments``  live segment ids, newest first (each must exist).
``next_id``   every segment id below it was allocated before this save; a segment file
              with a larger id was written after it and never committed.
``writing``   ids that flush/merge jobs were writing when this was saved (allocated
              earlier, not committed: also never committed if found unlisted).
``obsolete``  segments a committed merge replaced whose files may still exist.
``min_wal``   logs below this sequence number are in segments (deletable).
``logs``      the logs holding records that are in no segment, as ``[seq, bytes]``
              pairs: each must exist; ``bytes`` is the file size at a clean close (else
              null), so a log cut at a frame boundary after a clean close is noticed.
``clean_close`` True only when written by ``LsmTree.close`` after every log was fsynced;
              open writes it back as False before the tree takes writes, so a tree knows
              by itself whether its last session ended cleanly (see ``wal.py``: only then
              is a torn last log frame a crash's doing rather than damage).

Saves are atomic (write ``meta.json.tmp``, fsync, rename, fsync the directory). The
format is version 1 throughout: the fields after ``next_id`` were added later and are
optional on read, so older stores open and older code ignores them.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .errors import CorruptMeta

__all__ = ["META", "Meta", "fsync_path", "read_meta", "write_meta"]

META = "meta.json"
VERSION = 1


@dataclass
class Meta:
    segments: list[int] = field(default_factory=list)
    next_id: int = 0
    min_wal: int = 0
    writing: list[int] = field(default_factory=list)
    obsolete: list[int] = field(default_factory=list)
    #: log sequence number -> size at a clean close (None: not closed cleanly)
    logs: dict[int, int | None] = field(default_factory=dict)
    clean_close: bool = False

    def is_uncommitted(self, seg_id: int) -> bool:
        """Provably never committed or no longer needed: safe to delete if unlisted."""
        return seg_id >= self.next_id or seg_id in self.writing or seg_id in self.obsolete

    def to_json(self) -> dict[str, Any]:
        return {
            "version": VERSION,
            "segments": self.segments,
            "min_wal": self.min_wal,
            "next_id": self.next_id,
            "writing": self.writing,
            "obsolete": self.obsolete,
            "logs": [[seq, size] for seq, size in sorted(self.logs.items())],
            "clean_close": self.clean_close,
        }


def _ids(doc: dict[str, Any], name: str, path: Path) -> list[int]:
    v = doc.get(name, [])
    if not isinstance(v, list) or not all(_is_count(i) for i in v):
        raise CorruptMeta(path, None, f"{name!r} is not a list of segment ids: {v!r}")
    return v


def _is_count(v: object) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v >= 0


def read_meta(directory: Path) -> Meta | None:
    """The manifest of the tree in ``directory``; None if it has none. Anything that is
    not a manifest this code wrote raises :class:`CorruptMeta` naming the file."""
    path = Path(directory) / META
    try:
        text = path.read_text()
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as e:
        raise CorruptMeta(path, None, f"unreadable: {e}") from e
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as e:
        raise CorruptMeta(path, e.pos, f"not valid JSON: {e.msg}") from e
    if not isinstance(doc, dict):
        raise CorruptMeta(path, None, f"not a JSON object: {text[:40]!r}")
    if doc.get("version", VERSION) != VERSION:
        raise CorruptMeta(path, None, f"unknown format version {doc.get('version')!r}")
    numbers = {name: doc.get(name, 0) for name in ("next_id", "min_wal")}
    for name, v in numbers.items():
        if not _is_count(v):
            raise CorruptMeta(path, None, f"{name!r} is not a non-negative integer: {v!r}")
    logs = doc.get("logs", [])
    if not isinstance(logs, list) or not all(
        isinstance(p, list) and len(p) == 2 and _is_count(p[0]) and (p[1] is None or _is_count(p[1]))
        for p in logs
    ):
        raise CorruptMeta(path, None, f"'logs' is not a list of [sequence, bytes] pairs: {logs!r}")
    clean = doc.get("clean_close", False)
    if not isinstance(clean, bool):
        raise CorruptMeta(path, None, f"'clean_close' is not true or false: {clean!r}")
    return Meta(
        segments=_ids(doc, "segments", path),
        next_id=numbers["next_id"],
        min_wal=numbers["min_wal"],
        writing=_ids(doc, "writing", path),
        obsolete=_ids(doc, "obsolete", path),
        logs={seq: size for seq, size in logs},
        clean_close=clean,
    )


def write_meta(directory: Path, meta: Meta) -> None:
    """Replace the manifest atomically and durably."""
    directory = Path(directory)
    tmp = directory / (META + ".tmp")
    with open(tmp, "w") as f:
        json.dump(meta.to_json(), f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, directory / META)
    fsync_path(directory)


def fsync_path(path: Path) -> None:
    """Make a file's contents, or a directory's renames and deletions, durable."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
