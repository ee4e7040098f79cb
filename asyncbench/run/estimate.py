"""What a plan will cost before it starts: operations, disk space and time.

The reference plan runs for hours and writes gigabytes, so a first-time user must see that
before anything starts. Time and disk come from the newest earlier run of the same plan
(by plan name, scaled to this plan's size), or else from a short calibration run of each
engine at a small profile count; plans too small to matter are not calibrated.
"""

from __future__ import annotations

import dataclasses
import math
import statistics
import tempfile
import textwrap
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from time import perf_counter
from typing import TextIO

from asyncbench import fmt
from asyncbench.config import BenchConfig, PhaseSpec, slo_for
from asyncbench.engine import COST_GROWTH_KNEE, Engine, EngineUnavailable
from asyncbench.engines import engine_class
from asyncbench.fs.inputs import InputError, read_input
from asyncbench.parse import escape_unprintable
from asyncbench.result import EngineResult, RunResult
from asyncbench.run.capacity.capacity import needed_operations, search_seconds, writes
from asyncbench.run.checks import pacing
from asyncbench.run.sequence.plan_operations import running_phases, stream_operations
from asyncbench.slo import make_slo
from asyncbench.workload import Action

__all__ = [
    "ASK_ABOVE_SECONDS",
    "ask_to_start",
    "GROWTH_KNEE",
    "Estimate",
    "MeasuredCost",
    "estimate",
    "phase_operations",
    "plan_operations",
]

#: On a terminal, runs estimated longer than this ask before they start (unless --yes).
ASK_ABOVE_SECONDS = 600.0
#: Profile count of the calibration run, and the plan size (profiles x engines) below
#: which no calibration runs: such a plan finishes in about the time calibrating takes.
CALIBRATION_PROFILES = 20_000
#: Operations of each read, query and update phase of the calibration run: a store of
#: CALIBRATION_PROFILES, few operations on it. A query returns up to ``limit`` rows, and in
#: a store of 1_000 profiles most country/status pairs and created-at ranges hold fewer
#: than that, so its queries cost a fraction of what they cost at scale; at 20_000 they
#: return what they return at 2M.
CALIBRATION_OPS = 1_000
CALIBRATION_STREAMS = (
    "reads", "email_reads", "queries", "updates", "post_reads", "post_email_reads", "post_queries",
)  # fmt: skip
#: Each engine is calibrated up to this many times (as many rounds as fit in
#: ``CALIBRATION_SHARE`` of the plan, ``calibration_rounds``), the engines taking turns
#: (lsm, rocksdb, lsm, rocksdb, ...), and each phase's cost is the median of its rounds
#: (``MeasuredCost.median``). Why:
#: one calibration is a second or two of one moment of the machine; a 2M run printed
#: 0.77x and 0.63x its measured time for lsm and rocksdb on a quiet machine, where the same
#: plan's estimates had been 0.98x and 0.90x (docs/results/scaling.md), so a fast or slow
#: moment at the start carried into the whole estimate. Three rounds spread over the
#: other engines' turns sample three moments, and the median drops the odd one.
CALIBRATION_ROUNDS = 3
#: Calibrate only when it costs at most this share of the plan's operations per engine; a
#: smaller plan (the quick plan: 37_000 calibration operations against 170_000) would
#: spend a fifth of its time estimating itself, so it runs unestimated.
CALIBRATION_SHARE = 0.1
#: How many of the newest result files are read when looking for an earlier run.
HISTORY_FILES = 40
#: How many skipped earlier results the estimate names (the rest are counted).
MAX_WARNINGS = 10


