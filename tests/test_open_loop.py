"""Open loop: a phase at a target rate issues the same operations at intended times.

The schedule's arithmetic, the phase loop's batches under a rate (same checksums as the
closed loop, nothing skipped when behind) and the coordinated omission a stalling engine
shows: hidden in one sample closed loop, in the response time under a rate.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import numpy as np
import pytest
from conftest import store_of
from engines_for_tests import StallingEngine
from plugins.own_store_engine import OwnStoreMemoryEngine

from asyncbench.engine import EngineConfig
from asyncbench.engines.memory import MemoryEngine
from asyncbench.measure.latency_recorder import PhaseRecorder
from asyncbench.rate import Arrivals, Rate
from asyncbench.result import OpenLoop, PhaseResult
from asyncbench.run.phase.dispatch import run_operations
from asyncbench.run.phase.schedule import WorkerSchedule
from asyncbench.workloads import workload
from asyncbench.workloads.profile_store.kv_store import STORE_NAMES as PROFILE_STORES
from asyncbench.workloads.profile_store.phases import PHASES, PhaseContext, phase_items
from asyncbench.workloads.profile_store.plan import Counts, draw_plan

PROFILE_STORE = workload("profile_store")

MS = 1_000_000


def test_uniform_schedule_staggers_workers_and_spaces_each_by_p_over_rate() -> None:
    rate = Rate(1000.0)
    w0 = WorkerSchedule(rate, 10 * MS, 0, 2)
    w1 = WorkerSchedule(rate, 10 * MS, 1, 2)
    assert list(w0.take(10**15, 3)) == [10 * MS, 12 * MS, 14 * MS]
    assert list(w1.take(10**15, 3)) == [11 * MS, 13 * MS, 15 * MS]


def test_an_uneven_key_owner_split_paces_each_worker_by_its_share() -> None:
    """Updates split by uid % P: each worker's gap is 1 / (R * share), so every share spans
    the same time (at P / R each, the worker with the most would end last); a contiguous
    split keeps P / R."""
    from asyncbench.run.phase.dispatch import shares, split

    heavy = WorkerSchedule(Rate(1000.0), 0, 0, 2, share=0.8)
    light = WorkerSchedule(Rate(1000.0), 0, 1, 2, share=0.2)
    assert list(heavy.take(10**15, 3)) == [0, round(1.25 * MS), round(2.5 * MS)]
    assert list(light.take(10**15, 2)) == [1 * MS, 6 * MS]
    uids = [4, 8, 12, 2, 3]  # worker 0 of 2 owns four of the five
    parts = split(PHASES["update"], uids, 2)
    assert shares(PHASES["update"], parts) == {0: 0.8, 1: 0.2}
    assert shares(PHASES["read_by_id"], split(PHASES["read_by_id"], uids, 2)) is None


def test_take_returns_what_is_due_at_least_one_at_most_the_limit() -> None:
    s = WorkerSchedule(Rate(1000.0), 0)
    assert list(s.take(0, 10)) == [0]  # only the first is due
    assert list(s.take(3 * MS, 10)) == [1 * MS, 2 * MS, 3 * MS]
    assert s.next_due() == 4 * MS
    assert len(s.take(10_000 * MS, 100)) == 100  # far behind: a full batch, nothing skipped
    assert s.next_due() == 104 * MS
    assert list(s.take(0, 5)) == [104 * MS]  # not yet due: the first (the caller waited for it)


def test_the_schedule_crosses_its_blocks_without_a_gap() -> None:
    s = WorkerSchedule(Rate(1e9), 0)  # 1 ns apart
    got = np.concatenate([s.take(10**12, 1000) for _ in range(10)])
    assert np.array_equal(got, np.arange(10_000))


def test_poisson_is_seeded_apart_from_the_plan_and_has_the_rates_mean() -> None:
    def draw(seed: int, phase: int, worker: int) -> np.ndarray:
        s = WorkerSchedule(Rate(1000.0, Arrivals.POISSON), 0, worker, 2, seed, phase)
        return np.concatenate([s.take(10**15, 997) for _ in range(20)])

    a = draw(7, 3, 0)
    assert np.array_equal(a, draw(7, 3, 0))  # deterministic
    assert not np.array_equal(a, draw(7, 3, 1)) and not np.array_equal(a, draw(8, 3, 0))
    assert a[0] == 0 and np.all(np.diff(a) >= 0)
    mean_gap = float(np.diff(a).mean())
    assert 1.9 * MS < mean_gap < 2.1 * MS  # P / rate = 2 ms


@pytest.mark.parametrize("bad", [0.0, -5.0, float("inf"), float("nan")])
def test_a_rate_must_be_positive_and_finite(bad: float) -> None:
    with pytest.raises(ValueError, match="positive"):
        Rate(bad)


def test_the_achieved_rate_check_allows_five_percent() -> None:
    ol = OpenLoop(rate=1000.0, arrivals=Arrivals.UNIFORM)
    kind = PHASES["read_by_id"]

    def phase(ops: int, seconds: float) -> PhaseResult:
        return PhaseResult(0, "r", kind, kind.action, kind.group, ops, seconds, open_loop=ol)

    assert not phase(950, 1.0).rate_missed
    assert phase(949, 1.0).rate_missed
    closed = PhaseResult(0, "r", kind, kind.action, kind.group, 10, 1.0)
    assert not closed.rate_missed


# --- the phase loop under a rate ------------------------------------------------------------


async def _read_phase(
    engine_cls: type[MemoryEngine], rate: Rate | None, workers: int, profiles: int = 2000, batch: int = 100
) -> tuple[Any, PhaseRecorder]:
    plan = draw_plan(Counts.for_profiles(profiles), 1)
    eng = engine_cls(EngineConfig(name=engine_cls.name, data_dir=Path("unused"), settings={}, limit=50, seed=1, stores=PROFILE_STORES))
    await eng.open(True)
    store = store_of(eng)  # the profile store over the engine's primitives (or the engine, if it is its own)
    ctx = PhaseContext.for_seed(1)
    insert = PHASES["insert"]
    await run_operations(insert, phase_items(insert, None, None, plan), [store], ctx, 1000, lambda *a: None, wl=PROFILE_STORE)
    kind = PHASES["read_by_id"]
    rec = PhaseRecorder(workers)

    def hook(w: int, i: int, n: int, s: float, marks: list[int], intended: Any = None, blocked: int = 0) -> None:
        rec.add(w, n, s, marks, intended, blocked)

    out = await run_operations(
        kind, phase_items(kind, "reads", None, plan), [store] * workers, ctx, batch, hook, rate, 1, 2, wl=PROFILE_STORE
    )
    return out, rec


@pytest.mark.parametrize("workers", [1, 3])
@pytest.mark.parametrize("arrivals", list(Arrivals))
def test_a_rate_changes_when_operations_start_not_what_they_are(workers: int, arrivals: Arrivals) -> None:
    closed, rec = anyio.run(_read_phase, MemoryEngine, None, workers)
    assert not rec.open_loop
    rec.close()
    timed, rec = anyio.run(_read_phase, MemoryEngine, Rate(20_000.0, arrivals), workers)
    with rec:
        assert rec.open_loop
        assert (timed.ops, timed.checksum) == (closed.ops, closed.checksum)
        summary = rec.open_loop_summary()
        assert summary is not None and summary["response"].count == timed.ops
    floor = (timed.ops - workers) / 20_000  # uniform: no operation started before its time
    assert timed.seconds >= (floor if arrivals is Arrivals.UNIFORM else 0.8 * floor)  # Poisson: random gaps


def test_closed_loop_hides_the_stall_in_one_sample(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ASYNCBENCH_TEST_STALL_EVERY", "1000")
    _, rec = anyio.run(_read_phase, StallingEngine, None, 1)
    with rec:
        s = rec.summary()
        assert s is not None and s.max >= 190 * MS  # the stall is there: one operation (timers: ms resolution)
        assert s.p99 < 20 * MS  # but the percentiles do not see it
        assert rec.open_loop_summary() is None


def test_under_a_rate_the_response_time_shows_the_stall_and_the_service_time_does_not(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("ASYNCBENCH_TEST_STALL_EVERY", "1000")
    out, rec = anyio.run(_read_phase, StallingEngine, Rate(2000.0), 1)
    with rec:
        service = rec.summary()
        figures = rec.open_loop_summary()
        assert service is not None and figures is not None
        # 2 stalls of 200 ms at 2000/s: ~400 of 2000 operations are intended during a stall
        assert figures["response"].p99 >= 100 * MS
        assert service.p99 < 20 * MS
        assert service.max >= 190 * MS  # a 200 ms sleep can end a little early (ms timers)


def test_a_rate_the_engine_cannot_meet_is_marked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ASYNCBENCH_TEST_STALL_EVERY", "500")  # 4 stalls: at least 0.8 s for 2000 reads
    out, rec = anyio.run(_read_phase, StallingEngine, Rate(10_000.0), 1)
    rec.close()
    kind = PHASES["read_by_id"]
    pr = PhaseResult(0, "r", kind, kind.action, kind.group, out.ops, out.seconds)
    pr.open_loop = OpenLoop(rate=10_000.0, arrivals=Arrivals.UNIFORM)
    assert pr.rate_missed


# --- per-second series ----------------------------------------------------------------------

S = 1_000_000_000


def test_per_second_series_keeps_an_empty_second_and_gives_response_times() -> None:
    with PhaseRecorder(1) as rec:
        # three operations: ends at 0.5 s, 0.6 s, then a stall to 2.5 s; intended every 0.1 s
        rec.add(0, 2, 0.6, [0, S // 2, 6 * S // 10], np.array([0, S // 10]))
        rec.add(0, 1, 1.9, [6 * S // 10, 5 * S // 2], np.array([2 * S // 10]))
        service, response = rec.per_second()
    assert [tuple(b) for b in service] == [
        (1.0, 2, S // 10, S // 2, S // 2),  # nearest rank of two latencies: 0.5 s and 0.1 s
        (2.0, 0, 0, 0, 0),  # nothing ended in the second second: kept, with zeros
        (3.0, 1, 19 * S // 10, 19 * S // 10, 19 * S // 10),
    ]
    assert [b.ops for b in response] == [2, 0, 1]
    assert response[2].max_ns == 5 * S // 2 - 2 * S // 10  # from its intended start, not its issue
    assert response[0].max_ns == S // 2  # 0.5 s after its intended 0, and 0.6 - 0.1


def test_closed_loop_series_has_no_response() -> None:
    with PhaseRecorder(2) as rec:
        rec.add(0, 1, 0.1, [0, 10])
        rec.add(1, 1, 0.1, [5, 1_500_000_000])
        service, response = rec.per_second()
    assert [b.ops for b in service] == [1, 1] and response == []


def test_a_dip_at_a_sweeps_last_level_claims_no_skipped_rates() -> None:
    """The sweep note says higher rates were skipped only when the sweep has some: a dip at
    its highest level skipped nothing (issue 34)."""
    from asyncbench.config import PhaseSpec
    from asyncbench.run.phase.phase_rows import phase_row, sweep_dipped

    levels = [PhaseSpec("read_by_id", f"reads @ {r}/s", "reads", rate=r, sweep=1) for r in (1000.0, 2000.0)]

    def dipped_row(index: int, spec: PhaseSpec) -> PhaseResult:
        pr = phase_row(index, spec, PHASES[spec.kind], 100, 1.0, "0" * 16)  # 100/s: far below either rate
        pr.open_loop = OpenLoop(rate=spec.rate or 0.0, arrivals=Arrivals.UNIFORM)
        return pr

    notes: list[str] = []
    dipped: set[int] = set()
    sweep_dipped(dipped_row(2, levels[1]), levels[1], Rate(2000.0), dipped, notes)
    assert dipped == {1} and len(notes) == 1
    assert "skipped" not in notes[0] and "highest rate" in notes[0], notes
    notes.clear()
    sweep_dipped(dipped_row(1, levels[0]), levels[0], Rate(1000.0), dipped, notes, later=levels[1:])
    assert "1 higher rate was skipped" in notes[0], notes


def test_every_operation_of_a_catch_up_batch_has_its_own_delay() -> None:
    """A worker whose harness issued a batch 5 ms late: each operation due meanwhile waited
    for the harness from its own intended time, not only the first (before: the batch's
    first carried the delay and the others were recorded as 0, so the p99 was 0)."""
    ops = 200
    intended = np.arange(ops, dtype=np.int64) * 10_000  # one every 10 µs from 0
    start = 5 * MS  # the batch's start: the harness issued it here
    marks = [start + k * 1_000 for k in range(ops + 1)]  # 1 µs per operation
    with PhaseRecorder(1) as rec:
        rec.add(0, ops, 0.001, marks, intended)
        summary = rec.open_loop_summary()
    assert summary is not None
    # the operation intended at 1 ms (the 99th percentile's rank, counting from the latest)
    # waited 5 - 1.99 ms for the harness; the first, intended at 0, waited 5 ms
    assert summary["delay_p99_ns"] >= 4 * MS, summary
    assert summary["delay_max_ns"] == pytest.approx(5 * MS, rel=1e-3)


def test_a_catch_up_batch_after_the_engine_kept_the_worker_is_not_harness_delay() -> None:
    """Operations that came due while the worker's previous batch was still in the engine
    wait for the harness only from that batch's end."""
    with PhaseRecorder(1) as rec:
        rec.add(0, 1, 0.01, [0, 10 * MS], np.array([0], dtype=np.int64))  # one slow operation: 10 ms
        late = np.arange(1, 10, dtype=np.int64) * MS  # due at 1..9 ms, during it
        rec.add(0, 9, 0.001, [10 * MS + 200_000 + k * 1_000 for k in range(10)], late)  # issued 0.2 ms after it
        summary = rec.open_loop_summary()
    assert summary is not None and summary["delay_max_ns"] == pytest.approx(200_000, rel=1e-2)


