"""Background work of a set of trees on the anyio event loop.

Per tree three loops run in the engine's task group: the flusher (frozen memtables ->
segments), the merger (whatever ``LsmTree.pick_merge`` says is due) and the
log writer (queued WAL records -> compressed frames). Jobs are cooperative generators
(see ``tree.py``): a checkpoint between slices lets foreground batches run, and a job's
thread steps (a compiled flush or merge, fsync, file writes) go to the engine's own
lower-priority threads (``lanes.py``): a flush lane, so that merges never queue a
flush (writers wait on flushes), and a merge lane, each of up to two threads. A job's
commit (``commit.py``: the manifest's write and fsyncs, renames and deletions) goes to a
third lane of one thread at normal priority, so that commits keep their order and a
flush's commit never waits behind another tree's flush. Log frames
are encoded and compressed (compiled: LZ4, ``native.lz4_log_frame``; see ``wal.py``) and
written on anyio's worker threads: until issue 40 the encoding ran on the event loop
(18-20 % of the insert phase). A clock task ages the block caches every half ``block_cache_lifetime_ms``, and
another releases the mapped pages of segments no read reached for ``IDLE_RELEASE_S``
(``SegmentReader.release_pages``: they stay in the page cache, out of the RSS); a third
closes, on the commit lane, the deleted segment files whose mappings are gone
(``held_files.py``: freeing a file's blocks waited on the device, on the loop).

A failure in a loop is kept in ``failure`` and re-raised by ``check()`` on the next
foreground batch rather than tearing down the caller's task.
"""

from __future__ import annotations

import os
from collections.abc import Callable

import anyio
from anyio.abc import TaskGroup, TaskStatus

from .commit import Commit
from .lanes import Lane
from .tree import Job, LsmTree
from .wal import INLINE_FLUSH_RECORDS

__all__ = ["HELD_POLL_S", "MAX_FROZEN", "WAL_FRAME_RECORDS", "WAL_THROTTLE_RECORDS", "Maintainer", "run_job_on_loop"]

#: Records per compressed WAL frame at most.
WAL_FRAME_RECORDS = 16_384
#: How long a log writer waits after a frame before it takes the next, unless a full
#: frame (``WAL_FRAME_RECORDS``) is already queued (seconds): ZoneTree's
#: ``AsyncCompressedModeOptions.EmptyQueuePollInterval`` (100 ms), in the mode the
#: reference plan runs, where its writer fills compressed blocks of 256 KiB and writes
#: the tail when its queue runs empty, then waits that long. Why not sooner: each frame
#: is a worker-thread turn that takes the GIL from the event loop several times; taking
#: whatever was queued at every turn, the five trees' writers made about 130 small
#: frames a second (5_800 records each at 200k profiles), and the loop waited for the
#: GIL at each. A crash loses the records not yet written, as before; only the window is
#: ZoneTree's. A stabilization wakes the writers (``_wal_pause``).
WAL_POLL_S = 0.1
#: Frozen memtables a tree may hold before writers wait for the flusher.
MAX_FROZEN = 2
#: Records a tree's log may hold queued before writers wait for its log writer (issue 53):
#: half of ``wal.INLINE_FLUSH_RECORDS``, where an append writes the whole backlog itself,
#: on the event loop. A YCSB load of 1 KB records outran the writer at 1M records, and
#: that inline write held the loop for 2.5-3 s; waiting here, between batches, keeps the
#: loop free while the writer's thread drains the log (bounded memory all the same).
WAL_THROTTLE_RECORDS = INLINE_FLUSH_RECORDS // 2
#: A segment no get or scan reached for this long (seconds) has its mapped pages released
#: from the RSS (a phase that reads other trees: the update's index trees at 10M).
IDLE_RELEASE_S = 5.0
#: Bytes released per step of the event loop (about 2 ms of ``madvise`` here).
RELEASE_CHUNK = 64 << 20
#: How often the deleted segment files held open (``held_files.py``) are looked at.
HELD_POLL_S = 0.25


