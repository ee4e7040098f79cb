"""Per-operation latency: recorded inside the engine's own loop, aggregated after the phase.

Recording protocol (what an engine does)
----------------------------------------
The runner hands each batch call a fresh, empty ``list`` (``marks``). The engine's
synchronous per-operation loop -- inside the worker thread for thread-offloaded engines,
so the thread hop is never part of an operation -- takes one stamp before the first
operation and one after every operation::

    def _read_sync(self, uids, marks=None):
        get = self._profiles.get
        out = []
        append = out.append
        if marks is None:                      # latency off: the loop pays nothing
            for uid in uids:
                value = get(primary_key(uid))
                if value is not None:
                    append(value)
            return out
        clock = CLOCK                          # latency on: one clock read + one append per op
        marks.append(clock())                  # the batch's start stamp, taken in this thread
        for uid in uids:
            value = get(primary_key(uid))
            if value is not None:
                append(value)
            marks.append(clock())
        return out

so ``marks`` holds ``ops + 1`` stamps and operation ``i`` took ``marks[i + 1] - marks[i]``
nanoseconds (each operation's time includes its share of the loop's own bookkeeping, as
the phase time does). The start stamp is taken by the engine, not pre-filled by the
runner: a stamp taken on the event loop before ``to_thread.run_sync`` would put the
thread hop into the first operation's latency.

The runner passes the filled list to the worker's :class:`PhaseLatency` with ``add``
(O(1): it keeps the list; one collector per worker, so no locking; merge them after the
phase with :meth:`PhaseLatency.merge`). After the phase, outside the phase time:
:meth:`PhaseLatency.histogram` builds the HdrHistogram, :meth:`PhaseLatency.summary`
gives the JSON figures, :meth:`PhaseLatency.encoded` the standard compressed base64
histogram, :meth:`PhaseLatency.over_time` the per-time-bucket p50/p99/max for the
write-phase stall chart and :meth:`PhaseLatency.batch_stats` every batch's exact p99 and
max for the JSON log's batch lines.

Why this primitive (``docs/results/latency-recording.md``, 2-vCPU AMD
EPYC KVM guest, TSC clocksource, CPython 3.11; ns added per operation to a tight loop,
best of 21 interleaved rounds): ``marks.append(perf_counter_ns())`` +57 ns (the bound
``mark = marks.append`` form +62: the method form hits CPython's specialised list
append), of which the clock read alone is +49 (``clock_gettime`` itself is ~24 ns in C;
the rest is the call and the int object); ``time.monotonic_ns`` is the same clock on
Linux, +64; float ``perf_counter()`` +59, no cheaper and inexact on long-uptime machines;
a preallocated list written by index +76; a preallocated numpy buffer +107 (numpy scalar
``__setitem__``); ``array('q').append`` +115 (its item setter parses the int with
``PyArg_Parse``). The clock read dominates and no pure Python variant avoids it, so the
plain list it is. A compiled recorder (one C call storing into an int64 buffer, no
Python int; a prototype, since removed) costs +32: the
only way to roughly halve it in a tight loop, it needs a build change (``setup.py``), and
in the real loops it measured inconsistently (from better than the list to worse), so it
is a lead, not a result.

Inside real engine loops it costs more than in a tight loop (cold caches; each kept int is
fresh memory): ``docs/results/latency-recording.md`` (three runs of 21 rounds, per-slice
CPU-time medians, load average 0.9 to 3.3 on 2 vCPUs) measured +1.9 %, +2.7 % and +6.0 %
on RocksDB point reads from a fully cached store (~2.8 µs per read with the thread hop;
the issue's budget is 3 %), +1.5 %, +2.1 % and +2.6 % on SQLite point selects, +2.9 %,
+3.9 % and +5.7 % on RocksDB puts (budget 2 %), and ~+30 % on a dict get loop (the memory
engine's ~240 ns operations: no per-operation clock read fits in 2 % of that).
Per-batch work is the next cost, so ``add`` does none: converting a batch and taking its
p99/max right after the engine's batch adds 2-6 points more (cold numpy code and data;
~30 ns per operation warm), so no batch is converted inside the phase. The kept lists cost ~40 bytes per operation
until the phase ends (a list slot + an int), which the peak-RSS figure of a
2_000_000-operation phase will include (~80 MB).

After the phase the HdrHistogram is built from the counts array directly: a vectorised
bucket index (the HdrHistogram index formula in numpy) and one ``numpy.bincount`` written
into the ``hdrhistogram`` package's counts buffer: ~25 ms for 2_000_000 values, against
~1.7 s for ``HdrHistogram.record_value`` per value and ~0.1 s for ``numpy.unique`` +
``record_value(v, count)`` (more with more distinct values). The ``hdrhistogram``
package still owns the layout, the codec (V2 compressed, base64: readable and mergeable
by the Java/C/Go/Rust HdrHistogram tools) and the decoder; this module only fills the
counts faster and reads percentiles with a cumulative sum.

Histogram range: 1 ns to 1 hour (3_600_000_000_000 ns), 3 significant digits (values are
kept to within 0.1 %: exact below 2_048 ns, 8 ns steps at 10 µs, 512 ns steps at 1 ms).
A value above one hour is recorded as one hour. Summary percentiles follow HdrHistogram:
nearest rank (``count_at = max(1, int(p * n / 100 + 0.5))``), reported as the highest
value equivalent to that bucket; min is the lowest equivalent value, the mean uses each
bucket's median value.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from typing import Final, NamedTuple, cast

import numpy as np
from hdrh.histogram import HdrHistogram

from asyncbench.result import LatencyStats

__all__ = [
    "CLOCK",
    "HIGHEST_TRACKABLE_NS",
    "LOWEST_TRACKABLE_NS",
    "SIGNIFICANT_DIGITS",
    "BatchLatency",
    "LatencyHistogram",
    "Marks",
    "PhaseLatency",
    "TimeBucket",
    "format_us",
    "nearest_rank",
    "response_p99_max",
]

#: The clock every mark is read from: integer nanoseconds, monotonic, shared by all threads.
CLOCK: Final = time.perf_counter_ns
LOWEST_TRACKABLE_NS: Final = 1
HIGHEST_TRACKABLE_NS: Final = 3_600 * 1_000_000_000  # one hour
SIGNIFICANT_DIGITS: Final = 3

Marks = list[int]
"""One batch's stamps: the start stamp, then one stamp after each operation (``ops + 1``)."""


