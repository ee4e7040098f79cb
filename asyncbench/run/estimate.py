"""What a plan will cost before it starts: operations, disk space and time.

The reference plan runs for hours and writes gigabytes, so a first-time user must see that
before anything starts. Time and disk come from the newest earlier run of the same plan
(by plan name, scaled to this plan's size), or else from a short calibration run of each
engine at a small profile count; plans too small to matter are not calibrated.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import tempfile
import textwrap
from dataclasses import dataclass
from pathlib import Path
from time import perf_counter

from asyncbench import fmt
from asyncbench.config import BenchConfig
from asyncbench.fs.inputs import InputError, read_input
from asyncbench.result import RunResult
from asyncbench.workloads.profile_store.phases import PHASES, STREAM_COUNT, VERIFY_OPS, Action, Items

__all__ = ["ASK_ABOVE_SECONDS", "Estimate", "estimate", "plan_operations"]

#: On a terminal, runs estimated longer than this ask before they start (unless --yes).
ASK_ABOVE_SECONDS = 600.0
#: Profile count of the calibration run, and the plan size (profiles x engines) below
#: which no calibration runs: such a plan finishes in about the time calibrating takes.
CALIBRATION_PROFILES = 1_000
CALIBRATE_ABOVE_PROFILES = 50_000
#: How many of the newest result files are read when looking for an earlier run.
HISTORY_FILES = 40
#: How many skipped earlier results the estimate names (the rest are counted).
MAX_WARNINGS = 10


def plan_operations(cfg: BenchConfig, profiles: int) -> int:
    """Operations one engine performs for ``profiles``: every operation phase's items,
    plus verify's four."""
    counts = cfg.counts_for(profiles)
    total = 0
    for spec in cfg.phases:
        kind = PHASES[spec.kind]
        if kind.items is Items.PROFILE_IDS:
            total += profiles
        elif kind.takes_stream and spec.stream is not None:
            total += spec.count if spec.count is not None else getattr(counts, STREAM_COUNT[spec.stream])
        elif kind.action is Action.VERIFY:
            total += VERIFY_OPS
    return total


@dataclass
class Rate:
    """One engine's measured cost: seconds per operation and stored bytes per profile."""

    seconds_per_op: float
    bytes_per_profile: float


@dataclass
class Estimate:
    operations: int  # over every engine, profile count and repeat
    seconds: float | None  # None: not estimated (a small plan, or nothing to scale from)
    storage_bytes: int | None
    basis: str  # where the figures come from
    missing: list[str] = dataclasses.field(default_factory=list)  # engines without a figure
    warnings: list[str] = dataclasses.field(default_factory=list)  # earlier results skipped, and why

    def lines(self, cfg: BenchConfig) -> list[str]:
        counts = ", ".join(fmt.count(n) for n in cfg.profiles)
        out = [
            f"asyncbench: plan {cfg.source}",
            f"  {counts} profiles, P{','.join(map(str, cfg.parallelism))}, engines {', '.join(cfg.engines)}",
            f"  operations: {fmt.count(self.operations)}",
        ]
        out += [f"  warning: {w}" for w in self.warnings[:MAX_WARNINGS]]
        if len(self.warnings) > MAX_WARNINGS:
            out.append(f"  warning: {len(self.warnings) - MAX_WARNINGS} more earlier results skipped")
        if self.seconds is None:
            out.append(f"  time and disk: {self.basis}")
            return out
        out.append(f"  time: about {duration(self.seconds)}")
        if self.storage_bytes is not None:
            out.append(f"  disk: about {fmt.size(self.storage_bytes)} under {cfg.data}")
        out += textwrap.wrap(f"({self.basis})", 78, initial_indent="  ", subsequent_indent="   ")
        if self.missing:
            out.append(f"  not included: {', '.join(self.missing)}")
        return out


def duration(seconds: float) -> str:
    """``45 s``, ``12 min``, ``3 h 10 min``."""
    if seconds < 90:
        return f"{max(1, round(seconds))} s"
    minutes = round(seconds / 60)
    if minutes < 90:
        return f"{minutes} min"
    return f"{minutes // 60} h {minutes % 60} min"