def phase_operations(cfg: BenchConfig, profiles: int) -> list[tuple[PhaseSpec, int]]:
    """Each phase the run will run (:func:`running_phases`) with the operations one engine
    performs in it for ``profiles`` (0 for maintenance phases; verify's four). A capacity
    search runs probes, not its stream: at most its probe bound of probes of the probe
    length per search (:func:`~asyncbench.run.capacity.capacity.needed_operations`) after its stream
    once (the store's warm-up), except a phase that writes, which runs its whole stream once
    (docs/capacity.md)."""
    out = []
    for spec, ops in stream_operations(cfg, profiles):
        if spec.capacity and not writes(cfg.workload_impl.phases[spec.kind]):
            ops += needed_operations(make_slo(slo_for(cfg, spec.kind)), cfg.capacity_range, cfg.capacity_repeats, cfg.capacity_probe_seconds)
        out.append((spec, ops))
    return out


def paced_seconds(cfg: BenchConfig, profiles: int) -> float:
    """The least time one engine's run of ``cfg`` at ``profiles`` takes: the phases at a
    target rate cannot finish sooner than their operations at that rate. Known without
    any measurement, so even a plan too small to calibrate is asked about when a rate of
    5 ops/s makes its reads last for hours. A capacity search: its probes at the highest
    rates they can take (:func:`~asyncbench.run.capacity.capacity.search_seconds`), per search."""
    searches = sum(_search_seconds(cfg, spec, math.inf) for spec in running_phases(cfg) if spec.capacity)
    return searches + sum(
        min(ops / spec.rate, spec.duration or math.inf) for spec, ops in phase_operations(cfg, profiles) if spec.rate
    )


def _search_seconds(cfg: BenchConfig, spec: PhaseSpec, sustained: float) -> float:
    """A searched phase's searches on an engine that sustains ``sustained`` ops/s."""
    slo = make_slo(slo_for(cfg, spec.kind))
    return cfg.capacity_repeats * search_seconds(slo, cfg.capacity_range, sustained, cfg.capacity_probe_seconds)


def plan_operations(cfg: BenchConfig, profiles: int) -> int:
    """Operations one engine performs for ``profiles``: every operation phase's items,
    plus verify's four."""
    return sum(ops for _spec, ops in phase_operations(cfg, profiles))


#: How an engine's cost per operation grows with the store. Up to GROWTH_KNEE profiles it
#: is taken as flat once the phase mix is taken apart (the calibration store is below it,
#: and its queries already return the limit's rows); above it, where the store outgrows
#: the caches, seconds per operation at n profiles are those at the knee times a factor
#: the engine states (``Engine.cost_growth``, fitted from the reference plan:
#: docs/results/estimate.md): (n / GROWTH_KNEE) ** b, or read off its measured points; a
#: name the registry does not know gets the base class's default.
GROWTH_KNEE = COST_GROWTH_KNEE


def growth(engine: str, measured_at: int, profiles: int) -> float:
    """Cost per operation at ``profiles`` over that measured at ``measured_at``."""
    try:
        stated = engine_class(engine).cost_growth
    except (KeyError, EngineUnavailable):
        stated = Engine.cost_growth
    return cost_factor(stated, profiles) / cost_factor(stated, measured_at)


def cost_factor(stated: float | tuple[tuple[int, float], ...], profiles: int) -> float:
    """Cost per operation at ``profiles`` over that at the knee, by an engine's stated
    growth (``Engine.cost_growth``): an exponent, or points joined on a log-log scale
    (the knee's own, 1.0, first), the last stretch's slope carried past the last point.
    Why points: the LSM's cost is about flat from 200_000 to 2_000_000 profiles and then
    steps up with its compressed tree, which no one exponent follows at both sizes."""
    x = math.log(max(profiles, GROWTH_KNEE) / GROWTH_KNEE)
    if isinstance(stated, (int, float)):
        return math.exp(x * stated)
    points = [(0.0, 0.0)] + [(math.log(n / GROWTH_KNEE), math.log(f)) for n, f in stated]
    for i in range(1, len(points)):
        (x0, y0), (x1, y1) = points[i - 1], points[i]
        if x <= x1 or i == len(points) - 1:
            return math.exp(y0 + (x - x0) * (y1 - y0) / (x1 - x0))
    return 1.0  # no points stated: flat


