"""The capacity search: the probe rules, the search's bound, and the done-when test (an
engine of fixed service time on P threads has capacity P / service time)."""

from __future__ import annotations

import math
from typing import Any

import anyio
import numpy as np
import pytest
from engines_for_tests import FixedServiceWorker  # tests/ is on sys.path (rootdir)

from asyncbench.run.capacity.capacity import (
    CapacitySearch,
    ProbeRun,
    judge,
    local_probe,
    probe_bound,
    probe_items,
    probe_length,
    search,
)
from asyncbench.slo import parse_slo_text
from asyncbench.workloads import workload
from asyncbench.workloads.profile_store.phases import PHASES, PhaseContext


def test_probe_length_rule() -> None:
    assert probe_length(parse_slo_text("p99=2ms")) == (1000, 10_000)
    assert probe_length(parse_slo_text("p99=2ms,p999=10ms")) == (10_000, 100_000)
    assert probe_length(parse_slo_text("p90=2ms")) == (100, 1000)


def test_probe_items_are_the_same_slices_for_every_engine() -> None:
    items = list(range(10))
    assert list(probe_items(items, 0, 4)) == [0, 1, 2, 3]
    assert list(probe_items(items, 1, 4)) == [4, 5, 6, 7]
    assert list(probe_items(items, 2, 4)) == [0, 1, 2, 3]  # no whole slice left: from the start
    assert list(probe_items(items, 5, 25)) == items + items + items[:5]  # shorter than a probe: repeated
    with pytest.raises(ValueError):
        probe_items([], 0, 4)


def _run(response_ms: list[float], achieved: float) -> ProbeRun:
    return ProbeRun(np.array([int(x * 1e6) for x in response_ms], dtype=np.int64), achieved, None)


def test_judge_names_the_limit() -> None:
    slo = parse_slo_text("p50=2ms,p90=5ms")
    ok = judge(0, 1000, slo, 0, _run([1.0] * 100, 990))
    assert ok.passed and ok.percentiles_ns == {"p50": 1_000_000, "p90": 1_000_000}
    assert "rate" in (judge(0, 1000, slo, 0, _run([1.0] * 100, 940)).limit or "")
    assert (judge(0, 1000, slo, 0, _run([1.0] * 80 + [6.0] * 20, 1000)).limit or "").startswith("p90")
    # the tail waits longer than the loosest bound while the percentiles pass: a growing backlog
    backlog = judge(0, 1000, slo, 0, _run([1.0] * 999 + [9.0], 1000))
    assert (backlog.limit or "").startswith("backlog")
    # the warm-up's operations are not judged
    assert judge(0, 1000, slo, 50, _run([9.0] * 50 + [1.0] * 950, 1000)).passed


def _model(capacity: float):  # type: ignore[no-untyped-def]
    """A probe of an ideal engine: passes up to ``capacity``."""

    async def probe(number: int, rate: float) -> ProbeRun:
        ms = 1.0 if rate <= capacity else 50.0
        return _run([ms] * 1100, rate)

    return probe


@pytest.mark.parametrize("capacity", [3.0, 700.0, 1000.0, 1234.5, 5000.0, 99_000.0])
def test_search_finds_capacity_within_precision_and_bound(capacity: float) -> None:
    slo = parse_slo_text("p90=10ms")
    found = anyio.run(search, _model(capacity), slo, 500.0, 1.0, 100_000.0)
    assert found.capacity is not None
    assert capacity / 1.05 <= found.capacity <= capacity
    assert len(found.probes) <= probe_bound(500.0, 1.0, 100_000.0)
    assert found.limited_by is not None and found.limited_by.startswith("p90")
    assert [p.number for p in found.probes] == list(range(len(found.probes)))


