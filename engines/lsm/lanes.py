"""The engine's own background threads, at a lower CPU priority than the event loop.

Why: on a 2-core machine the event loop (every foreground operation) and the flushes and
merges share two cores. Run on anyio's shared worker threads at the loop's priority, five
trees' flushes (all five memtables fill at the same insert) and merges made up to six
runnable threads beside the loop, and the kernel gave their time slices out evenly: at
2M profiles the loop thread waited 2.1-2.5 s of a 30 s insert phase in the run queue
(``/proc/self/task/<tid>/schedstat``), against 0.08 s at 200k. RocksDB does the same
thing for the same reason: flushes on their own ("HIGH") pool so that compactions never
queue them, and its background pools at a lower CPU priority
(``Env::LowerThreadPoolCPUPriority``).

A :class:`Lane` is a ``concurrent.futures.ThreadPoolExecutor`` whose threads lower their
own priority when they start (``os.setpriority`` on the thread's id: per thread on Linux
only; elsewhere the priority is left as it is, since there it would be the whole
process's). Lowering is one-way for an unprivileged process, which is why these are the
engine's threads and not anyio's shared pool: a lowered anyio thread would later run
other code (another engine's calls, the harness's file writes) at the lower priority.
A step is awaited from an anyio worker thread blocked on its future, so a step once
started always completes (as ``anyio.to_thread.run_sync`` without ``abandon_on_cancel``).
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

import anyio
import anyio.lowlevel

__all__ = ["BACKGROUND_NICE", "Lane", "lower_thread_priority", "thread_priority"]

T = TypeVar("T")

#: The niceness of the engine's background threads: RocksDB's ``CpuPriority::kLow``.
BACKGROUND_NICE = 19


def thread_priority() -> int | None:
    """The calling thread's niceness on Linux, else None."""
    if not sys.platform.startswith("linux"):
        return None
    return os.getpriority(os.PRIO_PROCESS, threading.get_native_id())


def lower_thread_priority(nice: int) -> None:
    """Lower the calling thread's CPU priority to ``nice`` (never raise it). Linux only:
    on other systems ``setpriority`` would apply to the whole process, the event loop
    included."""
    current = thread_priority()
    if current is None or current >= nice:
        return
    # (a sandbox without the call: the steps still run, at normal priority)
    with contextlib.suppress(OSError):
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), nice)


class Lane:
    """``threads`` engine-owned worker threads named ``name``, each at ``nice``; steps
    run in submission order as threads free up."""

    def __init__(self, name: str, threads: int, nice: int = BACKGROUND_NICE) -> None:
        #: The native ids of the lane's threads (the cost of a phase counts their CPU).
        self.thread_ids: set[int] = set()
        self._pool = ThreadPoolExecutor(threads, thread_name_prefix=name, initializer=self._start_thread, initargs=(nice,))

    def _start_thread(self, nice: int) -> None:
        self.thread_ids.add(threading.get_native_id())
        lower_thread_priority(nice)

    async def run(self, step: Callable[[], T]) -> T:
        """Run ``step`` on one of the lane's threads and return its result (or raise its
        error) on the loop."""
        await anyio.lowlevel.checkpoint_if_cancelled()  # a cancelled caller starts nothing
        future = self._pool.submit(step)
        with anyio.CancelScope(shield=True):  # started: the caller waits for the end
            await anyio.to_thread.run_sync(future.exception)
        return future.result()

    def close(self) -> None:
        """No new steps; the lane's threads end once the steps already given are done."""
        self._pool.shutdown(wait=False)
