"""The one result model: written as JSON by a run (and by an isolated child), read back by
the parent, ``report`` and ``compare``.

Status is data: an enum plus the phase it happened in and a detail, never a string to
decode by prefix. The parent and an isolated child exchange exactly this model
(:meth:`EngineResult.to_dict` / :meth:`EngineResult.from_dict`), as pyperf's worker and
manager share one benchmark model.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import functools
import math
import types
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from enum import Enum, StrEnum
from traceback import format_exception
from typing import Any

import orjson
from hdrh.histogram import HdrHistogram

from asyncbench.facts import EngineFacts, StorageMethod
from asyncbench.fs.ownership import write_atomic  # the one file writer; re-exported here
from asyncbench.limits import (
    ENGINE_NAME,
    MAX_NAME_CHARS,
    MAX_PARALLELISM,
    MAX_PROFILES,
    MAX_RESULT_BYTES,
    MAX_RESULT_ENGINES,
    MAX_RESULT_NAME_CHARS,
    MAX_RESULT_PHASES,
    MAX_TIMEOUT_SECONDS,
)
from asyncbench.parse import check_printable, load_json
from asyncbench.rate import Arrivals, Rate
from asyncbench.slo import PERCENTILES
from asyncbench.workload import Action, Group, PhaseKind, Workload
from asyncbench.workloads import DEFAULT, workload
from asyncbench.workloads import REGISTRY as WORKLOADS

__all__ = [
    "SCHEMA",
    "EngineResult",
    "LatencyStats",
    "OpenLoop",
    "NO_SERVER",
    "ON_DISK_SHARE",
    "NodeCost",
    "Capacity",
    "CapacityProbe",
    "PhaseCost",
    "off_disk",
    "PhasePrefix",
    "PhaseResult",
    "PlanPhase",
    "ClientProcess",
    "DurabilityRow",
    "Gates",
    "ResultError",
    "RunResult",
    "StallRecord",
    "Status",
    "ThroughputRow",
    "VerdictRecord",
    "exit_code",
    "write_atomic",
]

#: Version of the JSON shape (docs/result-schema.md); ``report`` refuses other versions.
SCHEMA = 2

EXIT_OK, EXIT_FAILED, EXIT_BAD_INPUT, EXIT_INTERRUPTED = 0, 1, 2, 130
#: No verdict failed, and at least one could not be decided (the client was late, the
#: machine loaded, a phase interrupted): neither a pass nor an engine's failure.
EXIT_INCONCLUSIVE = 3


class ResultError(ValueError):
    """A result file that is not an asyncbench result of a shape this version reads."""


class Status(StrEnum):
    RUNNING = "running"  # only ever seen in a child's partial file or a killed run
    OK = "ok"
    FAILED = "failed"
    TIMED_OUT = "timed_out"
    INTERRUPTED = "interrupted"
    SKIPPED = "skipped"  # an optional engine (from "all") that is not available here


@dataclass
class PlanPhase:
    """One phase of the validated plan, as the result stores it; its position in
    ``RunResult.phases`` is its identity. ``kind`` is the phase table's row."""

    kind: PhaseKind
    name: str
    stream: str | None = None
    count: int | None = None
    post_update: bool = False
    #: A saturation sweep's level: the index of the sweep's first level (None: not a sweep).
    sweep: int | None = None
    #: Its latency-over-time chart was asked for (``over_time``); write phases and phases at
    #: a rate get one anyway.
    over_time: bool = False

    def check(self, where: str) -> None:
        _check_name(f"{where}.name", self.name)
        if self.stream is not None and self.stream not in self.kind.streams:
            raise ResultError(f"{where}.stream: {self.stream!r} is not a stream of phase kind {self.kind.kind!r}")
        _at_least(f"{where}.count", self.count, 1)
        _at_least(f"{where}.sweep", self.sweep, 0)


@dataclass
class LatencyStats:
    """A phase's per-operation latency (ns) and the HdrHistogram it was summarised from."""

    count: int
    min: int
    p50: int
    p90: int
    p99: int
    p99_9: int
    max: int
    mean: float
    histogram: str  # HdrHistogram's standard V2 compressed form, base64

    def check(self, where: str) -> None:
        for name in ("count", "min", "p50", "p90", "p99", "p99_9", "max", "mean"):
            _at_least(f"{where}.{name}", getattr(self, name), 0)
        if self.count > 0:  # all from one histogram: each percentile within [min, max], in order
            _ordered(where, [(name, getattr(self, name)) for name in ("min", "p50", "p90", "p99", "p99_9", "max")])
            if not self.min <= self.mean <= self.max:
                raise ResultError(f"{where}.mean: {self.mean!r} is outside min {self.min} .. max {self.max}")
        try:
            data = self.histogram.encode("ascii")
            base64.b64decode(data, validate=True)
            total = HdrHistogram.decode(data).get_total_count()
        except (UnicodeError, binascii.Error, ValueError) as exc:
            raise ResultError(f"{where}.histogram: not a base64 HdrHistogram ({exc})") from None
        except Exception as exc:  # the third-party decoder's own errors on a damaged payload
            raise ResultError(f"{where}.histogram: not an HdrHistogram ({type(exc).__name__}: {exc})") from None
        if total != self.count:
            raise ResultError(f"{where}.histogram: holds {total} operations, count says {self.count}")


@dataclass
class StallRecord:
    """How long the engine held the event loop in a phase (:mod:`asyncbench.run.phase.loop_stalls`):
    the longest hold (ns) and the holds of at least 1, 10 and 100 ms, and the holds of 10 ms
    or more as (end s from the phase's start, ms), the first 500. A hold is an operation of
    a batch run on the loop, or the loop late for its timer while no worker ran (the
    engine's background tasks: a lower bound, by up to 2 ms). ``cpu_wait_ns``: how long
    the loop's thread waited for a CPU in the phase (the machine's share of any hold: a
    loaded machine's holds are not all the engine's); None where the kernel does not say."""

    longest_ns: int = 0
    over_1ms: int = 0
    over_10ms: int = 0
    over_100ms: int = 0
    marks: list[list[float]] = field(default_factory=list)
    cpu_wait_ns: int | None = None

    def check(self, where: str) -> None:
        for name in ("longest_ns", "over_1ms", "over_10ms", "over_100ms", "cpu_wait_ns"):
            _at_least(f"{where}.{name}", getattr(self, name), 0)
        _ordered(where, [("over_100ms", self.over_100ms), ("over_10ms", self.over_10ms), ("over_1ms", self.over_1ms)])
        for i, mark in enumerate(self.marks):
            if len(mark) != 2 or any(not isinstance(v, int | float) or v < 0 for v in mark):
                raise ResultError(f"{where}.marks[{i}]: expected [seconds, ms], two non-negative numbers, got {mark!r}")


