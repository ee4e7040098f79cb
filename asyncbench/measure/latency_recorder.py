"""The runner's side of per-operation latency: one phase's batches, by worker, in bounded memory.

Per batch (inside the phase, O(1) apart from one C-level copy): the engine's marks list
is copied into an int64 array (``np.fromiter``, ~15 ns per operation measured) and the
batch's ops, seconds and first stamp are kept for its log line and the phase's
time axis. The arrays are buffered up to :data:`SPILL_STAMPS` per worker and then
appended, in one write, to the worker's unnamed temporary file (deleted when closed,
never visible in a directory): the marks of a phase cost 8 bytes per operation of disk,
not of memory, so the harness's memory does not grow with the phase (kept in memory they
took ~62 bytes per operation at the peak: 622 MiB in a 10_000_000-operation phase, all
counted in the engine's peak memory; ``benchmarks/harness_memory.py``).

After the phase, outside its time, the files are read back in chunks of
:data:`CHUNK_STAMPS` and give exactly what :class:`~asyncbench.latency.PhaseLatency` gives
from the same marks kept in memory (tests/test_latency_spill.py): the HdrHistogram and
summary, the over-time slices (exact p50/p99/max of the operations ending in each slice,
swept slice by slice: each worker's end stamps only grow) and each batch's p99/max, the
log's batch rows handed to the observers :meth:`PhaseRecorder.batch_row_chunks` at a time. What stays in
memory is ~70 bytes of bookkeeping per batch (about 0.07 bytes per operation at the
default batch size of 1_000; a run with ``batch_size = 1`` still grows with its phases).
"""

from __future__ import annotations

import tempfile
from array import array
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any

import numpy as np

from asyncbench.measure.latency import (
    LatencyHistogram,
    PhaseLatency,
    TimeBucket,
    _marks_array,
    _p99_max,
    nearest_rank,
    time_bucket,
)
from asyncbench.result import LatencyStats
from asyncbench.slo import PERCENTILES

__all__ = ["CHUNK_STAMPS", "SPILL_STAMPS", "PhaseRecorder", "slice_ns"]

#: Stamps the workers of a phase buffer in memory, together, before appending to their files (4 MiB).
SPILL_STAMPS = 1 << 19
#: Stamps read back at a time after the phase (1 MiB, ~8 MiB of numpy temporaries).
CHUNK_STAMPS = 1 << 17
#: The longest phase given a per-second series (a day: slot arithmetic stays in int64).
MAX_SERIES_SECONDS = 86_400
#: Operations of one time slice (a second, or one of a phase's over-time slices) whose
#: latencies are kept to give its p50 and p99 exactly (8 MiB). A slice of more (an engine
#: doing over a million operations a second: the no-op engine of the harness's memory
#: benchmark did 10M in one) folds them into an HdrHistogram, so the harness's memory
#: stays bounded at any rate: its p50/p99 then come at the histogram's 3 significant
#: digits, as the phase's own percentiles do; its count and max stay exact.
EXACT_SLICE_OPS = 1 << 20


def slice_ns(span_ns: int) -> int:
    """The over-time slice width (ns) of a phase lasting ``span_ns``: 1 s from 10 s on,
    100 ms from 1 s on, 10 ms below, so a phase of a tenth of a second or more gets ten
    points at least and a long one no more than a point a second."""
    if span_ns >= 10_000_000_000:
        return 1_000_000_000
    if span_ns >= 1_000_000_000:
        return 100_000_000
    return 10_000_000


