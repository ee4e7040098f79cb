"""Capacity under a latency bound: the highest target rate an engine sustains.

A *probe* runs a fixed number of the phase's operations at one target rate (open loop,
:mod:`asyncbench.run.phase_loop`, response time from each operation's intended start) and
*passes* when all three hold:

- the achieved rate is at most :data:`~asyncbench.rate.RATE_SHORTFALL` (5 %) below the target;
- response time meets every bound of the phase's SLO (:mod:`asyncbench.slo`), judged on the
  operations after the probe's warm-up;
- the backlog stays bounded: the response time of the probe's last 1 % of operations (the
  queue the engine leaves at the end) is within the loosest bound. An engine that falls
  behind builds a queue that grows through the probe; its last operations wait longest.

**Probe length.** A percentile q is judged on at least ``ceil(100 / (1 - q))`` operations
(100 beyond the percentile: p99 on 10_000, p999 on 100_000), after a warm-up of a tenth of
that (at least 100 operations) that is run at the probe's rate but not judged
(:func:`probe_length`).

**A failure is confirmed.** A probe that fails is run once more at its rate (the next
slice of the stream) and the rate's verdict is judged on both probes' operations pooled
(twice the judged operations; the backlog from the second probe's end). One stall of an
engine (a flush, a merge, the machine) inside one probe of a second or less failed its
rate, and the bisection then searched below it for good: three searches of one engine on
a quiet machine gave 846_000/s, 171_000/s and 811_000/s because of one 2.2 ms p99 at
179_000/s. A longer judgement of the same rate keeps a steady engine's tail (stalls as
often as they come) and drops one accident; a pass is never re-run, so nothing is
passed by a second chance alone.

**A least probe duration** (``capacity_probe_seconds``, S; 0 by default: off). An engine
that stalls for tens of milliseconds every few seconds (the LSM's flushes and merges under
updates) passes or fails a sub-second probe by whether a stall fell inside it. With S set,
the probe of a rate runs ``max(1, ceil(S × rate / length))`` consecutive slices of the
stream back to back at that rate (:func:`slices_at`), judged as one (after the first
slice's warm-up), so every verdict spans at least S seconds of intended starts and sees
the stalls as often as they come. Each slice keeps its own number and checksum, so probe
``k`` still means slice ``k`` on every engine, whatever the rates grouped them into. (Each
slice's schedule starts when the one before has ended: a backlog at a slice's end is
measured by that slice's last operations, and the next slice's starts wait for it.)

**A warm store.** Before the searches of a read-only phase, its whole stream runs once,
closed loop and not judged (:func:`warm_store`): the first search otherwise met the store as
the phase before left it, its pages not yet in the page cache, and found a third of what
the later two did (the LSM's point reads at 200k on a quiet machine: 171_301/s, then
959_024/s twice). A user running for hours meets the warm store. A phase that writes gets
no such pass (it would change the store its probes' checksums depend on): its first search
meets the store as the earlier phases left it.

**Latency not monotonic in the rate.** The bisection assumes that more rate never helps.
Some engines contradict it: SQLite's email lookups failed p99 <= 1 ms at 10_706/s and
passed up to 115_993/s (at low rates each operation waits for an idle thread to wake). The
answer then depends on where the search started, so the result says so
(:func:`not_monotonic`: the lowest rate that failed more than twice below the highest that
passed, over every search of the phase; closer than that, searches of a steady engine
disagree near its capacity) on the console, in the report and the JSON.

**The search** (:func:`search`), per engine: from a start rate, double while probes pass
(halve while they fail) until one passes and one fails, then bisect (geometric midpoint)
until the failing rate is within ``precision`` (5 %) of the passing one. The capacity is
the highest passing rate. **Probe-count bound**: with ``r`` = ``ceil(log2(max_rate /
start))`` ramp steps (or ``log2(start / min_rate)`` going down), at most ``r + 1`` ramp
rates and ``ceil(log2(ln 2 / ln(1 + precision)))`` bisection rates (4 at 5 %), each at
most two probes (a failure and its confirmation): :func:`probe_bound`. With S set, the stream's slices a search may take are bounded by :func:`slice_bound`
(the ramp's rates and the bisection's, each at most twice, in slices). A search that reaches the ceiling reports the ceiling as a lower bound;
one that fails at the floor reports no capacity.

**Exact checksums.** Probe ``k`` of every engine reads the same items: consecutive slices of
the phase's stream of the probe's length (:func:`probe_items`; wrapped to the start when
the stream is exhausted, repeated when it is shorter than one probe). Only when each
operation starts depends on the rate, so probe ``k``'s checksum is the same for every engine
and is compared across them like a phase's (by probe number).

**A phase that writes** (a mixed phase: reads and updates in one stream) changes the store
under its later probes, so its probes never wrap: probe ``k`` is the ``k``-th slice and the
store before it is the one probes ``0..k-1`` left, the same on every engine, so its checksum
is still exact. After the search the phase runs the rest of its stream, closed loop
(:func:`stream_rest`): every operation of the stream has then run once, in stream order (and
per key in the same order, by the workload's key-owner split), whatever number of probes
the search took. The store a later phase sees is the unsearched phase's, and the phase's
checksum folds its probes' and its rest's in stream order (:func:`stream_checksum`). A
stream shorter than the search's bound of probes is refused before the run
(:func:`needed_operations`, :mod:`asyncbench.run.preflight`).

The probe itself is a callable, so the search knows nothing of engines, processes or
phase kinds: the in-process runner gives one over its worker handles
(:func:`local_probe`), the coordinator of client processes another
(:mod:`asyncbench.run.capacity_remote`).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from asyncbench import fmt
from asyncbench.config import BenchConfig, PhaseSpec
from asyncbench.engine import Engine
from asyncbench.rate import RATE_SHORTFALL, Rate
from asyncbench.result import Capacity, CapacityProbe
from asyncbench.slo import Slo
from asyncbench.workload import PhaseKind
from asyncbench.workloads import workload

__all__ = [
    "CapacitySearch",
    "capacity_of_phase",
    "ProbeHook",
    "ProbeResult",
    "ProbeRun",
    "judge",
    "measure_capacity",
    "not_monotonic",
    "start_rate",
    "local_probe",
    "probe_bound",
    "probe_items",
    "probe_length",
    "search",
    "search_seconds",
    "needed_operations",
    "slice_bound",
    "slices_at",
    "stream_checksum",
    "stream_rest",
    "warm_store",
    "writes",
]

#: Bisection stops when the failing rate is within this fraction above the passing one.
PRECISION = 0.05
#: The share of a probe's last operations whose response time is its backlog.
BACKLOG_SHARE = 0.01


def probe_length(slo: Slo) -> tuple[int, int]:
    """(warm-up, judged) operations of each probe: ``ceil(100 / (1 - q))`` judged for the
    tightest percentile q bounded, and a warm-up of a tenth of that, at least 100."""
    judged = math.ceil(round(100 / (1 - slo.tightest_q), 6))
    return max(100, math.ceil(judged / 10)), judged


def probe_bound(start: float, min_rate: float, max_rate: float, precision: float = PRECISION) -> int:
    """The most probes :func:`search` runs from ``start`` within [min_rate, max_rate]."""
    ramp = max(math.ceil(math.log2(max_rate / start)), math.ceil(math.log2(start / min_rate)), 0) + 1
    rates = ramp + max(1, math.ceil(math.log2(math.log(2) / math.log(1 + precision))))
    return 2 * rates  # each rate: a probe, and its confirmation when it failed


def slices_at(rate: float, probe_seconds: float, length: int) -> int:
    """The slices of ``length`` operations a probe at ``rate`` runs: enough for ``probe_seconds``
    of intended starts (the module's docstring), at least one."""
    if probe_seconds <= 0:
        return 1
    return max(1, math.ceil(round(probe_seconds * rate / length, 6)))


def slice_bound(
    start: float, min_rate: float, max_rate: float, probe_seconds: float, length: int, precision: float = PRECISION
) -> int:
    """The most slices of the stream one :func:`search` takes from ``start`` within
    [min_rate, max_rate]: the ramp's rates up (or down), then the bisection's, each below
    the ramp's last rate, every rate at most twice (a failure and its confirmation). With
    ``probe_seconds`` 0 it is :func:`probe_bound`."""
    bisect = max(1, math.ceil(math.log2(math.log(2) / math.log(1 + precision))))

    def ramp(rates: list[float]) -> int:
        return sum(slices_at(r, probe_seconds, length) for r in rates) + bisect * slices_at(
            max(rates), probe_seconds, length
        )

    up = [min(start * 2**i, max_rate) for i in range(max(math.ceil(math.log2(max_rate / start)), 0) + 1)]
    down = [max(start / 2**i, min_rate) for i in range(max(math.ceil(math.log2(start / min_rate)), 0) + 1)]
    longest = max(len(up), len(down))
    up += [up[-1]] * (longest - len(up))  # (the bound counts the longer ramp in either direction)
    down += [down[-1]] * (longest - len(down))
    return 2 * max(ramp(up), ramp(down))


def probe_items(items: Sequence[object], index: int, length: int) -> Sequence[object]:
    """Probe ``index``'s operations: the ``index``-th consecutive slice of ``length`` items
    (from the start again once the stream has no whole slice left), or the stream repeated
    when it is shorter than one probe. The same for every engine: its checksum is exact."""
    total = len(items)
    if total == 0:
        raise ValueError("the phase has no operations to probe with")
    if length <= total:
        per = total // length
        start = (index % per) * length
        return items[start : start + length]
    whole = list(items[0:total])
    reps = -(-length // total)
    return (whole * reps)[:length]


def writes(kind: PhaseKind) -> bool:
    """The phase changes the store (a mixed phase's updates): its probes never repeat an
    operation and its search ends by running the rest of its stream (the module's docstring)."""
    return kind.runs_once


def needed_operations(slo: Slo, rate_range: Sequence[float], repeats: int, probe_seconds: float = 0.0) -> int:
    """The operations a writing phase's stream must hold for its searches never to wrap:
    ``repeats`` searches of at most :func:`slice_bound` slices of :func:`probe_length`."""
    low, high = rate_range
    length = sum(probe_length(slo))
    return repeats * slice_bound(start_rate(low, high), low, high, probe_seconds, length) * length


def search_seconds(slo: Slo, rate_range: Sequence[float], sustained: float, probe_seconds: float = 0.0) -> float:
    """The estimate's model of one search (:mod:`asyncbench.run.estimate`): the search run
    against an engine that passes every probe up to ``sustained`` ops/s and misses the rate
    above it, each probe taking its operations at its rate (at most ``sustained``). With
    ``sustained`` infinite, every probe passes: the least time any search of these bounds
    and range takes (a probe cannot end before its last intended start)."""
    low, high = rate_range
    length = sum(probe_length(slo))

    async def ideal(number: int, rate: float) -> ProbeRun:
        return ProbeRun(np.zeros(1, dtype=np.int64), rate if rate <= sustained else rate / 2, None)

    steps = search(ideal, slo, start_rate(low, high), low, high, probe_seconds=probe_seconds)
    try:  # the ideal probe never suspends: the search runs to its end in one step, no event loop
        steps.send(None)
    except StopIteration as done:
        found: CapacitySearch = done.value
    else:  # pragma: no cover - a probe that suspends would leave it half run
        steps.close()
        raise RuntimeError("the search's model suspended")
    return sum(p.slices * length / min(p.rate, sustained) for p in found.probes)


def stream_rest(items: Sequence[Any], probes: int, length: int) -> Sequence[Any]:
    """What a writing phase's stream holds after ``probes`` probes of ``length``: run once,
    closed loop, after its search. ValueError when the probes ran past its end (the check
    before the run, :func:`needed_operations`, keeps that from happening)."""
    start = probes * length
    if start > len(items):
        raise ValueError(
            f"{probes} probes of {length:_} operations ran past the end of a writing phase's stream of {len(items):_}"
        )
    return items[start : len(items)]


def stream_checksum(probes: Sequence[str | None], rest: str) -> str:
    """A writing phase's checksum: its probes' checksums and its rest's, folded in stream
    order by the workload (YCSB's digests add up: the unsearched phase's checksum)."""
    return workload().combine([*(p for p in probes if p is not None), rest])


@dataclass(frozen=True)
class ProbeRun:
    """What one probe measured: response times (ns, in operation order per the probe's
    issue order), the achieved rate, and the checksum of its items."""

    response_ns: np.ndarray
    achieved: float
    checksum: str | None
    #: A probe of several slices (a least probe duration): the later slices' checksums.
    more: tuple[str | None, ...] = ()


@dataclass(frozen=True)
class ProbeResult:
    """One probe as judged: ``limit`` names what failed it (None: it passed)."""

    number: int
    rate: float
    achieved: float
    percentiles_ns: dict[str, int]
    backlog_ns: int
    limit: str | None
    checksum: str | None = None
    #: A confirmation's: the number of the failed probe it was pooled with (None: a first probe).
    confirms: int | None = None
    #: The slices of the stream it ran (numbers ``number`` ..): more than one under a least
    #: probe duration; ``checksum`` is the first's, ``next_checksums`` the others'.
    slices: int = 1
    next_checksums: tuple[str | None, ...] = ()

    @property
    def checksums(self) -> list[str | None]:
        """Every slice's checksum, in stream order."""
        return [self.checksum, *self.next_checksums]

    @property
    def passed(self) -> bool:
        return self.limit is None

    def to_dict(self) -> dict[str, Any]:
        return {
            "number": self.number,
            "rate": self.rate,
            "achieved": self.achieved,
            "percentiles_ns": dict(self.percentiles_ns),
            "backlog_ns": self.backlog_ns,
            "limit": self.limit,
            "checksum": self.checksum,
            "confirms": self.confirms,
            "slices": self.slices,
            "next_checksums": list(self.next_checksums),
        }


def judge(number: int, rate: float, slo: Slo, warmup: int, run: ProbeRun) -> ProbeResult:
    """Pass or fail one probe by the three rules of the module's docstring."""
    judged = run.response_ns[warmup:] if run.response_ns.size > warmup else run.response_ns
    pcts = {
        b.name: int(np.quantile(judged, b.q, method="higher")) if judged.size else 0 for b in slo.bounds
    }
    tail = max(1, math.ceil(run.response_ns.size * BACKLOG_SHARE))
    backlog = int(run.response_ns[-tail:].max()) if run.response_ns.size else 0
    limit = None
    if not Rate(rate).met_by(run.achieved):
        limit = f"rate: achieved {run.achieved:,.0f}/s of {rate:,.0f}/s (more than {RATE_SHORTFALL:.0%} short)"
    else:
        for b in slo.bounds:
            if pcts[b.name] > b.ns:
                limit = f"{b.name}: {pcts[b.name] / 1e6:.3g} ms > {b.ns / 1e6:g} ms"
                break
        else:
            loosest = max(b.ns for b in slo.bounds)
            if backlog > loosest:
                limit = f"backlog: last operations waited {backlog / 1e6:.3g} ms > {loosest / 1e6:g} ms"
    return ProbeResult(
        number, rate, run.achieved, pcts, backlog, limit, run.checksum, slices=1 + len(run.more), next_checksums=run.more
    )


def pooled(first: ProbeRun, second: ProbeRun, warmup: int) -> ProbeRun:
    """Two probes at one rate as one judgement: both probes' operations after their
    warm-ups, in run order (so the backlog is the second's end), the achieved rate their
    operations over their summed time, the checksum the second's (its own slice's)."""
    a, b = first.response_ns[warmup:], second.response_ns[warmup:]
    ops = first.response_ns.size + second.response_ns.size
    seconds = sum(r.response_ns.size / r.achieved for r in (first, second) if r.achieved > 0)
    achieved = ops / seconds if seconds > 0 else math.inf
    return ProbeRun(np.concatenate([a, b]), achieved, second.checksum, second.more)


def joined(runs: Sequence[ProbeRun]) -> ProbeRun:
    """Consecutive slices run back to back at one rate as one probe: their response times
    in run order, the achieved rate their operations over their summed time, the first
    slice's checksum and the others' in ``more``."""
    if len(runs) == 1:
        return runs[0]
    ops = sum(r.response_ns.size for r in runs)
    seconds = sum(r.response_ns.size / r.achieved for r in runs if r.achieved > 0)
    achieved = ops / seconds if seconds > 0 else math.inf
    return ProbeRun(
        np.concatenate([r.response_ns for r in runs]), achieved, runs[0].checksum, tuple(r.checksum for r in runs[1:])
    )


ProbeFn = Callable[[int, float], Awaitable[ProbeRun]]
"""Runs probe ``number`` at a target rate (ops/s) and returns what it measured."""


@dataclass
class CapacitySearch:
    """One search's outcome: the capacity (None: even ``min_rate`` failed), the limit the
    first rate above it hit, and every probe in the order run."""

    capacity: float | None
    limited_by: str | None
    probes: list[ProbeResult] = field(default_factory=list)
    at_ceiling: bool = False


async def search(
    probe: ProbeFn,
    slo: Slo,
    start: float,
    min_rate: float,
    max_rate: float,
    precision: float = PRECISION,
    first_number: int = 0,
    on_probe: Callable[[ProbeResult], None] | None = None,
    probe_seconds: float = 0.0,
) -> CapacitySearch:
    """The adaptive search of the module's docstring; ``first_number`` numbers the slices
    (so repeated searches draw further slices of the stream); ``on_probe`` sees each probe
    as judged (the live log's line); ``probe_seconds``: the least probe duration."""
    if not (0 < min_rate <= start <= max_rate):
        raise ValueError(f"an empty rate range: start {start:g} not within [{min_rate:g}, {max_rate:g}]")
    warmup, judged = probe_length(slo)
    out = CapacitySearch(None, None)
    used = 0  # slices of the stream taken so far
    lo: float | None = None
    hi: float | None = None
    hi_limit: str | None = None

    def record(res: ProbeResult) -> ProbeResult:
        out.probes.append(res)
        if on_probe is not None:
            on_probe(res)
        return res

    async def span(rate: float) -> tuple[int, ProbeRun]:
        """One probe at ``rate``: its slices from the next, back to back, as one run."""
        nonlocal used
        number = first_number + used
        count = slices_at(rate, probe_seconds, warmup + judged)
        used += count
        return number, joined([await probe(number + i, rate) for i in range(count)])

    async def run(rate: float) -> ProbeResult:
        """The rate's verdict: one probe, and a failure confirmed by a second (the docstring)."""
        number, first = await span(rate)
        res = record(judge(number, rate, slo, warmup, first))
        if res.passed:
            return res
        again, second = await span(rate)
        both = pooled(first, second, warmup)
        judged = judge(again, rate, slo, 0, both)
        return record(dataclasses.replace(judged, confirms=number))

    rate = start
    while lo is None or hi is None:  # the ramp: double up while passing, halve down while failing
        res = await run(rate)
        if res.passed:
            lo = rate
            if hi is None and rate >= max_rate:
                out.capacity, out.at_ceiling = rate, True
                return out
            rate = min(rate * 2, max_rate) if hi is None else rate
        else:
            hi, hi_limit = rate, res.limit
            if lo is None and rate <= min_rate:
                out.limited_by = res.limit
                return out
            rate = max(rate / 2, min_rate) if lo is None else rate
    while hi / lo > 1 + precision:  # bisection on a log scale
        mid = math.sqrt(lo * hi)
        res = await run(mid)
        if res.passed:
            lo = mid
        else:
            hi, hi_limit = mid, res.limit
    out.capacity, out.limited_by = lo, hi_limit
    return out


def local_probe(
    kind: Any,
    items: Sequence[object],
    stores: Sequence[Any],
    ctx: object,
    batch_size: int,
    slo: Slo,
    arrivals: Any = None,
    seed: int = 0,
    phase: int = 0,
) -> ProbeFn:
    """A probe over this process's worker handles: probe ``number`` runs its slice of the
    phase's items (:func:`probe_items`) at the target rate through the ordinary open-loop
    phase execution (:func:`~asyncbench.run.phase_loop.run_operations`), and returns every
    operation's response time (end minus intended start), ordered by intended start."""
    from asyncbench.rate import Arrivals
    from asyncbench.run.dispatch import run_operations

    warmup, judged = probe_length(slo)
    length = warmup + judged

    async def probe(number: int, rate: float) -> ProbeRun:
        part = probe_items(items, number, length)
        intended_all: list[np.ndarray] = []
        ends_all: list[np.ndarray] = []

        def on_batch(worker: int, index: int, ops: int, seconds: float, marks: list[int], intended: Any = None, blocked: int = 0) -> None:
            if ops:
                intended_all.append(np.asarray(intended, dtype=np.int64))
                ends_all.append(np.asarray(marks[1:], dtype=np.int64))

        outcome = await run_operations(
            kind, part, stores, ctx, batch_size, on_batch, Rate(rate, arrivals or Arrivals.UNIFORM), seed, phase
        )
        intended = np.concatenate(intended_all) if intended_all else np.empty(0, dtype=np.int64)
        ends = np.concatenate(ends_all) if ends_all else np.empty(0, dtype=np.int64)
        order = np.argsort(intended, kind="stable")
        response = (ends - intended)[order]
        achieved = outcome.ops / outcome.seconds if outcome.seconds > 0 else math.inf
        return ProbeRun(response, achieved, outcome.checksum)

    return probe


def start_rate(low: float, high: float) -> float:
    """Where a search starts: the geometric middle of the range, so the ramp has as far to
    go either way (at most ``log2(sqrt(high / low))`` steps)."""
    return math.sqrt(low * high)


ProbeHook = Callable[[int, ProbeResult, Slo], None]
"""Sees each probe as judged: (search number, the probe, the bounds it was judged by)."""


async def measure_capacity(
    probe: ProbeFn,
    slo: Slo,
    rate_range: Sequence[float],
    repeats: int,
    on_probe: ProbeHook | None = None,
    probe_seconds: float = 0.0,
) -> tuple[Capacity, int, float]:
    """``repeats`` searches of one engine's phase (each probe reading the next slices of the
    stream), as the result's :class:`~asyncbench.result.Capacity`, with the operations run
    and the seconds the probes took; ``on_probe`` sees every probe as it is judged;
    ``probe_seconds``: the least probe duration (the module's docstring)."""
    from time import perf_counter

    from asyncbench.measure.stats import Summary

    low, high = rate_range
    start = start_rate(low, high)
    warmup, judged = probe_length(slo)
    found: list[float | None] = []
    probes: list[CapacityProbe] = []
    limits: list[str] = []
    at_ceiling = False
    t0 = perf_counter()
    for number in range(repeats):
        hook = None if on_probe is None else (lambda p, n=number: on_probe(n, p, slo))
        taken = sum(p.slices for p in probes)
        one = await search(probe, slo, start, low, high, first_number=taken, on_probe=hook, probe_seconds=probe_seconds)
        found.append(one.capacity)
        at_ceiling = at_ceiling or one.at_ceiling
        if one.limited_by:
            limits.append(one.limited_by)
        probes += [
            CapacityProbe(
                number, p.number, p.rate, p.achieved, dict(p.percentiles_ns), p.backlog_ns, p.limit, p.checksum,
                p.confirms, p.slices, list(p.next_checksums),
            )  # fmt: skip
            for p in one.probes
        ]
    seconds = perf_counter() - t0
    got = [c for c in found if c is not None]
    summary = Summary.of(got) if got and len(got) == len(found) else None
    cap = Capacity(
        slo_ns={b.name: b.ns for b in slo.bounds},
        capacities=found,
        capacity=None if summary is None else summary.mean,
        # a rate's interval: Student's t around far-apart searches (a loaded machine) can
        # reach below zero, which no rate is
        ci_low=None if summary is None or summary.ci_low is None else max(0.0, summary.ci_low),
        ci_high=None if summary is None else summary.ci_high,
        limited_by=_commonest(limits),
        at_ceiling=at_ceiling,
        warmup_ops=warmup,
        judged_ops=judged,
        probe_bound=probe_bound(start, low, high),
        rate_range=[low, high],
        probes=probes,
        probe_seconds=probe_seconds,
        not_monotonic=not_monotonic(probes),
    )
    return cap, cap.slices_taken * (warmup + judged), seconds


#: A failure counts against monotonicity only this far below a pass: near the capacity,
#: searches of a steady engine disagree by a few per cent to tens of per cent (a failure at
#: 425_464/s beside a pass at 484_513/s, on a quiet machine); more than one ramp step (2x)
#: apart, the curve itself bends (SQLite: 10_706/s failed, 115_993/s passed).
NOT_MONOTONIC_FACTOR = 2.0


def not_monotonic(probes: Sequence[CapacityProbe]) -> str | None:
    """The lowest rate whose verdict failed more than :data:`NOT_MONOTONIC_FACTOR` below the
    highest that passed (the module's docstring), in words; None otherwise. A rate's
    verdict is its first probe's when it passed, else its confirmation's (the pooled
    judgement)."""
    verdicts = [p for p in probes if p.limit is None or p.confirms is not None]
    passed = [p.rate for p in verdicts if p.limit is None]
    failed = [p for p in verdicts if p.limit is not None]
    if not passed or not failed:
        return None
    top = max(passed)
    below = [p for p in failed if p.rate * NOT_MONOTONIC_FACTOR < top]
    if not below:
        return None
    low = min(below, key=lambda p: p.rate)
    return (
        f"passed at {fmt.count(round(top))}/s above a failure at {fmt.count(round(low.rate))}/s "
        f"({low.limit}): the response time is not monotonic in the rate, so the capacity depends on "
        "where the search started; see the latency-vs-rate chart"
    )


def _commonest(limits: list[str]) -> str | None:
    """The bound that limited most searches (by its name: ``p99``, ``rate``, ``backlog``),
    with the first such search's words."""
    if not limits:
        return None
    names = [x.split(":", 1)[0] for x in limits]
    top = max(set(names), key=names.count)
    return next(x for x in limits if x.startswith(top + ":"))


async def capacity_of_phase(
    cfg: BenchConfig,
    index: int,
    spec: PhaseSpec,
    items: Sequence[object],
    engine: Engine,
    ctx: object,
    on_probe: ProbeHook | None = None,
) -> tuple[Capacity, int, float, str | None]:
    """The in-process runner's call: the phase's capacity over the engine's P worker handles,
    under the bounds of its kind (``[slo.KIND]``, else the run's); with the operations run,
    the seconds taken and, for a writing phase, its checksum (after the rest of its stream)."""
    from time import perf_counter

    from asyncbench.config import slo_for
    from asyncbench.rate import Arrivals
    from asyncbench.run.dispatch import run_operations
    from asyncbench.slo import make_slo

    kind = workload().phases[spec.kind]
    slo = make_slo(slo_for(cfg, spec.kind))
    handles = [engine.worker(w) for w in range(engine.config.workers)]

    async def whole_stream() -> int:
        outcome = await run_operations(kind, items, handles, ctx, cfg.batch_size, _unlogged, None, cfg.seed, index)
        return outcome.ops

    warm_ops, warm_seconds = await warm_store(kind, whole_stream)
    probe = local_probe(kind, items, handles, ctx, cfg.batch_size, slo, Arrivals(spec.arrivals), cfg.seed, index)
    found, ops, seconds = await measure_capacity(
        probe, slo, cfg.capacity_range, cfg.capacity_repeats, on_probe, cfg.capacity_probe_seconds
    )
    found.store_warmup_ops, found.store_warmup_seconds = warm_ops, warm_seconds
    ops, seconds = ops + warm_ops, seconds + warm_seconds
    if not writes(kind):
        return found, ops, seconds, None
    t0 = perf_counter()
    rest = stream_rest(items, found.slices_taken, found.warmup_ops + found.judged_ops)
    outcome = await run_operations(kind, rest, handles, ctx, cfg.batch_size, _unlogged, None, cfg.seed, index)
    assert outcome.checksum is not None  # an operation phase folds one
    checksum = stream_checksum(found.slice_checksums, outcome.checksum)
    return found, ops + len(rest), seconds + perf_counter() - t0, checksum


async def warm_store(kind: PhaseKind, whole_stream: Callable[[], Awaitable[int]]) -> tuple[int, float]:
    """The store's warm-up before a read-only phase's searches (the module's docstring):
    ``whole_stream`` runs the phase's stream once, closed loop, and returns its operations.
    Returns (operations, seconds); (0, 0.0) for a phase that writes, which gets none."""
    from time import perf_counter

    if writes(kind):
        return 0, 0.0
    t0 = perf_counter()
    ops = await whole_stream()
    return ops, perf_counter() - t0


def _unlogged(*_args: Any) -> None:
    """A probe's and a rest's batches are not the log's batch lines (each probe logs one line)."""
