"""Capacity under a latency bound: the highest target rate an engine sustains.

A *probe* runs a fixed number of the phase's operations at one target rate (open loop,
:mod:`asyncbench.run.phase.phase_loop`, response time from each operation's intended start) and
*passes* when all three hold:

- the achieved rate is at most :data:`~asyncbench.rate.RATE_SHORTFALL` (5 %) below the target;
- response time meets every bound of the phase's SLO (:mod:`asyncbench.slo`), judged on the
  operations after the probe's warm-up;
- the backlog stays bounded: the response time of the probe's last 1 % of operations (the
  queue the engine leaves at the end) is within the loosest bound. An engine that falls
  behind builds a queue that grows through the probe; its last operations wait longest.

**Whose failure.** Each probe also records, at the bounded percentiles, the service
time, the harness's schedule delay and the engine's own response (a punctual client's,
:func:`punctual_response`; split by :class:`ProbeMarks`). A failure the client's lateness
decided (:func:`client_late`) is *inconclusive*, not the engine's, and the search stops
there: no capacity below such a rate is reported as the engine's (docs/capacity.md).

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
(:func:`needed_operations`, :mod:`asyncbench.run.checks.preflight`).

The probe itself is a callable, so the search knows nothing of engines, processes or
phase kinds: the in-process runner gives one over its worker handles
(:func:`local_probe`), the coordinator of client processes another
(:mod:`asyncbench.run.scale_out.capacity_remote`).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import anyio.lowlevel
import numpy as np

from asyncbench import fmt
from asyncbench.config import BenchConfig, PhaseSpec
from asyncbench.engine import Engine
from asyncbench.rate import RATE_SHORTFALL, Rate
from asyncbench.result import Capacity, CapacityProbe, PhaseResult
from asyncbench.run.phase.stores import worker_stores
from asyncbench.slo import Slo
from asyncbench.workload import PhaseKind, Workload

__all__ = [
    "CapacitySearch",
    "capacity_of_phase",
    "ProbeHook",
    "ProbeMarks",
    "ProbeResult",
    "ProbeRun",
    "judge",
    "measure_capacity",
    "not_monotonic",
    "out_of_reach",
    "start_rate",
    "local_probe",
    "probe_bound",
    "probe_items",
    "probe_length",
    "punctual_response",
    "client_late",
    "result_probe",
    "search",
    "SearchRecord",
    "search_seconds",
    "needed_operations",
    "slice_bound",
    "slices_at",
    "stream_checksum",
    "stream_rest",
    "stopped_search",
    "wait_share",
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


def stream_checksum(probes: Sequence[str | None], rest: str, wl: Workload) -> str:
    """A writing phase's checksum: its probes' checksums and its rest's, folded in stream
    order by the workload ``wl`` (YCSB's digests add up: the unsearched phase's checksum)."""
    return wl.combine([*(p for p in probes if p is not None), rest])


@dataclass(frozen=True)
class ProbeRun:
    """What one probe measured: response times (ns, in operation order per the probe's
    issue order), the achieved rate, and the checksum of its items; with, in the same
    order, each operation's service time and the harness's schedule delay (empty: not
    measured, as in the estimate's model), and the share of the probe's time this
    process's threads waited for a CPU (None: not known)."""

    response_ns: np.ndarray
    achieved: float
    checksum: str | None
    #: A probe of several slices (a least probe duration): the later slices' checksums.
    more: tuple[str | None, ...] = ()
    service_ns: np.ndarray = field(default_factory=lambda: np.empty(0, dtype=np.int64))
    delay_ns: np.ndarray = field(default_factory=lambda: np.empty(0, dtype=np.int64))
    wait_share: float | None = None
    #: The engine's own response time per operation (:func:`punctual_response`).
    engine_ns: np.ndarray = field(default_factory=lambda: np.empty(0, dtype=np.int64))

    @property
    def decomposed(self) -> bool:
        """Service times, schedule delays and the engine's own response are there, one per operation."""
        n = self.response_ns.size
        return n > 0 and self.service_ns.size == self.delay_ns.size == self.engine_ns.size == n


def punctual_response(intended: np.ndarray, service: np.ndarray) -> np.ndarray:
    """One worker's response times had its client issued every operation on time: each
    operation starts at its intended time or when the worker's previous one ended, whichever
    is later, and takes its measured service time (Lindley's recursion, ``end_i = max(t_i,
    end_{i-1}) + s_i``, solved at once: ``end_i = S_i + max_{k<=i}(t_k - S_{k-1})`` with S
    the running sum of service times). The engine's own queueing stays (service times
    longer than the gaps build a queue); the client's lateness and the catch-up burst it
    causes go (a 15 ms stall at 22_000/s issued 330 operations at once, and their wait
    behind each other was the client's doing, not the engine's)."""
    if intended.size == 0:
        return np.empty(0, dtype=np.int64)
    total = np.cumsum(service)
    before = total - service
    ends = total + np.maximum.accumulate(intended - before)
    own: np.ndarray = ends - intended
    return own


class ProbeMarks:
    """One probe's operations as their batches end, split as the phase's open-loop figures
    are (:meth:`asyncbench.measure.latency_recorder.PhaseRecorder._scan_intended`): per
    operation its intended start, its response time (end minus intended start), its service
    time (end minus its actual start: the previous operation's end in the batch, or the
    batch's start) and the harness's schedule delay (the batch's start less when the
    operation could have started, its intended time or the worker's previous end if later,
    less the time the engine's calls of other workers held the event loop meanwhile); and
    the engine's own response time, as a punctual client would have measured it
    (:func:`punctual_response`).

    Why: a probe's verdict must say who failed the bound. Response time alone mixes the
    engine's time with the client's own lateness (a busy machine waking the client late),
    and the seen case was all lateness (docs/capacity.md, "Whose failure")."""

    def __init__(self) -> None:
        self._prev_end: dict[int, int] = {}
        self._worker: list[np.ndarray] = []
        self._intended: list[np.ndarray] = []
        self._response: list[np.ndarray] = []
        self._service: list[np.ndarray] = []
        self._delay: list[np.ndarray] = []

    def add(self, worker: int, marks: Sequence[int], intended: Any, blocked: int = 0) -> None:
        """One batch of ``worker``: the engine's marks (a start stamp, then each operation's
        end), the operations' intended starts and the ns other workers' engine calls held
        the loop since the worker's previous batch."""
        stamps = np.asarray(marks, dtype=np.int64)
        times = np.asarray(intended, dtype=np.int64)
        if times.size == 0 or stamps.size != times.size + 1:
            return
        free = np.maximum(times, self._prev_end.get(worker, int(times[0])))
        self._delay.append(np.maximum(int(stamps[0]) - free - max(int(blocked), 0), 0))
        self._service.append(np.diff(stamps))
        self._response.append(stamps[1:] - times)
        self._intended.append(times)
        self._worker.append(np.full(times.size, worker, dtype=np.int64))
        self._prev_end[worker] = int(stamps[-1])

    def arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(intended, response, service, delay, the engine's own response), each ordered by
        intended start."""
        empty = np.empty(0, dtype=np.int64)
        cat = [np.concatenate(x) if x else empty for x in (self._intended, self._response, self._service, self._delay, self._worker)]
        intended, response, service, delay, workers = cat
        own = np.empty_like(intended)
        for w in np.unique(workers):  # each worker is one queue, its operations in issue order
            mine = np.flatnonzero(workers == w)
            own[mine] = punctual_response(intended[mine], service[mine])
        order = np.argsort(intended, kind="stable")
        return intended[order], response[order], service[order], delay[order], own[order]


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
    #: At the bounded percentiles: service time, the harness's schedule delay and the
    #: engine's own response (a punctual client's, :func:`punctual_response`); empty when not measured.
    service_ns: dict[str, int] = field(default_factory=dict)
    delay_ns: dict[str, int] = field(default_factory=dict)
    engine_ns: dict[str, int] = field(default_factory=dict)
    delay_p99_ns: int | None = None
    delay_max_ns: int | None = None
    wait_share: float | None = None
    #: A failure the client decided (:func:`client_late`): the reason; None otherwise.
    inconclusive: str | None = None
    #: The median service time of the judged operations (None: not measured): what
    #: :func:`out_of_reach` reads.
    service_median_ns: int | None = None

    @property
    def checksums(self) -> list[str | None]:
        """Every slice's checksum, in stream order."""
        return [self.checksum, *self.next_checksums]

    @property
    def passed(self) -> bool:
        return self.limit is None

    @property
    def verdict(self) -> str:
        """``pass``, ``fail`` (the engine's) or ``inconclusive`` (the client's lateness)."""
        if self.limit is None:
            return "pass"
        return "fail" if self.inconclusive is None else "inconclusive"

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
            "service_ns": dict(self.service_ns),
            "delay_ns": dict(self.delay_ns),
            "engine_ns": dict(self.engine_ns),
            "delay_p99_ns": self.delay_p99_ns,
            "delay_max_ns": self.delay_max_ns,
            "wait_share": self.wait_share,
            "inconclusive": self.inconclusive,
            "service_median_ns": self.service_median_ns,
        }


#: A failed probe is the client's, not the engine's, when the harness's schedule delay at a
#: bounded percentile is over this share of that bound (and the engine's own response, a
#: punctual client's, meets every bound). Why a half: the bound is a budget for the whole response;
#: a client whose own lateness takes more than half of it at the percentile judged leaves
#: the engine less than the other half, so the verdict is decided by the client at least as
#: much as by the engine. Below a half, the harness's usual cost (tens of µs) is part of the
#: measurement, as with any load generator, and a failure stays the engine's.
CLIENT_LATE_SHARE = 0.5
#: Advice named with a client-late verdict: what gives the client its time back.
CLIENT_LATE_ADVICE = "use --processes K, fewer engines at once, or an idle machine"


def _duration(ns: float) -> str:
    """``42.6 µs``, ``7.32 ms``: a figure of a verdict's reason."""
    return f"{ns / 1e3:.3g} µs" if ns < 1e6 else f"{ns / 1e6:.3g} ms"


def _at(values: np.ndarray, slo: Slo) -> dict[str, int]:
    """``values`` at each bounded percentile (nearest rank above, as the verdict's)."""
    return {b.name: int(np.quantile(values, b.q, method="higher")) if values.size else 0 for b in slo.bounds}


def _limit(slo: Slo, pcts: dict[str, int], backlog: int) -> str | None:
    """The first bound the percentiles break, else the backlog's, else None."""
    for b in slo.bounds:
        if pcts[b.name] > b.ns:
            return f"{b.name}: {pcts[b.name] / 1e6:.3g} ms > {b.ns / 1e6:g} ms"
    loosest = max(b.ns for b in slo.bounds)
    if backlog > loosest:
        return f"backlog: last operations waited {backlog / 1e6:.3g} ms > {loosest / 1e6:g} ms"
    return None


def client_late(
    slo: Slo, delay: dict[str, int], engine: dict[str, int], engine_backlog: int, wait_share: float | None
) -> str | None:
    """Why a failed probe is inconclusive, or None when the failure is the engine's.

    Only a late client can make it so: the schedule delay at a bounded percentile over
    :data:`CLIENT_LATE_SHARE` of that bound. Then the probe is inconclusive when either

    - the engine's own response (what a punctual client would have measured from the same
      service times, :func:`punctual_response`) meets every bound and its backlog: the
      client's lateness alone broke the bound; or
    - the machine was saturated: the client's thread waited at least
      :data:`~asyncbench.run.capacity.saturation.SATURATED_WAIT_SHARE` of the probe for a CPU. The
      same waits then stretch the service times too (an engine call on the client's thread
      preempted for 10 ms is 10 ms of service), so the engine's own response is no longer
      the engine's alone: on the shared 2-CPU machine the LSM's point reads at 22_361/s had
      a service p99 of 5 µs, an own response p99 of 7-8 ms, the client's thread waiting
      76 % of the probe.

    A client on time never makes a failure inconclusive, however busy the machine: the
    engine that builds a queue (its own response over the bound, the schedule delay
    small) fails (docs/capacity.md, "Whose failure")."""
    from asyncbench.run.capacity.saturation import SATURATED_WAIT_SHARE

    if not engine:
        return None
    late = next((b for b in slo.bounds if delay.get(b.name, 0) > CLIENT_LATE_SHARE * b.ns), None)
    if late is None:
        return None
    figure = f"schedule delay {late.name} {_duration(delay[late.name])} against a bound of {_duration(late.ns)}"
    if _limit(slo, engine, engine_backlog) is None:
        return (
            f"client late: {figure} (the engine's own {late.name} {_duration(engine[late.name])}); {CLIENT_LATE_ADVICE}"
        )
    if wait_share is not None and wait_share >= SATURATED_WAIT_SHARE:
        return (
            f"client late on a saturated machine: {figure}, the client's thread waiting {wait_share:.0%} "
            f"of the probe for a CPU; {CLIENT_LATE_ADVICE}"
        )
    return None


def out_of_reach(slo: Slo, res: ProbeResult, min_rate: float) -> str | None:
    """Why a search that has passed no rate yet stops at this failed one, or None.

    Issue 52: ``--slo p99=1us`` ran the ramp down to the range's bottom, each rate missing
    the bound, ~100 s a probe at the lowest rates (a probe's operations at 100/s), over 400
    s in all, for an answer known at the first rate: the engine's own operations are slower
    than the bound. So when more than half of a confirmed failed probe's operations take
    longer than a bound (of a percentile of p50 or above) by their service time alone (the
    engine's time per operation, no queue, no client delay), a lower rate would mostly
    repeat the miss: the search stops there, its capacity *below* that rate, how far below
    not measured (INCONCLUSIVE, never ranked; docs/capacity.md). An engine whose service
    time grows with the rate may pass lower: that is what is left unmeasured, and the
    reason says so. A miss by queueing (service time within the bound) searches on."""
    if res.confirms is None or res.service_median_ns is None:
        return None
    missed = next((b for b in slo.bounds if b.q >= 0.5 and res.service_median_ns > b.ns), None)
    if missed is None:
        return None
    return (
        f"out of reach: the engine's median service time {_duration(res.service_median_ns)} misses "
        f"{missed.name} <= {_duration(missed.ns)} at {fmt.count(round(res.rate))}/s with no queue; the "
        f"capacity is below {fmt.count(round(res.rate))}/s, the rates down to {fmt.count(round(min_rate))}/s "
        "not probed"
    )


def judge(number: int, rate: float, slo: Slo, warmup: int, run: ProbeRun) -> ProbeResult:
    """Pass or fail one probe by the three rules of the module's docstring; a failure the
    client decided is marked inconclusive (:func:`client_late`)."""
    cut = warmup if run.response_ns.size > warmup else 0
    judged = run.response_ns[cut:]
    pcts = _at(judged, slo)
    tail = max(1, math.ceil(run.response_ns.size * BACKLOG_SHARE))
    backlog = int(run.response_ns[-tail:].max()) if run.response_ns.size else 0
    if not Rate(rate).met_by(run.achieved):
        limit: str | None = f"rate: achieved {run.achieved:,.0f}/s of {rate:,.0f}/s (more than {RATE_SHORTFALL:.0%} short)"
    else:
        limit = _limit(slo, pcts, backlog)
    figures: dict[str, Any] = {}
    if run.decomposed:
        delay = run.delay_ns[cut:]
        own = run.engine_ns
        engine = _at(own[cut:], slo)
        delays = _at(delay, slo)
        p99, worst = (int(np.quantile(delay, 0.99, method="higher")), int(delay.max())) if delay.size else (0, 0)
        service = run.service_ns[cut:]
        figures = dict(
            service_ns=_at(service, slo), delay_ns=delays, engine_ns=engine,
            delay_p99_ns=p99, delay_max_ns=worst,
            service_median_ns=int(np.median(service)) if service.size else None,
        )  # fmt: skip
        if limit is not None:
            figures["inconclusive"] = client_late(slo, delays, engine, int(own[-tail:].max()), run.wait_share)
    return ProbeResult(
        number, rate, run.achieved, pcts, backlog, limit, run.checksum, slices=1 + len(run.more),
        next_checksums=run.more, wait_share=run.wait_share, **figures,
    )  # fmt: skip


def _joined_share(runs: Sequence[ProbeRun]) -> float | None:
    """The run-queue wait share of runs judged as one: weighted by their time."""
    known = [(r.wait_share, r.response_ns.size / r.achieved) for r in runs if r.wait_share is not None and r.achieved > 0]
    total = sum(t for _, t in known)
    if len(known) != len(runs) or total <= 0:
        return None
    return sum(s * t for s, t in known) / total


def _cat(arrays: Sequence[np.ndarray]) -> np.ndarray:
    return np.concatenate(arrays) if arrays else np.empty(0, dtype=np.int64)


def pooled(first: ProbeRun, second: ProbeRun, warmup: int) -> ProbeRun:
    """Two probes at one rate as one judgement: both probes' operations after their
    warm-ups, in run order (so the backlog is the second's end), the achieved rate their
    operations over their summed time, the checksum the second's (its own slice's)."""
    runs = (first, second)
    ops = first.response_ns.size + second.response_ns.size
    seconds = sum(r.response_ns.size / r.achieved for r in runs if r.achieved > 0)
    achieved = ops / seconds if seconds > 0 else math.inf
    return ProbeRun(
        _cat([r.response_ns[warmup:] for r in runs]), achieved, second.checksum, second.more,
        _cat([r.service_ns[warmup:] for r in runs]), _cat([r.delay_ns[warmup:] for r in runs]), _joined_share(runs),
        _cat([r.engine_ns[warmup:] for r in runs]),
    )  # fmt: skip


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
        _cat([r.response_ns for r in runs]), achieved, runs[0].checksum, tuple(r.checksum for r in runs[1:]),
        _cat([r.service_ns for r in runs]), _cat([r.delay_ns for r in runs]), _joined_share(runs),
        _cat([r.engine_ns for r in runs]),
    )  # fmt: skip


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
    #: The search stopped at a rate whose verdict the client decided (its reason, the rate,
    #: and the highest rate passed before it): no capacity is reported below such a rate.
    inconclusive: str | None = None
    inconclusive_from: float | None = None
    lower_bound: float | None = None


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

    def stop(res: ProbeResult, rate: float) -> CapacitySearch:
        """A rate whose verdict the client decided: whatever lies above it is not measured,
        and a capacity below it would be the client's, not the engine's."""
        out.inconclusive, out.inconclusive_from, out.lower_bound = res.inconclusive, rate, lo
        return out

    rate = start
    while lo is None or hi is None:  # the ramp: double up while passing, halve down while failing
        res = await run(rate)
        if res.inconclusive is not None:
            return stop(res, rate)
        reach = None if res.passed or lo is not None or rate <= min_rate else out_of_reach(slo, res, min_rate)
        if reach is not None:
            out.inconclusive, out.inconclusive_from = reach, rate
            return out
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
        if res.inconclusive is not None:
            return stop(res, mid)
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
    *,
    wl: Workload,
) -> ProbeFn:
    """A probe over this process's worker handles (``kind`` a phase kind of ``wl``): probe ``number`` runs its slice of the
    phase's items (:func:`probe_items`) at the target rate through the ordinary open-loop
    phase execution (:func:`~asyncbench.run.phase.phase_loop.run_operations`), and returns every
    operation's response time (end minus intended start), ordered by intended start."""
    from asyncbench.rate import Arrivals
    from asyncbench.run.capacity.saturation import thread_wait_seconds
    from asyncbench.run.phase.dispatch import run_operations

    warmup, judged = probe_length(slo)
    length = warmup + judged

    async def probe(number: int, rate: float) -> ProbeRun:
        # A stop (Ctrl-C, the timeout) lands here at the latest: a probe whose waits are all
        # under a millisecond and whose engine answers without suspending never yields to the
        # event loop, and a search of such probes ran 100 s past a 4 s timeout.
        await anyio.lowlevel.checkpoint()
        part = probe_items(items, number, length)
        marks_of = ProbeMarks()

        def on_batch(worker: int, index: int, ops: int, seconds: float, marks: list[int], intended: Any = None, blocked: int = 0) -> None:
            if ops:
                marks_of.add(worker, marks, intended, blocked)

        waited = thread_wait_seconds()
        outcome = await run_operations(
            kind, part, stores, ctx, batch_size, on_batch, Rate(rate, arrivals or Arrivals.UNIFORM), seed, phase, wl=wl
        )
        _, response, service, delay, own = marks_of.arrays()
        achieved = outcome.ops / outcome.seconds if outcome.seconds > 0 else math.inf
        return ProbeRun(response, achieved, outcome.checksum, (), service, delay, wait_share(waited, outcome.seconds), own)

    return probe