@dataclass
class OpenLoop:
    """A phase run at a target rate (open loop): its target, the response time of its
    operations from their intended start, and how closely the harness kept the schedule."""

    rate: float  # target operations per second, all workers together
    arrivals: Arrivals
    #: Response time (ns): from each operation's intended start to its end; ``latency`` of
    #: the phase stays the service time (from its actual start).
    response: LatencyStats | None = None
    lag_p99_ns: int = 0  # issue minus intended start, p99 (queueing behind the engine included)
    lag_max_ns: int = 0
    #: The harness's scheduling error: issue minus the later of the intended start and the
    #: worker's previous end (the wake-up and hops the harness added), p99 and max.
    delay_p99_ns: int = 0
    delay_max_ns: int = 0
    #: The same delay at every percentile a bound may name (asyncbench.slo.PERCENTILES ->
    #: ns), so a verdict at p50 or p999 weighs the client's lateness at that percentile;
    #: empty in older results (a verdict then uses p99, or the max above p99).
    delay_ns: dict[str, int] = field(default_factory=dict)
    #: Per second of the phase, as ``PhaseResult.time_series`` but of the response time.
    response_series: list[list[float]] | None = None
    #: As ``PhaseResult.latency_over_time`` (the same slices) but of the response time.
    response_over_time: list[list[float]] | None = None

    def check(self, where: str) -> None:
        if not (self.rate > 0):
            raise ResultError(f"{where}.rate: expected a positive number, got {self.rate!r}")
        for name in ("lag_p99_ns", "lag_max_ns", "delay_p99_ns", "delay_max_ns"):
            _at_least(f"{where}.{name}", getattr(self, name), 0)
        _ordered(where, [("lag_p99_ns", self.lag_p99_ns), ("lag_max_ns", self.lag_max_ns)])
        _ordered(where, [("delay_p99_ns", self.delay_p99_ns), ("delay_max_ns", self.delay_max_ns)])
        for name, ns in self.delay_ns.items():
            if name not in PERCENTILES:
                raise ResultError(f"{where}.delay_ns.{name}: not a percentile ({', '.join(PERCENTILES)})")
            _at_least(f"{where}.delay_ns.{name}", ns, 0)
        _check_slices(f"{where}.response_series", self.response_series)
        _check_slices(f"{where}.response_over_time", self.response_over_time)

    def met_by(self, ops_per_s: float) -> bool:
        return Rate(self.rate, self.arrivals).met_by(ops_per_s)


@dataclass
class CapacityProbe:
    """One probe of a capacity search (asyncbench.run.capacity.capacity): its target and achieved
    rate, the judged response-time percentiles (ns), the backlog (the response time of its
    last 1 % of operations, ns), what failed it (None: it passed) and the checksum of its
    slice of the phase's stream (probe ``number`` reads the same slice on every engine)."""

    search: int  # which search of the phase (0 .. repeats - 1)
    number: int
    rate: float
    achieved: float
    percentiles_ns: dict[str, int]
    backlog_ns: int
    limit: str | None = None
    checksum: str | None = None
    #: A confirmation (a failed probe run again at its rate, judged pooled with it): the
    #: number of the probe it confirms; None for a first probe and in older results.
    confirms: int | None = None
    #: The slices of the stream the probe ran, from ``number`` (more than one under a least
    #: probe duration, ``capacity_probe_seconds``): ``checksum`` is the first's,
    #: ``next_checksums`` the later ones' in order.
    slices: int = 1
    next_checksums: list[str | None] = field(default_factory=list)
    #: Who failed the bound (docs/capacity.md, "Whose failure"): at the same bounded
    #: percentiles as ``percentiles_ns`` (response time, from the intended start), the
    #: service time (from the actual start), the harness's schedule delay (how late the
    #: client issued each operation) and the engine's own response (what a client issuing
    #: every operation on time would have measured from the same service times).
    #: Empty in results from before them.
    service_percentiles_ns: dict[str, int] = field(default_factory=dict)
    delay_percentiles_ns: dict[str, int] = field(default_factory=dict)
    engine_percentiles_ns: dict[str, int] = field(default_factory=dict)
    #: The schedule delay's p99 and max over the judged operations (None: not measured).
    delay_p99_ns: int | None = None
    delay_max_ns: int | None = None
    #: The share of the probe's time the client's thread (the event loop's) waited for a
    #: CPU (run-queue wait, asyncbench.run.capacity.saturation); None where the kernel does not say.
    wait_share: float | None = None
    #: Set when the probe failed but the client, not the engine, decided it (its schedule
    #: delay, or a saturated machine): the reason, naming the figure. Its ``limit`` is what
    #: broke the bound; its verdict is ``inconclusive``, never an engine's failure.
    inconclusive: str | None = None

    @property
    def verdict(self) -> str:
        """``pass``, ``fail`` (the engine's) or ``inconclusive`` (the client's lateness)."""
        if self.limit is None:
            return "pass"
        return "fail" if self.inconclusive is None else "inconclusive"

    @property
    def checksums(self) -> list[str | None]:
        """Every slice's checksum, in stream order (slice ``number + i`` is the i-th)."""
        return [self.checksum, *self.next_checksums]

    def check(self, where: str) -> None:
        if not (self.rate > 0):
            raise ResultError(f"{where}.rate: expected a positive number, got {self.rate!r}")
        for name in ("search", "number", "achieved", "backlog_ns"):
            _at_least(f"{where}.{name}", getattr(self, name), 0)
        _at_least(f"{where}.slices", self.slices, 1)
        for name in ("delay_p99_ns", "delay_max_ns", "wait_share"):
            _at_least(f"{where}.{name}", getattr(self, name), 0)
        if self.delay_p99_ns is not None and self.delay_max_ns is not None:
            _ordered(where, [("delay_p99_ns", self.delay_p99_ns), ("delay_max_ns", self.delay_max_ns)])
        if len(self.next_checksums) != self.slices - 1:
            raise ResultError(
                f"{where}.next_checksums: {len(self.next_checksums)} for {self.slices} slices (expected {self.slices - 1})"
            )


@dataclass
class Capacity:
    """A phase's capacity under its SLO: the highest target rate whose probes met every
    bound, the achieved rate within 5 % and the backlog bounded (docs/capacity.md).

    ``capacity`` is the mean of the searches' capacities with its 95 % interval (``ci_low``,
    ``ci_high``; None for one search); None when a search failed even at the range's lowest
    rate. ``at_ceiling``: a search passed at the range's highest rate (the capacity is at
    least that). ``limited_by``: what failed the lowest failing probe above the capacity."""

    slo_ns: dict[str, int]  # percentile -> bound (ns)
    capacities: list[float | None]
    capacity: float | None
    ci_low: float | None = None
    ci_high: float | None = None
    limited_by: str | None = None
    at_ceiling: bool = False
    warmup_ops: int = 0
    judged_ops: int = 0
    probe_bound: int = 0  # the most probes one search may run
    rate_range: list[float] = field(default_factory=list)
    probes: list[CapacityProbe] = field(default_factory=list)
    #: The store's warm-up before the searches (a read-only phase: one closed-loop pass over
    #: its stream, not judged; 0 for a phase that writes, whose operations change the store).
    store_warmup_ops: int = 0
    store_warmup_seconds: float = 0.0
    #: The least probe duration (``capacity_probe_seconds``; 0: a probe is one slice).
    probe_seconds: float = 0.0
    #: Set when a rate passed above a rate that failed (its verdict confirmed): the
    #: response time is not monotonic in the rate, which the search assumes; says which.
    not_monotonic: str | None = None
    #: Set when a search stopped at a rate whose failure was the client's (a probe's
    #: ``inconclusive``): the reason. ``capacity`` is then None (no capacity was measured),
    #: ``inconclusive_from`` the lowest such rate, ``lower_bound`` the highest rate that
    #: passed before it (the capacity is at least that; None: none passed).
    inconclusive: str | None = None
    inconclusive_from: float | None = None
    lower_bound: float | None = None
    #: The run stopped (Ctrl-C, a timeout, an engine fault) during the search: ``probes``
    #: are those completed, ``capacities`` the searches that ended.
    interrupted: bool = False

    @property
    def measured(self) -> bool:
        """A capacity every search measured: neither inconclusive, interrupted nor below the range."""
        return self.capacity is not None and self.inconclusive is None and not self.interrupted

    @property
    def slices_taken(self) -> int:
        """The slices of the stream every probe together took (a writing phase's rest starts after)."""
        return sum(p.slices for p in self.probes)

    @property
    def slice_checksums(self) -> list[str | None]:
        """Every slice's checksum in stream order (a writing phase's fold)."""
        return [c for p in self.probes for c in p.checksums]

    def check(self, where: str) -> None:
        for name in (
            "capacity", "ci_low", "ci_high", "warmup_ops", "judged_ops", "probe_bound",
            "store_warmup_ops", "store_warmup_seconds", "probe_seconds", "inconclusive_from", "lower_bound",
        ):  # fmt: skip
            _at_least(f"{where}.{name}", getattr(self, name), 0)


