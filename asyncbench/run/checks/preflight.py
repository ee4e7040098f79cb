"""Checks a run makes before it starts that need more than the plan: a published
reference for ``--check-reference``, the compiled kernels for ``--require-accelerator``,
the environment variables the selected engines will read, a searched mixed phase's stream
long enough for its search.

Each raises :class:`~asyncbench.config.ConfigError` naming the flag (or the variable), so
the command line reports it like any bad flag (exit 2, nothing run or created).
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from asyncbench.config import BenchConfig, ConfigError
from asyncbench.dirs.paths import store_root
from asyncbench.workload_capabilities import accelerated, kernels_status, own_store_problem, reference_tables

__all__ = [
    "check_accelerator",
    "check_capacity_stream",
    "check_environment",
    "check_own_stores",
    "check_placement",
    "check_published",
    "check_reuse",
]


def check_published(cfg: BenchConfig) -> None:
    """--check-reference needs a published reference for every (profiles, P) level."""
    from dataclasses import asdict


    tables = reference_tables(cfg.workload_impl)

    def published_checksums(profiles: int, parallelism: int, limit: int, seed: int, counts: dict[str, int]) -> dict[str, str] | None:
        return None if tables is None else tables.published_checksums(profiles, parallelism, limit, seed, counts)

    def published_configurations() -> list[tuple[int, int, int]]:
        return [] if tables is None else tables.published_configurations()

    for level in cfg.levels():
        profiles, parallelism = level.profiles, level.parallelism
        if published_checksums(profiles, parallelism, cfg.limit, cfg.seed, asdict(level.counts)) is None:
            known = ", ".join(f"{n:_d}/P{p}/limit {lim}" for n, p, lim in published_configurations())
            raise ConfigError(
                "command line",
                "--check-reference",
                f"no published reference for {profiles:_d} profiles, P{parallelism}, limit {cfg.limit}, "
                f"seed {cfg.seed} and these counts; published (default counts, seed 570123434): {known}",
            )


def check_accelerator(cfg: BenchConfig) -> None:
    """--require-accelerator: the compiled kernels of the plan's workload must be built."""
    wl = cfg.workload_impl
    if not accelerated(wl):
        raise ConfigError("command line", "--require-accelerator", kernels_status(wl))


def check_placement(cfg: BenchConfig) -> None:
    """--processes/--cluster: only engines several processes may open (client/server), and
    at least one worker per process."""
    from asyncbench.run.scale_out.distributed import Placement, PlacementError
    from asyncbench.run.scale_out.distributed import check_placement as check

    placement = Placement(cfg.processes, cfg.cluster)
    try:
        check(cfg.engines, cfg.parallelism, placement)
    except PlacementError as exc:
        raise ConfigError("command line", "--cluster" if cfg.cluster else "--processes", str(exc)) from None


def check_environment(cfg: BenchConfig, environ: Mapping[str, str] | None = None) -> None:
    """Every selected engine's environment variables (``MYSQL_DATABASE``, ``PGDATABASE``...),
    where the plan leaves the setting unset: checked here, not at the engine's open, so a
    bad one is refused before anything runs, named as ``environment: VARIABLE``."""
    from asyncbench.engines import engine_class

    env = os.environ if environ is None else environ
    for name in cfg.engines:
        try:
            cls = engine_class(name)
        except Exception:  # noqa: BLE001 - not installed, or not an engine: the run's row reports it (Failed: open)
            continue
        try:
            cls.check_environment({**cls.default_settings, **cfg.engine_settings.get(name, {})}, env)
        except ValueError as exc:
            variable, _, reason = str(exc).partition(" ")
            raise ConfigError("environment", variable, reason) from None


def check_own_stores(cfg: BenchConfig) -> None:
    """An engine that is its own store (a plug-in that keeps ``Engine.worker``: it
    implements a workload's operations itself, not primitives) must implement this run's
    workload's; refused here, naming what it lacks, rather than at its first phase."""
    from asyncbench.engine import Engine
    from asyncbench.engines import engine_class

    for name in cfg.engines:
        try:
            cls = engine_class(name)
        except Exception:  # noqa: BLE001 - not installed, or not an engine: the run's row reports it (Failed: open)
            continue
        if cls.worker is not Engine.worker:
            continue  # it hands out primitives: every workload maps onto them
        problem = own_store_problem(cfg.workload_impl, cls)
        if problem is not None:
            raise ConfigError(cfg.source, "engines", f"engine {name!r}: {problem}")