def from_history(cfg: BenchConfig, warnings: list[str] | None = None) -> tuple[dict[str, Rate], str] | None:
    """Rates from the newest completed earlier run of each engine under the same plan name.

    Earlier results are inputs like any other: only regular files of bounded size that
    parse as the result model are used (never waiting on a FIFO, reading a device or
    following a dangling or looping symlink to a traceback); anything else is skipped and
    named in ``warnings``.
    """
    warnings = [] if warnings is None else warnings
    files: list[tuple[float, Path]] = []
    for path in cfg.output.glob("profiles-*/asyncbench-*.json"):
        try:
            files.append((path.stat().st_mtime, path))
        except OSError as exc:  # a dangling symlink, a loop, a vanished file
            warnings.append(f"skipped {path}: {exc.strerror or exc}")
    files.sort(key=lambda item: item[0], reverse=True)
    rates: dict[str, Rate] = {}
    when = ""
    for _mtime, path in files[:HISTORY_FILES]:
        run = _earlier_result(path, warnings)
        if run is None or run.name != cfg.name:
            continue
        for e in run.engines:
            ops = sum(p.ops for p in e.phases)
            if e.engine in rates or not e.ok or e.warmup or ops <= 0 or not 0 < e.run_seconds < math.inf:
                continue
            rates[e.engine] = Rate(e.run_seconds / ops, max(e.storage_bytes or 0, 0) / run.profiles)
            when = when or run.started_utc
    if not any(name in rates for name in cfg.engines):
        return None
    return rates, f"scaled from the last run of plan {cfg.name!r}, {when}"


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


def calibrate(cfg: BenchConfig) -> tuple[dict[str, Rate], str]:
    """Run each engine of the plan at a small size, in this process, in a scratch directory."""
    import anyio

    from asyncbench.measure.memory_sampler import MemorySampler
    from asyncbench.run.observers import Observer
    from asyncbench.run.runner import EngineRun
    from asyncbench.workloads.profile_store.plan import draw_plan

    with tempfile.TemporaryDirectory(prefix="asyncbench-calibrate-") as tmp:
        small = dataclasses.replace(
            cfg,
            profiles=[CALIBRATION_PROFILES],
            counts={},
            phases=[dataclasses.replace(p, count=None) for p in cfg.phases],
            data=Path(tmp),
            isolate=False,
            repeat=1,
            warmup=0,
            timeout_seconds=60.0,
        )
        level = small.levels()[0]  # the calibration size at the plan's first P
        plan = draw_plan(level.counts, small.seed)
        rates: dict[str, Rate] = {}
        t0 = perf_counter()
        for name in cfg.engines:
            engine_run = EngineRun(small, level, name, plan, Observer(), MemorySampler())
            with contextlib.suppress(Exception):
                anyio.run(engine_run.run)
            e = engine_run.result
            ops = sum(p.ops for p in e.phases)
            if e.ok and ops:
                rates[name] = Rate(e.run_seconds / ops, (e.storage_bytes or 0) / CALIBRATION_PROFILES)
    took = perf_counter() - t0
    return rates, (
        f"from a {took:.1f} s calibration at {fmt.count(CALIBRATION_PROFILES)} profiles, scaled linearly: "
        "larger stores are usually slower per operation"
    )


def estimate(cfg: BenchConfig, calibrate_fn=calibrate) -> Estimate:
    per_engine_ops = sum(plan_operations(cfg, level.profiles) for level in cfg.levels()) * cfg.repeat
    operations = per_engine_ops * len(cfg.engines)
    warnings: list[str] = []
    found = from_history(cfg, warnings)
    if found is None:
        if sum(cfg.profiles) * len(cfg.engines) * cfg.repeat <= CALIBRATE_ABOVE_PROFILES:
            why = "not estimated: a small plan, about as quick as calibrating"
            return Estimate(operations, None, None, why, warnings=warnings)
        found = calibrate_fn(cfg)
    rates, basis = found
    seconds = 0.0
    storage = 0.0
    largest = 0.0  # with clean-up on, one store at a time is on disk
    missing = []
    for name in cfg.engines:
        rate = rates.get(name)
        if rate is None:
            missing.append(f"{name} (no measurement)")
            continue
        seconds += rate.seconds_per_op * per_engine_ops
        storage += sum(rate.bytes_per_profile * n for n in cfg.profiles)  # --keep-data keeps every store
        largest = max(largest, *(rate.bytes_per_profile * n for n in cfg.profiles))
    if len(missing) == len(cfg.engines):
        return Estimate(
            operations, None, None, "not estimated: no engine could be measured", missing, warnings
        )
    return Estimate(
        operations, seconds, round(largest if cfg.clean_data else storage), basis, missing, warnings
    )
