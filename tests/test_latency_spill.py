"""The runner's latency recorder keeps a phase's marks on disk, not in memory (issue 24:
the harness's memory must not grow with a phase), and still gives exactly what
:class:`~asyncbench.latency.PhaseLatency` gives from the same marks kept in memory."""

from __future__ import annotations

import tracemalloc
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from asyncbench.measure import latency_recorder
from asyncbench.measure.latency import LatencyHistogram, PhaseLatency
from asyncbench.measure.latency_recorder import PhaseRecorder
from asyncbench.slo import PERCENTILES


def in_memory(batches: list[tuple[int, list[int]]], workers: int) -> tuple[object, list, list]:
    """What the recorder gave when it kept every batch in memory (the reference)."""
    per_worker = [PhaseLatency() for _ in range(workers)]
    for w, marks in batches:
        per_worker[w].add(np.array(marks, dtype=np.int64))
    merged = PhaseLatency.merge(per_worker)
    summary = merged.summary() if merged.ops else None
    stats = [iter(p.batch_stats()) for p in per_worker]
    worst = []
    for w, _ in batches:
        s = next(stats[w], None)
        worst.append((round(s.p99_ns / 1000, 3), round(s.max_ns / 1000, 3)) if s and s.ops else (None, None))
    return summary, [list(b) for b in merged.over_time(37)], worst


@st.composite
def phases(draw: st.DrawFn) -> tuple[int, list[tuple[int, list[int]]]]:
    workers = draw(st.integers(1, 4))
    clocks = [draw(st.integers(0, 10**6)) for _ in range(workers)]
    ordered = draw(st.booleans()) or draw(st.booleans())  # an engine's stamps may go backwards
    batches = []
    for _ in range(draw(st.integers(0, 30))):
        w = draw(st.integers(0, workers - 1))
        steps = draw(st.lists(st.integers(0 if ordered else -50, 10**7), min_size=1, max_size=60))
        marks = [clocks[w]]
        for s in steps:
            marks.append(marks[-1] + s)
        clocks[w] = marks[-1] + draw(st.integers(0, 1000))
        batches.append((w, marks))
    return workers, batches