class LoopBlockingEngine(OwnStoreMemoryEngine):
    """Every 200th read holds the event loop 40 ms (a synchronous call inside the engine's
    batch): the other workers' operations due meanwhile wait for the engine, not the harness."""

    name = "loop-blocking"

    def __init__(self, config: EngineConfig) -> None:
        super().__init__(config)
        self.reads = 0

    async def read_by_id(self, uids, marks):  # type: ignore[no-untyped-def]
        import time
        from time import perf_counter_ns

        marks.append(perf_counter_ns())
        out = []
        for uid in uids:
            self.reads += 1
            if self.reads % 200 == 0:
                time.sleep(0.04)  # blocks the loop: no await
            one: list[int] = []
            out += await super().read_by_id([uid], one)
            marks.append(one[-1])
        return out


def test_the_loop_ledger_counts_the_time_a_call_holds_the_loop_not_its_waits() -> None:
    import time

    from asyncbench.run.phase.loop_ledger import LoopLedger

    async def blocking() -> int:
        time.sleep(0.03)  # holds the loop
        await anyio.sleep(0)
        return 1

    async def waiting() -> int:
        await anyio.sleep(0.03)  # the loop is free meanwhile
        return 2

    async def main() -> tuple[int, int, int, int]:
        held, free = LoopLedger(), LoopLedger()
        a = await held.timed(blocking())
        b = await free.timed(waiting())
        return a, b, held.total, free.total

    a, b, held, free = anyio.run(main)
    assert (a, b) == (1, 2)
    assert held >= 30 * MS and free < 10 * MS


