"""The LSM's flushes and merges run on the engine's own lower-priority threads (lanes.py);
the event loop's thread and anyio's shared worker threads keep their priority."""

from __future__ import annotations

import sys
import threading
import time
from pathlib import Path
from typing import Any

import anyio
import pytest

from asyncbench.engines.lsm.lanes import BACKGROUND_NICE, Lane, thread_priority
from asyncbench.engines.lsm.maintainer import Maintainer
from asyncbench.engines.lsm.segment_writer import SegmentWriter
from asyncbench.engines.lsm.tree import LsmTree, TreeOptions

linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="per-thread priority is Linux's")


@linux_only
def test_flushes_and_merges_run_on_lowered_engine_threads_and_nothing_else_is_lowered(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[tuple[str, int | None]] = []
    finish = SegmentWriter.finish

    def recording_finish(self: SegmentWriter, *args: Any, **kwargs: Any) -> Any:
        seen.append((threading.current_thread().name, thread_priority()))
        return finish(self, *args, **kwargs)

    monkeypatch.setattr(SegmentWriter, "finish", recording_finish)
    base = thread_priority()
    assert base is not None
    tree = LsmTree(tmp_path, TreeOptions(mutable_segment_max_item_count=1_000, wal_mode="none"))

    async def run() -> int | None:
        maint = Maintainer([tree], 60_000)
        async with anyio.create_task_group() as tg:
            await tg.start(maint.run)
            for i in range(6_000):  # six flushes, and the merges they make due
                tree.upsert(b"%08d" % i, b"v")
                if i % 100 == 0:
                    await anyio.sleep(0)
            await maint.wait_idle()
            shared = await anyio.to_thread.run_sync(thread_priority)
            await maint.shutdown()
        return shared

    shared = anyio.run(run)
    assert len(tree.segments) == 1 and tree.count() == 6_000
    tree.close()
    names = {name.split("_")[0] for name, _ in seen}
    assert names == {"lsm-flush", "lsm-merge"}, seen
    assert all(p == max(base, BACKGROUND_NICE) for _, p in seen), seen
    assert thread_priority() == base  # the loop's thread
    assert shared == base  # anyio's worker threads: other code runs there


def test_a_lane_returns_results_and_raises_errors_on_the_loop() -> None:
    lane = Lane("test-lane", 1)

    def boom() -> None:
        raise ValueError("from the lane")

    async def run() -> None:
        assert await lane.run(lambda: threading.current_thread().name) != threading.current_thread().name
        assert await lane.run(lambda: 6 * 7) == 42
        with pytest.raises(ValueError, match="from the lane"):
            await lane.run(boom)

    try:
        anyio.run(run)
    finally:
        lane.close()


def test_a_cancelled_caller_starts_nothing_and_a_started_step_is_waited_for() -> None:
    lane = Lane("test-lane", 1)
    ran: list[str] = []

    def slow() -> None:
        time.sleep(0.2)
        ran.append("slow")

    async def run() -> None:
        with anyio.CancelScope() as scope:
            scope.cancel()
            await lane.run(lambda: ran.append("never"))
        assert ran == []
        with anyio.move_on_after(0.05):
            await lane.run(slow)  # cancelled mid-step: the caller still waits for its end
        assert ran == ["slow"]

    try:
        anyio.run(run)
    finally:
        lane.close()
