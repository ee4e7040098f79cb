"""Per-operation latency: marks -> exact batch figures, HdrHistogram summary, codec, merge, time buckets.

The numpy fast paths in ``asyncbench.latency`` re-implement HdrHistogram's index and
percentile arithmetic, so every figure is checked against the ``hdrhistogram`` package's
own per-value implementation.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hdrh.histogram import HdrHistogram

from asyncbench.measure.latency import (
    CLOCK,
    HIGHEST_TRACKABLE_NS,
    BatchLatency,
    LatencyHistogram,
    PhaseLatency,
    format_us,
    nearest_rank,
)
from asyncbench.result import LatencyStats

US, MS = 1_000, 1_000_000


def marks_from(deltas: list[int], start: int = 5_000_000_000) -> list[int]:
    """A batch's marks: the start stamp, then one stamp after each operation."""
    out = [start]
    for d in deltas:
        out.append(out[-1] + d)
    return out


def reference(values: np.ndarray | list[int]) -> HdrHistogram:
    """The same values recorded one by one through the hdrhistogram package."""
    h = HdrHistogram(1, HIGHEST_TRACKABLE_NS, 3)
    for v in values:
        assert h.record_value(int(min(v, HIGHEST_TRACKABLE_NS)))
    return h


def counts(h: HdrHistogram) -> list[int]:
    return [h.get_count_at_index(i) for i in range(h.counts_len)]


@pytest.fixture
def known() -> PhaseLatency:
    """1000 operations of 10 µs and 10 of 1 ms, spread over three batches."""
    deltas = [10 * US] * 1000 + [1 * MS] * 10
    rng = np.random.default_rng(3)
    rng.shuffle(deltas)
    c = PhaseLatency()
    start = 5_000_000_000
    for part in (deltas[:400], deltas[400:900], deltas[900:]):
        m = marks_from(part, start)
        c.add(m)
        start = m[-1] + 50 * US  # a gap between batches (the thread hop) is no operation's time
    return c


def test_known_latencies_give_the_expected_percentiles(known: PhaseLatency) -> None:
    s = known.summary()
    assert s.count == 1010
    assert s.min == 10 * US  # lowest equivalent value: exact at the bucket's start
    assert s.p50 == pytest.approx(10 * US, rel=1e-3)
    assert s.p90 == pytest.approx(10 * US, rel=1e-3)
    assert s.p99 == pytest.approx(10 * US, rel=1e-3)  # rank 1000 of 1010 is still a 10 µs op
    assert s.p99_9 == pytest.approx(1 * MS, rel=1e-3)  # rank 1009
    assert s.max == pytest.approx(1 * MS, rel=1e-3)
    assert s.max >= 1 * MS  # highest equivalent value: never below the true max
    exact_mean = (1000 * 10 * US + 10 * MS) / 1010
    assert s.mean == pytest.approx(exact_mean, rel=1e-3)
    assert all(isinstance(getattr(s, k), int) for k in ("count", "min", "p50", "p90", "p99", "p99_9", "max"))
    assert isinstance(s.mean, float)


def test_summary_matches_the_hdrhistogram_package(known: PhaseLatency) -> None:
    ref = reference(known.latencies())
    s = known.summary()
    assert s.min == ref.get_min_value()
    assert s.max == ref.get_max_value()
    assert s.mean == pytest.approx(ref.get_mean_value(), rel=1e-12)
    for key, p in (("p50", 50), ("p90", 90), ("p99", 99), ("p99_9", 99.9)):
        assert getattr(s, key) == ref.get_value_at_percentile(p)


def test_vectorised_recording_equals_record_value_across_the_range() -> None:
    rng = np.random.default_rng(11)
    values = np.concatenate(
        [
            np.arange(0, 4200),  # exact region and the first bucket boundaries (2048, 4096)
            rng.lognormal(9, 3, 5000).astype(np.int64),
            [HIGHEST_TRACKABLE_NS - 1, HIGHEST_TRACKABLE_NS, HIGHEST_TRACKABLE_NS * 3],  # last is clamped
        ]
    )
    h = LatencyHistogram.from_values(values)
    ref = reference(values)
    assert counts(h.hdr) == counts(ref)
    assert h.count == ref.get_total_count() == values.size
    percentiles = [0, 0.1, 1, 25, 50, 75, 90, 99, 99.9, 99.99, 99.999, 100]
    assert h.values_at_percentiles(percentiles) == [ref.get_value_at_percentile(p) for p in percentiles]


