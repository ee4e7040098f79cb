"""Issue 52 item 8, last clause: a capacity search toward a bound the engine cannot meet
(``--slo p99=1us``) walked its ramp down to the range's bottom, every rate missing, ~100 s a
probe at the lowest rates, over 400 s in all. When the engine's own operations (service
time, no queue) miss the bound, the search now stops at its first confirmed failure: the
capacity is below that rate, INCONCLUSIVE, in seconds. A miss by queueing searches on."""

from __future__ import annotations

import anyio
import numpy as np

from asyncbench.run.capacity.capacity import ProbeRun, SearchRecord, search
from asyncbench.slo import parse_slo_text

N = 11_010  # a p99 probe: 1_010 warm-up and 10_000 judged operations


def _decomposed(service_us: float, queue_us: float, n: int, rate: float) -> ProbeRun:
    """A probe whose every operation takes ``service_us`` of service and waits ``queue_us``
    in the engine's queue (the client on time: no schedule delay)."""
    service = np.full(n, int(service_us * 1e3), dtype=np.int64)
    response = service + int(queue_us * 1e3)
    return ProbeRun(response, rate, None, service_ns=service, delay_ns=np.zeros(n, dtype=np.int64), engine_ns=response)


def test_a_bound_below_the_engines_service_time_stops_at_the_first_rate() -> None:
    slo = parse_slo_text("p99=1us")
    rates: list[float] = []

    async def probe(number: int, rate: float) -> ProbeRun:
        rates.append(rate)
        return _decomposed(1.6, 0.0, N, rate)  # every operation 1.6 µs of the engine's own time

    found = anyio.run(search, probe, slo, 10_000.0, 100.0, 1_000_000.0)
    assert rates == [10_000.0, 10_000.0]  # the rate and its confirmation; none of 5_000 .. 100
    assert found.capacity is None and found.inconclusive_from == 10_000.0
    assert found.inconclusive is not None and "out of reach" in found.inconclusive, found.inconclusive
    assert "below 10_000/s" in found.inconclusive and "1.6 µs misses p99 <= 1 µs" in found.inconclusive
    record = SearchRecord(slo, [100.0, 1_000_000.0])
    record.end_search(found)
    cap = record.capacity()
    assert cap.capacity is None and cap.inconclusive == found.inconclusive and cap.inconclusive_from == 10_000.0


def test_a_miss_by_queueing_searches_down_as_before() -> None:
    slo = parse_slo_text("p99=1ms")
    rates: list[float] = []

    async def probe(number: int, rate: float) -> ProbeRun:
        rates.append(rate)
        queue = 5_000.0 if rate > 1_000 else 0.0  # the engine's service fits; its queue does not
        return _decomposed(50.0, queue, N, rate)

    found = anyio.run(search, probe, slo, 10_000.0, 100.0, 1_000_000.0)
    assert found.inconclusive is None and found.capacity is not None and 950 <= found.capacity <= 1_000
    assert min(rates) < 10_000.0


def test_a_search_that_passed_a_rate_bisects_whatever_the_service_time() -> None:
    """Out of reach is decided only before any rate passed: with a pass below, the failing
    rate is bracketed and the bisection runs as before."""
    slo = parse_slo_text("p99=100us")

    async def probe(number: int, rate: float) -> ProbeRun:
        return _decomposed(50.0 if rate <= 20_000 else 500.0, 0.0, N, rate)

    found = anyio.run(search, probe, slo, 10_000.0, 100.0, 1_000_000.0)
    assert found.inconclusive is None and found.capacity is not None and 19_000 <= found.capacity <= 20_000