def wait_share(before: float | None, seconds: float) -> float | None:
    """The share of the last ``seconds`` the calling thread (the event loop's: the client's)
    waited for a CPU, from its run-queue wait read ``before`` them (None where the kernel
    does not say)."""
    from asyncbench.run.capacity.saturation import thread_wait_seconds

    after = thread_wait_seconds()
    if before is None or after is None or seconds <= 0:
        return None
    return max(after - before, 0.0) / seconds


def start_rate(low: float, high: float) -> float:
    """Where a search starts: the geometric middle of the range, so the ramp has as far to
    go either way (at most ``log2(sqrt(high / low))`` steps)."""
    return math.sqrt(low * high)


ProbeHook = Callable[[int, ProbeResult, Slo], None]
"""Sees each probe as judged: (search number, the probe, the bounds it was judged by)."""


def result_probe(search: int, p: ProbeResult) -> CapacityProbe:
    """The result's record of one judged probe."""
    return CapacityProbe(
        search, p.number, p.rate, p.achieved, dict(p.percentiles_ns), p.backlog_ns, p.limit, p.checksum,
        p.confirms, p.slices, list(p.next_checksums),
        service_percentiles_ns=dict(p.service_ns), delay_percentiles_ns=dict(p.delay_ns),
        engine_percentiles_ns=dict(p.engine_ns), delay_p99_ns=p.delay_p99_ns, delay_max_ns=p.delay_max_ns,
        wait_share=p.wait_share, inconclusive=p.inconclusive,
    )  # fmt: skip