class _WorkerMarks:
    """One worker's batches: int64 stamps in a temporary file, lengths and bounds in arrays."""

    __slots__ = ("_dir", "_limit", "_file", "_buffer", "_buffered", "lengths", "firsts")

    def __init__(self, spill_dir: Path | None, workers: int = 1) -> None:
        self._dir = spill_dir
        self._limit = max(1, SPILL_STAMPS // workers)  # SPILL_STAMPS over all workers together
        self._file: IO[bytes] | None = None
        self._buffer: list[np.ndarray] = []
        self._buffered = 0
        self.lengths = array("q")  # stamps per kept batch (ops + 1)
        self.firsts = array("q")

    def add(self, stamps: np.ndarray) -> None:
        self._buffer.append(stamps)
        self._buffered += stamps.size
        self.lengths.append(stamps.size)
        self.firsts.append(int(stamps[0]))
        if self._buffered >= self._limit:
            self._spill()

    def _spill(self) -> None:
        if not self._buffer:
            return
        if self._file is None:
            # lives until close(), across the phase's batches
            self._file = tempfile.TemporaryFile(dir=self._dir, prefix=".asyncbench-marks-")  # noqa: SIM115
        self._file.write(np.concatenate(self._buffer).tobytes())
        self._buffer, self._buffered = [], 0

    def batches(self) -> Iterator[list[np.ndarray]]:
        """The kept batches' stamps, in order, a chunk of batches at a time (each call
        starts from the first batch)."""
        in_memory: list[np.ndarray] | None = self._buffer
        if self._file is not None:
            self._spill()
            self._file.flush()
            self._file.seek(0)
            in_memory = None
        done = 0
        group: list[int] = []
        size = 0
        for n in self.lengths:
            group.append(n)
            size += n
            if size >= CHUNK_STAMPS:
                yield self._read(group, size, in_memory, done)
                done += len(group)
                group, size = [], 0
        if group:
            yield self._read(group, size, in_memory, done)

    def _read(
        self, lengths: list[int], size: int, in_memory: list[np.ndarray] | None, done: int
    ) -> list[np.ndarray]:
        if in_memory is not None:  # never spilled: the arrays are still in memory, in order
            return in_memory[done : done + len(lengths)]
        assert self._file is not None
        flat = np.frombuffer(self._file.read(size * 8), dtype=np.int64)
        if flat.size != size:
            raise RuntimeError(f"latency marks file: read {flat.size} stamps, expected {size}")
        bounds = np.cumsum([0, *lengths])
        return [flat[bounds[i] : bounds[i + 1]] for i in range(len(lengths))]

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None
        self._buffer = []


class PhaseRecorder:
    """Collects the marks of the P workers of one operation phase.

    ``spill_dir``: where the workers' unnamed temporary files go (the system's temporary
    directory by default, as the runner uses it: never the stores' disk, whose free space
    is the engines' to measure and exhaust).
    Call :meth:`close` when done (the files are deleted; the figures stay available
    until then).
    """

    __slots__ = (
        "_workers",
        "_intended",
        "_blocked",
        "_prev_end",
        "_batch_worker",
        "_batch_ops",
        "_batch_seconds",
        "_cache",
    )

    def __init__(self, workers: int, spill_dir: Path | str | None = None) -> None:
        where = Path(spill_dir) if spill_dir is not None else None
        self._workers = [_WorkerMarks(where, workers) for _ in range(workers)]
        # Under a rate, per worker and batch alongside its marks (same lengths, so the same
        # chunks): when the worker was free to start (its previous batch's end; for its first
        # batch, the first intended time), then each operation's intended time.
        self._intended = [_WorkerMarks(where, workers) for _ in range(workers)]
        # and per such batch, how long the engine's calls of other workers held the event
        # loop meanwhile (ns, asyncbench.run.phase.loop_ledger): not the harness's delay
        self._blocked = [array("q") for _ in range(workers)]
        self._prev_end: list[int | None] = [None] * workers
        self._batch_worker = array("i")  # per batch, in completion order
        self._batch_ops = array("q")
        self._batch_seconds = array("d")
        self._cache: dict[str, Any] = {}

    def add(
        self,
        worker: int,
        ops: int,
        seconds: float,
        marks: list[int],
        intended: np.ndarray | None = None,
        blocked: int = 0,
    ) -> np.ndarray:
        """Keep one batch; returns its marks as the int64 array kept (for the live log line).

        ``intended``: under a rate, the batch's intended start times (one per operation, on
        the marks' clock): every batch of a phase has them or none does. ``blocked``: the
        ns the engine (other workers' calls) held the event loop between the worker's
        previous batch and this one's start."""
        if len(marks) != ops + 1 and ops:
            raise RuntimeError(
                f"engine returned {len(marks)} latency marks for a batch of {ops} operations; "
                "it must append one start stamp and one stamp per operation"
            )
        stamps = _marks_array(marks)
        if len(marks) >= 2:  # as PhaseLatency.add: a batch without an operation keeps nothing
            self._workers[worker].add(stamps)
            if intended is not None:
                if len(intended) != ops:
                    raise RuntimeError(f"{len(intended)} intended start times for a batch of {ops} operations")
                row = np.empty(ops + 1, dtype=np.int64)
                row[1:] = intended
                prev = self._prev_end[worker]
                row[0] = row[1] if prev is None else prev
                self._intended[worker].add(row)
                self._blocked[worker].append(max(int(blocked), 0))
                self._prev_end[worker] = int(stamps[-1])
        self._batch_worker.append(worker)
        self._batch_ops.append(ops)
        self._batch_seconds.append(seconds)
        self._cache.clear()
        return stamps

    def close(self) -> None:
        for w in (*self._workers, *self._intended):
            w.close()

    def __enter__(self) -> PhaseRecorder:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- after the phase ---------------------------------------------------------------

    @property
    def ops(self) -> int:
        return sum(sum(w.lengths) - len(w.lengths) for w in self._workers)

    def _scan(self) -> tuple[LatencyHistogram, list[tuple[array[int], array[int], array[int]]]]:
        """One pass over every worker's marks: the histogram, and each batch's ops, p99
        and max (ns) in three arrays per worker (24 bytes a batch)."""
        if "scan" not in self._cache:
            hist = LatencyHistogram()
            stats = []
            last_end: int | None = None  # the latest operation end (stamps may go backwards)
            for w in self._workers:
                ops, p99, worst = array("q"), array("q"), array("q")
                for chunk in w.batches():
                    hist.record(np.concatenate([b[1:] - b[:-1] for b in chunk]))
                    top = max(int(b[1:].max()) for b in chunk)
                    last_end = top if last_end is None else max(last_end, top)
                    for b in chunk:
                        st = _p99_max(b)
                        ops.append(st.ops)
                        p99.append(st.p99_ns)
                        worst.append(st.max_ns)
                stats.append((ops, p99, worst))
            self._cache["scan"] = (hist, stats)
            self._cache["last_end"] = last_end
        scan: tuple[LatencyHistogram, list[tuple[array[int], array[int], array[int]]]] = self._cache["scan"]
        return scan

    @property
    def open_loop(self) -> bool:
        """True when the phase ran under a rate (its batches came with intended times)."""
        return any(len(w.lengths) for w in self._intended)

    def _scan_intended(
        self,
    ) -> tuple[LatencyHistogram, LatencyHistogram, LatencyHistogram, list[tuple[array[int], array[int]]]]:
        """Under a rate, one pass over marks and intended times together: the histograms of
        response time (end minus intended start), of lag (issue minus intended start) and of
        the harness's own delay, and each batch's response p99 and max.

        The delay is every operation's own: from when it could have started (its intended
        time, or the worker's previous end if that was later: until then the engine had
        the worker) to its batch's start (the harness issued it then; after that it waited
        for the batch's earlier operations, the engine's time), less the time the engine's
        other calls held the event loop meanwhile. A catch-up batch's later operations
        waited as long as the first, less their later intended times: they are not 0."""
        if "intended" not in self._cache:
            response, lag, delay = LatencyHistogram(), LatencyHistogram(), LatencyHistogram()
            per_batch = []
            for marks, times, blocked in zip(self._workers, self._intended, self._blocked, strict=True):
                p99, worst = array("q"), array("q")
                k = 0  # the worker's batch index (its blocked time)
                for chunk, ichunk in zip(marks.batches(), times.batches(), strict=True):
                    resp = [b[1:] - i[1:] for b, i in zip(chunk, ichunk, strict=True)]
                    response.record(np.concatenate(resp))
                    lag.record(np.concatenate([b[:-1] - i[1:] for b, i in zip(chunk, ichunk, strict=True)]))
                    own = []
                    for b, i in zip(chunk, ichunk, strict=True):
                        free = np.maximum(i[1:], i[0])  # when each operation could have started
                        own.append(np.maximum(int(b[0]) - free - blocked[k], 0))
                        k += 1
                    delay.record(np.concatenate(own))
                    for r in resp:  # its own name: ``k`` counts the worker's batches across chunks
                        rank = nearest_rank(r.size, 99.0) - 1
                        p99.append(int(np.partition(r, rank)[rank]))
                        worst.append(int(r.max()))
                per_batch.append((p99, worst))
            self._cache["intended"] = (response, lag, delay, per_batch)
        intended: tuple[
            LatencyHistogram, LatencyHistogram, LatencyHistogram, list[tuple[array[int], array[int]]]
        ] = self._cache["intended"]
        return intended

    def open_loop_summary(self) -> dict[str, Any] | None:
        """Under a rate: the response-time summary and histogram, and the p99 and max of the
        lag (issue minus intended start) and of the harness's delay (ns); else None."""
        if not self.open_loop:
            return None
        response, lag, delay, _ = self._scan_intended()
        # p99 and max (100: the highest equivalent value, as the summary's max) without the
        # summary, which would encode a histogram that is never written
        lag_p99, lag_max = lag.values_at_percentiles([99.0, 100.0])
        delay_p99, delay_max = delay.values_at_percentiles([99.0, 100.0])
        # the delay at every percentile a latency bound may name: a verdict weighs the
        # client's lateness at the bound's own percentile (asyncbench.measure.verdicts)
        at = delay.values_at_percentiles([100.0 * q for q in PERCENTILES.values()])
        return {
            "delay_ns": dict(zip(PERCENTILES, (int(v) for v in at), strict=True)),
            "response": response.summary(),
            "lag_p99_ns": lag_p99,
            "lag_max_ns": lag_max,
            "delay_p99_ns": delay_p99,
            "delay_max_ns": delay_max,
        }

    def summary(self) -> LatencyStats | None:
        """The phase's service-time latency as the result holds it; None without operations."""
        if not self.ops:
            return None
        return self._scan()[0].summary()

    def over_time(self, buckets: int = 100) -> list[list[float]]:
        return [list(b) for b in self.time_buckets(buckets)]

    def time_buckets(self, buckets: int = 100) -> list[TimeBucket]:
        """Exactly :meth:`PhaseLatency.over_time` of the same marks, slice by slice."""
        if buckets < 1:
            raise ValueError("buckets must be >= 1")
        kept = [w for w in self._workers if len(w.lengths)]
        if not kept:
            return []
        try:
            return self._sweep(kept, buckets)
        except _Unordered:  # an engine's stamps went backwards: sort them all, in memory
            merged = PhaseLatency()
            for w in kept:
                for chunk in w.batches():
                    for b in chunk:
                        merged.add(b.copy())
            return merged.over_time(buckets)

    def _sweep(self, kept: list[_WorkerMarks], buckets: int) -> list[TimeBucket]:
        start = min(min(w.firsts) for w in kept)
        self._scan()
        span = max(self._cache["last_end"] - start, 1)
        sweeps = [_SlotSweep(w, start, span, buckets) for w in kept]
        out = []
        for i in range(buckets):
            piece = _Slice()
            for s in sweeps:
                s.take(i, piece.add)
            if piece.ops:
                out.append(piece.bucket(span * (i + 1) / buckets / 1e9))
        return out

    def sliced(self) -> tuple[list[TimeBucket], list[TimeBucket]]:
        """The phase in slices of :func:`slice_ns` of its length (1 s, 100 ms or 10 ms), so a
        phase of any length draws a line over time (a 0.3 s phase at one point a second drew
        nothing): per slice the operations that ended in it and their exact p50/p99/max
        service time, and under a rate the same of their response time (else an empty list).
        ``t_s`` is the slice's end; slices without an operation are left out (the chart breaks
        its lines there). Empty when an engine's stamps went backwards."""
        service, response = self._series(None)
        return [b for b in service if b.ops], [b for b in response if b.ops]

    def per_second(self) -> tuple[list[TimeBucket], list[TimeBucket]]:
        """The phase second by second from its first start stamp: per second the operations
        that ended in it and their exact p50/p99/max service time, and under a rate the same
        of their response time (else an empty list). ``t_s`` is the second's end, 1, 2, ...
        (the last second may be partial: the phase's seconds say where it ended). Empty when
        an engine's stamps went backwards.
        Seconds without an operation (a stall) are kept, with zeros, so a gap shows."""
        return self._series(1_000_000_000)

    def _series(self, width: int | None) -> tuple[list[TimeBucket], list[TimeBucket]]:
        """Service and response buckets of ``width`` ns from the phase's first start stamp
        (None: :func:`slice_ns` of the phase's length), empty buckets included."""
        kept = [i for i, w in enumerate(self._workers) if len(w.lengths)]
        if not kept:
            return [], []
        start = min(min(self._workers[i].firsts) for i in kept)
        self._scan()
        span = max(self._cache["last_end"] - start, 1)
        width = slice_ns(span) if width is None else width
        buckets = -(-span // width)
        if buckets > MAX_SERIES_SECONDS:  # ends * buckets would overflow int64
            return [], []
        try:
            service = self._seconds(kept, start, span, buckets, False, width)
            response = self._seconds(kept, start, span, buckets, True, width) if self.open_loop else []
        except _Unordered:
            return [], []
        return service, response

    def _seconds(
        self, kept: list[int], start: int, span: int, seconds: int, response: bool, width: int = 1_000_000_000
    ) -> list[TimeBucket]:
        whole = seconds * width
        sweeps = [
            _SlotSweep(self._workers[i], start, whole, seconds, self._intended[i] if response else None)
            for i in kept
        ]
        out = []
        for s in range(seconds):
            piece = _Slice()
            for sw in sweeps:
                sw.take(s, piece.add)
            t_s = (s + 1) * width / 1e9
            if not piece.ops:
                out.append(TimeBucket(t_s=t_s, ops=0, p50_ns=0, p99_ns=0, max_ns=0))
                continue
            out.append(piece.bucket(t_s))
        return out

    def batch_rows(self) -> list[dict[str, Any]]:
        """Every row of :meth:`batch_row_chunks` in one list."""
        return [row for rows in self.batch_row_chunks() for row in rows]

    def batch_row_chunks(self, size: int = 10_000) -> Iterator[list[dict[str, Any]]]:
        """One log row per batch in completion order, ``size`` rows at a time (a phase of
        many small batches is never held as rows): worker, its batch index, ops, time, the
        worker's own ops/s for that batch, and the batch's p99 and max latency."""
        stats = self._scan()[1]
        responses = self._scan_intended()[3] if self.open_loop else None
        counters = [0] * len(self._workers)
        kept = [0] * len(self._workers)  # batches with stats handed out, per worker
        rows: list[dict[str, Any]] = []
        done = 0
        for worker, ops, seconds in zip(
            self._batch_worker, self._batch_ops, self._batch_seconds, strict=True
        ):
            done += ops
            w_ops, w_p99, w_max = stats[worker]
            k = kept[worker]
            has = k < len(w_ops) and w_ops[k] > 0
            kept[worker] = k + 1
            index = counters[worker]
            counters[worker] += 1
            row = {
                "worker": worker,
                "batch": index,
                "ops": ops,
                "elapsed_ms": round(seconds * 1000, 3),
                "ops_per_s": round(ops / seconds) if seconds > 0 else None,  # this worker's rate
                "done": done,  # operations completed in the phase, all workers
                "p99_us": round(w_p99[k] / 1000, 3) if has else None,
                "max_us": round(w_max[k] / 1000, 3) if has else None,
            }
            if responses is not None:  # under a rate: response time from the intended start
                r_p99, r_max = responses[worker]
                row["response_p99_us"] = round(r_p99[k] / 1000, 3) if has else None
                row["response_max_us"] = round(r_max[k] / 1000, 3) if has else None
            rows.append(row)
            if len(rows) >= size:
                yield rows
                rows = []
        if rows:
            yield rows


class _Unordered(Exception):
    """A worker's end stamps decreased somewhere: the slice-by-slice sweep does not apply."""


class _SlotSweep:
    """One worker's latencies handed out by time slice, in slice order: a worker's end
    stamps never decrease, so each slice is the next run of its operations."""

    def __init__(
        self, worker: _WorkerMarks, start: int, span: int, buckets: int, intended: _WorkerMarks | None = None
    ) -> None:
        self._chunks = worker.batches()
        # response time instead of service time: the intended starts, batch for batch
        self._intended = intended.batches() if intended is not None else None
        self._start, self._span, self._buckets = start, span, buckets
        self._slots = np.empty(0, dtype=np.int64)
        self._lat = np.empty(0, dtype=np.int64)
        self._last = 0  # the highest slot handed out so far

    def _more(self) -> bool:
        chunk = next(self._chunks, None)
        if chunk is None:
            return False
        ends = np.maximum(np.concatenate([b[1:] for b in chunk]) - self._start, 0)
        slots = np.minimum(ends * self._buckets // self._span, self._buckets - 1)
        if slots.size and (slots[0] < self._last or np.any(slots[1:] < slots[:-1])):
            raise _Unordered
        self._slots, self._last = slots, int(slots[-1]) if slots.size else self._last
        if self._intended is None:
            self._lat = np.concatenate([b[1:] - b[:-1] for b in chunk])
        else:
            ichunk = next(self._intended)
            self._lat = np.concatenate([b[1:] - i[1:] for b, i in zip(chunk, ichunk, strict=True)])
        return True

    def take(self, slot: int, add: Callable[[np.ndarray], None]) -> None:
        """Hand ``add`` this worker's latencies of the operations ending in ``slot``, a
        chunk's run at a time (every earlier slot already taken)."""
        while True:
            if self._slots.size == 0 and not self._more():
                return
            cut = int(np.searchsorted(self._slots, slot, side="right"))
            if cut:
                add(self._lat[:cut])
                self._slots, self._lat = self._slots[cut:], self._lat[cut:]
            if self._slots.size:
                return


class _Slice:
    """One time slice's latencies, gathered from every worker's sweep: kept as arrays up
    to :data:`EXACT_SLICE_OPS` (exact p50/p99/max), folded into a histogram beyond."""

    __slots__ = ("ops", "_pieces", "_hist", "_max")

    def __init__(self) -> None:
        self.ops = 0
        self._pieces: list[np.ndarray] = []
        self._hist: LatencyHistogram | None = None
        self._max = 0

    def add(self, latencies: np.ndarray) -> None:
        if not latencies.size:
            return
        self.ops += int(latencies.size)
        if self._hist is None:
            self._pieces.append(latencies)
            if self.ops <= EXACT_SLICE_OPS:
                return
            self._hist = LatencyHistogram()
            pieces, self._pieces = self._pieces, []
            for p in pieces:
                self._fold(p)
        else:
            self._fold(latencies)

    def _fold(self, latencies: np.ndarray) -> None:
        assert self._hist is not None
        self._hist.record(latencies)
        self._max = max(self._max, int(latencies.max()))

    def bucket(self, t_s: float) -> TimeBucket:
        if self._hist is None:
            return time_bucket(np.concatenate(self._pieces), t_s)
        p50, p99 = self._hist.values_at_percentiles([50.0, 99.0])
        return TimeBucket(t_s=t_s, ops=self.ops, p50_ns=p50, p99_ns=p99, max_ns=self._max)
