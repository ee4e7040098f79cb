"""One check of a whole config before it runs, whoever built it: a plan and flags (the
command line) or code (``BenchConfig(...)`` handed to :class:`asyncbench.run.runner.Benchmark`).

Why one function: the checks were spread over the plan loader (``asyncbench.config``), the
command line's ``apply_flags`` and ``asyncbench.run.checks.preflight``, so a config built in code
ran with none of them (a warm-up that left no measured repeat, arrivals without a rate, a
reused store to be deleted after its run). ``validate`` is what ``apply_flags`` runs once
the flags are in, and what ``Benchmark`` runs on the config it is given; the errors are
the same :class:`ConfigError`, naming the flag when a flag set the value, else the plan's
key (a config built in code names its ``source``).

It also completes what a run derives from the [run] settings (idempotent: a second call
changes nothing): the run's rate on the phases without one (:func:`pace_phases`), the
searched and charted phases, and a reused store never deleted (``clean_data`` off).

The paths the run writes (``asyncbench.dirs.paths.check_run_paths``) are checked by the
command line before it creates and locks its directories, not here: they need the run's
log file and ``--update-latest`` files, and once the directories are locked a second
check would find its own run's.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from asyncbench.config import (
    RUN_KEYS,
    BenchConfig,
    ConfigError,
    chart_phases,
    check_capacity,
    check_pacing,
    check_phase_counts,
    check_phase_total,
    check_repeats,
    pace_phases,
)
from asyncbench.config.counts import read_counts
from asyncbench.config.durations import check_durations
from asyncbench.config.engines import engine_settings
from asyncbench.run.checks import preflight
from asyncbench.run.checks.memory_need import check_memory
from asyncbench.run.checks.scale import check_scale

__all__ = ["COMMAND_LINE", "check_tables", "check_values", "validate"]

COMMAND_LINE = "command line"


def validate(cfg: BenchConfig, flags: Mapping[str, str] | None = None) -> None:
    """Raise :class:`ConfigError` for the first setting ``cfg`` cannot run with.

    ``flags`` maps a [run] key's name (``RUN_KEYS``) to the flag that set it on the command
    line (``{"profiles": "--records"}``): a refusal names that flag, else the plan's key."""
    flags = flags or {}

    def named(name: str) -> tuple[str, str]:
        """Where [run] key ``name``'s value came from: its flag, else the plan's key."""
        return (COMMAND_LINE, flags[name]) if name in flags else (cfg.source, f"run.{name}")

    def by_flag(*names: str) -> str:
        return COMMAND_LINE if flags.keys() & set(names) else cfg.source

    check_values(cfg, flags)
    check_tables(cfg)
    if cfg.reuse_data:  # a reused store is never deleted (asyncbench.run.reuse.reuse)
        if cfg.processes is not None or cfg.cluster is not None:
            raise ConfigError(
                *named("reuse_data"),
                "a distributed run's engines (client/server) keep no fingerprint of their store; reuse is for file engines",
            )
        cfg.clean_data = False
    check_capacity(cfg, by_flag("capacity", "slo", "require_rate"))
    check_durations(cfg, by_flag("processes", "cluster"))
    check_pacing(cfg, *named("arrivals"))
    pace_phases(cfg)  # the run's rate (plan or --rate) on the operation phases without one
    check_phase_total(cfg.phases, *named("rate"))
    chart_phases(cfg, *named("over_time"))
    where = COMMAND_LINE if flags else cfg.source
    check_phase_counts(cfg, where)
    check_repeats(cfg, where)
    check_scale(cfg, size_flag=flags.get("profiles"))
    check_memory(cfg, flags=frozenset(flags[n] for n in ("profiles", "parallelism", "batch_size") if n in flags))
    preflight.check_placement(cfg)
    preflight.check_environment(cfg)
    preflight.check_own_stores(cfg)
    preflight.check_capacity_stream(cfg)
    preflight.check_reuse(cfg, *named("reuse_data"))


def check_values(cfg: BenchConfig, flags: Mapping[str, str] | None = None) -> None:
    """Each [run] value that is not its field's default, read again as the plan's value
    would be (its type and bounds: a record count of 0, a negative parallelism, an
    unknown engine): a value a plan or flag gave passed this already; one set in code did
    not. Defaults are valid by construction (and some, such as no rate, are no value a
    plan could write)."""
    flags = flags or {}
    defaults = BenchConfig(source=cfg.source)  # every field's default (only source is required)
    for key in RUN_KEYS.values():
        if key.name == "workload":  # read by the loader, which picks the workload's vocabulary
            continue
        value = getattr(cfg, key.name)
        if value == getattr(defaults, key.name):
            continue
        where, name = (COMMAND_LINE, flags[key.name]) if key.name in flags else (cfg.source, f"run.{key.name}")
        if isinstance(value, Path):
            value = str(value)  # a plan's path is text
        elif key.name == "timeout_seconds" and value is None:
            value = 0  # no timeout: 0 in a plan
        key.type.read(where, name, value)



def check_tables(cfg: BenchConfig) -> None:
    """The plan's other tables as a config holds them: at least one phase, each of a phase
    kind of the workload (one unknown raised a KeyError deep in the checks that follow),
    and ``[counts]`` and ``[engines.<name>]`` read again as a plan's (their held shape is
    the plan's). A phase's other keys were checked when the plan was read; a ``PhaseSpec``
    built in code is taken as given."""
    if not cfg.phases:
        raise ConfigError(cfg.source, "phase", "needs at least one [[phase]] table")
    kinds = cfg.workload_impl.phases
    for i, spec in enumerate(cfg.phases):
        if spec.kind not in kinds:
            raise ConfigError(cfg.source, f"phase[{i}].kind", f"unknown phase kind {spec.kind!r}; known: {', '.join(kinds)}")
    read_counts(cfg.source, cfg.counts, cfg.workload_impl)
    engine_settings(cfg.source, cfg.engine_settings)
