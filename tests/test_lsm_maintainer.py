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


def test_the_log_writer_waits_between_frames_and_a_stabilization_wakes_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ZoneTree's wait: a log writer waits ``WAL_POLL_S`` after a frame unless a full
    frame is queued, so the records of a busy loop go out as one frame a wait (taking
    whatever was queued at every turn, the five trees wrote ~130 small frames a second,
    each a worker-thread turn taking the GIL from the loop). A stabilization does not
    wait it out: it wakes the writers."""
    from asyncbench.engines.lsm import maintainer as maint_mod
    from asyncbench.engines.lsm.wal import WriteAheadLog

    frames: list[int] = []
    real = WriteAheadLog.write_records

    def write_records(self: WriteAheadLog, log: object, records: list) -> None:
        frames.append(len(records) // 2)
        real(self, log, records)  # type: ignore[arg-type]

    monkeypatch.setattr(WriteAheadLog, "write_records", write_records)
    tree = LsmTree(tmp_path, TreeOptions(mutable_segment_max_item_count=1_000_000))

    async def run() -> float:
        maint = Maintainer([tree], 60_000)
        async with anyio.create_task_group() as tg:
            maint.start(tg)
            start = anyio.current_time()
            i = 0
            while anyio.current_time() - start < 1.0:  # a tree's share of an insert, for 1 s
                for _ in range(100):
                    tree.upsert(b"%08d" % i, b"v")
                    i += 1
                await anyio.sleep(0.001)
            before = anyio.current_time()
            monkeypatch.setattr(maint_mod, "WAL_POLL_S", 30.0)  # a long wait: the stabilization must wake it
            await maint.wait_idle()
            woke = anyio.current_time() - before
            maint.stop()
            tg.cancel_scope.cancel()
        return woke

    woke = anyio.run(run)
    assert sum(frames) == tree.count()  # every record logged once
    assert len(frames) <= 20, frames  # a frame a wait (~10 in 1 s of WAL_POLL_S = 0.1), not one a turn
    assert woke < 5.0
    tree.close()


def test_writers_wait_for_a_log_writer_behind_instead_of_writing_its_backlog_on_the_loop(tmp_path: Path) -> None:
    """Issue 53: at a YCSB load of 1M records (1 KB each) the log writer fell behind, and the
    append that found 200_000 records queued wrote them all itself, on the event loop: 2.5
    to 3 s of the loop held (the stall record's longest hold). The writers now wait, between
    batches (``throttle``, as they wait for the flusher), while a log's backlog is at
    ``WAL_THROTTLE_RECORDS``: the writer's thread drains it and the loop stays free."""
    from asyncbench.engines.lsm.maintainer import WAL_THROTTLE_RECORDS
    from asyncbench.engines.lsm.wal import INLINE_FLUSH_RECORDS

    assert WAL_THROTTLE_RECORDS < INLINE_FLUSH_RECORDS  # the wait comes before the inline write
    tree = LsmTree(tmp_path, TreeOptions(mutable_segment_max_item_count=10_000_000))

    async def run() -> None:
        maint = Maintainer([tree], 60_000)
        async with anyio.create_task_group() as tg:
            maint.start(tg)
            for i in range(WAL_THROTTLE_RECORDS + 10):  # one long synchronous batch: no writer turn
                tree.upsert(b"%08d" % i, b"v")
            assert tree.wal.backlog() >= WAL_THROTTLE_RECORDS
            inline: list[int] = []
            real = tree.wal.write_now
            tree.wal.write_now = lambda: inline.append(1) or real()  # type: ignore[method-assign]
            await maint.throttle()  # what the adapter does after every batch
            assert tree.wal.backlog() < WAL_THROTTLE_RECORDS  # taken by the log writer's task
            for i in range(WAL_THROTTLE_RECORDS - 10):  # the next batch: below the inline bound
                tree.upsert(b"%08d" % i, b"w")
            assert inline == []
            await maint.wait_idle()
            assert tree.wal.logged > 0 and tree.wal.backlog() == 0  # written by its thread
            maint.stop()
            tg.cancel_scope.cancel()

    anyio.run(run)
    tree.close()
