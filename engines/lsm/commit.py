"""The file side of a flush's or merge's commit, as one job step off the event loop.

Why: a commit writes and fsyncs the manifest (the commit itself), then renames the new
segment into place, deletes a merge's sources and a flush's logs. On the event loop
that was the loop's largest share of a 10M-profile insert after the inserts: the
manifest's two fsyncs at each of about 400 flushes and merges (py-spy: 2.9 s on the
loop), the log unlinks (0.5 s), every foreground batch waiting behind them.

What keeps it crash-safe (``tree.py`` does each step):

- The job changes the tree in memory on the loop (segments, frozen memtables,
  ``min_wal``), takes the manifest snapshot there, then yields a :class:`Commit` that
  writes it. Reads see the new segment a few milliseconds before it is durable; that
  is not a durability claim, and a crash in between recovers from the older manifest
  and the logs, as before.
- Files are renamed or deleted only after the manifest that allows it is on disk, in
  the same order as before, inside the one step.
- Manifests are written under the tree's lock, and a snapshot older than the one on
  disk is not written (a settle may save a newer one first): the newer snapshot already
  records this commit, so its renames and deletions are still safe.
- A merge never takes a segment whose commit has not finished (``pick_merge``), so two
  commits of a tree never touch the same file.
- A step runs exactly once: on the maintainer's commit lane or, when the job is closed
  before the lane reached it (the engine stopping), inline from the job's ``finally``.
"""

from __future__ import annotations

from collections.abc import Callable

__all__ = ["Commit"]


class Commit:
    """A job step the maintainer runs on its commit lane (one thread at normal priority,
    in submission order); called a second time, it does nothing."""

    __slots__ = ("_run",)

    def __init__(self, run: Callable[[], None]) -> None:
        self._run: Callable[[], None] | None = run

    def __call__(self) -> None:
        run, self._run = self._run, None
        if run is not None:
            run()
