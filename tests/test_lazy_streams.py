"""The lazily drawn plan streams (issue 24) equal the eager plan, item for item, however
a phase consumes them: whole, in batches, in P contiguous worker partitions, in the
``uid % P`` update buckets, or by random slices; and drawing them holds no stream.
"""

from __future__ import annotations

import tracemalloc
from functools import partial
from typing import Any

import anyio
import pytest
from eager_plan import eager_streams
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from asyncbench.run.phase.dispatch import run_operations
from asyncbench.run.phase.phase_loop import bucket_by_uid, partition
from asyncbench.workloads import workload
from asyncbench.workloads.profile_store import plan as plan_module
from asyncbench.workloads.profile_store import streams
from asyncbench.workloads.profile_store.dotnet_random import PyNetRandom
from asyncbench.workloads.profile_store.phases import PHASES, PhaseContext
from asyncbench.workloads.profile_store.plan import STREAM_SIZES, Counts, draw_plan
from asyncbench.workloads.profile_store.streams import LazyStream

SEEDS = st.integers(-(2**31), 2**31 - 1)


@st.composite
def plans(draw: st.DrawFn, max_profiles: int = 12_000, max_count: int = 1_500) -> tuple[Counts, int]:
    """(counts, seed): small and odd profile counts (ranges draw in [1, max(2, n - 5000))),
    every count set independently."""
    profiles = draw(st.one_of(st.integers(1, 40), st.integers(4_990, 5_010), st.integers(1, max_profiles)))
    names = ("reads", "email_reads", "queries", "updates", "post_reads", "post_email_reads", "post_queries")
    counts = {name: draw(st.integers(0, max_count)) for name in names}
    return Counts.for_profiles(profiles, **counts), draw(SEEDS)


def batches(items: Any, size: int) -> list[Any]:
    """What run_batches hands the engine, concatenated: slice after slice."""
    out: list[Any] = []
    for start in range(0, len(items), size):
        chunk = items[start : start + size]
        assert len(chunk) == min(size, len(items) - start)
        out.extend(chunk)
    return out


def check_plan(counts: Counts, seed: int, workers: int, batch: int) -> None:
    eager = eager_streams(counts, seed)
    plan = draw_plan(counts, seed)
    assert set(eager) == set(STREAM_SIZES)
    for name, want in eager.items():
        lazy = plan.stream(name)
        assert isinstance(lazy, LazyStream) and len(lazy) == len(want) == plan.size(name)
        assert list(lazy) == want, name
        assert batches(lazy, batch) == want, name
        parts = partition(lazy, workers)
        assert [len(p) for p in parts] == [len(p) for p in partition(want, workers)]
        assert [batches(p, batch) for p in parts] == partition(want, workers), name
        prefix = len(want) // 3
        assert list(plan.stream(name, prefix)) == want[:prefix]
    updates = plan.stream("updates")
    buckets = bucket_by_uid(updates, workers)
    want_buckets = bucket_by_uid(eager["updates"], workers)
    assert [len(b) for b in buckets] == [len(b) for b in want_buckets]
    assert [batches(b, batch) for b in buckets] == want_buckets
    assert [list(b) for b in buckets] == want_buckets


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(plans(), st.integers(1, 17), st.integers(1, 700), st.sampled_from([1, 3, 64, streams.SKIP_CHUNK]))
def test_lazy_streams_equal_the_eager_plan(
    plan: tuple[Counts, int], workers: int, batch: int, skip: int
) -> None:
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(streams, "SKIP_CHUNK", skip)  # skip passes cut into kernel calls of this many draws
        check_plan(*plan, workers, batch)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(plans(max_profiles=3_000, max_count=300), st.integers(1, 9), st.integers(1, 200))
def test_lazy_streams_equal_the_eager_plan_on_the_python_fallback(
    plan: tuple[Counts, int], workers: int, batch: int
) -> None:
    counts, seed = plan
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(plan_module, "NetRandom", PyNetRandom)
        lazy = draw_plan(counts, seed)
        assert type(lazy._starts["reads"]) is PyNetRandom
        eager = eager_streams(counts, seed, PyNetRandom)
        for name, want in eager.items():
            assert batches(lazy.stream(name), batch) == want
            assert [list(p) for p in partition(lazy.stream(name), workers)] == partition(want, workers)
        buckets = bucket_by_uid(lazy.stream("updates"), workers)
        assert [batches(b, batch) for b in buckets] == bucket_by_uid(eager["updates"], workers)