def test_search_at_the_ceiling_and_below_the_floor() -> None:
    slo = parse_slo_text("p90=10ms")
    top = anyio.run(search, _model(1e9), slo, 500.0, 100.0, 4000.0)
    assert top.at_ceiling and top.capacity == 4000.0 and len(top.probes) == 4
    none = anyio.run(search, _model(10.0), slo, 500.0, 100.0, 4000.0)
    assert none.capacity is None and none.limited_by is not None
    with pytest.raises(ValueError, match="empty rate range"):
        anyio.run(search, _model(1.0), slo, 500.0, 600.0, 4000.0)


def test_fixed_service_time_capacity_is_workers_over_service_time() -> None:
    """Done when: P workers of a fixed service time have capacity P / service time, found
    within 10 %, in no more probes than the stated bound."""
    workers = 8
    expected = workers / FixedServiceWorker.SERVICE  # 800 ops/s
    slo = parse_slo_text("p90=100ms")  # 10x the service time: queueing, not service, breaks it
    stores = [FixedServiceWorker() for _ in range(workers)]
    items = list(range(1, 5001))
    probe = local_probe(PHASES["read_by_id"], items, stores, PhaseContext.for_seed(1), 100, slo, wl=workload("profile_store"))
    start, low, high = 250.0, 10.0, 8000.0
    found = anyio.run(search, probe, slo, start, low, high)
    assert found.capacity is not None
    assert abs(found.capacity - expected) <= 0.1 * expected, [(p.rate, p.achieved, p.limit) for p in found.probes]
    assert len(found.probes) <= probe_bound(start, low, high) == 2 * (math.ceil(math.log2(high / start)) + 1 + 4)


def test_probe_bound_holds_whatever_the_verdicts() -> None:
    """Near the capacity a loaded machine makes verdicts noisy (a lower rate may fail, a
    higher pass): the search still ends within the stated bound, at a passing rate."""
    import random

    slo = parse_slo_text("p90=10ms")
    for seed in range(200):
        rng = random.Random(seed)
        low, high = rng.choice([(1.0, 1e6), (100.0, 200.0), (500.0, 64_000.0), (10.0, 11.0)])
        start = math.sqrt(low * high)

        async def noisy(number: int, rate: float, rng: random.Random = rng) -> ProbeRun:
            return _run([1.0 if rng.random() < 0.5 else 50.0] * 100, rate)

        found = anyio.run(search, noisy, slo, start, low, high)
        assert len(found.probes) <= probe_bound(start, low, high), (seed, [p.rate for p in found.probes])
        if found.capacity is not None:
            assert any(p.passed and p.rate == found.capacity for p in found.probes)


def test_searches_far_apart_give_an_interval_that_stays_a_rate() -> None:
    """Three searches of a loaded machine found about 13_000/s, 870_000/s and 50_000/s: the
    Student t interval's low end fell below zero (-998_000/s), the isolated child wrote
    it, the result model refused it as no rate, and the parent said only "child process
    ended without a result" for a run that had completed. A rate's interval stays >= 0."""
    from asyncbench.result import Capacity
    from asyncbench.run.capacity.capacity import measure_capacity

    capacities = iter([13_000.0, 870_000.0, 50_000.0])
    current = [next(capacities)]
    searches_seen = {0}

    async def probe(number: int, rate: float) -> ProbeRun:
        return _run([1.0 if rate <= current[0] else 50.0] * 1100, rate)

    def each_probe(search_number: int, p: object, s: object) -> None:
        """Each search meets another machine: the next capacity once a new search starts."""
        if search_number + 1 not in searches_seen:
            searches_seen.add(search_number + 1)
            current[0] = next(capacities, current[0])

    async def main() -> Capacity:
        cap, _, _ = await measure_capacity(probe, parse_slo_text("p90=10ms"), [1.0, 1_000_000.0], 3, each_probe)
        return cap

    cap = anyio.run(main)
    assert cap.capacities is not None and len(cap.capacities) == 3
    assert cap.ci_low is not None and cap.ci_low >= 0, cap.capacities
    cap.check("capacity")  # the result model takes it (it raised ResultError: ci_low below 0)