class _Signal:
    """A re-armable wake-up flag (anyio events are one-shot)."""

    def __init__(self) -> None:
        self._event = anyio.Event()

    def set(self) -> None:
        self._event.set()

    async def wait(self) -> None:
        await self._event.wait()
        self._event = anyio.Event()


#: Threads of each lane: two where there are cores for them, so that a stabilization's
#: five flushes, then its five full merges, use both cores while the loop waits (one
#: flush thread made the pre-read stabilization at 200k 0.60 s against 0.41-0.48 s).
LANE_THREADS = max(1, min(2, os.cpu_count() or 1))


async def run_job_on_loop(job: Job, lane: Lane, commit_lane: Lane) -> None:
    """Run a job on the event loop: checkpoints yield a turn, callables (a compiled flush
    or merge, fsync, bulk writes) go to ``lane``, a :class:`Commit` to ``commit_lane``.
    ``LsmTree.run_job`` is the synchronous twin."""
    try:
        for step in job:
            if step is None:
                await anyio.sleep(0)
            elif isinstance(step, Commit):
                await commit_lane.run(step)
            else:
                await lane.run(step)
    finally:
        job.close()


class Maintainer:
    """The background loops of ``trees`` (see the module doc); ``busy`` marks running
    jobs and log writes, ``failure`` keeps the first error for ``check``."""

    def __init__(self, trees: list[LsmTree], lifetime_ms: int) -> None:
        self.trees = trees
        self.lifetime_s = lifetime_ms / 1000
        self.failure: BaseException | None = None
        self.busy: dict[int, int] = {}
        self._stopping = False
        self._scope: anyio.CancelScope | None = None
        self._stopped = anyio.Event()
        self.flush_lane = Lane("lsm-flush", LANE_THREADS)
        self.merge_lane = Lane("lsm-merge", LANE_THREADS)
        #: One thread, in submission order, at the loop's priority: commits are short
        #: (mostly waiting on fsync) and a flush's writers wait for them.
        self.commit_lane = Lane("lsm-commit", 1, nice=0)
        #: Wakes the log writers from their wait (``_wal_pause``): a stabilization.
        self._wal_wake = _Signal()

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Every loop, until :meth:`shutdown`; started with ``await tg.start(maint.run)`` in
        the task group the engine's opener passed to ``open``. The cancel scope stays
        inside this task, so scopes nest lexically."""
        try:
            with anyio.CancelScope() as scope:
                self._scope = scope
                async with anyio.create_task_group() as tg:
                    self.start(tg)
                    task_status.started()
        finally:
            self.flush_lane.close()  # every loop has ended: no step is in flight
            self.merge_lane.close()
            self.commit_lane.close()
            self._stopped.set()

    async def shutdown(self) -> None:
        """Stop every loop (a log write in flight completes) and wait until they ended."""
        self.stop()
        if self._scope is not None:
            self._scope.cancel()
            await self._stopped.wait()

    def start(self, tg: TaskGroup) -> None:
        for t in self.trees:
            flush_sig, merge_sig = _Signal(), _Signal()
            t.on_work = self._waker(flush_sig, merge_sig)
            tg.start_soon(self._job_loop, t.flush_job, self.flush_lane, flush_sig, merge_sig)
            tg.start_soon(self._job_loop, t.merge_job, self.merge_lane, merge_sig, None)
            tg.start_soon(self._wal_loop, t)
        tg.start_soon(self._clock)
        tg.start_soon(self._release_idle)
        tg.start_soon(self._release_held)

    @staticmethod
    def _waker(a: _Signal, b: _Signal) -> Callable[[], None]:
        def wake() -> None:
            a.set()
            b.set()

        return wake

    def check(self) -> None:
        if self.failure is not None:
            f = self.failure
            raise RuntimeError(f"LSM background task failed: {type(f).__name__}: {f}") from f

    async def _job_loop(
        self, next_job: Callable[[], Job | None], lane: Lane, sig: _Signal, after: _Signal | None
    ) -> None:
        """Run ``next_job()`` (its thread steps on ``lane``) whenever ``sig`` fires until
        it returns None; then wake ``after`` (a flush may make a merge due)."""
        key = id(sig)
        try:
            while not self._stopping:
                job = next_job()
                if job is None:
                    await sig.wait()
                    continue
                self.busy[key] = 1
                try:
                    await run_job_on_loop(job, lane, self.commit_lane)
                finally:
                    self.busy.pop(key, None)
                if after is not None:
                    after.set()
        except Exception as exc:  # kept for the foreground; cancellation passes through
            self.failure = exc

    async def _wal_loop(self, tree: LsmTree) -> None:
        wal = tree.wal
        if wal.mode != "async-compressed":
            return
        try:
            while True:
                batch = wal.take(WAL_FRAME_RECORDS)
                if batch is None:
                    await self._wal_pause()
                    continue
                log, records = batch
                self.busy[id(wal)] = 1
                try:
                    # Shielded: records once taken always reach the file, even at close.
                    # Encoding, compression and the write all run in the worker thread.
                    with anyio.CancelScope(shield=True):
                        await anyio.to_thread.run_sync(wal.write_records, log, records)
                finally:
                    self.busy.pop(id(wal), None)
                if wal.backlog() < WAL_FRAME_RECORDS:  # no full frame waiting: ZoneTree's wait
                    await self._wal_pause()
        except Exception as exc:
            self.failure = exc

    async def _wal_pause(self) -> None:
        """``WAL_POLL_S``, or less if a stabilization wants the logs written now."""
        with anyio.move_on_after(WAL_POLL_S):
            await self._wal_wake.wait()

    async def _clock(self) -> None:
        while True:
            await anyio.sleep(self.lifetime_s / 2)
            for t in self.trees:
                t.rotate_caches()

    async def _release_idle(self) -> None:
        """Every ``IDLE_RELEASE_S``: release the mapped pages of each segment that no read
        reached since the last look (``SegmentReader.idle``), a chunk a loop turn."""
        try:
            while True:
                await anyio.sleep(IDLE_RELEASE_S)
                for t in self.trees:
                    for seg in list(t.segments):  # a merge may retire one meanwhile
                        if seg.idle():
                            for _ in seg.release_pages(RELEASE_CHUNK):
                                await anyio.sleep(0)
        except Exception as exc:
            self.failure = exc

    async def _release_held(self) -> None:
        """Every ``HELD_POLL_S``: close, on the commit lane, the deleted segment files
        whose last mapping went since (``held_files.py``), so their blocks are freed
        there and soon, not at the next commit (a read phase has none)."""
        try:
            while True:
                await anyio.sleep(HELD_POLL_S)
                for t in self.trees:
                    if t.held.ready:
                        await self.commit_lane.run(t.held.release)
        except Exception as exc:
            self.failure = exc

    # --- foreground helpers -------------------------------------------------------------
    def pending_work(self) -> bool:
        if self.busy:
            return True
        return any(t.frozen or t.needs_merge() or t.wal.has_work() for t in self.trees)

    async def throttle(self) -> None:
        """Let the flusher catch up when writers outpace it (bounded memory), and the log
        writers when a log's backlog reaches ``WAL_THROTTLE_RECORDS`` (so that no append
        writes it inline, on the loop)."""
        while any(len(t.frozen) > MAX_FROZEN or t.wal.backlog() >= WAL_THROTTLE_RECORDS for t in self.trees):
            self.check()
            self._wal_wake.set()  # a writer in its pause takes the backlog now
            await anyio.sleep(0.001)

    async def wait_idle(self) -> None:
        """Flush every memtable, merge each tree's segments into one (the read-optimal
        shape, as the RocksDB adapter's full-range compaction; background merges between
        stabilizations follow the size-ratio policy) and wait until no flush, merge or
        log write is pending."""
        for t in self.trees:
            t.compact_requested = True
            t.freeze()
            if t.on_work is not None:
                t.on_work()
        self._wal_wake.set()  # the queued records now, not after the log writers' wait
        try:
            while self.pending_work():
                self.check()
                await anyio.sleep(0.001)
        finally:
            for t in self.trees:
                t.compact_requested = False
        self.check()

    def stop(self) -> None:
        self._stopping = True