def test_encoded_histogram_round_trips_through_the_hdrhistogram_decoder(known: PhaseLatency) -> None:
    text = known.encoded()
    assert isinstance(text, str) and text.isascii()
    decoded = HdrHistogram.decode(text)  # the package's own decoder, as another tool would
    assert decoded.get_total_count() == 1010
    assert counts(decoded) == counts(known.histogram().hdr)
    again = LatencyHistogram.from_encoded(text)
    assert counts(again.hdr) == counts(known.histogram().hdr)
    assert again.summary() == known.summary()
    assert again.encoded() == text


def test_a_histogram_with_another_layout_is_re_recorded() -> None:
    foreign = HdrHistogram(1, 10**9, 2)
    for v, n in ((1_500, 90), (250_000, 10)):
        foreign.record_value(v, n)
    h = LatencyHistogram.from_encoded(foreign.encode())
    assert h.count == 100
    p50, p100 = h.values_at_percentiles([50, 100])
    assert p50 == pytest.approx(1_500, rel=0.01)
    assert p100 == pytest.approx(250_000, rel=0.01)


def test_merging_workers_equals_recording_everything() -> None:
    rng = np.random.default_rng(5)
    workers = []
    everything = []
    for w in range(3):
        c = PhaseLatency()
        for _ in range(4):
            deltas = rng.integers(1 * US, 400 * US, 250).tolist()
            c.add(marks_from(deltas, 10**9 * (w + 1)))
            everything += deltas
        workers.append(c)
    merged = PhaseLatency.merge(workers)
    whole = LatencyHistogram.from_values(everything)
    assert merged.ops == len(everything) == 3000
    assert counts(merged.histogram().hdr) == counts(whole.hdr)
    assert counts(merged.histogram().hdr) == counts(reference(everything))
    by_hist = LatencyHistogram.merge(w.histogram() for w in workers)
    assert counts(by_hist.hdr) == counts(whole.hdr)
    assert by_hist.summary() == whole.summary()
    by_codec = LatencyHistogram.merge(LatencyHistogram.from_encoded(w.encoded()) for w in workers)
    assert by_codec.summary() == whole.summary()


def test_batch_figures_are_exact() -> None:
    rng = np.random.default_rng(9)
    deltas = rng.integers(100, 10 * MS, 1000).tolist()
    m = marks_from(deltas)
    ordered = sorted(deltas)
    expected = BatchLatency(1000, ordered[nearest_rank(1000, 99) - 1], max(deltas))
    assert expected.p99_ns == ordered[989]  # rank 990 of 1000
    c = PhaseLatency()
    c.add(m)
    c.add(marks_from([5, 7, 3]))
    assert c.batch_stats() == [expected, BatchLatency(3, 7, 7)]


def test_empty_batches_are_ignored_and_an_empty_phase_summarises_to_zeros() -> None:
    c = PhaseLatency()
    c.add([])
    c.add([CLOCK()])
    assert c.ops == 0 and c.batches == 0
    assert c.summary().count == 0
    assert c.over_time() == []
    assert HdrHistogram.decode(c.encoded()).get_total_count() == 0


def test_the_engine_protocol_records_one_latency_per_operation() -> None:
    """The loop shape engines use: a start stamp in the loop's thread, one mark per op."""

    def body(items: list[int], marks: list[int]) -> list[int]:
        out = []
        clock = CLOCK
        marks.append(clock())
        for x in items:
            out.append(sum(range(x)))
            marks.append(clock())
        return out

    c = PhaseLatency()
    for start in range(0, 300, 100):
        marks: list[int] = []
        body(list(range(start, start + 100)), marks)
        assert len(marks) == 101
        c.add(marks)
    lat = c.latencies()
    assert lat.size == 300 and (lat >= 0).all()
    assert c.summary().count == 300


