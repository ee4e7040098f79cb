"""Whose failure a capacity probe is (issue 51): the probe records response, service and
schedule-delay figures, and a failure the client's own lateness decided is INCONCLUSIVE,
never the engine's failure, never a capacity ranked as one."""

from __future__ import annotations

import time

import anyio
import numpy as np
import pytest

from asyncbench.run.capacity.capacity import (
    ProbeMarks,
    ProbeRun,
    judge,
    local_probe,
    measure_capacity,
    punctual_response,
)
from asyncbench.run.phase import phase_loop
from asyncbench.slo import parse_slo_text
from asyncbench.workloads import workload
from asyncbench.workloads.profile_store.phases import PHASES, PhaseContext

MS = 1_000_000


def _run(response: list[int], delay: list[int], service: list[int], own: list[int], wait: float | None = 0.0) -> ProbeRun:
    def arr(x: list[int]) -> np.ndarray:
        return np.array(x, dtype=np.int64)

    return ProbeRun(arr(response), 1000.0, None, (), arr(service), arr(delay), wait, arr(own))


def test_punctual_response_is_the_queue_a_client_on_time_would_have_seen() -> None:
    """The engine's own response: each operation starts at its intended time or at the
    previous one's end (Lindley's recursion), with its measured service time."""
    rng = np.random.default_rng(7)
    intended = np.cumsum(rng.integers(0, 200, 2000)).astype(np.int64)
    service = rng.integers(1, 300, 2000).astype(np.int64)
    end, expected = 0, []
    for t, s in zip(intended.tolist(), service.tolist(), strict=True):
        end = max(t, end) + s
        expected.append(end - t)
    assert punctual_response(intended, service).tolist() == expected


def test_probe_marks_split_response_into_service_and_schedule_delay() -> None:
    """A batch issued 5 ms after its operations were due: the delay is the client's, the
    service time the engine's, and a punctual client would have seen the service time."""
    marks = ProbeMarks()
    due = [10 * MS, 10 * MS + 100]
    marks.add(0, [15 * MS, 15 * MS + 50, 15 * MS + 100], due)
    intended, response, service, delay, own = marks.arrays()
    assert intended.tolist() == due
    assert response.tolist() == [5 * MS + 50, 5 * MS]
    assert service.tolist() == [50, 50]
    assert delay.tolist() == [5 * MS, 5 * MS - 100]
    assert own.tolist() == [50, 50]


def test_a_late_client_makes_a_failed_probe_inconclusive() -> None:
    slo = parse_slo_text("p90=2ms")
    n = 100
    # 20 % of the operations issued 7 ms late; the engine served each in 40 µs
    late = [7 * MS if i % 5 == 0 else 0 for i in range(n)]
    res = judge(0, 1000, slo, 0, _run([d + 40_000 for d in late], late, [40_000] * n, [40_000] * n))
    assert res.limit is not None and res.limit.startswith("p90")  # the bound was broken ...
    assert res.verdict == "inconclusive" and not res.passed  # ... but not by the engine
    assert res.inconclusive is not None and res.inconclusive.startswith("client late: schedule delay p90 7 ms")
    assert "against a bound of 2 ms" in res.inconclusive
    assert res.service_ns == {"p90": 40_000} and res.delay_ns == {"p90": 7 * MS} and res.engine_ns == {"p90": 40_000}
    assert res.delay_max_ns == 7 * MS


def test_an_engine_that_breaks_the_bound_on_its_own_fails_whatever_the_client() -> None:
    slo = parse_slo_text("p90=2ms")
    n = 100
    slow = [5 * MS] * n  # the engine's own response over the bound
    late = [3 * MS] * n  # and the client late as well, on a machine that gave it its CPU
    failed = judge(0, 1000, slo, 0, _run([8 * MS] * n, late, [40_000] * n, slow, wait=0.01))
    assert failed.verdict == "fail" and failed.inconclusive is None
    # the client on time: the engine's failure, even on a saturated machine
    on_time = judge(0, 1000, slo, 0, _run(slow, [0] * n, [40_000] * n, slow, wait=0.9))
    assert on_time.verdict == "fail"
    # late on a saturated machine (its waits stretch the service times too): inconclusive
    saturated = judge(0, 1000, slo, 0, _run([8 * MS] * n, late, [40_000] * n, slow, wait=0.6))
    assert saturated.verdict == "inconclusive"
    assert (saturated.inconclusive or "").startswith("client late on a saturated machine")
    # a small delay (the harness's usual cost) never makes a failure the client's
    near = judge(0, 1000, slo, 0, _run([2_100_000] * n, [300_000] * n, [40_000] * n, [1_800_000] * n))
    assert near.verdict == "fail"