class SearchRecord:
    """The searches of one engine's phase as they go: every probe as it is judged and each
    search's outcome as it ends, so that a run stopped in the middle (Ctrl-C, a timeout, an
    engine fault) still keeps the probes it completed (:meth:`capacity` with
    ``interrupted``): the partial result's phase carries them and the report shows them."""

    def __init__(self, slo: Slo, rate_range: Sequence[float], probe_seconds: float = 0.0) -> None:
        self.slo, self.probe_seconds = slo, probe_seconds
        self.low, self.high = rate_range
        self.start = start_rate(self.low, self.high)
        self.warmup, self.judged = probe_length(slo)
        self.found: list[float | None] = []
        self.probes: list[CapacityProbe] = []
        self.limits: list[str] = []
        self.at_ceiling = False
        self.inconclusive: list[tuple[float, str, float | None]] = []  # (from, reason, lower bound)

    def add_probe(self, search: int, p: ProbeResult) -> None:
        self.probes.append(result_probe(search, p))

    def end_search(self, one: CapacitySearch) -> None:
        self.found.append(one.capacity)
        self.at_ceiling = self.at_ceiling or one.at_ceiling
        if one.inconclusive is not None and one.inconclusive_from is not None:
            self.inconclusive.append((one.inconclusive_from, one.inconclusive, one.lower_bound))
        elif one.limited_by:
            self.limits.append(one.limited_by)

    def capacity(self, interrupted: bool = False) -> Capacity:
        """The result's :class:`~asyncbench.result.Capacity` of the searches so far."""
        from asyncbench.measure.stats import Summary

        got = [c for c in self.found if c is not None]
        whole = bool(got) and len(got) == len(self.found) and not interrupted
        summary = Summary.of(got) if whole else None
        first = min(self.inconclusive, key=lambda x: x[0]) if self.inconclusive else None
        return Capacity(
            slo_ns={b.name: b.ns for b in self.slo.bounds},
            capacities=list(self.found),
            capacity=None if summary is None else summary.mean,
            # a rate's interval: Student's t around far-apart searches (a loaded machine) can
            # reach below zero, which no rate is
            ci_low=None if summary is None or summary.ci_low is None else max(0.0, summary.ci_low),
            ci_high=None if summary is None else summary.ci_high,
            limited_by=_commonest(self.limits),
            at_ceiling=self.at_ceiling,
            warmup_ops=self.warmup,
            judged_ops=self.judged,
            probe_bound=probe_bound(self.start, self.low, self.high),
            rate_range=[self.low, self.high],
            probes=list(self.probes),
            probe_seconds=self.probe_seconds,
            not_monotonic=not_monotonic(self.probes),
            inconclusive=None if first is None else first[1],
            inconclusive_from=None if first is None else first[0],
            lower_bound=None if first is None else first[2],
            interrupted=interrupted,
        )