class BatchLatency(NamedTuple):
    """Exact figures of one batch, for its JSON log line (nanoseconds)."""

    ops: int
    p99_ns: int
    max_ns: int


class TimeBucket(NamedTuple):
    """Operations that *ended* within one time bucket of the phase (latencies in ns, exact)."""

    t_s: float  # end of the bucket, seconds since the phase start
    ops: int
    p50_ns: int
    p99_ns: int
    max_ns: int


def nearest_rank(n: int, percentile: float) -> int:
    """1-based rank of ``percentile`` among ``n`` sorted values, HdrHistogram's rule."""
    return max(1, int(min(percentile, 100.0) * n / 100 + 0.5))


def _marks_array(marks: Sequence[int]) -> np.ndarray:
    if isinstance(marks, np.ndarray):
        return marks.astype(np.int64, copy=False)
    return np.fromiter(marks, dtype=np.int64, count=len(marks))


def _p99_max(stamps: np.ndarray) -> BatchLatency:
    d = stamps[1:] - stamps[:-1]
    n = d.size
    if n == 0:
        return BatchLatency(0, 0, 0)
    k = nearest_rank(n, 99.0) - 1
    return BatchLatency(n, int(np.partition(d, k)[k]), int(d.max()))


#: Batches of at most this many operations get their line's figures in plain Python: under
#: a target rate most batches hold one or a few operations, and numpy's per-call cost (a
#: few µs per array operation) was most of a line's rendering on the log's writer thread,
#: whose every µs of holding the GIL can delay the event loop.
SMALL_BATCH = 32


def _small_p99_max(values: list[int]) -> BatchLatency:
    values.sort()
    n = len(values)
    return BatchLatency(n, values[nearest_rank(n, 99.0) - 1], values[-1])


def batch_p99_max(marks: Sequence[int]) -> BatchLatency:
    """Exact p99 and max latency of one batch's marks (zeros for an empty batch): the live
    log's batch line, computed on the log's writer thread, off the timed path."""
    if len(marks) < 2:
        return BatchLatency(0, 0, 0)
    if len(marks) <= SMALL_BATCH + 1:
        m = marks.tolist() if isinstance(marks, np.ndarray) else list(marks)
        return _small_p99_max([b - a for a, b in zip(m, m[1:], strict=False)])
    return _p99_max(_marks_array(marks))