def check_reuse(cfg: BenchConfig, where: str, key: str) -> None:
    """``--reuse-data`` needs, for every engine and profile count, an engine that keeps a
    fingerprint of its store and a store directory to reuse. Each was found only once the
    engine's run started (exit 1, report files written); the store's fingerprint and its
    integrity are still checked when the engine opens it (asyncbench.run.reuse.reuse)."""
    from asyncbench.engine import Engine
    from asyncbench.engines import engine_class

    if not cfg.reuse_data:
        return
    for name in cfg.engines:
        try:
            cls = engine_class(name)
        except Exception:  # noqa: BLE001 - not installed, or not an engine: the run's row reports it (Failed: open)
            continue
        if cls.read_fingerprint is Engine.read_fingerprint:
            raise ConfigError(
                where, key, f"engine {name!r} keeps no store to reuse (no fingerprint of what built it); run it without reuse"
            )
        for profiles in cfg.profiles:
            store = store_root(cfg.data, profiles, cfg.workload_impl.unit) / name
            if not os.path.lexists(store):
                raise ConfigError(
                    where, key, f"there is no {name} store to reuse at {store}; build it first with a --keep-data run"
                )


def check_capacity_stream(cfg: BenchConfig) -> None:
    """A searched phase that writes (a mixed phase) never repeats an operation: its stream
    must hold every probe its searches may run (asyncbench.run.capacity.capacity.needed_operations),
    at every profile count; named by the plan's phase key and the operations to give."""
    from asyncbench import fmt
    from asyncbench.config import slo_for
    from asyncbench.run.capacity.capacity import (
        needed_operations,
        probe_bound,
        probe_length,
        start_rate,
        writes,
    )
    from asyncbench.run.sequence.plan_operations import stream_operations
    from asyncbench.slo import make_slo

    for profiles in cfg.profiles:
        running = {id(spec): ops for spec, ops in stream_operations(cfg, profiles)}
        for position, spec in enumerate(cfg.phases):
            if not spec.capacity or not writes(cfg.workload_impl.phases[spec.kind]) or id(spec) not in running:
                continue
            ops = running[id(spec)]
            slo = make_slo(slo_for(cfg, spec.kind))
            need = needed_operations(slo, cfg.capacity_range, cfg.capacity_repeats, cfg.capacity_probe_seconds)
            if ops >= need:
                continue
            low, high = cfg.capacity_range
            warmup, judged = probe_length(slo)
            key = "operations" if spec.operations is not None else "count"
            raise ConfigError(
                cfg.source,
                f"phase[{_plan_index(cfg, position)}].{key}",
                f"{fmt.count(ops)} operations are too few for its capacity search, which never repeats one of a "
                f"phase that writes: {cfg.capacity_repeats} search(es) of up to "
                f"{probe_bound(start_rate(low, high), low, high)} probes of {fmt.count(warmup + judged)} operations "
                + (
                    f"each, at least {cfg.capacity_probe_seconds:g} s (capacity_probe_seconds: a probe at rate r "
                    f"runs max(1, ceil({cfg.capacity_probe_seconds:g} r / {fmt.count(warmup + judged)})) of them) "
                    if cfg.capacity_probe_seconds
                    else ""
                )
                + f"({slo.text()}, rates {fmt.count(round(low))}..{fmt.count(round(high))}) need {fmt.count(need)}: "
                "give at least that many, or a lower top of capacity_range",
            )


def _plan_index(cfg: BenchConfig, position: int) -> int:
    """The ``[[phase]]`` index in the plan of ``cfg.phases[position]`` (a rate sweep expands
    one plan phase into several)."""
    return sum(1 for i, s in enumerate(cfg.phases[:position]) if s.sweep is None or s.sweep == i)