#: Maintenance phases (stabilize, settle, reopen) grow sublinearly with the store: part of
#: their time is fixed (a flush's sync, an open) and the rest follows the data written
#: since the last one, bounded by the memtables. A small share of a run either way.
MAINTENANCE_GROWTH = 0.5


@dataclass
class MeasuredCost:
    """One engine's measured cost at one store size and parallelism, phase by phase.

    Why per phase: the plan's mix changes with its size (queries are as many as the
    profiles below 10_000, a quarter above), and a query costs many point reads, so one
    figure per operation taken at 1_000 profiles does not carry to 2M.
    """

    profiles: int
    per_op: dict[str, float]  # operation phase kind -> seconds per operation
    per_phase: dict[str, float]  # maintenance phase kind -> seconds per phase
    overhead: float  # run seconds outside every phase (open, setup, close)
    bytes_per_profile: float

    @classmethod
    def of(cls, e: EngineResult, profiles: int) -> MeasuredCost | None:
        """The rate of a completed run, or None when it measured nothing."""
        ops: dict[str, list[float]] = {}
        maint: dict[str, list[float]] = {}
        for p in e.phases:
            if p.skipped or p.capacity is not None:  # a search's time is its probes' rates, no cost per operation
                continue
            if p.ops > 0 and p.action is Action.OPERATIONS:
                got = ops.setdefault(p.kind.kind, [0.0, 0.0])
                got[0] += p.seconds
                got[1] += p.ops
            else:
                maint.setdefault(p.kind.kind, []).append(p.seconds + (p.close_seconds or 0.0))
        if not ops or not 0 < e.run_seconds < math.inf:
            return None
        in_phases = sum(p.seconds + (p.close_seconds or 0.0) for p in e.phases)
        return cls(
            profiles,
            {k: s / n for k, (s, n) in ops.items()},
            {k: sum(v) / len(v) for k, v in maint.items()},
            max(0.0, e.run_seconds - in_phases),
            max(e.storage_bytes or 0, 0) / profiles,
        )

    @classmethod
    def median(cls, rates: list[MeasuredCost]) -> MeasuredCost:
        """One rate from measurements of one engine at one size taken at different moments
        (``CALIBRATION_ROUNDS``): each phase's cost, the overhead and the bytes per profile
        are the median of the measurements that have them, so one slow or fast moment of
        a shared machine does not set the estimate."""
        if len(rates) == 1:
            return rates[0]

        def each(tables: list[dict[str, float]]) -> dict[str, float]:
            kinds = dict.fromkeys(k for t in tables for k in t)  # first-seen order
            return {k: statistics.median(t[k] for t in tables if k in t) for k in kinds}

        return cls(
            rates[0].profiles,
            each([r.per_op for r in rates]),
            each([r.per_phase for r in rates]),
            statistics.median(r.overhead for r in rates),
            statistics.median(r.bytes_per_profile for r in rates),
        )

    def seconds(self, engine: str, cfg: BenchConfig, profiles: int) -> float:
        """This engine's run of ``cfg``'s phases at ``profiles``, from this measurement."""
        scale = profiles / self.profiles
        grow = growth(engine, self.profiles, profiles)
        mean_op = sum(self.per_op.values()) / len(self.per_op)
        mean_maint = sum(self.per_phase.values()) / len(self.per_phase) if self.per_phase else 0.0
        total = self.overhead
        for spec, ops in phase_operations(cfg, profiles):
            kind = cfg.workload_impl.phases[spec.kind]
            if kind.action is Action.OPERATIONS and spec.capacity:
                # the probes, on an engine whose capacity is its closed-loop rate, and the
                # stream once, closed loop (a read phase's warm-up, a writing phase's rest)
                per_op = self.per_op.get(spec.kind, mean_op) * grow
                searched = _search_seconds(cfg, spec, 1 / per_op)
                probes = needed_operations(make_slo(slo_for(cfg, spec.kind)), cfg.capacity_range, cfg.capacity_repeats, cfg.capacity_probe_seconds)
                total += searched + max(0, ops - probes) * per_op
            elif kind.action is Action.OPERATIONS:
                measured = ops * self.per_op.get(spec.kind, mean_op) * grow
                took = max(measured, ops / spec.rate) if spec.rate else measured
                total += took if spec.duration is None else min(took, spec.duration)  # stops at it
            else:
                total += self.per_phase.get(spec.kind, mean_maint) * scale**MAINTENANCE_GROWTH
        return total