def test_one_accidental_failure_is_confirmed_away() -> None:
    """A steady engine whose probe at one rate met one stall (one 2.2 ms p99 at 179_000/s
    among passes up to 846_000/s on a quiet machine): the search bisected below it and
    reported 171_000/s. The failure is run again and judged on both probes pooled, so one
    accident no longer decides the capacity, and the record says which probe confirmed."""
    slo = parse_slo_text("p99=1ms")
    stalled = {3}  # the probe numbers that meet a stall

    async def steady(number: int, rate: float) -> ProbeRun:
        if rate > 800_000:
            return _run([5.0] * 11_000, rate * 0.8)  # above its capacity: the rate is missed
        ms = [0.05] * 11_000
        if number in stalled:
            ms[5_000:5_150] = [3.0] * 150  # 150 of 10_000 judged operations wait 3 ms: p99 fails (0.75 % pooled)
        return _run(ms, rate)

    found = anyio.run(search, steady, slo, 22_360.0, 500.0, 1_000_000.0)
    assert found.capacity is not None and found.capacity >= 700_000, [(p.number, p.rate, p.limit) for p in found.probes]
    first, again = found.probes[3], found.probes[4]
    assert first.limit is not None and first.limit.startswith("p99") and first.confirms is None
    assert again.passed and again.confirms == 3 and again.rate == first.rate
    # a failure that holds is confirmed too, and stays a failure: the rate above capacity
    over = [p for p in found.probes if p.rate > 800_000]
    assert over and all(not p.passed for p in over) and any(p.confirms is not None for p in over)
    assert len(found.probes) <= probe_bound(22_360.0, 500.0, 1_000_000.0)


def test_without_a_least_duration_the_slice_bound_is_the_probe_bound() -> None:
    from asyncbench.run.capacity.capacity import slice_bound

    for low, high in [(1.0, 1e6), (100.0, 200.0), (500.0, 64_000.0), (10.0, 11.0), (500.0, 1e6)]:
        start = math.sqrt(low * high)
        assert slice_bound(start, low, high, 0.0, 11_000) == probe_bound(start, low, high)


def test_a_least_probe_duration_spans_slices_numbered_in_stream_order_within_the_bound() -> None:
    """With capacity_probe_seconds S, the probe of rate r runs max(1, ceil(S r / length))
    consecutive slices back to back, judged as one: every slice is used once, in order,
    with its own checksum, whatever the verdicts, and the search stays within its bounds."""
    import random

    from asyncbench.run.capacity.capacity import slice_bound, slices_at

    slo = parse_slo_text("p90=10ms")
    length = sum(probe_length(slo))  # 1_100
    for seed in range(100):
        rng = random.Random(seed)
        low, high = rng.choice([(100.0, 64_000.0), (500.0, 20_000.0), (10.0, 11.0)])
        seconds = rng.choice([0.5, 2.0, 5.0])
        start = math.sqrt(low * high)
        seen: list[int] = []

        async def noisy(number: int, rate: float, rng: random.Random = rng, seen: list[int] = seen) -> ProbeRun:
            seen.append(number)
            return ProbeRun(np.full(length, int(1e6 if rng.random() < 0.5 else 50e6), dtype=np.int64), rate, f"c{number}")

        async def one(start: float = start, low: float = low, high: float = high, seconds: float = seconds) -> CapacitySearch:
            return await search(noisy, slo, start, low, high, first_number=7, probe_seconds=seconds)

        found = anyio.run(one)
        assert seen == list(range(7, 7 + len(seen)))  # each slice once, in stream order
        assert len(found.probes) <= probe_bound(start, low, high)
        assert len(seen) <= slice_bound(start, low, high, seconds, length), (seed, len(seen))
        at = 7
        for p in found.probes:
            assert p.number == at and p.slices == slices_at(p.rate, seconds, length)
            assert p.slices * length / p.rate >= min(seconds, length / p.rate) - 1e-9  # at least S, or one slice
            assert p.checksums == [f"c{n}" for n in range(at, at + p.slices)]
            at += p.slices