#: One ``latency_over_time`` slice: (t_s, ops, p50_ns, p99_ns, max_ns).
OVER_TIME_FIELDS = ("t_s", "ops", "p50_ns", "p99_ns", "max_ns")


#: One ``cost.series`` row, per second of the phase: (t_s, client CPU s, engine-thread CPU s,
#: server CPU s, device bytes read, device bytes written); a figure not measured is 0 there
#: and named in ``not_measured``.
COST_SERIES_FIELDS = ("t_s", "client_cpu_s", "engine_cpu_s", "server_cpu_s", "read_bytes", "write_bytes")

#: Why a phase has no server figures when the engine runs in the client process: its
#: device bytes are then the client's alone (PhaseCost.write_bytes).
NO_SERVER = "no server: the engine runs in the client process"

#: A store on disk smaller than this share of the logical bytes it holds, or a phase whose
#: device writes are under this share of the logical bytes it wrote, has not put the data
#: on disk yet: the engine holds it in memory (an LSM's memtable before its first flush;
#: YCSB A on lsm at 1k records: 784 B on disk for 1 MB of records, write amplification
#: 0.00). Such a storage or amplification figure measures nothing about the data, so it is
#: shown "not on disk yet" and never charted or ranked (as 0.00, it read as the best).
#: One twentieth: well below any compression seen here (the LSM's zlib log holds the
#: profile store's inserts in 0.21 of their logical bytes, docs/results/cost.md).
ON_DISK_SHARE = 0.05


def off_disk(device_bytes: int | None, logical_bytes: int | None) -> bool:
    """Whether ``device_bytes`` (a store's size, or the bytes a phase wrote to the device)
    fall short of the ``logical_bytes`` they stand for by more than any compression: the
    data is not on disk yet (:data:`ON_DISK_SHARE`). False when either is not measured."""
    return device_bytes is not None and bool(logical_bytes) and device_bytes < ON_DISK_SHARE * (logical_bytes or 0)


#: The figures a ``PhaseCost`` may list in ``not_measured``.
COST_FIGURES = ("client_cpu", "engine_cpu", "server_cpu", "client_io", "server_io", "counters", "storage")


@dataclass
class NodeCost:
    """One node's part of a phase's server cost, where the server is several nodes on this
    machine (a Galera cluster: every node applies every write, so replication's cost shows
    node by node, also on a node no worker talks to). ``pids``: the node's server processes
    measured. A figure not measured is None and ``not_measured`` says why, never 0."""

    pids: list[int] = field(default_factory=list)
    cpu_seconds: float | None = None
    read_bytes: int | None = None
    write_bytes: int | None = None
    engine_written: dict[str, int] = field(default_factory=dict)  # the node's own counters
    engine_counters: dict[str, float] = field(default_factory=dict)
    not_measured: dict[str, str] = field(default_factory=dict)  # figure (COST_FIGURES) -> why

    def check(self, where: str) -> None:
        for name in ("cpu_seconds", "read_bytes", "write_bytes"):
            _at_least(f"{where}.{name}", getattr(self, name), 0)
        for key, value in self.engine_written.items():
            _at_least(f"{where}.engine_written.{key}", value, 0)
        _known_figures(where, self.not_measured)


def _known_figures(where: str, not_measured: Mapping[str, str]) -> None:
    unknown = set(not_measured) - set(COST_FIGURES)
    if unknown:
        raise ResultError(f"{where}.not_measured: unknown figure {sorted(unknown)[0]!r}; known: {', '.join(COST_FIGURES)}")


@dataclass
class PhaseCost:
    """What a phase cost beyond its time (docs/result-schema.md, "PhaseCost"): CPU seconds
    of the client process, of the engine's own threads in it and of the server's processes;
    device bytes read and written by those processes; the engine's own counters; the
    logical bytes the workload wrote and kept. A figure that could not be measured is None
    here and ``not_measured`` says why, never a 0."""

    client_cpu_seconds: float | None = None  # this process, every thread (the engine's in-process threads too)
    engine_cpu_seconds: float | None = None  # the engine's own background threads (part of the client's)
    server_cpu_seconds: float | None = None  # the server's processes on this machine
    client_read_bytes: int | None = None  # at the device (/proc/PID/io read_bytes)
    client_write_bytes: int | None = None
    server_read_bytes: int | None = None
    server_write_bytes: int | None = None
    #: What the workload wrote in the phase, in docs/workload.md's encoding (write phases).
    logical_write_bytes: int | None = None
    #: The live data's logical size after the phase, and the storage measured then (after
    #: write phases and settle): space amplification is their ratio.
    logical_live_bytes: int | None = None
    storage_bytes: int | None = None
    engine_written: dict[str, int] = field(default_factory=dict)  # the engine's own bytes written, by what
    engine_counters: dict[str, float] = field(default_factory=dict)  # its other counters' differences
    stall_seconds: float | None = None  # write stalls the engine reports
    not_measured: dict[str, str] = field(default_factory=dict)  # figure (COST_FIGURES) -> why
    #: What a measured figure leaves out (a server process that ended during the phase).
    notes: list[str] = field(default_factory=list)
    series: list[list[float]] | None = None  # per second: COST_SERIES_FIELDS
    #: A cluster's nodes, each its own part of the server figures (endpoint -> NodeCost);
    #: empty for one server or none. The server figures above are their sum.
    server_nodes: dict[str, NodeCost] = field(default_factory=dict)

    def check(self, where: str) -> None:
        for name in (
            "client_cpu_seconds", "engine_cpu_seconds", "server_cpu_seconds", "client_read_bytes",
            "client_write_bytes", "server_read_bytes", "server_write_bytes", "logical_write_bytes",
            "logical_live_bytes", "storage_bytes", "stall_seconds",
        ):  # fmt: skip
            _at_least(f"{where}.{name}", getattr(self, name), 0)
        for key, value in self.engine_written.items():
            _at_least(f"{where}.engine_written.{key}", value, 0)
        _known_figures(where, self.not_measured)
        for i, row in enumerate(self.series or ()):
            if len(row) != len(COST_SERIES_FIELDS):
                raise ResultError(f"{where}.series[{i}]: expected {len(COST_SERIES_FIELDS)} numbers, got {len(row)}")
            for name, number in zip(COST_SERIES_FIELDS, row, strict=True):
                _at_least(f"{where}.series[{i}].{name}", number, 0)

    # --- derived (the report and compare format these) --------------------------------
    def _sum(self, client: int | None, server: int | None) -> int | None:
        """Client + server; without a server (``NO_SERVER``) the client's alone. A part
        not measured makes the total not measured: the client's bytes alone would pass for
        the run's (a remote server's write amplification as a few hundredths)."""
        if client is None:
            return None
        if server is None:
            return client if self.not_measured.get("server_io") == NO_SERVER else None
        return client + server

    @property
    def write_bytes(self) -> int | None:
        """Device bytes written by every process doing the work (client and server)."""
        return self._sum(self.client_write_bytes, self.server_write_bytes)

    @property
    def read_bytes(self) -> int | None:
        return self._sum(self.client_read_bytes, self.server_read_bytes)

    @property
    def write_amplification(self) -> float | None:
        """Device bytes written over the logical bytes the workload wrote (write phases);
        None when the data did not reach the device (:func:`off_disk`)."""
        w = self.write_bytes
        if w is None or not self.logical_write_bytes or off_disk(w, self.logical_write_bytes):
            return None
        return w / self.logical_write_bytes

    @property
    def space_amplification(self) -> float | None:
        """Storage over the live data's logical size (after write phases and settle); None
        when the store does not hold the data on disk yet (:func:`off_disk`)."""
        if self.storage_bytes is None or not self.logical_live_bytes or self.storage_off_disk:
            return None
        return self.storage_bytes / self.logical_live_bytes

    @property
    def writes_off_disk(self) -> bool:
        """The phase wrote its logical bytes but (almost) nothing reached the device."""
        return off_disk(self.write_bytes, self.logical_write_bytes)

    @property
    def storage_off_disk(self) -> bool:
        """The store measured after the phase is far smaller than the live data it holds."""
        return off_disk(self.storage_bytes, self.logical_live_bytes)

    def per_op_us(self, seconds: float | None, ops: int) -> float | None:
        """CPU ``seconds`` per operation, in microseconds (None without operations)."""
        return seconds / ops * 1e6 if seconds is not None and ops > 0 else None


