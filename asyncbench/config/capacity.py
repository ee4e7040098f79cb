"""Capacity under a latency bound: the ``[slo]`` table and the checks after the flags.

Its own module because the search's settings come from three places (``[slo]``, the
``[run]`` keys and each phase's ``capacity``) and must agree before anything runs.
"""

from __future__ import annotations

import dataclasses

from asyncbench.config.errors import ConfigError
from asyncbench.config.model import BenchConfig
from asyncbench.config.phases import searchable
from asyncbench.config.run_keys import RateRequirements, slo_bounds
from asyncbench.slo import PERCENTILES


def slo_table(cfg: BenchConfig, where: str, table: object) -> None:
    """``[slo]``: percentile bounds for every kind, ``[slo.KIND]`` tables for one kind,
    ``require = {KIND = RATE}`` (gates), ``repeats`` and ``range`` of the search."""
    if not isinstance(table, dict):
        raise ConfigError(where, "slo", "must be a table")
    bounds = {k: v for k, v in table.items() if k in PERCENTILES}
    for k, v in table.items():
        key = f"slo.{k}"
        if k in PERCENTILES:
            continue
        if k == "require":
            cfg.require_rate = RateRequirements().read_in(cfg, where, key, v)  # the require_rate row's type
        elif k in cfg.workload_impl.phases:
            if not searchable(cfg.workload_impl.phases[k]):
                raise ConfigError(where, key, f"phase kind {k!r} is no read, scan, query or mixed phase: it has no capacity to search")
            cfg.slo_kinds[k] = slo_bounds(where, key, v)
        else:
            raise ConfigError(
                where, key, f"unknown key; allowed: a percentile ({', '.join(PERCENTILES)}), a phase kind, require"
            )
    if bounds:
        cfg.slo = slo_bounds(where, "slo", bounds)


def slo_for(cfg: BenchConfig, kind: str) -> dict[str, str]:
    """The bounds a phase kind's capacity is judged by: its own ``[slo.KIND]``, else the run's."""
    return cfg.slo_kinds.get(kind) or cfg.slo


def check_capacity(cfg: BenchConfig, where: str) -> None:
    """After the flags: ``capacity`` marks every read, scan, query and mixed phase; a searched
    phase needs bounds; bounds need a phase they bound (without a search they gate the run's
    own phases: asyncbench.measure.verdicts); a gate needs a searched phase of its kind."""
    if cfg.capacity:
        cfg.phases = [
            dataclasses.replace(s, capacity=True)
            if searchable(cfg.workload_impl.phases[s.kind]) and s.rate is None
            else s
            for s in cfg.phases
        ]
    searched = {s.kind for s in cfg.phases if s.capacity}
    if cfg.capacity and not searched:  # an insert-only plan: the flag would do nothing, silently
        raise ConfigError(
            where, "capacity", "the plan has no read, scan, query or mixed phase without a rate of its own, "
            "so there is no capacity to search"
        )
    if searched and cfg.rate:
        raise ConfigError(where, "capacity", "a capacity search chooses its own rates; it contradicts the run's rate")
    for kind in sorted(searched):
        if not slo_for(cfg, kind):
            raise ConfigError(
                where, "slo", f"the capacity of {kind!r} is searched under a latency bound, and none is set: "
                "give one (--slo p99=2ms, or [slo] p99 = \"2ms\")"
            )
    if (cfg.slo or cfg.slo_kinds) and not any(searchable(cfg.workload_impl.phases[s.kind]) for s in cfg.phases):
        raise ConfigError(
            where, "--slo" if where == "command line" else "slo",
            "bounds the latency of read, scan, query and mixed phases, and this plan has none "
            f"(its phases: {', '.join(dict.fromkeys(s.kind for s in cfg.phases))})"
        )
    for kind in cfg.require_rate:
        if kind not in searched:
            raise ConfigError(
                where, "require_rate", f"requires a capacity of {kind!r}, and no {kind!r} phase is searched "
                "(capacity = true on the phase, or --capacity)"
            )