def test_a_least_probe_duration_sees_the_stalls_a_short_probe_misses() -> None:
    """An engine of 0.05 ms operations that stalls 50 ms every 2 s (as the LSM's flushes
    and merges under updates): a probe of 11_000 operations at 20_000/s lasts 0.55 s and
    passes p99 <= 1 ms unless a stall falls inside it; probes of at least 4 s always hold
    two stalls, and the capacity under the bound is then the honest one: lower."""
    slo = parse_slo_text("p99=1ms")

    def stalling(start_s: list[float]):  # type: ignore[no-untyped-def]
        async def probe(number: int, rate: float) -> ProbeRun:
            n = 11_000
            t = start_s[0] + np.arange(n) / rate  # intended starts, seconds of the engine's clock
            start_s[0] = float(t[-1]) + 1 / rate
            ms = np.full(n, 0.05)
            phase = t % 2.0
            ms[phase < 0.05] += (0.05 - phase[phase < 0.05]) * 1000  # waiting out the stall
            return ProbeRun((ms * 1e6).astype(np.int64), rate, None)

        return probe

    short = anyio.run(lambda: search(stalling([0.3]), slo, 20_000.0, 500.0, 1_000_000.0))
    long = anyio.run(lambda: search(stalling([0.3]), slo, 20_000.0, 500.0, 1_000_000.0, probe_seconds=4.0))
    assert short.capacity is not None and short.capacity >= 20_000  # the stalls fell between probes
    assert long.capacity is None or long.capacity < short.capacity / 4, (long.capacity, short.capacity)
    assert all(p.slices * 11_000 / p.rate >= 4.0 - 1e-9 for p in long.probes)


def test_latency_not_monotonic_in_the_rate_is_said() -> None:
    """SQLite's email lookups failed p99 <= 1 ms at 10_706/s in one search and passed up to
    115_993/s in another (idle threads waking at low rates): the bisection assumes more rate
    never helps, so the result says when a rate passed above a confirmed failure."""
    from asyncbench.run.capacity.capacity import measure_capacity, not_monotonic

    searches = iter([False, True, True])
    state: dict[str, Any] = {"woken": True, "search": -1}

    async def probe(number: int, rate: float) -> ProbeRun:
        slow_at_low_rates = not state["woken"] and rate < 40_000
        return _run([5.0 if slow_at_low_rates or rate > 120_000 else 0.1] * 1100, rate)

    def each(search_number: int, p: object, s: object) -> None:
        nonlocal searches
        if search_number != state["search"]:
            state["search"] = search_number
            state["woken"] = next(searches)

    async def main():  # type: ignore[no-untyped-def]
        nonlocal searches
        state["woken"] = next(searches)  # the first search's machine
        state["search"] = 0
        cap, _, _ = await measure_capacity(probe, parse_slo_text("p90=1ms"), [1_000.0, 1_000_000.0], 3, each)
        return cap

    cap = anyio.run(main)
    assert cap.capacities[0] is None or cap.capacities[0] < 40_000, cap.capacities
    assert cap.not_monotonic is not None and "not monotonic" in cap.not_monotonic, cap.not_monotonic
    assert "above a failure at" in cap.not_monotonic
    # searches that disagree near the capacity are no bend in the curve (a quiet machine's
    # LSM: a failure at 425_464/s beside a pass at 484_513/s)
    from asyncbench.result import CapacityProbe

    near = [
        CapacityProbe(0, 0, 484_513.0, 484_000.0, {"p99": 100_000}, 100_000),
        CapacityProbe(1, 1, 425_464.0, 402_756.0, {"p99": 100_000}, 100_000, "rate: achieved 402,756/s", None, 0),
    ]
    assert not_monotonic(near) is None
    # a monotonic engine (always awake): nothing said
    state["woken"], searches = True, iter([True, True, True])
    steady = anyio.run(main)
    assert steady.capacity is not None and steady.not_monotonic is None
    assert not_monotonic(steady.probes) is None