def test_over_time_shows_a_stall_in_its_bucket() -> None:
    """10 µs operations for 1 s, one 200 ms operation (a compaction stall), then 1 s more."""
    before = [10 * US] * 100_000
    after = [10 * US] * 100_000
    c = PhaseLatency()
    m1 = marks_from(before)
    c.add(m1)
    m2 = marks_from([200 * MS, *after], m1[-1])
    c.add(m2)
    points = c.over_time(buckets=22)  # 2.2 s in 100 ms buckets
    assert sum(p.ops for p in points) == 200_001
    assert [p.t_s for p in points] == sorted(p.t_s for p in points)
    assert points[-1].t_s == pytest.approx(2.2, rel=1e-6)
    stalled = [p for p in points if p.max_ns >= 200 * MS]
    assert len(stalled) == 1
    assert 1.0 < stalled[0].t_s <= 1.3  # the stall ends 1.2 s into the phase
    assert all(p.max_ns == 10 * US for p in points if p is not stalled[0])
    assert all(p.p50_ns == 10 * US and p.p99_ns == 10 * US for p in points)
    empty = [i for i in range(22) if not any(abs(p.t_s - (i + 1) * 0.1) < 1e-9 for p in points)]
    assert empty  # the 200 ms with no completions leaves its buckets out


def test_over_time_counts_from_the_given_phase_start() -> None:
    c = PhaseLatency(start_ns=1_000_000_000)
    c.add(marks_from([1 * MS] * 10, start=1_500_000_000))  # the phase started 0.5 s earlier
    points = c.over_time(buckets=10)
    assert sum(p.ops for p in points) == 10
    assert points[0].t_s > 0.5  # nothing ended in the first half second
    with pytest.raises(ValueError):
        c.over_time(buckets=0)


def test_the_summary_is_the_result_models_latency_type(known: PhaseLatency) -> None:
    """One latency type (issue 35, item 4): the summary is the result's ``LatencyStats``,
    its histogram included, valid as the result checks it, not a dict of the same keys."""
    s = known.summary()
    assert isinstance(s, LatencyStats)
    assert s.histogram == known.encoded()
    s.check("latency")
    assert isinstance(known.histogram().summary(), LatencyStats)


def test_json_entry_and_report_rows(known: PhaseLatency) -> None:
    entry = dataclasses.asdict(known.summary())
    assert entry["count"] == 1010 and entry["histogram"] == known.encoded()
    assert list(entry) == ["count", "min", "p50", "p90", "p99", "p99_9", "max", "mean", "histogram"]
    assert [format_us(v) for v in (850, 12_345, 123_456, 1_234_567)] == ["0.85", "12.3", "123", "1_235"]


def test_a_small_batch_line_is_figured_exactly_as_a_large_one() -> None:
    """Batch lines of up to SMALL_BATCH operations are figured in plain Python (under a rate
    most batches hold one operation); the figures equal numpy's for every size."""
    import random

    import numpy as np

    from asyncbench.measure import latency as lat

    rng = random.Random(7)
    for n in [*range(1, lat.SMALL_BATCH + 3), 100]:
        for _ in range(20):
            marks = np.cumsum([rng.randrange(1, 10**6) for _ in range(n + 1)]).astype(np.int64)
            intended = marks[1:] - np.array([rng.randrange(0, 10**6) for _ in range(n)], dtype=np.int64)
            d = np.diff(marks)
            k = lat.nearest_rank(n, 99.0) - 1
            assert lat.batch_p99_max(marks) == (n, int(np.partition(d, k)[k]), int(d.max()))
            assert lat.batch_p99_max([int(x) for x in marks]) == lat.batch_p99_max(marks)
            r = marks[1:] - intended
            assert lat.response_p99_max(marks, intended) == (n, int(np.partition(r, k)[k]), int(r.max()))


def test_the_100th_percentile_is_the_summarys_max() -> None:
    """The open-loop lag and delay maxima are read as the 100th percentile (no summary, so no
    histogram encoded for them): the same figure the summary's ``max`` gives."""
    rng = np.random.default_rng(3)
    for n in (1, 5, 1_000, 100_000):
        h = LatencyHistogram.from_values(rng.lognormal(9, 3, n).astype(np.int64))
        assert h.values_at_percentiles([100.0]) == [h.summary().max]