#: Per engine, by parallelism: its measured costs, one per store size measured.
MeasuredCosts = dict[str, dict[int, list[MeasuredCost]]]


@dataclass
class Estimate:
    operations: int  # over every engine, profile count and repeat
    seconds: float | None  # None: not estimated (a small plan, or nothing to scale from)
    storage_bytes: int | None
    basis: str  # where the figures come from
    missing: list[str] = dataclasses.field(default_factory=list)  # engines without a figure
    warnings: list[str] = dataclasses.field(default_factory=list)  # earlier results skipped, and why
    #: ``seconds`` is a lower bound (the phases at a target rate and the probes alone), not an estimate.
    at_least: bool = False
    #: The capacity searches' longest time (every engine's capacity at the range's lowest
    #: rate: the probes at the lowest rates), over every engine, level and repeat; None: no search.
    searches_at_most: float | None = None

    def time(self) -> str:
        """``about 12 min``, or ``at least 3 h 10 min`` for a lower bound."""
        assert self.seconds is not None
        return f"{'at least' if self.at_least else 'about'} {duration(self.seconds)}"

    def lines(self, cfg: BenchConfig) -> list[str]:
        counts = ", ".join(fmt.count(n) for n in cfg.profiles)
        out = [
            f"asyncbench: plan {escape_unprintable(cfg.source)}",  # a newline or ESC in its name shown escaped
            f"  {counts} {cfg.workload_impl.unit}, P{','.join(map(str, cfg.parallelism))}, engines {', '.join(cfg.engines)}",
            f"  operations: {fmt.count(self.operations)}",
        ]
        out += [f"  warning: {w}" for w in self.warnings[:MAX_WARNINGS]]
        if len(self.warnings) > MAX_WARNINGS:
            out.append(f"  warning: {len(self.warnings) - MAX_WARNINGS} more earlier results skipped")
        if self.seconds is None:
            out.append(f"  time and disk: {self.basis}")
            out += [f"  {name}" for name in self.missing]  # why each engine gave no figure
            return out
        out.append(f"  time: {self.time()}")
        if self.searches_at_most is not None:
            out.append(f"  capacity searches: up to {duration(self.searches_at_most)} (every capacity at the range's bottom)")
        if self.storage_bytes is not None:
            out.append(f"  disk: about {fmt.size(self.storage_bytes)} under {escape_unprintable(str(cfg.data))}")
        out += textwrap.wrap(f"({self.basis})", 78, initial_indent="  ", subsequent_indent="   ")
        if self.missing:
            out.append(f"  not included: {', '.join(self.missing)}")
        return out


def ask_to_start(what: str, seconds: float | None, yes: bool, stdin: TextIO, stdout: TextIO) -> bool:
    """On a terminal, ask before ``what`` (``this run of about 3 h``) when ``seconds`` is
    over :data:`ASK_ABOVE_SECONDS`; True to start. ``--yes``, no estimate, a short one,
    or no terminal to answer on: True without asking. Shared by ``run`` and ``floor``."""
    long = seconds is not None and seconds > ASK_ABOVE_SECONDS
    if yes or not long or not (stdin.isatty() and stdout.isatty()):
        return True
    print(f"Start {what}? [y/N] ", end="", file=stdout, flush=True)
    answer = stdin.readline().strip().lower()
    if answer in ("y", "yes"):
        return True
    print("asyncbench: not started (pass --yes to skip this question)", file=stdout)
    return False