def response_p99_max(marks: Sequence[int], intended: Sequence[int]) -> BatchLatency:
    """Exact p99 and max response time of one batch under a rate: each operation's end
    stamp minus its intended start (the live log's batch line, off the timed path)."""
    if 2 <= len(marks) <= SMALL_BATCH + 1:
        m = marks.tolist() if isinstance(marks, np.ndarray) else list(marks)
        i = intended.tolist() if isinstance(intended, np.ndarray) else list(intended)
        return _small_p99_max([e - s for e, s in zip(m[1:], i, strict=True)])
    ends = _marks_array(marks)[1:]
    r = ends - np.asarray(intended, dtype=np.int64)
    if r.size == 0:
        return BatchLatency(0, 0, 0)
    k = nearest_rank(r.size, 99.0) - 1
    return BatchLatency(int(r.size), int(np.partition(r, k)[k]), int(r.max()))


def time_bucket(latencies: np.ndarray, t_s: float) -> TimeBucket:
    """One slice of a phase's latency over time: its operations' count, exact p50, p99 and
    max (nearest rank), ending ``t_s`` seconds into the phase. Shared by the in-memory
    marks (:meth:`PhaseLatency.over_time`) and the spilled ones (the phase recorder)."""
    n = int(latencies.size)
    k50, k99 = nearest_rank(n, 50.0) - 1, nearest_rank(n, 99.0) - 1
    part = np.partition(latencies, (k50, k99))
    return TimeBucket(t_s=t_s, ops=n, p50_ns=int(part[k50]), p99_ns=int(part[k99]), max_ns=int(latencies.max()))


def _new_hdr() -> HdrHistogram:
    return HdrHistogram(LOWEST_TRACKABLE_NS, HIGHEST_TRACKABLE_NS, SIGNIFICANT_DIGITS)


def _same_layout(a: HdrHistogram, b: HdrHistogram) -> bool:
    same: bool = (  # hdrh is untyped: its attributes are Any
        a.counts_len == b.counts_len
        and a.unit_magnitude == b.unit_magnitude
        and a.sub_bucket_half_count_magnitude == b.sub_bucket_half_count_magnitude
        and a.word_size == b.word_size
    )
    return same


