"""Opening a store's trees side by side, one thread each.

Why: a tree's open is mostly checking its segments' block indexes (a crc32 over each,
with the GIL released) and a few fsyncs of its manifest and directory. One after the
other, the five trees of the profile store took most of a reopen (~30 ms at 2M, ~0.16 s
at 10M); side by side they overlap on the machine's cores and the disk (docs/lsm.md,
"Reopen: the trees side by side, the indexes mapped").

What each tree checks is unchanged: ``LsmTree`` opens exactly as it does alone, and
every tree is opened and checked before the caller gets any of them. If any tree fails,
the trees that opened are closed again and the first failure in ``dirs`` order is raised
(the one a sequential open would have raised), so the error a damaged store gives does
not depend on which thread finished first.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

from .tree import LsmTree, TreeOptions

__all__ = ["open_trees"]


def open_trees(dirs: Sequence[Path], options: TreeOptions, *, create_if_missing: bool) -> list[LsmTree]:
    """``LsmTree(d, options, create_if_missing=...)`` for every ``d``, in threads; the
    trees in ``dirs`` order, or, after closing any that opened, the first error."""
    if len(dirs) <= 1:
        return [LsmTree(d, options, create_if_missing=create_if_missing) for d in dirs]
    with ThreadPoolExecutor(max_workers=len(dirs), thread_name_prefix="lsm-open") as pool:
        futures: list[Future[LsmTree]] = [
            pool.submit(LsmTree, d, options, create_if_missing=create_if_missing) for d in dirs
        ]
    # the pool's exit waited for every open: none is still running when we close them
    first: BaseException | None = None
    trees: list[LsmTree] = []
    for fut in futures:
        exc = fut.exception()
        if exc is None:
            trees.append(fut.result())
        elif first is None:
            first = exc
    if first is not None:
        for tree in reversed(trees):
            with contextlib.suppress(Exception):
                tree.close()
        raise first
    return trees