def test_an_engine_that_blocks_the_loop_is_the_engines_time_not_the_harness_delay() -> None:
    """P2 on one loop, an engine that blocks it 40 ms every 200th read: the other worker's
    next batch is handed those 40 ms as the engine's, and the recorder takes them out of
    that batch's delays (before: all of it was harness delay)."""
    seen: list[tuple[int, int]] = []

    async def phase() -> Any:
        out, rec = await _read_phase(LoopBlockingEngine, Rate(2000.0), 2)
        rec.close()
        return out

    import asyncbench.measure.latency_recorder as lr

    add = lr.PhaseRecorder.add

    def spy(self, worker, ops, seconds, marks, intended=None, blocked=0):  # type: ignore[no-untyped-def]
        seen.append((worker, blocked))
        return add(self, worker, ops, seconds, marks, intended, blocked)

    lr.PhaseRecorder.add = spy  # type: ignore[method-assign]
    try:
        out = anyio.run(phase)
    finally:
        lr.PhaseRecorder.add = add  # type: ignore[method-assign]
    stalls = out.ops // 200  # the last one may end the phase: no batch of the other worker follows it
    assert sum(b >= 40 * MS for _, b in seen) >= stalls - 1  # each stall reached the other worker
    # and the recorder subtracts it: a batch issued 41 ms after it could start, 40 of them blocked
    with PhaseRecorder(1) as rec:
        rec.add(0, 2, 0.001, [41 * MS, 41 * MS + 1_000, 41 * MS + 2_000], np.array([0, 500_000]), 40 * MS)
        summary = rec.open_loop_summary()
    assert summary is not None and summary["delay_max_ns"] == pytest.approx(1 * MS, rel=1e-2)
    assert summary["lag_max_ns"] >= 41 * MS  # the lag still shows the whole wait