def duration(seconds: float) -> str:
    """``45 s``, ``12 min``, ``3 h 10 min``."""
    if seconds < 90:
        return f"{max(1, round(seconds))} s"
    minutes = round(seconds / 60)
    if minutes < 90:
        return f"{minutes} min"
    return f"{minutes // 60} h {minutes % 60} min"


def nearest(rates: MeasuredCosts, engine: str, profiles: int, parallelism: int) -> MeasuredCost | None:
    """The measurement to scale from: at this parallelism if there is one (else the nearest
    level), the size nearest to ``profiles`` on a log scale."""
    levels = rates.get(engine)
    if not levels:
        return None
    level = min(levels, key=lambda p: (abs(math.log(p / parallelism)), p))
    return min(levels[level], key=lambda r: abs(math.log(r.profiles / profiles)))


def from_history(cfg: BenchConfig, warnings: list[str] | None = None) -> tuple[MeasuredCosts, str] | None:
    """Measured costs from the newest completed earlier run of each engine, profile count and
    parallelism under the same plan name, paced as this run will be (the same target
    rates per phase kind, or closed loop as it: :mod:`asyncbench.run.checks.pacing`).

    Earlier results are inputs like any other: only regular files of bounded size that
    parse as the result model are used (never waiting on a FIFO, reading a device or
    following a dangling or looping symlink to a traceback); anything else is skipped and
    named in ``warnings``.
    """
    warnings = [] if warnings is None else warnings
    files: list[tuple[float, Path]] = []
    for path in cfg.output.glob(f"{cfg.workload_impl.unit}-*/asyncbench-*.json"):  # as dirs.paths.result_dir names them
        try:
            files.append((path.stat().st_mtime, path))
        except OSError as exc:  # a dangling symlink, a loop, a vanished file
            warnings.append(f"skipped {path}: {exc.strerror or exc}")
    files.sort(key=lambda item: item[0], reverse=True)
    rates: MeasuredCosts = {}
    seen: set[tuple[str, int, int]] = set()
    when = ""
    planned = pacing.plan_pacing(running_phases(cfg), cfg.workload_impl)
    for _mtime, path in files[:HISTORY_FILES]:
        run = _earlier_result(path, warnings)
        if run is None or run.name != cfg.name:
            continue
        for e in run.engines:
            key = (e.engine, run.profiles, run.parallelism)
            if key in seen or not e.ok or e.warmup or not pacing.same_pacing(planned, pacing.engine_pacing(e)):
                continue
            rate = MeasuredCost.of(e, run.profiles)
            if rate is None:
                continue
            seen.add(key)
            rates.setdefault(e.engine, {}).setdefault(run.parallelism, []).append(rate)
            when = when or run.started_utc
    if not any(name in rates for name in cfg.engines):
        return None
    return (
        rates,
        f"scaled from the last runs of plan {cfg.name!r} ({when}, {pacing.describe(planned)} as this run), "
        f"phase by phase, with {GROWTH_NOTE}",
    )


GROWTH_NOTE = "each engine's measured growth of cost per operation with the store"


def _earlier_result(path: Path, warnings: list[str]) -> RunResult | None:
    """The result at ``path`` if it is a readable result of a run with profiles; else None
    and a warning naming the file and the reason."""
    try:
        run = RunResult.from_json(read_input(path))
    except InputError as exc:
        warnings.append(f"skipped {path}: it {exc.reason}")
        return None
    except Exception as exc:  # noqa: BLE001 - a damaged earlier result must not stop this run
        warnings.append(f"skipped {path}: not a result asyncbench can read ({type(exc).__name__}: {exc})")
        return None
    if not isinstance(run.profiles, int) or run.profiles <= 0:
        warnings.append(f"skipped {path}: profiles is {run.profiles!r}, not a positive count")
        return None
    return run


