"""Cost of the candidate per-operation latency recording primitives, and of the post-phase
conversion into an HdrHistogram.

Why: ``asyncbench.latency`` records one stamp per operation inside the engine's own loop;
whatever it costs is added to every operation of every phase, so the primitive is chosen by
measurement, not by taste. Three parts:

1. Per operation: a loop of ``--ops`` operations in batches of ``--batch`` (a fresh
   container per batch, as the protocol does), the operation being the 20-digit key format
   ``b"%020d" % uid`` (~cheap, so the recording cost is not hidden), with each candidate
   recording primitive, against the same loop without recording. Rounds are interleaved
   (every variant once per round, rotating order) and the table shows, per variant, the
   median and best (minimum) ns per operation, and the added cost over the bare loop two
   ways: best minus best (other tenants' load only ever adds time, so the minimum is the
   steadiest estimate on a shared machine) and the median of the per-round differences
   with min-max.
   ``--c-recorder`` adds the prototype C recorder (``latency_recorder_prototype.c``,
   compiled on the fly; see ``bench_latency_overhead.py``).
2. Per batch: ``PhaseLatency.add`` (O(1), keeps the list) and ``PhaseLatency.add_with_stats``
   (int64 conversion + exact p99/max for a live log line), in ns per operation of a
   ``--batch`` batch, with warm caches (right after a RocksDB batch it costs ~3x more:
   ``bench_latency_overhead.py`` measures that in place).
3. After the phase, for ``--values`` latencies (default 2_000_000): marks to latencies,
   the vectorised histogram build, ``numpy.unique`` + ``record_value(v, count)``,
   ``record_value`` per value (timed on ``--slow-values`` values and scaled linearly,
   labelled as such), encode, decode, summary and ``over_time``.

Usage::

    .venv/bin/python benchmarks/bench_latency_recording.py [--ops 200000] [--rounds 15]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from array import array
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_latency_overhead import build_c_recorder  # noqa: E402
from hdrh.histogram import HdrHistogram  # noqa: E402

from asyncbench.measure.latency import (  # noqa: E402
    HIGHEST_TRACKABLE_NS,
    LOWEST_TRACKABLE_NS,
    SIGNIFICANT_DIGITS,
    LatencyHistogram,
    PhaseLatency,
)

Body = Callable[[range], object]


# --- part 1: per-operation primitives ------------------------------------------------------
# Each variant is its own function with everything in locals, as an engine loop would be.


def v_off(uids: range) -> object:
    out = []
    append = out.append
    for uid in uids:
        append(b"%020d" % uid)
    return out


def v_list_perf_counter_ns(uids: range) -> object:
    out = []
    append = out.append
    marks: list[int] = []
    mark, clock = marks.append, time.perf_counter_ns
    mark(clock())
    for uid in uids:
        append(b"%020d" % uid)
        mark(clock())
    return marks


def v_list_method_append(uids: range) -> object:
    out = []
    append = out.append
    marks: list[int] = []
    clock = time.perf_counter_ns
    marks.append(clock())
    for uid in uids:
        append(b"%020d" % uid)
        marks.append(clock())  # LOAD_METHOD + the specialised list append
    return marks


def v_list_monotonic_ns(uids: range) -> object:
    out = []
    append = out.append
    marks: list[int] = []
    mark, clock = marks.append, time.monotonic_ns
    mark(clock())
    for uid in uids:
        append(b"%020d" % uid)
        mark(clock())
    return marks


def v_list_perf_counter_float(uids: range) -> object:
    out = []
    append = out.append
    marks: list[float] = []
    mark, clock = marks.append, time.perf_counter
    mark(clock())
    for uid in uids:
        append(b"%020d" % uid)
        mark(clock())
    return marks


def v_array_q_append(uids: range) -> object:
    out = []
    append = out.append
    marks = array("q")
    mark, clock = marks.append, time.perf_counter_ns
    mark(clock())
    for uid in uids:
        append(b"%020d" % uid)
        mark(clock())
    return marks


def v_prealloc_list_index(uids: range) -> object:
    out = []
    append = out.append
    marks = [0] * (len(uids) + 1)
    clock = time.perf_counter_ns
    marks[0] = clock()
    i = 1
    for uid in uids:
        append(b"%020d" % uid)
        marks[i] = clock()
        i += 1
    return marks


def v_numpy_buffer_index(uids: range) -> object:
    out = []
    append = out.append
    marks = np.empty(len(uids) + 1, dtype=np.int64)
    clock = time.perf_counter_ns
    marks[0] = clock()
    i = 1
    for uid in uids:
        append(b"%020d" % uid)
        marks[i] = clock()
        i += 1
    return marks


def v_clock_only(uids: range) -> object:
    """The clock read alone, result discarded: splits the cost into clock and store."""
    out = []
    append = out.append
    clock = time.perf_counter_ns
    clock()
    for uid in uids:
        append(b"%020d" % uid)
        clock()
    return out


def c_variant(module: Any) -> Body:
    """The prototype C recorder (``latency_recorder_prototype.c``): one C call per mark."""
    recorder_type = module.Recorder

    def v_c_recorder(uids: range) -> object:
        out = []
        append = out.append
        recorder = recorder_type()
        mark = recorder.mark
        mark()
        for uid in uids:
            append(b"%020d" % uid)
            mark()
        return recorder

    return v_c_recorder


VARIANTS: dict[str, Body] = {
    "off (bare loop)": v_off,
    "clock only, discarded": v_clock_only,
    "list.append(perf_counter_ns())": v_list_perf_counter_ns,
    "marks.append(perf_counter_ns()) (method)": v_list_method_append,
    "list.append(monotonic_ns())": v_list_monotonic_ns,
    "list.append(perf_counter()) float": v_list_perf_counter_float,
    "array('q').append(perf_counter_ns())": v_array_q_append,
    "preallocated list[i] = perf_counter_ns()": v_prealloc_list_index,
    "preallocated numpy int64[i] = perf_counter_ns()": v_numpy_buffer_index,
}


def time_batches(body: Body, batches: list[range]) -> float:
    clock = time.perf_counter_ns
    t0 = clock()
    for b in batches:
        body(b)
    return (clock() - t0) / sum(len(b) for b in batches)


def per_op(ops: int, batch: int, rounds: int, c_module: Any) -> None:
    batches = [range(s, min(s + batch, ops)) for s in range(0, ops, batch)]
    variants = dict(VARIANTS)
    if c_module is not None:
        variants["C recorder mark() (prototype, not shipped)"] = c_variant(c_module)
    names = list(variants)
    samples: dict[str, list[float]] = {n: [] for n in names}
    for n in names:  # warm-up
        time_batches(variants[n], batches[:20])
    for r in range(rounds):
        order = names[r % len(names) :] + names[: r % len(names)]
        for n in order:
            samples[n].append(time_batches(variants[n], batches))
    base = samples["off (bare loop)"]
    print(f"\n1. Per operation: {ops:_} ops in batches of {batch:_}, {rounds} interleaved rounds")
    print(
        f"{'variant':50} {'ns/op':>7} {'best':>7}   {'added: best - best':>18}   "
        "added: median (min .. max) of per-round diffs"
    )
    for n in names:
        diffs = [s - b for s, b in zip(samples[n], base, strict=True)]
        print(
            f"{n:50} {statistics.median(samples[n]):7.1f} {min(samples[n]):7.1f}   "
            f"{min(samples[n]) - min(base):+18.1f}   "
            f"{statistics.median(diffs):+.1f} ({min(diffs):+.1f} .. {max(diffs):+.1f})"
        )


# --- part 2: per batch ---------------------------------------------------------------------


def fake_marks(n: int, rng: np.random.Generator) -> list[int]:
    deltas = rng.lognormal(np.log(2_000), 0.6, n).astype(np.int64) + 200
    start = time.perf_counter_ns()
    return [start, *(start + np.cumsum(deltas)).tolist()]


def best_of(fn: Callable[[], object], repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter_ns()
        fn()
        best = min(best, time.perf_counter_ns() - t0)
    return best


def per_batch(batch: int, rounds: int) -> None:
    rng = np.random.default_rng(7)
    lists = [fake_marks(batch, rng) for _ in range(200)]

    def add_all() -> None:
        c = PhaseLatency()
        for m in lists:
            c.add(m)

    def stats_all() -> None:
        c = PhaseLatency()
        for m in lists:
            c.add_with_stats(m)

    print(f"\n2. Per batch of {batch:_} operations (200 batches, median of {rounds}; ns per operation)")
    for name, fn in (
        ("PhaseLatency.add (keeps the list)", add_all),
        ("PhaseLatency.add_with_stats (int64 + p99/max)", stats_all),
    ):
        runs = [best_of(fn, 1) / (200 * batch) for _ in range(rounds)]
        print(f"{name:50} {statistics.median(runs):8.1f}   (min {min(runs):.1f})")


# --- part 3: after the phase ---------------------------------------------------------------


def after_phase(values: int, slow_values: int, batch: int) -> None:
    rng = np.random.default_rng(11)
    lists = [fake_marks(batch, rng) for _ in range(values // batch)]
    converted = PhaseLatency()
    for m in lists:
        converted.add_with_stats(m)
    lat = converted.latencies()
    print(f"\n3. After the phase, {lat.size:_} latencies (seconds, best of 3)")

    def row(name: str, seconds: float, note: str = "") -> None:
        print(f"{name:62} {seconds:9.4f} s  {note}")

    row(
        "marks lists -> latencies (after PhaseLatency.add)",
        best_of(lambda: _fresh(lists).latencies(), 3) / 1e9,
    )
    row("int64 marks -> latencies (after add_with_stats)", best_of(converted.latencies, 3) / 1e9)
    row("batch_stats() (p99/max of every batch)", best_of(lambda: _fresh(lists).batch_stats(), 3) / 1e9)
    row(
        "vectorised index + bincount (LatencyHistogram.from_values)",
        best_of(lambda: LatencyHistogram.from_values(lat), 3) / 1e9,
    )

    def unique_record() -> HdrHistogram:
        h = HdrHistogram(LOWEST_TRACKABLE_NS, HIGHEST_TRACKABLE_NS, SIGNIFICANT_DIGITS)
        vals, counts = np.unique(lat, return_counts=True)
        for v, c in zip(vals.tolist(), counts.tolist(), strict=True):
            h.record_value(v, c)
        return h

    row("numpy.unique + record_value(v, count)", best_of(unique_record, 1) / 1e9)

    sub = lat[:slow_values].tolist()

    def per_value() -> None:
        h = HdrHistogram(LOWEST_TRACKABLE_NS, HIGHEST_TRACKABLE_NS, SIGNIFICANT_DIGITS)
        rec = h.record_value
        for v in sub:
            rec(v)

    t = best_of(per_value, 1) / 1e9
    row(
        "record_value per value",
        t * lat.size / len(sub),
        f"(timed on {len(sub):_} values: {t:.3f} s, scaled linearly)",
    )
    h = LatencyHistogram.from_values(lat)
    enc = h.encoded()
    row("encode (V2 compressed base64)", best_of(h.encoded, 3) / 1e9, f"({len(enc):_} characters)")
    row(
        "decode (LatencyHistogram.from_encoded)", best_of(lambda: LatencyHistogram.from_encoded(enc), 3) / 1e9
    )
    row("summary (numpy percentiles)", best_of(h.summary, 3) / 1e9)
    row(
        "hdrh get_percentile_to_value_dict (its Python loop), 4 percentiles",
        best_of(lambda: h.hdr.get_percentile_to_value_dict([50, 90, 99, 99.9]), 1) / 1e9,
    )
    row("over_time(100 buckets)", best_of(lambda: converted.over_time(100), 3) / 1e9)


def _fresh(lists: list[list[int]]) -> PhaseLatency:
    c = PhaseLatency()
    for m in lists:
        c.add(m)
    return c


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ops", type=int, default=200_000)
    ap.add_argument("--batch", type=int, default=1_000)
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--values", type=int, default=2_000_000)
    ap.add_argument("--slow-values", type=int, default=200_000)
    ap.add_argument("--skip", default="", help="comma list of parts to skip: 1,2,3")
    ap.add_argument("--c-recorder", action="store_true", help="part 1 also measures the prototype C recorder")
    args = ap.parse_args()
    skip = set(args.skip.split(","))
    print(f"Python {sys.version.split()[0]}, numpy {np.__version__}")
    if "1" not in skip:
        with tempfile.TemporaryDirectory(prefix="asyncbench-latency-recorder-") as tmp:
            c_module = build_c_recorder(Path(tmp)) if args.c_recorder else None
            per_op(args.ops, args.batch, args.rounds, c_module)
    if "2" not in skip:
        per_batch(args.batch, args.rounds)
    if "3" not in skip:
        after_phase(args.values, args.slow_values, args.batch)


if __name__ == "__main__":
    main()
