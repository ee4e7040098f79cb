"""The LSM's merge policy (issue 24): write work grows like n log n, not n^2/m; lookups
consult a bounded number of segments; partial merges keep tombstones; a stabilization
leaves one segment per tree."""

from __future__ import annotations

import math
from pathlib import Path

import anyio
import pytest

from asyncbench.engines.lsm import tree as tree_mod
from asyncbench.engines.lsm.maintainer import Maintainer
from asyncbench.engines.lsm.tree import MAX_SEGMENTS, LsmTree, TreeOptions


def opts(memtable: int) -> TreeOptions:
    return TreeOptions(mutable_segment_max_item_count=memtable, sparse_array_step=4, wal_mode="none")


def merged_entries(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Entries each merge read (and so rewrote), recorded as merges start."""
    seen: list[int] = []
    real = LsmTree._merge

    def counting(self: LsmTree, srcs: list, drop_tombstones: bool):  # type: ignore[no-untyped-def]
        seen.append(sum(s.entries for s in srcs))
        return real(self, srcs, drop_tombstones)

    monkeypatch.setattr(LsmTree, "_merge", counting)
    return seen


def fill(t: LsmTree, flushes: int, memtable: int, step: int = 7919) -> None:
    """``flushes`` memtables of keys spread over the key space (every memtable overlaps
    every segment, as the email index's random keys do), merging as soon as due."""
    n = flushes * memtable
    for i in range(n):
        t.upsert(b"%08d" % (i * step % n), b"")
        if t.frozen:
            t.run_job(t.flush_job())
            t.merge_all()
            assert len(t.segments) <= math.log2(i // memtable + 1) + 1


def test_merge_work_grows_logarithmically(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """32 flushes of m entries: the full bottom merge after each flush rewrote
    m * (2 + 3 + ... + 32) = 527m entries; the size-ratio policy rewrites each entry
    about log2(32) = 5 times (at most 32m * 5 = 160m)."""
    seen = merged_entries(monkeypatch)
    m, flushes = 200, 32
    t = LsmTree(tmp_path, opts(m))
    fill(t, flushes, m)
    assert sum(seen) <= flushes * m * math.log2(flushes)
    assert len(t.segments) == 1  # 32 is a power of two: the counter carried all the way
    assert t.count() == flushes * m
    t.close()


def test_segments_stay_bounded_with_tiny_flushes(tmp_path: Path) -> None:
    t = LsmTree(tmp_path, opts(1_000_000))
    for i in range(200):  # a flush per write, sizes all over the place
        t.upsert(b"%05d" % (i * 37 % 200), b"v")
        if i % 3 == 0:
            t.upsert(b"x%05d" % i, b"w" * i)
        t.flush_all()
        t.merge_all()
        assert len(t.segments) <= MAX_SEGMENTS
    assert t.count() == 200 + len(range(0, 200, 3))
    t.close()


def test_partial_merge_keeps_tombstones(tmp_path: Path) -> None:
    """A merge that leaves the oldest segment out must keep a delete: the tombstone
    still has to hide the oldest segment's value."""
    t = LsmTree(tmp_path, opts(1_000_000))
    for i in range(1000):
        t.upsert(b"%04d" % i, b"old")
    t.flush_all()
    t.delete(b"0500")
    t.flush_all()
    t.upsert(b"0600", b"new")
    t.flush_all()
    assert t.pick_merge() == (0, 2)  # the two small ones, not the 1000-entry base
    t.merge_all()
    assert len(t.segments) == 2
    assert t.get(b"0500") is None and t.get(b"0600") == b"new"
    assert t.count() == 999
    t.compact_all()
    assert len(t.segments) == 1 and t.segments[0].entries == 999  # the tombstone dropped
    assert t.get(b"0500") is None and t.count() == 999
    t.close()
    t = LsmTree(tmp_path, opts(1_000_000))
    assert t.get(b"0500") is None and t.get(b"0600") == b"new"
    t.close()


def test_stabilize_merges_each_tree_into_one_segment(tmp_path: Path) -> None:
    t = LsmTree(tmp_path, opts(100))
    for i in range(1000):
        t.upsert(b"%05d" % (i * 7 % 1000), b"v")
    while t.frozen:
        t.run_job(t.flush_job())
    assert len(t.segments) > 1

    async def run() -> None:
        maint = Maintainer([t], 60_000)
        async with anyio.create_task_group() as tg:
            maint.start(tg)
            await maint.wait_idle()
            maint.stop()
            tg.cancel_scope.cancel()

    anyio.run(run)
    assert len(t.segments) == 1 and not t.frozen and not t.compact_requested
    assert t.count() == 1000
    t.close()


def test_merge_policy_is_what_the_module_says(monkeypatch: pytest.MonkeyPatch) -> None:
    """``pick_merge`` on segment sizes alone (newest first)."""

    class Seg:
        def __init__(self, entries: int) -> None:
            self.entries = entries

    t = LsmTree.__new__(LsmTree)
    t.compact_requested = False
    t.frozen = []
    t._unpublished = set()
    cases = {
        (100,): None,
        (100, 100): (0, 2),
        (100, 200): None,
        (100, 100, 200): (0, 3),
        (100, 100, 300): (0, 2),
        (10, 100, 200, 400): None,
        (10,) * 9: (0, 9),
    }
    for sizes, want in cases.items():
        t.segments = [Seg(s) for s in sizes]  # type: ignore[misc]
        assert t.pick_merge() == want, sizes
    monkeypatch.setattr(tree_mod, "MAX_SEGMENTS", 3)
    t.segments = [Seg(s) for s in (1, 10, 100, 1000, 10000)]  # type: ignore[misc]
    assert t.pick_merge() == (0, 3)  # widened so at most 3 remain
    t.compact_requested = True
    assert t.pick_merge() == (0, 5)
    t._unpublished = {7}  # a commit still on its lane: no merge may take its segment yet
    assert t.pick_merge() is None
