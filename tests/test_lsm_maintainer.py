"""Background maintainer: merges yield to foreground work; stabilize waits for rest."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from asyncbench.engines.lsm.maintainer import Maintainer
from asyncbench.engines.lsm.tree import LsmTree, TreeOptions


@pytest.mark.parametrize(
    "backend", [("asyncio", {}), ("asyncio", {"use_uvloop": True})], ids=["asyncio", "uvloop"]
)
def test_merge_yields_to_foreground_and_stabilize_waits(tmp_path: Path, backend: tuple) -> None:
    tree = LsmTree(tmp_path, TreeOptions(mutable_segment_max_item_count=1_000_000, wal_mode="none"))
    for layer in range(3):  # interleaved keys: the merge has to decode and fold
        for i in range(layer, 60_000, 3):
            tree.upsert(b"%08d" % i, b"v%d" % layer)
        tree.flush_all()
    assert len(tree.segments) == 3

    async def run() -> None:
        maint = Maintainer([tree], 60_000)
        async with anyio.create_task_group() as tg:
            maint.start(tg)
            turns_during_merge = 0
            for _ in range(10_000):
                await anyio.sleep(0)
                if maint.busy:
                    turns_during_merge += 1
                    assert tree.get(b"%08d" % 30_001) == b"v1"  # reads keep working mid-merge
                elif turns_during_merge:
                    break
            assert turns_during_merge > 3  # the merge gave the loop back many times
            await maint.wait_idle()
            assert len(tree.segments) == 1 and tree.count() == 60_000
            maint.stop()
            tg.cancel_scope.cancel()

    anyio.run(run, backend=backend[0], backend_options=backend[1])
    tree.close()


@pytest.mark.parametrize("memtable", [1_000_000, 1_000], ids=["one-flush", "flushes-and-merges"])
def test_a_settle_right_after_a_stabilization_has_nothing_to_fsync(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, memtable: int
) -> None:
    """The stabilization's flush fsyncs the log it rotated to (in a worker thread,
    beside its own work), so the settle that follows writes and fsyncs nothing (the
    settle phase was 4x RocksDB's for those fsyncs)."""
    import os

    tree = LsmTree(tmp_path, TreeOptions(mutable_segment_max_item_count=memtable))
    for i in range(5000):
        tree.upsert(b"%06d" % i, b"v")

    async def run() -> None:
        maint = Maintainer([tree], 60_000)
        async with anyio.create_task_group() as tg:
            maint.start(tg)
            await maint.wait_idle()
            assert len(tree.segments) == 1
            # (with small memtables the stabilization merged: its manifest, saved before
            # the merged sources were deleted, still names them obsolete, and that is
            # on disk enough: a settle at 2M rewrote five manifests, 10 fsyncs, for it)
            assert tree.persisted()
            fsyncs: list[int] = []
            real = os.fsync
            monkeypatch.setattr(os, "fsync", lambda fd: fsyncs.append(fd) or real(fd))
            tree.wal.write_now()  # what LsmEngine.settle does
            tree.wal.sync()
            tree.save_meta()
            monkeypatch.undo()
            assert fsyncs == []
            maint.stop()
            tg.cancel_scope.cancel()

    anyio.run(run)
    tree.close()