class LatencyHistogram:
    """An HdrHistogram (1 ns .. 1 h, 3 significant digits) with numpy bulk paths.

    Wraps ``hdrh.histogram.HdrHistogram`` (available as :attr:`hdr` for other tools): its
    counts buffer is filled and read through a numpy view, so recording millions of
    values and reading percentiles take milliseconds instead of Python loops.
    """

    __slots__ = ("hdr", "_counts")

    def __init__(self, hdr: HdrHistogram | None = None) -> None:
        self.hdr: HdrHistogram = hdr if hdr is not None else _new_hdr()
        # A view of the package's own (ctypes uint64) counts buffer: writes go straight into
        # what ``encode`` compresses.
        self._counts: np.ndarray = np.ctypeslib.as_array(self.hdr.counts)

    # --- construction ------------------------------------------------------------------
    @classmethod
    def from_values(cls, values: np.ndarray | Sequence[int]) -> LatencyHistogram:
        """A histogram of ``values`` (ns; clamped to 0 .. one hour)."""
        h = cls()
        h.record(values)
        return h

    @classmethod
    def from_encoded(cls, encoded: str | bytes) -> LatencyHistogram:
        """Decode HdrHistogram's compressed base64 form (from this module or any HdrHistogram
        tool); a histogram with another layout is re-recorded into the standard one."""
        data = encoded.encode("ascii") if isinstance(encoded, str) else encoded
        decoded = HdrHistogram.decode(data)
        if _same_layout(decoded, _new_hdr()):
            return cls(decoded)
        h = cls()
        other = cls(decoded)
        nz = np.flatnonzero(other._counts)
        h._record_weighted(other._values_from_index(nz), other._counts[nz].astype(np.int64))
        return h

    @classmethod
    def merge(cls, histograms: Iterable[LatencyHistogram]) -> LatencyHistogram:
        """A new histogram holding the counts of all ``histograms``."""
        out = cls()
        for h in histograms:
            out.add(h)
        return out

    def add(self, other: LatencyHistogram) -> None:
        """Add ``other``'s counts to this histogram (both are in the standard layout)."""
        if other.hdr.total_count == 0:
            return
        self._counts += other._counts
        self._after_record(other.hdr.total_count, other.hdr.min_value, other.hdr.max_value)

    # --- recording ---------------------------------------------------------------------
    def _index_of(self, values: np.ndarray) -> np.ndarray:
        """HdrHistogram's counts index of each value, vectorised (int64 in, int64 out)."""
        hdr = self.hdr
        unit = hdr.unit_magnitude
        half_mag = hdr.sub_bucket_half_count_magnitude
        # 64 - clz(v | mask) is the bit length; values are < 2**53, so frexp on float64 is exact.
        pow2ceiling = np.frexp((values | hdr.sub_bucket_mask).astype(np.float64))[1].astype(np.int64)
        bucket = pow2ceiling - unit - (half_mag + 1)
        sub_bucket = values >> (bucket + unit)
        # hdrh is untyped: its fields are Any, and so is this arithmetic on them
        return cast(np.ndarray, ((bucket + 1) << half_mag) + sub_bucket - hdr.sub_bucket_half_count)

    def _after_record(self, n: int, vmin: int, vmax: int) -> None:
        hdr = self.hdr
        hdr.total_count += int(n)
        hdr.min_value = min(hdr.min_value, int(vmin))
        hdr.max_value = max(hdr.max_value, int(vmax))

    def record(self, values: np.ndarray | Sequence[int]) -> None:
        """Record every value in ``values`` (ns) with one vectorised pass."""
        v = np.asarray(values, dtype=np.int64)
        if v.size == 0:
            return
        v = np.clip(v, 0, HIGHEST_TRACKABLE_NS)
        counts = np.bincount(self._index_of(v), minlength=self._counts.size)
        self._counts += counts.astype(np.uint64)
        self._after_record(v.size, v.min(), v.max())

    def _record_weighted(self, values: np.ndarray, weights: np.ndarray) -> None:
        if values.size == 0:
            return
        v = np.clip(values.astype(np.int64), 0, HIGHEST_TRACKABLE_NS)
        np.add.at(self._counts, self._index_of(v), weights.astype(np.uint64))
        self._after_record(int(weights.sum()), v.min(), v.max())

    # --- reading -----------------------------------------------------------------------
    @property
    def count(self) -> int:
        return int(self.hdr.total_count)

    def _values_from_index(self, index: np.ndarray) -> np.ndarray:
        """Lowest value of each counts index (``HdrHistogram.get_value_from_index``)."""
        hdr = self.hdr
        half_mag, half = hdr.sub_bucket_half_count_magnitude, hdr.sub_bucket_half_count
        index = np.asarray(index, dtype=np.int64)
        bucket = (index >> half_mag) - 1
        sub_bucket = (index & (half - 1)) + half
        low = bucket < 0
        sub_bucket = np.where(low, sub_bucket - half, sub_bucket)
        bucket = np.where(low, 0, bucket)
        return cast(np.ndarray, sub_bucket << (bucket + hdr.unit_magnitude))  # hdrh's fields are Any

    def _range_of_index(self, index: np.ndarray) -> np.ndarray:
        """Width of each index's bucket of equivalent values."""
        bucket = np.maximum(
            (np.asarray(index, dtype=np.int64) >> self.hdr.sub_bucket_half_count_magnitude) - 1, 0
        )
        return cast(np.ndarray, np.left_shift(1, bucket + self.hdr.unit_magnitude))  # hdrh's fields are Any

    def values_at_percentiles(self, percentiles: Sequence[float]) -> list[int]:
        """Value at each percentile (0..100), exactly as ``HdrHistogram.get_value_at_percentile``."""
        total = self.count
        if total == 0:
            return [0 for _ in percentiles]
        cumulative = np.cumsum(self._counts, dtype=np.uint64)
        targets = np.array(
            [max(int(min(p, 100.0) * total / 100 + 0.5), 1) for p in percentiles], dtype=np.uint64
        )
        index = np.searchsorted(cumulative, targets, side="left")
        lowest = self._values_from_index(index)
        highest = lowest + self._range_of_index(index) - 1
        return [int(hi if p else lo) for p, lo, hi in zip(percentiles, lowest, highest, strict=True)]

    def summary(self) -> LatencyStats:
        """count, min, p50, p90, p99, p99.9, max (ns) and mean, all from the histogram, and
        the histogram itself (encoded): the result's one latency type, as its JSON holds it."""
        if self.count == 0:
            return LatencyStats(count=0, min=0, p50=0, p90=0, p99=0, p99_9=0, max=0, mean=0.0, histogram=self.encoded())
        nz = np.flatnonzero(self._counts)
        lowest = self._values_from_index(nz)
        widths = self._range_of_index(nz)
        counts = self._counts[nz].astype(np.float64)
        mean = float(np.dot(counts, (lowest + (widths >> 1)).astype(np.float64)) / self.count)
        p50, p90, p99, p999 = self.values_at_percentiles([50.0, 90.0, 99.0, 99.9])
        return LatencyStats(
            count=self.count,
            min=int(lowest[0]),
            p50=p50,
            p90=p90,
            p99=p99,
            p99_9=p999,
            max=int(lowest[-1] + widths[-1] - 1),
            mean=mean,
            histogram=self.encoded(),
        )

    def encoded(self) -> str:
        """HdrHistogram's standard V2 compressed form, base64 (ASCII)."""
        encoded: bytes = self.hdr.encode()  # hdrh is untyped
        return encoded.decode("ascii")