def calibration_config(cfg: BenchConfig, data: Path) -> BenchConfig:
    """The plan at the calibration size: CALIBRATION_PROFILES, each stream cut to
    CALIBRATION_OPS, closed loop, in process, once, under ``data``."""
    return dataclasses.replace(
        cfg,
        profiles=[CALIBRATION_PROFILES],
        counts=dict.fromkeys(CALIBRATION_STREAMS, CALIBRATION_OPS),
        # closed loop: the cost per operation; a phase's rate (or its capacity search) is
        # added back by MeasuredCost.seconds
        phases=[dataclasses.replace(p, count=None, rate=None, capacity=False) for p in cfg.phases],
        data=data,
        reuse_data=False,  # the calibration builds its own small store
        clean_data=True,
        isolate=False,
        repeat=1,
        warmup=0,
        timeout_seconds=60.0,
    )


def per_engine_operations(cfg: BenchConfig) -> int:
    """Operations one engine performs over the plan's levels and repeats."""
    return sum(plan_operations(cfg, level.profiles) for level in cfg.levels()) * cfg.repeat


def calibration_rounds(cfg: BenchConfig) -> int:
    """How many calibration rounds ``cfg`` gets: up to ``CALIBRATION_ROUNDS``, as many as
    cost at most ``CALIBRATION_SHARE`` of its operations per engine; 0: the plan is about as
    quick as calibrating it, and runs unestimated. Why not always three: a plan just big
    enough for one round (a capacity search of 200k profiles) would otherwise lose its
    estimate to the rounds."""
    small = calibration_config(cfg, Path("."))
    one = plan_operations(small, CALIBRATION_PROFILES) * len(small.levels())
    fit = int(CALIBRATION_SHARE * per_engine_operations(cfg) // max(1, one))
    return min(CALIBRATION_ROUNDS, fit)


def calibrate(cfg: BenchConfig) -> tuple[MeasuredCosts, str, dict[str, str]]:
    """Run each engine of the plan at a small size and at each of its parallelism levels,
    in this process, in a scratch directory.

    Returns the rates, where they come from, and why each engine that gave no rate gave
    none (its status line: a calibration that timed out on a loaded machine, a server that
    refused): an estimate that leaves an engine out says why, never just "no measurement"."""
    import anyio

    from asyncbench.measure.memory_sampler import MemorySampler
    from asyncbench.run.observe.observers import Observer
    from asyncbench.run.runner import EngineRun

    with tempfile.TemporaryDirectory(prefix="asyncbench-calibrate-") as tmp:
        small = calibration_config(cfg, Path(tmp))
        plan = cfg.workload_impl.draw_plan(small.counts_for(CALIBRATION_PROFILES), small.seed)  # the same at every P
        rounds: dict[tuple[str, int], list[MeasuredCost]] = {}
        failed: dict[str, str] = {}
        t0 = perf_counter()
        count = max(1, calibration_rounds(cfg))  # called for a plan too small: one round
        for _round in range(count):  # the engines take turns: each round a moment
            for name in cfg.engines:
                if name in failed:  # failed once: not again (a 60 s timeout per round)
                    continue
                for level in small.levels():  # the calibration size at each of the plan's P
                    engine_run = EngineRun(small, level, name, plan, Observer(), MemorySampler())
                    error: Exception | None = None
                    try:
                        anyio.run(engine_run.run)
                    except Exception as exc:  # noqa: BLE001 - an estimate never stops a run; it says why
                        error = exc
                    e = engine_run.result
                    rate = MeasuredCost.of(e, CALIBRATION_PROFILES) if e.ok else None
                    if rate is not None:
                        rounds.setdefault((name, level.parallelism), []).append(rate)
                    elif name not in failed:
                        failed[name] = _calibration_failure(e, error)
    rates: MeasuredCosts = {}
    for (name, parallelism), measured in rounds.items():
        if name not in failed:
            rates.setdefault(name, {})[parallelism] = [MeasuredCost.median(measured)]
    took = perf_counter() - t0
    basis = (
        f"from a {took:.1f} s calibration at {fmt.count(CALIBRATION_PROFILES)} records "
        + (f"({count} rounds, the engines taking turns, the median of each phase), " if count > 1 else "")
        + f"phase by phase, with {GROWTH_NOTE}"
    )
    return rates, basis, failed


def _calibration_failure(e: EngineResult, error: Exception | None) -> str:
    """One line on why an engine's calibration gave no rate."""
    if error is not None:
        return f"calibration failed: {type(error).__name__}: {error}"
    if not e.ok:
        return f"calibration {e.status_text()}"
    return "calibration measured no phase"


#: Says where an ``at_least`` figure comes from.
PACED_BASIS = (
    "the phases at a target rate and the capacity searches' probes alone: their operations at their "
    "rates (a search's at the highest it can reach); the rest is not estimated"
)


def estimate(
    cfg: BenchConfig, calibrate_fn: Callable[[BenchConfig], tuple[MeasuredCosts, str, dict[str, str]]] = calibrate
) -> Estimate:
    """Operations, time and disk of ``cfg``'s run, and its capacity searches' longest time."""
    found = _estimate(cfg, calibrate_fn)
    searched = [spec for spec in running_phases(cfg) if spec.capacity]
    if searched:
        low = cfg.capacity_range[0]
        one = sum(_search_seconds(cfg, spec, low) for spec in searched)
        found.searches_at_most = one * len(cfg.levels()) * cfg.repeat * len(cfg.engines)
    return found


def _estimate(
    cfg: BenchConfig, calibrate_fn: Callable[[BenchConfig], tuple[MeasuredCosts, str, dict[str, str]]]
) -> Estimate:
    per_engine_ops = per_engine_operations(cfg)
    operations = per_engine_ops * len(cfg.engines)
    paced = sum(paced_seconds(cfg, level.profiles) for level in cfg.levels()) * cfg.repeat * len(cfg.engines)
    warnings: list[str] = []
    found: tuple[MeasuredCosts, str] | tuple[MeasuredCosts, str, dict[str, str]] | None = from_history(cfg, warnings)
    if found is None:
        if calibration_rounds(cfg) == 0:
            if paced >= 1:  # a small plan with phases at a rate: they take at least this
                return Estimate(operations, paced, None, PACED_BASIS, warnings=warnings, at_least=True)
            why = "not estimated: a small plan, about as quick as calibrating"
            return Estimate(operations, None, None, why, warnings=warnings)
        found = calibrate_fn(cfg)
    rates, basis = found[0], found[1]
    failed: dict[str, str] = found[2] if len(found) > 2 else {}
    seconds = 0.0
    storage = 0.0
    largest = 0.0  # with clean-up on, one store at a time is on disk
    missing = []
    for name in cfg.engines:
        if nearest(rates, name, cfg.profiles[0], cfg.parallelism[0]) is None:
            missing.append(f"{name} ({failed.get(name, 'no measurement')})")
            continue
        for level in cfg.levels():
            n = level.profiles
            rate = nearest(rates, name, n, level.parallelism)
            assert rate is not None
            seconds += rate.seconds(name, cfg, n) * cfg.repeat
            size = rate.bytes_per_profile * n
            storage += size  # --keep-data keeps every store
            largest = max(largest, size)
    if len(missing) == len(cfg.engines):
        if paced > ASK_ABOVE_SECONDS:
            return Estimate(operations, paced, None, PACED_BASIS, missing, warnings, at_least=True)
        return Estimate(
            operations, None, None, "not estimated: no engine could be measured", missing, warnings
        )
    return Estimate(
        operations, seconds, round(largest if cfg.clean_data else storage), basis, missing, warnings
    )