@dataclass
class KindFigures:
    """One operation kind of a mixed phase: its operations and their latency (service
    time, ns; None where the operations ran in other processes)."""

    ops: int
    latency: LatencyStats | None = None

    def check(self, where: str) -> None:
        _at_least(f"{where}.ops", self.ops, 0)


@dataclass
class PhaseMix:
    """A mixed phase (YCSB's): per operation kind (read, update, insert, scan,
    readmodifywrite) its figures, and the skew that was run: the share of the phase's
    operations on the hottest 0.1 %, 1 % and 10 % of the keys (``"0.1%"`` -> share, 0..1)."""

    kinds: dict[str, KindFigures]
    hot_shares: dict[str, float]

    def check(self, where: str) -> None:
        for key, share in self.hot_shares.items():
            if not 0 <= share <= 1:
                raise ResultError(f"{where}.hot_shares.{key}: {share!r} is not a share between 0 and 1")


@dataclass
class PhasePrefix:
    """A time-bounded phase (``duration``): it stopped at the first batch boundary after
    its duration, so its engines may each have run a different number of its operations.
    ``complete``: the longest prefix of the phase's stream that ran whole (the phase's
    ``checksum`` is that prefix's); ``checkpoints[j]``: the checksum of the first
    ``(j + 1) * every`` operations, for every such count up to ``complete``. Engines are
    compared at the shortest ``complete`` among them (asyncbench.measure.correctness)."""

    duration_seconds: float
    operations: int  # the phase's stream: its upper bound
    complete: int
    every: int
    checkpoints: list[str] = field(default_factory=list)

    @property
    def stopped(self) -> bool:
        """The duration ended the phase before its last operation."""
        return self.complete < self.operations

    def at(self, count: int, checksum: str | None) -> str | None:
        """The checksum of the stream's first ``count`` operations, if this phase has it
        (``checksum``: the phase's, at ``complete``)."""
        if count == self.complete:
            return checksum
        if count > 0 and count % self.every == 0 and count // self.every <= len(self.checkpoints):
            return self.checkpoints[count // self.every - 1]
        return None

    def check(self, where: str) -> None:
        _at_least(f"{where}.duration_seconds", self.duration_seconds, 0)
        _at_least(f"{where}.operations", self.operations, 0)
        _at_least(f"{where}.every", self.every, 1)
        _at_least(f"{where}.complete", self.complete, 0)
        _at_most(f"{where}.complete", self.complete, self.operations)
        if len(self.checkpoints) != self.complete // self.every:
            raise ResultError(
                f"{where}.checkpoints: {len(self.checkpoints)} checksums; {self.complete:_d} operations "
                f"every {self.every:_d} make {self.complete // self.every}"
            )
        for i, cs in enumerate(self.checkpoints):
            if not (len(cs) == 16 and all(c in "0123456789ABCDEF" for c in cs)):
                raise ResultError(f"{where}.checkpoints[{i}]: {cs[:40]!r} is not a 16-digit hex checksum")


@dataclass
class PhaseResult:
    index: int  # position in the plan: the phase's identity within a run
    name: str
    kind: PhaseKind  # the phase table's row (stored as its name)
    action: Action  # the row's Action and Group, kept in the JSON for other readers
    group: Group
    ops: int
    seconds: float
    checksum: str | None = None
    stream: str | None = None
    count: int | None = None
    post_update: bool = False
    skipped: bool = False  # stabilize for an engine that needs none
    #: Reopen only: closing the store before it, timed apart; ``seconds`` is the open alone,
    #: as the reference times reopen (it does not time the dispose).
    close_seconds: float | None = None
    #: Per-operation latency (ns): count, min, p50, p90, p99, p99_9, max, mean, and
    #: ``histogram``, the HdrHistogram in its standard compressed base64 encoding.
    latency: LatencyStats | None = None
    #: Every operation phase: (t_s, ops, p50_ns, p99_ns, max_ns) per time slice of a width
    #: chosen from the phase's length (1 s, 100 ms or 10 ms; ``t_s`` the slice's end, slices
    #: without an operation left out), to show stalls. Results from before it: write phases
    #: only, in 100 slices of the phase.
    latency_over_time: list[list[float]] | None = None
    retries: int = 0  # writes the engine retried after a transient conflict (Engine.take_retries)
    #: Scaled-out runs (``--processes``/``--cluster``) only: how far apart the client
    #: processes released their workers (the phase is timed from the first release), and
    #: the client CPU seconds every process spent in the phase, summed.
    release_skew_seconds: float | None = None
    client_cpu_seconds: float | None = None
    #: Under a target rate only: the target, response times and scheduling error.
    open_loop: OpenLoop | None = None
    #: Every operation phase, per second from its start: (t_s, ops, p50_ns, p99_ns, max_ns)
    #: of the operations that ended in that second (``t_s`` its end; zeros in a second
    #: without any), service time. Results from before it load with None.
    time_series: list[list[float]] | None = None
    #: What the phase cost beyond its time: CPU, device bytes, engine counters (PhaseCost);
    #: None in older results and in scaled-out runs.
    cost: PhaseCost | None = None
    #: A capacity search's phase only (``capacity = true``): its capacity and probes.
    capacity: Capacity | None = None
    #: A mixed phase only: per operation kind counts and latency, and the skew run.
    mix: PhaseMix | None = None
    #: A time-bounded phase only (``duration``): how far its stream ran whole, and the
    #: checksums at its prefixes; ``ops`` is what ran, ``checksum`` the whole prefix's.
    prefix: PhasePrefix | None = None
    #: Every operation phase run in one process: the engine's holds of the event loop
    #: (StallRecord); None in older results and in scaled-out runs.
    stalls: StallRecord | None = None

    @property
    def ops_per_s(self) -> float:
        return self.ops / self.seconds if self.seconds > 0 else 0.0

    @property
    def rate_missed(self) -> bool:
        """A rate was set and the achieved rate fell more than 5 % below it."""
        return self.open_loop is not None and self.ops > 0 and not self.open_loop.met_by(self.ops_per_s)

    def check(self, where: str) -> None:
        _check_name(f"{where}.name", self.name)
        if self.stream is not None and self.stream not in self.kind.streams:
            raise ResultError(f"{where}.stream: {self.stream!r} is not a stream of phase kind {self.kind.kind!r}")
        if self.group is Group.QUERY and self.kind.mixes:
            self.group = self.kind.group  # written when a mixed phase was in the query group
        if self.action is not self.kind.action or self.group is not self.kind.group:
            raise ResultError(
                f"{where}: action {self.action.value!r} and group {self.group.value!r} are not those of "
                f"phase kind {self.kind.kind!r} ({self.kind.action.value!r}, {self.kind.group.value!r})"
            )
        for name in ("index", "ops", "seconds", "close_seconds", "retries", "release_skew_seconds", "client_cpu_seconds"):
            _at_least(f"{where}.{name}", getattr(self, name), 0)
        _at_least(f"{where}.count", self.count, 1)
        if self.ops > 0 and not self.seconds > 0:  # a rate of ops / 0 s is no measurement
            raise ResultError(f"{where}.seconds: {self.seconds:g} seconds for {self.ops} operations; expected a positive time")
        _check_slices(f"{where}.latency_over_time", self.latency_over_time)
        _check_slices(f"{where}.time_series", self.time_series)


def _check_slices(where: str, rows: list[list[float]] | None) -> None:
    """Each row of a latency-over-time list has the five non-negative numbers of
    :data:`OVER_TIME_FIELDS`."""
    for i, row in enumerate(rows or ()):
        if len(row) != len(OVER_TIME_FIELDS):
            raise ResultError(
                f"{where}[{i}]: expected {len(OVER_TIME_FIELDS)} numbers ({', '.join(OVER_TIME_FIELDS)}), got {len(row)}"
            )
        for name, value in zip(OVER_TIME_FIELDS, row, strict=True):
            _at_least(f"{where}[{i}].{name}", value, 0)
        _ordered(f"{where}[{i}]", list(zip(OVER_TIME_FIELDS[2:], row[2:], strict=True)))


def _ordered(where: str, values: list[tuple[str, float]]) -> None:
    """Each named value is at most the next (percentiles rise to the maximum)."""
    for (name, value), (next_name, next_value) in zip(values, values[1:], strict=False):
        if value > next_value:
            raise ResultError(f"{where}.{name}: {value!r} is above {next_name} {next_value!r}")


@dataclass
class ClientProcess:
    """One client process of a scaled-out run: where it ran, which of the P workers it
    hosted and its own peak memory (each process samples itself)."""

    host: str
    pid: int
    workers: list[int]
    peak_rss_bytes: int | None = None

    def check(self, where: str) -> None:
        _at_least(f"{where}.peak_rss_bytes", self.peak_rss_bytes, 0)
        for i, w in enumerate(self.workers):
            _at_least(f"{where}.workers[{i}]", w, 0)


#: The detail of an engine a stopped run never started (status ``interrupted``, no phases):
#: listed so the console, report and charts name every engine the plan had (issue 39).
NOT_STARTED = "not started"


@dataclass
class DurabilityRow:
    """What one crash cost (docs/durability.md): the crashed phase and point, what the store
    held when opened again, record by record against the plan, and the engine's promise.

    ``lost_seconds``: the window of acknowledged work lost, from the start of the batch
    holding the earliest lost acknowledged operation to the crash (None: nothing lost, or
    lost writes of no operation of the crashed phase)."""

    phase: str
    how: str
    after: int  # the crash point: operations to acknowledge before the crash
    acknowledged: int  # operations the engine acknowledged before the crash
    crash_seconds: float  # from the phase's first operation to the crash
    opened: bool  # the store opened again
    open_error: str | None = None
    checked: int = 0  # records read back
    acknowledged_present: int = 0
    acknowledged_lost: int = 0
    unacknowledged_present: int = 0
    torn: int = 0
    lost_seconds: float | None = None
    promise: str = ""  # the engine's stated sync, e.g. "per write"
    synced_commits: bool = False  # the engine promises every acknowledged write survives a crash
    torn_examples: list[str] = field(default_factory=list)

    def check(self, where: str) -> None:
        for name in ("after", "acknowledged", "checked", "acknowledged_present", "acknowledged_lost",
                     "unacknowledged_present", "torn", "crash_seconds", "lost_seconds"):  # fmt: skip
            _at_least(f"{where}.{name}", getattr(self, name), 0)


@dataclass
class EngineResult:
    engine: str
    status: Status = Status.OK
    phase: str | None = None  # where a non-ok status happened (None: before or after the phases)
    detail: str | None = None  # the error, the timeout, the signal
    #: A failure raised as an exception: its whole Python traceback (``detail`` is its last
    #: line only), so the frame that raised is never lost; it travels in the result file
    #: from an isolated engine's child process to the parent, and the log's ``engine_end``
    #: and the report's ``.traceback`` file carry it (issue 51).
    traceback: str | None = None
    phases: list[PhaseResult] = field(default_factory=list)
    run_seconds: float = 0.0
    storage_bytes: int | None = None
    peak_rss_bytes: int | None = None
    initial_rss_bytes: int | None = None
    #: Sampled peaks of the RSS's anonymous pages (the process's own memory) and of its
    #: file-backed ones (mapped files), where the kernel tells them apart.
    peak_rss_anon_bytes: int | None = None
    peak_rss_file_bytes: int | None = None
    facts: EngineFacts = field(default_factory=EngineFacts)
    notes: list[str] = field(default_factory=list)
    repeat: int = 0  # which repeat of this engine (0-based, interleaved A B C A B C ...)
    warmup: bool = False  # a declared warm-up repeat: kept here, left out of the statistics
    #: Scaled-out runs: the client processes in process order (empty: this one process).
    client_processes: list[ClientProcess] = field(default_factory=list)
    #: One row per crash the plan made (``crash`` on a write phase, then ``recover``).
    durability: list[DurabilityRow] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.status is Status.OK

    @property
    def broken(self) -> bool:
        """Failed or timed out: the run as a whole failed."""
        return self.status in (Status.FAILED, Status.TIMED_OUT, Status.RUNNING)

    def live_logical_bytes(self) -> int | None:
        """The live data's logical size after the last phase that measured it (a write
        phase or settle), or None (no cost measured)."""
        return next(
            (p.cost.logical_live_bytes for p in reversed(self.phases) if p.cost and p.cost.logical_live_bytes), None
        )

    @property
    def storage_off_disk(self) -> bool:
        """The final storage figure is far below the live data the store holds: the data is
        not on disk yet (:func:`off_disk`), so the figure is no store size to compare. Never
        for an engine that stores nothing on disk (the memory engine): its 0 B is its size."""
        if self.facts.storage_method is StorageMethod.NONE:
            return False
        return off_disk(self.storage_bytes, self.live_logical_bytes())

    def set_status(self, status: Status, phase: str | None = None, detail: str | None = None) -> None:
        self.status, self.phase, self.detail = status, phase, detail

    def fail_with(self, phase: str | None, exc: BaseException) -> None:
        """Failed in ``phase`` by ``exc``: its one line as the detail, its whole traceback
        (with its causes) kept beside it, so the frame that raised it can be found."""
        self.set_status(Status.FAILED, phase, f"{type(exc).__name__}: {exc}")
        self.traceback = "".join(format_exception(exc))

    def status_text(self) -> str:
        """One human line for the console and the report."""
        where = self.phase or "start-up"
        if self.status is Status.OK:
            return "ok"
        if self.status is Status.FAILED:
            return f"Failed: {where}: {self.detail}"
        if self.status is Status.TIMED_OUT:
            return f"Timed out after {self.detail}; interrupted: {where}"
        if self.status is Status.INTERRUPTED and self.detail == NOT_STARTED and not self.phases:
            return "Not started: the run was interrupted before it"
        if self.status is Status.INTERRUPTED:
            return f"Interrupted during {where}" + (f" ({self.detail})" if self.detail else "")
        if self.status is Status.SKIPPED:
            return f"Skipped: {self.detail}"
        return f"Running: {where}"

    def phase_at(self, index: int) -> PhaseResult | None:
        """The phase of plan phase ``index`` (the first, as a list scan would find it), or None.

        Why a map: the report asks it for every plan phase of every engine, many times per
        phase, and a scan of the list made rendering quadratic in the phases (1_000 phases:
        40_706 calls, 1.78 s of scans, 0.06 s with the map; ``benchmarks/bench_report_engines.py
        --phases``). The map is not a field (never saved) and is rebuilt when ``phases`` is
        another list or another length (a run appends its phases as it goes)."""
        phases = self.phases
        cached = self.__dict__.get("_phase_map")
        if cached is None or cached[0] is not phases or cached[1] != len(phases):
            by_index: dict[int, PhaseResult] = {}
            for p in phases:
                by_index.setdefault(p.index, p)
            cached = (phases, len(phases), by_index)
            self.__dict__["_phase_map"] = cached
        found: PhaseResult | None = cached[2].get(index)
        return found

    @property
    def final_checksum(self) -> str | None:
        return next((p.checksum for p in self.phases if p.action is Action.VERIFY), None)

    def to_dict(self) -> dict[str, Any]:
        doc: dict[str, Any] = _dump(self)
        return doc

    def to_json(self) -> bytes:
        return orjson.dumps(self.to_dict())

    @classmethod
    def from_dict(cls, doc: Any, workload_name: str) -> EngineResult:
        """An engine's result as :meth:`to_dict` wrote it, its phase kinds those of the
        workload its plan ran (``BenchConfig.workload``)."""
        loaded: EngineResult = _load(cls, doc, "engine", workload(workload_name).phases)
        return loaded

    def check(self, where: str) -> None:
        for name in (
            "run_seconds",
            "storage_bytes",
            "peak_rss_bytes",
            "initial_rss_bytes",
            "peak_rss_anon_bytes",
            "peak_rss_file_bytes",
            "repeat",
        ):
            _at_least(f"{where}.{name}", getattr(self, name), 0)
        _check_engine_name(f"{where}.engine", self.engine)
        seen: set[int] = set()
        for i, p in enumerate(self.phases):
            if p.index in seen:
                raise ResultError(f"{where}.phases[{i}].index: phase {p.index} appears twice")
            seen.add(p.index)


@dataclass
class Gates:
    """What the run was asked to judge, kept with its figures so ``report`` draws the same
    verdicts (asyncbench.measure.verdicts) from the result alone: the latency bounds
    (``--slo``/``[slo]``: percentile -> ns, for every bounded phase, and per phase kind), the
    rate check (``--check-rate``) and the capacities required (``--require-rate``)."""

    slo_ns: dict[str, int] = field(default_factory=dict)
    slo_kinds_ns: dict[str, dict[str, int]] = field(default_factory=dict)
    check_rate: bool = False
    require_rate: dict[str, float] = field(default_factory=dict)

    def bounds_for(self, kind: str) -> dict[str, int]:
        """The bounds a phase of ``kind`` is judged by: its kind's own, else the run's."""
        return self.slo_kinds_ns.get(kind) or self.slo_ns

    @property
    def any(self) -> bool:
        return bool(self.slo_ns or self.slo_kinds_ns or self.check_rate or self.require_rate)

    def check(self, where: str) -> None:
        for key, bounds in [("slo_ns", self.slo_ns), *((f"slo_kinds_ns.{k}", b) for k, b in self.slo_kinds_ns.items())]:
            for name, ns in bounds.items():
                if name not in PERCENTILES:
                    raise ResultError(f"{where}.{key}.{name}: not a percentile ({', '.join(PERCENTILES)})")
                _at_least(f"{where}.{key}.{name}", ns, 1)
        for kind, rate in self.require_rate.items():
            if not rate > 0:
                raise ResultError(f"{where}.require_rate.{kind}: expected a positive rate, got {rate!r}")


@dataclass
class VerdictRecord:
    """One verdict as the result JSON carries it (asyncbench.measure.verdicts draws it from
    the figures and :class:`Gates`; written with the result for readers of the JSON, drawn
    again by ``report``): PASS, FAIL or INCONCLUSIVE, with its reason."""

    engine: str
    judged: str  # engine, checksums, slo, rate, capacity
    outcome: str  # PASS, FAIL, INCONCLUSIVE
    reason: str
    phase: str | None = None
    index: int | None = None
    repeat: int = 0
    gating: bool = True

    def check(self, where: str) -> None:
        if self.outcome not in ("PASS", "FAIL", "INCONCLUSIVE"):
            raise ResultError(f"{where}.outcome: {self.outcome!r} is not PASS, FAIL or INCONCLUSIVE")


@dataclass
class ThroughputRow:
    """One engine's throughput over the measured repeats of one operation phase (ops/s)."""

    index: int  # the phase's position in the plan
    name: str
    n: int
    median: float
    min: float
    max: float
    mean: float
    stdev: float | None
    ci95_low: float | None
    ci95_high: float | None
    spread_pct: float | None  # (max - min) / 2 / median, in percent
    samples: list[float]
    unstable: bool

    def check(self, where: str) -> None:
        for name in ("index", "n", "median", "min", "max", "mean", "stdev", "spread_pct"):
            _at_least(f"{where}.{name}", getattr(self, name), 0)
        if self.n != len(self.samples):
            raise ResultError(f"{where}.n: {self.n} but {len(self.samples)} samples")


@dataclass
class RunResult:
    name: str
    started_utc: str
    profiles: int
    parallelism: int
    seed: int
    limit: int
    batch_size: int
    timeout_seconds: float | None
    counts: dict[str, int]
    phases: list[PlanPhase]  # the plan's phases, in order
    source: str
    environment: dict[str, Any] = field(default_factory=dict)
    engines: list[EngineResult] = field(default_factory=list)
    interrupted: str | None = None
    isolated: bool = False  # each engine ran in its own child process
    repeat: int = 1  # runs per engine; ``engines`` holds every one (EngineResult.repeat)
    warmup: int = 0  # leading repeats left out of the statistics
    #: Per engine, per operation phase: throughput statistics over the measured repeats
    #: (median, min, max, 95% Student-t interval, spread); written with the result.
    throughput: dict[str, list[ThroughputRow]] = field(default_factory=dict)
    #: The workload's compiled kernels were in use; False: the pure-Python fallback ran and
    #: its timings are not comparable with compiled runs.
    accelerated: bool = True
    #: The workload the plan ran (asyncbench.workloads); older results: the profile store.
    workload: str = DEFAULT
    #: What the run was asked to judge (the verdicts' thresholds); none in older results.
    gates: Gates = field(default_factory=Gates)
    #: The verdicts drawn from the figures and ``gates`` when the result was written.
    verdicts: list[VerdictRecord] = field(default_factory=list)
    schema: int = SCHEMA

    @property
    def workload_impl(self) -> Workload:
        """The workload this result ran (its phase kinds, unit, reference tables): this
        result's own, whatever else the process has loaded."""
        return workload(self.workload)

    def to_json(self) -> bytes:
        return orjson.dumps(_dump(self), option=orjson.OPT_INDENT_2)

    def check(self, where: str) -> None:
        """What the field types cannot say: every phase an engine or a throughput row names
        is a phase of this plan, of the same kind."""
        for name in ("profiles", "parallelism", "batch_size", "repeat"):
            _at_least(f"{where}.{name}", getattr(self, name), 1)
        for name in ("limit", "warmup", "timeout_seconds"):
            _at_least(f"{where}.{name}", getattr(self, name), 0)
        for name, high in (
            ("profiles", MAX_PROFILES),
            ("parallelism", MAX_PARALLELISM),
            ("timeout_seconds", MAX_TIMEOUT_SECONDS),
        ):  # the plan reader's bounds: no run could have recorded more
            _at_most(f"{where}.{name}", getattr(self, name), high)
        _check_started(f"{where}.started_utc", self.started_utc)
        for key, items, most in (("engines", self.engines, MAX_RESULT_ENGINES), ("phases", self.phases, MAX_RESULT_PHASES)):
            if len(items) > most:
                raise ResultError(f"{where}.{key}: {len(items):_d} entries, more than the {most:_d} a result may hold")
        for engine in self.throughput:
            _check_engine_name(f"{where}.throughput", engine)
        for key, value in self.counts.items():
            _at_least(f"{where}.counts.{key}", value, 0)
        for i, e in enumerate(self.engines):
            for j, p in enumerate(e.phases):
                at = f"{where}.engines[{i}].phases[{j}]"
                if p.index >= len(self.phases):
                    raise ResultError(f"{at}.index: {p.index} is not a phase of the plan ({len(self.phases)} phases)")
                if p.kind is not self.phases[p.index].kind:
                    raise ResultError(
                        f"{at}.kind: {p.kind.kind!r}, but plan phase {p.index} is {self.phases[p.index].kind.kind!r}"
                    )
        for engine, rows in self.throughput.items():
            for j, row in enumerate(rows):
                if row.index >= len(self.phases):
                    raise ResultError(
                        f"{where}.throughput.{engine}[{j}].index: {row.index} is not a phase of the plan"
                    )

    @classmethod
    def from_json(cls, data: bytes) -> RunResult:
        if len(data) > MAX_RESULT_BYTES:
            raise ResultError(f"{len(data):_d} bytes, more than the {MAX_RESULT_BYTES:_d} a result may have")
        try:
            doc = load_json(data)  # a key twice in one object is refused, not resolved by the last
        except ValueError as exc:
            raise ResultError(f"not JSON as asyncbench writes it ({exc})") from None
        if not isinstance(doc, dict):
            raise ResultError(f"not a result object (a JSON {type(doc).__name__})")
        schema = doc.get("schema")
        if schema != SCHEMA:
            raise ResultError(
                f"result schema {schema!r} is not the schema this asyncbench reads ({SCHEMA}); "
                "re-run the benchmark with this version"
            )
        name = doc.get("workload", DEFAULT)
        if not isinstance(name, str) or name not in WORKLOADS:
            raise ResultError(f"result.workload: unknown workload {name!r}; known: {', '.join(sorted(WORKLOADS))}")
        for key, most in (("engines", MAX_RESULT_ENGINES), ("phases", MAX_RESULT_PHASES)):
            items = doc.get(key)  # counted before anything is built from them (cost grows with them)
            if isinstance(items, list) and len(items) > most:
                raise ResultError(f"result.{key}: {len(items):_d} entries, more than the {most:_d} a result may hold")
        loaded: RunResult = _load(cls, doc, "result", workload(name).phases)  # its own workload's kinds
        return loaded

    def failed(self) -> bool:
        return any(e.broken for e in self.engines)

    def skipped(self) -> list[EngineResult]:
        """Engines that did not run here (an optional engine whose library or server is absent)."""
        return [e for e in self.engines if e.status is Status.SKIPPED]

    def without_skipped(self) -> RunResult:
        """This run with skipped engines left out: tables and charts show only engines that
        ran, and the report says once, in one line, which were skipped."""
        gone = {e.engine for e in self.skipped()}
        env = dict(self.environment)
        if gone and isinstance(env.get("engine_versions"), dict):  # their "unavailable" rows too
            env["engine_versions"] = {
                k: v for k, v in env["engine_versions"].items() if k.split(":", 1)[0] not in gone
            }
        return dataclasses.replace(
            self, engines=[e for e in self.engines if e.status is not Status.SKIPPED], environment=env
        )


def exit_code(runs: list[RunResult], checksums_agree: bool, interrupted: bool) -> int:
    """The program's one exit-code rule: 130 interrupted, 1 a failure, timeout or checksum
    mismatch, else 0 (bad input, 2, is decided before anything runs)."""
    if interrupted:
        return EXIT_INTERRUPTED
    if not checksums_agree or any(r.failed() for r in runs):
        return EXIT_FAILED
    return EXIT_OK


# --- typed loading of the dataclass tree (one generic reader, no hand-listed fields) -----
#
# Hand-written rather than msgspec/pydantic/cattrs: the types are plain dataclasses shared
# with the runner, every error must name the file's key path in our words, and what a
# library would add (types, unknown and missing keys) is the easy part; the checks that
# matter here (a histogram decodes, a phase index is a plan phase of the same kind) are
# each model's own ``check(where)``, run right after it is built.


def _at_least(where: str, value: float | None, low: float) -> None:
    if value is not None and not value >= low:
        raise ResultError(f"{where}: {value!r} is below {low:g}")


def _at_most(where: str, value: float | None, high: float) -> None:
    if value is not None and not value <= high:
        raise ResultError(f"{where}: {value!r} is above {high:g}")


#: No result of this tool was written before this day (the schema it reads is newer).
EARLIEST_START = datetime(2020, 1, 1, tzinfo=UTC)
#: Clocks disagree a little between machines; a run starting further ahead is not a run.
CLOCK_SLACK = timedelta(days=1)


def _check_name(where: str, name: str) -> None:
    """A phase name as a run records it: at most MAX_RESULT_NAME_CHARS printable
    characters (no NUL, newline or other control character)."""
    if len(name) > MAX_RESULT_NAME_CHARS:
        raise ResultError(
            f"{where}: {len(name):_d} characters, more than the {MAX_RESULT_NAME_CHARS} a name may have"
        )
    problem = check_printable(name)
    if problem is not None:
        raise ResultError(f"{where}: {name[:40]!r}: {problem}")


def _check_engine_name(where: str, name: str) -> None:
    """An engine name as the plan reader allows it: one plain path component (no ``/``,
    ``../``, NUL or newline), at most MAX_NAME_CHARS characters."""
    if len(name) > MAX_NAME_CHARS or not ENGINE_NAME.fullmatch(name):
        raise ResultError(
            f"{where}: engine name {name[:40]!r} is not a plain name (letters, digits, '_', '-', '.', "
            f"starting with a letter or digit, at most {MAX_NAME_CHARS} characters)"
        )


def _check_started(where: str, text: str) -> None:
    """``started_utc`` is an ISO 8601 time with its UTC offset, between the tool's first
    results and now (a day of clock slack)."""
    try:
        when = datetime.fromisoformat(text)
    except ValueError:
        raise ResultError(f"{where}: {text!r} is not an ISO 8601 time (such as 2026-12-03T16:47:08+00:00)") from None
    if when.tzinfo is None:
        raise ResultError(f"{where}: {text!r} has no UTC offset (such as +00:00)")
    if when < EARLIEST_START:
        raise ResultError(f"{where}: {text!r} is before {EARLIEST_START:%Y-%m-%d}: not a time a run started")
    if when > datetime.now(UTC) + CLOCK_SLACK:
        raise ResultError(f"{where}: {text!r} is in the future: not a time a run started")


@functools.cache
def _hints(tp: Any) -> dict[str, Any]:
    return typing.get_type_hints(tp)  # resolving the annotations is the loader's slowest step


def _dump(value: Any) -> Any:
    """The model as JSON-ready values: the inverse of :func:`_load` (a phase kind is its name)."""
    if isinstance(value, PhaseKind):
        return value.kind
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _dump(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, (list, tuple)):
        return [_dump(v) for v in value]
    if isinstance(value, dict):
        return {k: _dump(v) for k, v in value.items()}
    return value


#: The phase kinds of a model that holds none (a provenance record): a PhaseKind in it is unknown.
NO_PHASE_KINDS: Mapping[str, PhaseKind] = types.MappingProxyType({})


def load_as(tp: Any, value: Any, where: str, kinds: Mapping[str, PhaseKind] = NO_PHASE_KINDS) -> Any:
    """``value`` (parsed JSON) checked and built as ``tp``; :class:`ResultError` names the key.
    ``kinds``: the phase kinds a phase's ``kind`` names, its own workload's (``Workload.phases``)."""
    return _load(tp, value, where, kinds)


def _load(tp: Any, value: Any, where: str, kinds: Mapping[str, PhaseKind]) -> Any:
    """One value by its type: each shape of type has its own reader below."""
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        return _load_union(tp, value, where, kinds)
    if typing.is_typeddict(tp):
        return _load_typeddict(tp, value, where, kinds)
    if tp is PhaseKind:
        return _load_phase_kind(value, where, kinds)
    if dataclasses.is_dataclass(tp):
        return _load_dataclass(tp, value, where, kinds)
    if origin is list:
        return _load_list(tp, value, where, kinds)
    if origin is dict:
        return _load_dict(tp, value, where, kinds)
    if isinstance(tp, type) and issubclass(tp, Enum):
        return _load_enum(tp, value, where)
    reader = _SCALARS.get(tp)
    if reader is None:
        raise ResultError(f"{where}: cannot read a value of type {tp!r}")
    return reader(tp, value, where)


def _load_union(tp: Any, value: Any, where: str, kinds: Mapping[str, PhaseKind]) -> Any:
    """``X | None`` and other unions: None if allowed, else the first member that reads it
    (the first member's error if none does)."""
    args = typing.get_args(tp)
    if value is None and type(None) in args:
        return None
    errors = []
    for arg in (a for a in args if a is not type(None)):
        try:
            return _load(arg, value, where, kinds)
        except ResultError as exc:
            errors.append(str(exc))
    raise ResultError(errors[0] if errors else f"{where}: unexpected {value!r}")


def _object(value: Any, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ResultError(f"{where}: expected an object, got {type(value).__name__}")
    return value


def _load_typeddict(tp: Any, value: Any, where: str, kinds: Mapping[str, PhaseKind]) -> dict[str, Any]:
    """An open record: its declared keys are checked, others kept."""
    doc = _object(value, where)
    hints = _hints(tp)
    missing = sorted(k for k in tp.__required_keys__ if k not in doc)
    if missing:
        raise ResultError(f"{where}: missing field {missing[0]!r}")
    return {k: _load(hints[k], v, f"{where}.{k}", kinds) if k in hints else v for k, v in doc.items()}


def _load_phase_kind(value: Any, where: str, kinds: Mapping[str, PhaseKind]) -> PhaseKind:
    """A phase kind by its name, a row of the result's own workload's table."""
    if not isinstance(value, str) or value not in kinds:
        raise ResultError(f"{where}: unknown phase kind {value!r}; known: {', '.join(kinds)}")
    return kinds[value]


def _load_dataclass(tp: Any, value: Any, where: str, kinds: Mapping[str, PhaseKind]) -> Any:
    """A model: its fields by their types (no unknown key, no missing required one), then
    the model's own ``check(where)``."""
    doc = _object(value, where)
    cls: Any = tp  # is_dataclass narrowed tp to "a dataclass or an instance"; it is a class here
    _check_field_names(cls, doc, where)
    hints = _hints(cls)
    obj = cls(**{k: _load(hints[k], v, f"{where}.{k}", kinds) for k, v in doc.items()})
    _run_check(obj, where)
    return obj


def _check_field_names(cls: Any, doc: dict[str, Any], where: str) -> None:
    fields = [f for f in dataclasses.fields(cls) if f.init]
    unknown = set(doc) - {f.name for f in fields}
    if unknown:
        raise ResultError(f"{where}: unknown field {sorted(unknown)[0]!r}")
    missing = [
        f.name
        for f in fields
        if f.name not in doc and f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
    ]
    if missing:
        raise ResultError(f"{where}: missing field {missing[0]!r}")


def _run_check(obj: Any, where: str) -> None:
    """The model's own ``check(where)``, if it has one; a lower layer's ValueError (facts
    cannot name ResultError) becomes a ResultError."""
    check = getattr(obj, "check", None)
    if check is None:
        return
    try:
        check(where)
    except ResultError:
        raise
    except ValueError as exc:
        raise ResultError(str(exc)) from None


def _load_list(tp: Any, value: Any, where: str, kinds: Mapping[str, PhaseKind]) -> list[Any]:
    if not isinstance(value, list):
        raise ResultError(f"{where}: expected a list, got {type(value).__name__}")
    (arg,) = typing.get_args(tp)
    return [_load(arg, v, f"{where}[{i}]", kinds) for i, v in enumerate(value)]


def _load_dict(tp: Any, value: Any, where: str, kinds: Mapping[str, PhaseKind]) -> dict[str, Any]:
    doc = _object(value, where)
    _, arg = typing.get_args(tp)
    return {k: _load(arg, v, f"{where}.{k}", kinds) for k, v in doc.items()}


def _load_enum(tp: type[Enum], value: Any, where: str) -> Enum:
    try:
        return tp(value)
    except ValueError:
        raise ResultError(f"{where}: {value!r} is not one of {', '.join(str(m.value) for m in tp)}") from None


def _load_any(_tp: Any, value: Any, _where: str) -> Any:
    return value


def _load_float(_tp: Any, value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ResultError(f"{where}: expected a number, got {value!r}")
    try:
        number = float(value)
    except OverflowError:
        number = math.inf
    if not math.isfinite(number):
        raise ResultError(f"{where}: expected a finite number, got {value!r}")
    return number


def _load_int(_tp: Any, value: Any, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ResultError(f"{where}: expected an integer, got {value!r}")
    return value


def _load_plain(tp: Any, value: Any, where: str) -> Any:
    """A str or a bool: exactly that JSON type."""
    if not isinstance(value, tp):
        raise ResultError(f"{where}: expected {tp.__name__}, got {value!r}")
    return value


#: The readers of the leaf types, by type.
_SCALARS: dict[object, Callable[[Any, Any, str], Any]] = {Any: _load_any, float: _load_float, int: _load_int, str: _load_plain, bool: _load_plain}