async def measure_capacity(
    probe: ProbeFn,
    slo: Slo,
    rate_range: Sequence[float],
    repeats: int,
    on_probe: ProbeHook | None = None,
    probe_seconds: float = 0.0,
    record: SearchRecord | None = None,
) -> tuple[Capacity, int, float]:
    """``repeats`` searches of one engine's phase (each probe reading the next slices of the
    stream), as the result's :class:`~asyncbench.result.Capacity`, with the operations run
    and the seconds the probes took; ``on_probe`` sees every probe as it is judged;
    ``probe_seconds``: the least probe duration (the module's docstring); ``record``: where
    the searches are kept as they go (a stopped run's partial result reads it)."""
    from time import perf_counter

    rec = record or SearchRecord(slo, rate_range, probe_seconds)
    t0 = perf_counter()
    for number in range(repeats):

        def hook(p: ProbeResult, n: int = number) -> None:
            rec.add_probe(n, p)
            if on_probe is not None:
                on_probe(n, p, slo)

        taken = sum(p.slices for p in rec.probes)
        one = await search(
            probe, slo, rec.start, rec.low, rec.high, first_number=taken, on_probe=hook, probe_seconds=probe_seconds
        )
        rec.end_search(one)
    seconds = perf_counter() - t0
    cap = rec.capacity()
    return cap, cap.slices_taken * (rec.warmup + rec.judged), seconds


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
    failed = [p for p in verdicts if p.limit is not None and p.inconclusive is None]  # the engine's failures
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
    record: Callable[[SearchRecord], None] | None = None,
) -> tuple[Capacity, int, float, str | None]:
    """The in-process runner's call: the phase's capacity over the engine's P worker handles,
    under the bounds of its kind (``[slo.KIND]``, else the run's); with the operations run,
    the seconds taken and, for a writing phase, its checksum (after the rest of its stream).
    ``record`` is handed the searches' :class:`SearchRecord` before they start (what a
    stopped run keeps)."""
    from time import perf_counter

    from asyncbench.config import slo_for
    from asyncbench.rate import Arrivals
    from asyncbench.run.phase.dispatch import run_operations
    from asyncbench.slo import make_slo

    wl = cfg.workload_impl
    kind = wl.phases[spec.kind]
    slo = make_slo(slo_for(cfg, spec.kind))
    handles = worker_stores(wl, engine)

    async def whole_stream() -> int:
        outcome = await run_operations(kind, items, handles, ctx, cfg.batch_size, _unlogged, None, cfg.seed, index, wl=wl)
        return outcome.ops

    rec = SearchRecord(slo, cfg.capacity_range, cfg.capacity_probe_seconds)
    if record is not None:
        record(rec)
    warm_ops, warm_seconds = await warm_store(kind, whole_stream)
    probe = local_probe(kind, items, handles, ctx, cfg.batch_size, slo, Arrivals(spec.arrivals), cfg.seed, index, wl=wl)
    found, ops, seconds = await measure_capacity(
        probe, slo, cfg.capacity_range, cfg.capacity_repeats, on_probe, cfg.capacity_probe_seconds, rec
    )
    found.store_warmup_ops, found.store_warmup_seconds = warm_ops, warm_seconds
    ops, seconds = ops + warm_ops, seconds + warm_seconds
    if not writes(kind):
        return found, ops, seconds, None
    t0 = perf_counter()
    rest = stream_rest(items, found.slices_taken, found.warmup_ops + found.judged_ops)
    outcome = await run_operations(kind, rest, handles, ctx, cfg.batch_size, _unlogged, None, cfg.seed, index, wl=wl)
    assert outcome.checksum is not None  # an operation phase folds one
    checksum = stream_checksum(found.slice_checksums, outcome.checksum, wl)
    return found, ops + len(rest), seconds + perf_counter() - t0, checksum


def stopped_search(
    row: Callable[[int, float], PhaseResult], record: SearchRecord, seconds: float
) -> PhaseResult:
    """The phase of a search the run stopped (Ctrl-C, a timeout, an engine fault): its
    operations so far (the probes'), ``seconds`` since it started and the capacity marked
    ``interrupted`` with the probes it completed. ``row``: the runner's phase row maker."""
    cap = record.capacity(interrupted=True)
    out = row(cap.slices_taken * (record.warmup + record.judged), seconds)
    out.capacity = cap
    return out


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
