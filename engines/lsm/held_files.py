"""Deleted segment files held open until their mappings are gone, then closed off the loop.

Why: a merge deletes its source segments while their mappings may still be read (an
iterator still on them), so each file lives on, unlinked, until its last mapping goes.
That last release frees the file's blocks, and on a file system mounted with ``discard``
(this machine's ext4) it waits for the device to discard them: 6-9 ms a segment. It
happened wherever the last reference to a retired :class:`SegmentReader` was dropped,
which is the event loop at the end of the merge job: at 10M profiles, 125 ms of every
5 s of the insert phase went to it (``perf sched``: the loop thread in
``io_schedule_timeout`` under ``munmap``).

Here the commit step, on the commit lane, opens each source file just before it unlinks
it, and keeps the descriptor with a weak reference to each of the segment's mappings.
The mappings then never hold the file's last reference: unmapping costs the loop only the
unmapping. Once every mapping of a file is gone, :meth:`HeldFiles.release` (called on the
commit lane, at each commit and whenever the maintainer sees :attr:`HeldFiles.ready`)
closes the descriptor, and the file's blocks are freed there. Nothing about what is on
disk changes: the file is unlinked exactly when it was before, so a crash leaves the
same directory.
"""

from __future__ import annotations

import contextlib
import os
import threading
import weakref
from collections.abc import Iterable
from pathlib import Path
from typing import Any

__all__ = ["HeldFiles"]


class HeldFiles:
    """Descriptors of deleted files, each closed once the mappings given with it are gone."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        #: (descriptor, weak references to the file's mappings)
        self._held: list[tuple[int, list[weakref.ref[Any]]]] = []
        #: Set (from any thread, by a mapping's weak-reference callback) when a held file may
        #: have lost its last mapping: :meth:`release` has work.
        self.ready = False

    def __len__(self) -> int:
        return len(self._held)

    def _gone(self, _ref: weakref.ref[Any]) -> None:
        self.ready = True  # (a weakref callback: no lock, no I/O, nothing that can raise)

    def hold(self, path: Path, mappings: Iterable[Any]) -> None:
        """Open ``path`` (about to be unlinked) and keep it open until every object of
        ``mappings`` is freed or closed. A file that cannot be opened is not held: its
        last release then happens where it did before."""
        refs = [weakref.ref(m, self._gone) for m in mappings]
        if not refs:
            return
        try:
            fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW)  # the tree's own file, never a link's target
        except OSError:
            return
        with self._lock:
            self._held.append((fd, refs))

    def release(self) -> int:
        """Close the descriptors whose mappings are all gone; how many were closed."""
        keep: list[tuple[int, list[weakref.ref[Any]]]] = []
        done: list[tuple[int, list[weakref.ref[Any]]]] = []
        with self._lock:
            self.ready = False
            for h in self._held:
                (done if all(_unmapped(r) for r in h[1]) else keep).append(h)
            self._held = keep
        _close(done)
        return len(done)

    def release_all(self) -> None:
        """Close every descriptor (the tree closing): a mapping still alive then holds its
        file's last reference itself, as it would without this class."""
        with self._lock:
            done, self._held = self._held, []
            self.ready = False
        _close(done)


def _unmapped(ref: weakref.ref[Any]) -> bool:
    """The mapping is freed, or closed (``mmap.close``)."""
    m = ref()
    return m is None or bool(getattr(m, "closed", False))


def _close(held: list[tuple[int, list[weakref.ref[Any]]]]) -> None:
    """Close the descriptors of ``held`` (outside the lock: a close may wait on the device)."""
    for fd, _refs in held:
        with contextlib.suppress(OSError):
            os.close(fd)