class QuickStore:
    """An engine answering every point read at once, on the event loop."""

    async def read_by_id(self, uids: list[int], marks: list[int]) -> list[object]:
        marks.append(time.perf_counter_ns())
        marks.extend(time.perf_counter_ns() for _ in uids)
        return []


def test_injected_client_lateness_is_inconclusive_not_a_failed_engine(monkeypatch: pytest.MonkeyPatch) -> None:
    """Done when: a client made late (every 8th wait for a due time oversleeps 15 ms, as a
    process descheduled by a busy machine does) fails the bound with an engine that answers
    at once: the verdict is inconclusive naming the schedule delay, the search reports no
    capacity below that rate, and the scorecard does not rank it."""
    waits = 0
    real_wait = phase_loop.wait_until

    async def late_wait(due_ns: int, alone: bool = False) -> None:
        nonlocal waits
        await real_wait(due_ns, alone)
        waits += 1
        if waits % 8 == 0:
            time.sleep(0.015)  # the client's process off its CPU: the loop blocked

    monkeypatch.setattr(phase_loop, "wait_until", late_wait)
    slo = parse_slo_text("p90=5ms")
    probe = local_probe(PHASES["read_by_id"], list(range(1, 2001)), [QuickStore()], PhaseContext.for_seed(1), 100, slo, wl=workload("profile_store"))
    cap, _, _ = anyio.run(measure_capacity, probe, slo, [1000.0, 4000.0], 1)
    assert waits > 0
    first = cap.probes[0]
    assert first.verdict == "inconclusive", [(p.rate, p.limit, p.delay_percentiles_ns, p.engine_percentiles_ns) for p in cap.probes]
    assert first.delay_percentiles_ns["p90"] > 2.5 * MS and first.engine_percentiles_ns["p90"] < 5 * MS
    assert first.service_percentiles_ns["p90"] < 5 * MS and first.delay_p99_ns is not None
    # the search stopped there: no capacity below an inconclusive rate
    assert cap.capacity is None and cap.capacities == [None] and not cap.measured
    assert cap.inconclusive is not None and cap.inconclusive.startswith("client late")
    assert cap.inconclusive_from == pytest.approx(2000.0) and cap.lower_bound is None
    assert cap.limited_by is None  # no engine's limit was found
    from asyncbench.report.capacity import capacity_text, unmeasured_reason

    assert capacity_text(cap) == "inconclusive from 2_000/s"
    assert unmeasured_reason(cap) == cap.inconclusive


def test_client_processes_parts_merge_with_their_figures_in_intended_order() -> None:
    """``--processes K``: each process's share of a probe comes with its service times,
    schedule delays and the engine's own response; the coordinator merges them in intended
    order, so the verdict is judged on the same figures as in one process."""
    from asyncbench.run.scale_out.capacity_remote import ProbePart, merged_probe

    def arr(*x: int) -> np.ndarray:
        return np.array(x, dtype=np.int64)

    a = ProbePart(0, 0.0, 1.0, {0: "00" * 8}, arr(0, 20), arr(5, 6), 2, arr(1, 2), arr(4, 4), 0.05, arr(1, 2))
    b = ProbePart(1, 0.0, 1.0, {1: "00" * 8}, arr(10, 30), arr(7, 8), 2, arr(3, 4), arr(4, 4), 0.2, arr(3, 4))
    run = merged_probe([a, b], workload("profile_store"))
    assert run.response_ns.tolist() == [5, 7, 6, 8]
    assert run.service_ns.tolist() == [1, 3, 2, 4] and run.engine_ns.tolist() == [1, 3, 2, 4]
    assert run.delay_ns.tolist() == [4, 4, 4, 4] and run.decomposed
    assert run.wait_share == 0.2  # the most any process's client thread waited