@settings(max_examples=60, deadline=None)
@given(plans(max_profiles=5_000, max_count=800), st.data())
def test_random_slices_windows_and_indices(plan: tuple[Counts, int], data: st.DataObject) -> None:
    """Slices in any order (the cursor moves back and forth), negative indices and steps,
    windows of windows and buckets' slices all agree with the lists."""
    counts, seed = plan
    eager = eager_streams(counts, seed)
    lazy_plan = draw_plan(counts, seed)
    name = data.draw(st.sampled_from(sorted(STREAM_SIZES)))
    want, lazy = eager[name], lazy_plan.stream(name)
    n = len(want)
    for _ in range(6):
        a = data.draw(st.integers(-n - 3, n + 3))
        b = data.draw(st.integers(-n - 3, n + 3))
        step = data.draw(st.sampled_from([None, 1, 2, -1, -3]))
        assert lazy[a:b:step] == want[a:b:step], (a, b, step)
        if -n <= a < n:
            assert lazy[a] == want[a]
    for bad in (n, -n - 1):
        with pytest.raises(IndexError):
            lazy[bad]
    a = data.draw(st.integers(0, n))
    b = data.draw(st.integers(a, n))
    window = lazy.window(a, b)
    assert list(window) == want[a:b]
    c = data.draw(st.integers(0, b - a))
    assert window.window(c, b - a)[:] == want[a + c : b]
    workers = data.draw(st.integers(1, 6))
    for bucket, wanted in zip(
        bucket_by_uid(lazy_plan.stream("updates"), workers),
        bucket_by_uid(eager["updates"], workers),
        strict=True,
    ):
        k = data.draw(st.integers(0, len(wanted)))
        assert bucket[k:] == wanted[k:]
        assert bucket[:k] == wanted[:k]  # back to the start: the cursor re-seeks
        assert bucket.window(k, len(wanted))[:] == wanted[k:]


def test_plans_are_a_pure_function_of_counts_and_seed() -> None:
    counts = Counts.for_profiles(2_000)
    assert draw_plan(counts, 7) == draw_plan(counts, 7) != draw_plan(counts, 8)
    assert draw_plan(counts, 7) != draw_plan(Counts.for_profiles(2_001), 7)
    with pytest.raises(KeyError, match="no plan stream"):
        draw_plan(counts, 7).stream("profiles")


def test_drawing_the_plan_holds_no_stream() -> None:
    """The eager plan held every stream: ~50 MB of arrays at 1_000_000 profiles (more while
    the lists were built). The lazy one holds the generator state per stream."""
    counts = Counts.for_profiles(1_000_000)
    tracemalloc.start()
    try:
        plan = draw_plan(counts, 42)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 256 * 1024, peak
    assert len(plan.stream("reads")) == 1_000_000


class _Store:
    """Returns what it is given: the phase loop folds items, no engine involved."""

    def __init__(self) -> None:
        self.seen: list[Any] = []

    async def update(self, uids: Any, transform: Any, marks: list[int]) -> list[int]:
        self.seen.extend(uids)
        return []

    async def read_by_id(self, uids: Any, marks: list[int]) -> list[Any]:
        self.seen.extend(uids)
        return []


@pytest.mark.parametrize(
    ("kind", "stream", "workers"), [("read_by_id", "reads", 3), ("update", "updates", 4)]
)
def test_a_phase_over_a_lazy_stream_runs_in_bounded_memory(kind: str, stream: str, workers: int) -> None:
    """A 400_000-item phase at P workers (contiguous partitions, ``uid % P`` buckets) gives
    each worker exactly its eager share and holds at most a few batches at a time."""
    counts = Counts.for_profiles(400_000)
    plan = draw_plan(counts, 3)
    items = plan.stream(stream)
    stores = [_Store() for _ in range(workers)]
    for s in stores:
        s.seen = _Counter()  # type: ignore[assignment]
    tracemalloc.start()
    try:
        outcome = anyio.run(
            partial(run_operations, wl=workload("profile_store")),
            PHASES[kind],
            items,
            stores,
            PhaseContext.for_seed(3),
            1_000,
            lambda *args: None,
        )
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert outcome.ops == 400_000
    assert peak < 2 * 1024 * 1024, peak  # an eager stream alone: ~3.2 MB of array, 14 MB of list
    want = eager_streams(counts, 3)[stream]
    split = bucket_by_uid(want, workers) if kind == "update" else partition(want, workers)
    assert [s.seen.fingerprint() for s in stores] == [_Counter(part).fingerprint() for part in split]


class _Counter:
    """Keeps an order-sensitive digest of what a worker saw, not the items themselves."""

    def __init__(self, items: Any = ()) -> None:
        self.n, self.h = 0, 0
        self.extend(items)

    def extend(self, items: Any) -> None:
        for x in items:
            self.h = hash((self.h, x))
            self.n += 1

    def fingerprint(self) -> tuple[int, int]:
        return self.n, self.h