def format_us(ns: float) -> str:
    """Nanoseconds as microseconds for the report: ``1_234``, ``12.3``, ``0.85``."""
    us = ns / 1e3
    if us >= 100:
        return f"{round(us):_d}"
    if us >= 10:
        return f"{us:.1f}"
    return f"{us:.2f}"


class PhaseLatency:
    """One worker's marks for one phase; merge workers' collectors after the phase.

    ``add`` is called once per batch on the thread that awaits the batch (the event loop),
    so a collector per worker needs no lock. Nothing here runs per operation, and ``add``
    is O(1): everything else happens after the phase.
    """

    __slots__ = ("_batches", "_start_ns", "_hist")

    def __init__(self, start_ns: int | None = None) -> None:
        """``start_ns``: the phase start on :data:`CLOCK` (default: the earliest batch start)."""
        self._batches: list[Marks | np.ndarray] = []
        self._start_ns = start_ns
        self._hist: LatencyHistogram | None = None

    def add(self, marks: Marks | np.ndarray) -> None:
        """Keep one batch's marks (O(1): the list itself; converted after the phase). An int64
        array of marks (e.g. a zero-copy view of a C recorder's buffer) is kept as it is."""
        if len(marks) >= 2:
            self._batches.append(marks)
            self._hist = None

    def _arrays(self) -> list[np.ndarray]:
        batches = self._batches
        for i, b in enumerate(batches):
            if not isinstance(b, np.ndarray):
                batches[i] = _marks_array(b)
        return batches  # type: ignore[return-value]

    @classmethod
    def merge(cls, collectors: Iterable[PhaseLatency]) -> PhaseLatency:
        """One collector with every batch of ``collectors`` (e.g. the P workers of a phase)."""
        out = cls()
        starts = []
        for c in collectors:
            out._batches.extend(c._batches)
            if c._start_ns is not None:
                starts.append(c._start_ns)
        out._start_ns = min(starts) if starts else None
        return out

    @property
    def batches(self) -> int:
        return len(self._batches)

    @property
    def ops(self) -> int:
        return sum(len(b) - 1 for b in self._batches)

    @property
    def start_ns(self) -> int | None:
        """The phase start: as given, else the earliest batch's start stamp."""
        if self._start_ns is not None:
            return self._start_ns
        return min((int(b[0]) for b in self._batches), default=None)

    def batch_stats(self) -> list[BatchLatency]:
        """Exact ops, p99 and max of every batch, in the order added (for the log's batch lines)."""
        return [_p99_max(b) for b in self._arrays()]

    def latencies(self) -> np.ndarray:
        """Every operation's latency (ns), batch by batch."""
        arrays = self._arrays()
        if not arrays:
            return np.empty(0, dtype=np.int64)
        return np.concatenate([b[1:] - b[:-1] for b in arrays])

    def histogram(self) -> LatencyHistogram:
        """The phase's HdrHistogram (built once, after the phase)."""
        if self._hist is None:
            self._hist = LatencyHistogram.from_values(self.latencies())
        return self._hist

    def summary(self) -> LatencyStats:
        """The phase's latency as the result holds it (:meth:`LatencyHistogram.summary`)."""
        return self.histogram().summary()

    def encoded(self) -> str:
        return self.histogram().encoded()

    def over_time(self, buckets: int = 100) -> list[TimeBucket]:
        """Exact p50/p99/max of the operations ending in each of ``buckets`` equal slices of
        the phase (empty slices left out), so a compaction or merge stall shows as a spike."""
        if buckets < 1:
            raise ValueError("buckets must be >= 1")
        arrays = self._arrays()
        if not arrays:
            return []
        start = self.start_ns
        assert start is not None
        ends = np.maximum(np.concatenate([b[1:] for b in arrays]) - start, 0)
        lat = np.concatenate([b[1:] - b[:-1] for b in arrays])
        span = max(int(ends.max()), 1)
        slot = np.minimum(ends * buckets // span, buckets - 1)
        order = np.argsort(slot, kind="stable")
        slot, lat = slot[order], lat[order]
        bounds = np.searchsorted(slot, np.arange(buckets + 1), side="left")
        out = []
        for i in range(buckets):
            lo, hi = int(bounds[i]), int(bounds[i + 1])
            if hi == lo:
                continue
            out.append(time_bucket(lat[lo:hi], span * (i + 1) / buckets / 1e9))
        return out