@settings(max_examples=120, deadline=None)
@given(phase=phases(), spill=st.sampled_from([1, 7, 64, 10**6]), chunk=st.sampled_from([1, 5, 50, 10**6]))
def test_spilled_marks_give_what_marks_in_memory_give(
    phase: tuple[int, list[tuple[int, list[int]]]],
    spill: int,
    chunk: int,
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    workers, batches = phase
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(latency_recorder, "SPILL_STAMPS", spill)
        mp.setattr(latency_recorder, "CHUNK_STAMPS", chunk)
        spill_dir = tmp_path_factory.mktemp("spill")
        with PhaseRecorder(workers, spill_dir) as rec:
            for w, marks in batches:
                rec.add(w, len(marks) - 1, 0.5, list(marks))
            summary, over_time, rows = rec.summary(), rec.over_time(37), rec.batch_rows()
            assert [row for chunk in rec.batch_row_chunks(3) for row in chunk] == rows
            assert all(len(chunk) <= 3 for chunk in rec.batch_row_chunks(3))
        assert list(spill_dir.iterdir()) == []  # unnamed files: nothing to see, nothing left
    want_summary, want_over_time, want_worst = in_memory(batches, workers)
    assert summary == want_summary
    assert over_time == want_over_time
    assert [(r["p99_us"], r["max_us"]) for r in rows] == want_worst
    assert [r["done"] for r in rows] == list(np.cumsum([len(m) - 1 for _, m in batches]))


def test_a_long_phase_keeps_its_marks_on_disk(tmp_path: Path) -> None:
    """3_000_000 operations in 1_000-operation batches: in memory the marks took ~24 MB
    (and ~180 MB while the figures were computed); spilled, a few MB at any length."""
    rng = np.random.default_rng(1)
    stamps = np.cumsum(rng.integers(200, 5_000, size=3_001_000))
    tracemalloc.start()
    try:
        rec = PhaseRecorder(2, tmp_path)
        for i in range(3_000):
            marks = stamps[i * 1_000 : (i + 1) * 1_000 + 1].tolist()
            rec.add(i % 2, 1_000, 0.001, marks)
        summary, over_time, rows = rec.summary(), rec.over_time(), rec.batch_rows()
        _, peak = tracemalloc.get_traced_memory()
        rec.close()
    finally:
        tracemalloc.stop()
    assert summary is not None and summary.count == 3_000_000
    assert sum(b[1] for b in over_time) == 3_000_000 and len(rows) == 3_000
    assert peak < 24 * 1024 * 1024, peak


def test_a_second_of_millions_of_operations_is_summed_up_in_bounded_memory(tmp_path: Path) -> None:
    """The per-second series and the over-time slices kept every latency of a slice to
    give its p50/p99 exactly: a no-op engine's 3_000_000 operations in one second took
    ~70 MB at once (10M: 267 MiB, issue 24's harness share). Past EXACT_SLICE_OPS a
    slice's figures come from an HdrHistogram (as the phase's percentiles do), its count
    and max stay exact, and the memory stays a few MB at any rate."""
    rng = np.random.default_rng(3)
    stamps = np.cumsum(rng.integers(50, 300, size=3_001_000))  # ~0.5 s: one second, one slice
    latencies = np.diff(stamps)
    tracemalloc.start()
    try:
        with PhaseRecorder(2, tmp_path) as rec:
            for i in range(3_000):
                rec.add(i % 2, 1_000, 0.001, stamps[i * 1_000 : (i + 1) * 1_000 + 1].tolist())
            tracemalloc.reset_peak()
            base, _ = tracemalloc.get_traced_memory()
            (second,), response = rec.per_second()
            (whole,) = rec.time_buckets(1)
            _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert response == []
    want = LatencyHistogram.from_values(latencies).values_at_percentiles([50.0, 99.0])
    for bucket in (second, whole):
        assert bucket.ops == 3_000_000 and bucket.max_ns == int(latencies.max())
        assert [bucket.p50_ns, bucket.p99_ns] == want
    assert peak - base < 16 * 1024 * 1024, peak - base


def test_a_slice_within_the_bound_stays_exact(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Up to EXACT_SLICE_OPS operations a slice's p50/p99 are exact (nearest rank), as
    before; one operation more and they come from the histogram."""
    rng = np.random.default_rng(4)
    stamps = np.cumsum(rng.integers(50, 100_000, size=2_001))
    latencies = np.sort(np.diff(stamps))
    for bound, exact in ((2_000, True), (1_999, False)):
        monkeypatch.setattr(latency_recorder, "EXACT_SLICE_OPS", bound)
        with PhaseRecorder(1, tmp_path) as rec:
            rec.add(0, 2_000, 0.001, stamps.tolist())
            (bucket,) = rec.time_buckets(1)
        hist = LatencyHistogram.from_values(latencies).values_at_percentiles([50.0, 99.0])
        want = [int(latencies[999]), int(latencies[1_979])] if exact else hist
        assert [bucket.p50_ns, bucket.p99_ns] == want and bucket.max_ns == int(latencies[-1])


def open_loop_reference(batches: list[tuple[int, list[int], list[int], int]], workers: int) -> dict[str, object]:
    """What the open-loop figures are, computed batch by batch in memory (the reference):
    response (end - intended), lag (issue - intended) and the harness's delay of every
    operation (its batch's start less the later of its intended start and the worker's
    previous end, less that batch's ``blocked``), and each batch's response p99/max (µs)."""
    response, lag, delay = LatencyHistogram(), LatencyHistogram(), LatencyHistogram()
    prev: list[int | None] = [None] * workers
    rows = []
    for w, marks, intended, blocked in batches:
        b, i = np.array(marks, dtype=np.int64), np.array(intended, dtype=np.int64)
        r = b[1:] - i
        response.record(r)
        lag.record(b[:-1] - i)
        free = np.maximum(i, i[0] if prev[w] is None else prev[w])
        delay.record(np.maximum(int(b[0]) - free - blocked, 0))
        prev[w] = int(b[-1])
        p99 = int(np.sort(r)[max(1, int(0.99 * r.size + 0.5)) - 1])
        rows.append((round(p99 / 1000, 3), round(int(r.max()) / 1000, 3)))
    lag_p99, lag_max = lag.values_at_percentiles([99.0, 100.0])
    delay_p99, delay_max = delay.values_at_percentiles([99.0, 100.0])
    return {
        "summary": {
            "response": response.summary(),
            "lag_p99_ns": lag_p99,
            "lag_max_ns": lag_max,
            "delay_p99_ns": delay_p99,
            "delay_max_ns": delay_max,
            "delay_ns": dict(zip(PERCENTILES, delay.values_at_percentiles([100 * q for q in PERCENTILES.values()]), strict=True)),
        },
        "rows": rows,
    }


def recorded_open_loop(
    batches: list[tuple[int, list[int], list[int], int]], workers: int, spill_dir: Path
) -> dict[str, object]:
    """What the recorder gives from the same batches, added as the run adds them."""
    with PhaseRecorder(workers, spill_dir) as rec:
        for w, marks, intended, blocked in batches:
            rec.add(w, len(intended), 0.001, marks, np.array(intended, dtype=np.int64), blocked)
        rows = [(r["response_p99_us"], r["response_max_us"]) for r in rec.batch_rows()]
        return {"summary": rec.open_loop_summary(), "rows": rows}


def test_a_rate_paced_phase_read_back_in_several_chunks_keeps_each_batchs_blocked_time(
    tmp_path: Path,
) -> None:
    """Issue 51: ``IndexError: array index out of range`` after every operation of a
    rate-paced mixed phase ran. A worker behind its schedule issues catch-up batches of up
    to the batch size (1_000): 200_000 operations are 200 batches, read back in two chunks
    of CHUNK_STAMPS. The delay pass indexed each batch's blocked time with a counter that
    the per-batch p99 loop reused as its rank (989 for a 1_000-operation batch), so the
    second chunk's batches read blocked[989...] of 200: the crash; with fewer stamps than a
    chunk nothing showed, and with small batches the counter fell back instead and gave
    operations another batch's blocked time (a wrong delay, silently)."""
    ops, size = 200_000, 1_000
    period = 100_000  # 10_000/s: one operation due every 100 µs
    batches = []
    end = 0
    for k in range(ops // size):
        intended = [(k * size + j) * period for j in range(size)]
        start = max(end, intended[0]) + 50_000 + k * 1_000  # the harness issued it a little late
        marks = [start + j * 30_000 for j in range(size + 1)]  # 30 µs per operation: falling behind
        end = marks[-1]
        batches.append((0, marks, intended, (k % 7) * 20_000))  # the engine's other calls held the loop
    assert sum(len(m) for _, m, _, _ in batches) > latency_recorder.CHUNK_STAMPS  # two chunks at least
    assert recorded_open_loop(batches, 1, tmp_path) == open_loop_reference(batches, 1)


@st.composite
def open_loop_phases(draw: st.DrawFn) -> tuple[int, list[tuple[int, list[int], list[int], int]]]:
    """Rate-paced batches: per worker, intended times that grow, batches of what came due
    (1..60 operations, started at or after their first intended time), a blocked time each."""
    workers = draw(st.integers(1, 3))
    due = [draw(st.integers(0, 10**6)) for _ in range(workers)]
    free = list(due)
    batches = []
    for _ in range(draw(st.integers(1, 30))):
        w = draw(st.integers(0, workers - 1))
        n = draw(st.integers(1, 60))
        intended = [due[w] + j * draw(st.sampled_from([1, 1_000, 100_000])) for j in range(n)]
        due[w] = intended[-1] + 1_000
        marks = [max(free[w], intended[0]) + draw(st.integers(0, 10**6))]
        for _ in range(n):
            marks.append(marks[-1] + draw(st.integers(1, 10**6)))
        free[w] = marks[-1]
        batches.append((w, marks, intended, draw(st.integers(0, 10**6))))
    return workers, batches


@settings(max_examples=120, deadline=None)
@given(phase=open_loop_phases(), spill=st.sampled_from([1, 7, 10**6]), chunk=st.sampled_from([1, 5, 50, 10**6]))
def test_open_loop_figures_do_not_depend_on_how_the_marks_are_read_back(
    phase: tuple[int, list[tuple[int, list[int], list[int], int]]],
    spill: int,
    chunk: int,
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """Response, lag and delay figures and the per-batch response rows are the same
    whether a worker's marks come back in one chunk or in many (issue 51)."""
    workers, batches = phase
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(latency_recorder, "SPILL_STAMPS", spill)
        mp.setattr(latency_recorder, "CHUNK_STAMPS", chunk)
        got = recorded_open_loop(batches, workers, tmp_path_factory.mktemp("spill"))
    assert got == open_loop_reference(batches, workers)
