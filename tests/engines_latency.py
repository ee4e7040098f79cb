"""A test engine with known per-operation latencies, for the latency-recording tests."""

from __future__ import annotations

import time
from collections.abc import Sequence
from time import perf_counter_ns

from plugins.own_store_engine import OwnStoreMemoryEngine

#: Every read takes FAST_S, except every SLOW_EVERY-th, which takes SLOW_S.
FAST_S, SLOW_S, SLOW_EVERY = 0.002, 0.030, 100


class SleepyEngine(OwnStoreMemoryEngine):
    name = "sleepy"

    async def read_by_id(self, uids: Sequence[int], marks: list[int]) -> list:
        get = self.profiles.get
        out = []
        marks.append(perf_counter_ns())
        for i, uid in enumerate(uids, 1):
            time.sleep(SLOW_S if i % SLOW_EVERY == 0 else FAST_S)
            p = get(uid)
            if p is not None:
                out.append(p)
            marks.append(perf_counter_ns())
        return out


class SlowReadsEngine(OwnStoreMemoryEngine):
    """The memory engine with every point read 20 µs slower: a regression to catch."""

    name = "memory"

    async def read_by_id(self, uids: Sequence[int], marks: list[int]) -> list:
        out = []
        marks.append(perf_counter_ns())
        for uid in uids:
            deadline = perf_counter_ns() + 20_000
            while perf_counter_ns() < deadline:
                pass
            p = self.profiles.get(uid)
            if p is not None:
                out.append(p)
            marks.append(perf_counter_ns())
        return out
