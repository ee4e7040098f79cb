"""The validated plan: ``BenchConfig``, its phases (``PhaseSpec``) and levels (``Level``).

Only data and what is derived from it; the readers that build it live beside it, one module
per table of the plan, so this model is what every layer above imports and reads.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from asyncbench.workload import PlanCounts, Workload
from asyncbench.workloads import DEFAULT as DEFAULT_WORKLOAD
from asyncbench.workloads import workload


def default_engines() -> tuple[str, ...]:
    """The engines a plan without ``engines`` runs: the registry's serverless defaults."""
    from asyncbench.engines import DEFAULT_ENGINES

    engines: tuple[str, ...] = DEFAULT_ENGINES
    return engines



@dataclass(frozen=True)
class CrashPoint:
    """A write phase's ``crash``: the engine's process is killed once ``after`` of the
    phase's operations are acknowledged (``how``: ``kill``, or ``power``: on a filesystem
    that then drops every unsynced write), and a ``recover`` phase checks what survived
    (docs/durability.md)."""

    after: int
    how: str = "kill"
    #: Crash points in one run: ``after * i // points`` for i = 1..points, each on its own
    #: copy of the store as the phase found it (the last on the store itself).
    points: int = 1

    def at(self) -> list[int]:
        """Every crash point, rising; the last is ``after``."""
        return [max(1, self.after * i // self.points) for i in range(1, self.points + 1)]


@dataclass(frozen=True)
class PhaseSpec:
    """One validated ``[[phase]]``: its identity is (position, kind, stream, count)."""

    kind: str
    name: str
    stream: str | None = None
    count: int | None = None
    post_update: bool = False  # consumes a post-update stream, or comes after an update phase
    rate: float | None = None  # target operations per second over all workers (open loop); None: closed loop
    arrivals: str = "uniform"  # spacing of the intended start times under a rate: uniform or poisson
    #: A saturation sweep's level: the plan index of the sweep's first level (its levels
    #: follow it in rising rate); a level after one whose achieved rate dipped is skipped.
    sweep: int | None = None
    #: Draw this phase's latency-over-time chart (write phases and phases at a rate always
    #: get one): the phase's own ``over_time = true`` or the run's ``over_time`` selection.
    over_time: bool = False
    #: Search this phase's capacity under the SLO (asyncbench.run.capacity.capacity) instead of running it once.
    capacity: bool = False
    #: The workload's own keys of this phase (YCSB's proportions and distribution), checked
    #: by the workload (``PhaseParams.phase_params``), as sorted (key, value) pairs.
    params: tuple[tuple[str, object], ...] = ()
    #: Run for at most this many seconds (``duration``): the phase stops at the first batch
    #: boundary after it (its operations are the upper bound); None: to its end.
    duration: float | None = None
    #: Crash the engine's process at this point of the phase (a write phase only), or None.
    crash: CrashPoint | None = None

    @property
    def operations(self) -> int | None:
        """The phase's size when its items are no plan stream: its ``operations`` key (a
        workload states it so: ``PhaseParams.phase_params``), else None."""
        ops = dict(self.params).get("operations")
        return ops if isinstance(ops, int) and not isinstance(ops, bool) else None


@dataclass
class BenchConfig:
    """The validated plan (file plus flags). Every ``[run]`` key is a field of the same name,
    described once in :data:`RUN_KEYS`; what one (profiles, parallelism) level runs at is a
    :class:`Level` from :meth:`levels`."""

    source: str
    name: str = "profile-store"
    #: The registry name of the workload the plan runs (``[run] workload``); the object is
    #: :attr:`workload_impl`. A name, so the config pickles and copies to a child process,
    #: a client process or a Dask worker as plain data, each resolving it in its registry.
    workload: str = DEFAULT_WORKLOAD
    #: The workload's own section (YCSB's ``[ycsb]``), checked by the workload.
    workload_settings: dict[str, object] = field(default_factory=dict)
    profiles: list[int] = field(default_factory=lambda: [2_000_000])
    parallelism: list[int] = field(default_factory=lambda: [1])  # every level, run in order
    seed: int = 570123434
    limit: int = 50
    batch_size: int = 1_000
    timeout_seconds: float | None = 120_000.0  # None (0 in a plan or flag): no timeout
    engines: list[str] = field(default_factory=lambda: list(default_engines()))
    output: Path = Path("results")
    data: Path = Path("data")
    isolate: bool = True  # each engine in its own child process
    #: Draw the report's charts when the run ends (off: JSON, Markdown and HTML without them;
    #: ``asyncbench report`` draws them later from the JSON).
    charts: bool = True
    clean_data: bool = True  # delete each engine's store after its run (the reference's --clean-data)
    reuse_data: bool = False  # run on the store an earlier --keep-data run built (asyncbench.run.reuse.reuse)
    repeat: int = 1  # runs per engine, interleaved A B C A B C ...
    warmup: int = 0  # leading repeats kept in the JSON but left out of the statistics
    processes: int | None = None  # client processes on this host for client/server engines (None: this one)
    cluster: str | None = None  # a Dask scheduler's address: its workers are the client processes
    #: Target rate(s) for every operation phase without one of its own: one rate paces them
    #: (open loop); several rising ones sweep each phase that can repeat (see :func:`pace_phases`).
    rate: list[float] = field(default_factory=list)
    arrivals: str = "uniform"  # how those phases' intended start times are spaced
    #: Phase kinds or names (or ``all``) whose latency-over-time chart is drawn (see :func:`chart_phases`).
    over_time: list[str] = field(default_factory=list)
    #: Capacity under a latency bound (asyncbench.run.capacity.capacity; see :func:`check_capacity`):
    #: search every read, scan, query and mixed phase; the bounds for every phase kind
    #: (percentile -> "2ms"), and per kind from ``[slo.KIND]``; the rates required (gates).
    capacity: bool = False
    slo: dict[str, str] = field(default_factory=dict)
    slo_kinds: dict[str, dict[str, str]] = field(default_factory=dict)
    require_rate: dict[str, float] = field(default_factory=dict)
    #: ``--check-rate``: a phase's missed target rate gates the exit status (its verdict is
    #: shown either way; asyncbench.measure.verdicts).
    check_rate: bool = False
    capacity_repeats: int = 1
    capacity_range: list[float] = field(default_factory=lambda: [100.0, 1_000_000.0])
    #: The least duration of a capacity probe (s; 0: a probe is one slice of its operations).
    capacity_probe_seconds: float = 0.0
    optional_engines: set[str] = field(default_factory=set)  # from "all": skipped when unavailable
    counts: dict[str, int] = field(default_factory=dict)  # explicit overrides only
    engine_settings: dict[str, dict[str, Any]] = field(default_factory=dict)
    phases: list[PhaseSpec] = field(default_factory=list)
    #: How the plan spelled the store's size under [run] (``records``, or ``profiles`` as
    #: before issue 54): a later check that refuses the size names the key the plan has.
    size_key: str = "records"

    @property
    def workload_impl(self) -> Workload:
        """The workload this plan runs: its phase kinds, counts, plan and checksums. Read
        from the plan in hand, never from the process: a process may hold several plans."""
        return workload(self.workload)

    def levels(self) -> list[Level]:
        """Every (profiles, parallelism) level the plan runs, in order: one result each."""
        return [Level(n, p, self.counts_for(n)) for n in self.profiles for p in self.parallelism]

    def level(self, profiles: int, parallelism: int) -> Level:
        """One level of this plan by its numbers (what an isolated engine's process runs)."""
        for level in self.levels():
            if (level.profiles, level.parallelism) == (profiles, parallelism):
                return level
        raise ValueError(f"{profiles:_d} profiles at P{parallelism} is not a level of {self.source}")

    def counts_for(self, profiles: int) -> PlanCounts:
        """Spec defaults rescaled to ``profiles``, with the file's explicit counts on top."""
        return self.workload_impl.counts(profiles, self.limit, self.counts, self.workload_settings)


@dataclass(frozen=True)
class Level:
    """One (profiles, parallelism) level of a plan, derived from it: the settings that
    differ between the runs of one invocation. Everything else is the plan's."""

    profiles: int
    parallelism: int  # P: concurrent workers per phase
    counts: PlanCounts  # the workload's plan counts at this profile count

    @property
    def workers(self) -> int:
        """How many workers a phase runs, so how many handles an engine opens: derived here
        once, handed to the engine (``EngineConfig.workers``) and read back from it."""
        return self.parallelism

