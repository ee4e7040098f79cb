"""``meta.json``: the tree's manifest, the one record of what is committed.

Why it exists: segments and logs are plain files, and a crash can leave files that were
never committed or files that are no longer needed (the sources of a committed merge).
Open must tell those apart from damage, so the manifest records enough to *prove* a file
is garbage before anything is deleted, and it is itself checksummed, so a manifest that
was edited, truncated, replaced by ``{}`` or by any other JSON is refused rather than
believed:

``segments``  live segment ids, newest first (each must exist, as ``seg-N.sst`` or, if
              the crash came between the commit and the rename, ``seg-N.sst.tmp``).
``next_id``   the next segment id to allocate (ids are never reused).
``obsolete``  segments a committed merge replaced whose files may still exist: the only
              ``seg-*.sst`` files open ever deletes, by the exact ids named here.
``min_wal``   logs below this sequence number are in segments (deletable).
``logs``      the logs holding records that are in no segment, as ``[seq, bytes]``
              pairs: each must exist; ``bytes`` is the file size at a clean close (else
              null), so a log cut at a frame boundary after a clean close is noticed.
``clean_close`` True only when written by ``LsmTree.close`` after every log was fsynced;
              open writes it back as False before the tree takes writes, so a tree knows
              by itself whether its last session ended cleanly (see ``wal.py``: only then
              is a torn last log frame a crash's doing rather than damage).
``crc32``     crc32 of the canonical JSON (sorted keys, no spaces) of every other field.

Why no segment is ever deleted for being unlisted: a segment is written as
``seg-N.sst.tmp`` and renamed to ``seg-N.sst`` only *after* the manifest that lists it is
on disk (``tree.py``), so a crash can leave an unlisted ``.tmp`` but never an unlisted
``seg-N.sst``. One that exists anyway was put there by someone else, or the manifest is
not the one this tree wrote: either way open refuses and deletes nothing.

Saves are atomic (write ``meta.json.tmp``, fsync, rename, fsync the directory). Format
version 2; version 1 manifests (no checksum, written before 2026-12) are refused with
an error that says so: nothing in them can be trusted to delete by.
"""

from __future__ import annotations

import json
import os
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .errors import CorruptMeta

__all__ = ["META", "VERSION", "Meta", "encode_meta", "fsync_path", "read_meta", "write_meta"]

META = "meta.json"
VERSION = 2
_FIELDS = ("version", "segments", "next_id", "min_wal", "obsolete", "logs", "clean_close")


@dataclass
class Meta:
    segments: list[int] = field(default_factory=list)
    next_id: int = 0
    min_wal: int = 0
    obsolete: list[int] = field(default_factory=list)
    #: log sequence number -> size at a clean close (None: not closed cleanly)
    logs: dict[int, int | None] = field(default_factory=dict)
    clean_close: bool = False

    def to_json(self) -> dict[str, Any]:
        return {
            "version": VERSION,
            "segments": self.segments,
            "min_wal": self.min_wal,
            "next_id": self.next_id,
            "obsolete": self.obsolete,
            "logs": [[seq, size] for seq, size in sorted(self.logs.items())],
            "clean_close": self.clean_close,
        }


def _canonical(doc: dict[str, Any]) -> str:
    return json.dumps(doc, sort_keys=True, separators=(",", ":"))


def encode_meta(meta: Meta) -> str:
    """The file's text: the canonical JSON of the fields plus their ``crc32``."""
    doc = meta.to_json()
    doc["crc32"] = zlib.crc32(_canonical(doc).encode())
    return _canonical(doc)


def _ids(doc: dict[str, Any], name: str, path: Path) -> list[int]:
    v = doc[name]
    if not isinstance(v, list) or not all(_is_count(i) for i in v):
        raise CorruptMeta(path, None, f"{name!r} is not a list of segment ids: {v!r}")
    return v


def _is_count(v: object) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v >= 0


def read_meta(directory: Path) -> Meta | None:
    """The manifest of the tree in ``directory``; None if it has none. Anything that is
    not a manifest this code wrote (no or a wrong checksum, another version, a missing
    or malformed field) raises :class:`CorruptMeta` naming the file; nothing is changed."""
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
        raise CorruptMeta(path, e.pos, f"not valid JSON: {e.msg}; nothing was deleted") from e
    if not isinstance(doc, dict):
        raise CorruptMeta(path, None, f"not a JSON object: {text[:40]!r}; nothing was deleted")
    version = doc.get("version")
    if version == 1:
        raise CorruptMeta(
            path,
            None,
            "format version 1 (no checksum, written by an older asyncbench): it cannot be "
            "trusted to say which segments are committed; rebuild the store (nothing was deleted)",
        )
    if version != VERSION:
        raise CorruptMeta(
            path, None, f"not an LSM manifest of format {VERSION} (version {version!r}); nothing was deleted"
        )
    crc = doc.pop("crc32", None)
    if not _is_count(crc) or zlib.crc32(_canonical(doc).encode()) != crc:
        raise CorruptMeta(
            path, None, f"checksum mismatch (crc32 {crc!r}): the manifest was changed; nothing was deleted"
        )
    missing = [name for name in _FIELDS if name not in doc]
    extra = sorted(set(doc) - set(_FIELDS))
    if missing or extra:
        raise CorruptMeta(path, None, f"fields missing {missing} or unknown {extra}; nothing was deleted")
    for name in ("next_id", "min_wal"):
        if not _is_count(doc[name]):
            raise CorruptMeta(path, None, f"{name!r} is not a non-negative integer: {doc[name]!r}")
    logs = doc["logs"]
    if not isinstance(logs, list) or not all(
        isinstance(p, list) and len(p) == 2 and _is_count(p[0]) and (p[1] is None or _is_count(p[1]))
        for p in logs
    ):
        raise CorruptMeta(path, None, f"'logs' is not a list of [sequence, bytes] pairs: {logs!r}")
    clean = doc["clean_close"]
    if not isinstance(clean, bool):
        raise CorruptMeta(path, None, f"'clean_close' is not true or false: {clean!r}")
    segments = _ids(doc, "segments", path)
    if len(set(segments)) != len(segments) or any(i >= doc["next_id"] for i in segments):
        raise CorruptMeta(path, None, f"'segments' {segments!r} repeats an id or one >= next_id")
    return Meta(
        segments=segments,
        next_id=doc["next_id"],
        min_wal=doc["min_wal"],
        obsolete=_ids(doc, "obsolete", path),
        logs={seq: size for seq, size in logs},
        clean_close=clean,
    )


def write_meta(directory: Path, meta: Meta) -> None:
    """Replace the manifest atomically and durably."""
    directory = Path(directory)
    tmp = directory / (META + ".tmp")
    with open(tmp, "w") as f:
        f.write(encode_meta(meta))
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
