"""Finding input files below a directory the user named, without trusting the tree.

``Path.rglob`` raises out of the middle of a walk when an entry vanishes (another
process's temporary directory), cannot be listed (permissions) or has a path longer than
``PATH_MAX``, and it walks whatever it is given: ``compare /`` would read the whole
filesystem. This walk instead skips what it cannot read, saying what and why, never
follows a symbolic link to a directory (no loops, no walking out of the tree), and stops
after a bounded number of entries: a results directory holds a few files per run, so a
tree far larger than that is not one, and the caller refuses it rather than wait.
"""

from __future__ import annotations

import fnmatch
import os
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["TooManyEntries", "Walk", "find"]


class TooManyEntries(ValueError):
    """The tree holds more entries than the bound; ``seen`` is how many were looked at."""

    def __init__(self, root: Path, seen: int) -> None:
        super().__init__(f"{root}: more than {seen:_d} entries below it")
        self.root, self.seen = root, seen


@dataclass
class Walk:
    """What a walk found (sorted) and what it skipped: (path, reason) pairs."""

    found: list[Path] = field(default_factory=list)
    skipped: list[tuple[Path, str]] = field(default_factory=list)


def find(root: Path, pattern: str, max_entries: int) -> Walk:
    """Every non-directory entry below ``root`` whose name matches ``pattern`` (fnmatch),
    depth first; :class:`TooManyEntries` once more than ``max_entries`` entries were seen."""
    out = Walk()
    pending = [root]
    seen = 0
    while pending:
        directory = pending.pop()
        entries = []
        try:
            with os.scandir(directory) as it:
                for entry in it:  # counted as read: a directory of millions is not listed first
                    seen += 1
                    if seen > max_entries:
                        raise TooManyEntries(root, max_entries)
                    entries.append(entry)
        except OSError as exc:  # vanished, not listable, a path over PATH_MAX, not a directory any more
            out.skipped.append((directory, exc.strerror or type(exc).__name__))
            continue
        for entry in entries:
            path = directory / entry.name
            try:
                is_dir = entry.is_dir(follow_symlinks=False)
            except OSError as exc:
                out.skipped.append((path, exc.strerror or type(exc).__name__))
                continue
            if is_dir:
                pending.append(path)
            elif fnmatch.fnmatchcase(entry.name, pattern):
                out.found.append(path)
    out.found.sort()
    return out
