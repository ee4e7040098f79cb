"""A write phase's ``crash = { after = N, how = "kill" }`` and the ``recover`` phase after it.

Apart from :mod:`asyncbench.config.phases` because the crash has rules of its own across
the phase list: the crashed phase is a write phase the workload can check record by record,
run closed loop (its operations' order is the plan's, so which were acknowledged is exact),
followed directly by a ``recover`` phase; after the recovery only maintenance may run (the
store is no longer what the plan builds, so no checksum of a later phase could agree).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from asyncbench.config.errors import ConfigError
from asyncbench.config.model import BenchConfig, CrashPoint, PhaseSpec
from asyncbench.config.readers import read_int, read_str
from asyncbench.limits import MAX_PROFILES
from asyncbench.workload import Action, PhaseKind, Workload
from asyncbench.workload_capabilities import can_crash, changes_records, crash_problem, stream_count

__all__ = ["CRASH_HOWS", "CRASH_KEYS", "check_crash_sizes", "check_crashes", "read_crash"]

CRASH_KEYS = ("after", "how", "points")
#: The most crash points one crashed phase runs (each reruns the phase up to its point).
MAX_POINTS = 100
#: How a crash is made: ``kill`` (SIGKILL of the engine's process) or ``power`` (the same,
#: with the store on the power-cut filesystem, which then drops every unsynced write:
#: asyncbench/fs/power_cut.py, docs/durability.md).
CRASH_HOWS = ("kill", "power")
#: What may follow a recovery: nothing that reads or checks the plan's data.
_AFTER_RECOVER = (Action.STABILIZE, Action.SETTLE, Action.REOPEN)


def read_crash(
    where: str, key: str, kind_name: str, kind: PhaseKind, value: object, wl: Workload, params: Mapping[str, object]
) -> CrashPoint:
    """``<key>.crash``: a table of ``after`` (operations acknowledged before the kill) and
    ``how``, on a phase kind the workload ``wl`` can check after a crash, whose own keys
    (``params``) leave it something to lose."""
    if not can_crash(wl, kind):
        kinds = [k for k, row in wl.phases.items() if can_crash(wl, row)]
        raise ConfigError(
            where, f"{key}.crash", f"phase kind {kind_name!r} cannot crash; a crash ends one of: {', '.join(kinds) or 'none of this workload'}"
        )
    problem = crash_problem(wl, kind, params)
    if problem is not None:
        raise ConfigError(where, f"{key}.crash", problem)
    if not isinstance(value, Mapping):
        raise ConfigError(where, f"{key}.crash", 'must be a table, e.g. { after = 50_000, how = "kill" }')
    unknown = sorted(set(value) - set(CRASH_KEYS))
    if unknown:
        raise ConfigError(where, f"{key}.crash.{unknown[0]}", f"unknown key; allowed: {', '.join(CRASH_KEYS)}")
    if "after" not in value:
        raise ConfigError(where, f"{key}.crash.after", "is required: the operations acknowledged before the crash")
    after = read_int(where, f"{key}.crash.after", value["after"], 1, MAX_PROFILES * 10)
    how = read_str(where, f"{key}.crash.how", value.get("how", "kill"))
    if how not in CRASH_HOWS:
        raise ConfigError(where, f"{key}.crash.how", f"{how!r} is not a way to crash; use {' or '.join(CRASH_HOWS)}")
    points = read_int(where, f"{key}.crash.points", value.get("points", 1), 1, MAX_POINTS)
    if points > after:
        raise ConfigError(where, f"{key}.crash.points", f"{points} points need at least {points} operations; after is {after}")
    return CrashPoint(after=after, how=how, points=points)


def check_crashes(phases: Sequence[PhaseSpec], where: str, wl: Workload) -> None:
    """Across the phase list: a crashed phase runs closed loop, once, and is followed
    directly by ``recover``; ``recover`` follows a crash; after it only maintenance."""
    kinds = wl.phases
    recovered_at: int | None = None
    rewritten: int | None = None  # the first phase that changed stored records
    for i, spec in enumerate(phases):
        kind = kinds[spec.kind]
        if spec.crash is not None and (kind.rewrites or kind.mixes) and rewritten is not None and rewritten < i:
            raise ConfigError(
                where, f"phase[{i}].crash", f"a crash is checked against the store the insert built; phase[{rewritten}] "
                "changed it before this phase: crash the first phase that rewrites records"
            )
        if rewritten is None and changes_records(wl, kind, dict(spec.params)):
            rewritten = i
        if recovered_at is not None and kind.action not in _AFTER_RECOVER:
            raise ConfigError(
                where,
                f"phase[{i}].kind",
                f"{spec.kind!r} comes after the recover phase (phase[{recovered_at}]): the crash left a store the "
                "plan does not describe; only stabilize, settle and reopen may follow",
            )
        if kind.action is Action.RECOVER:
            before = phases[i - 1] if i else None
            if before is None or before.crash is None:
                raise ConfigError(
                    where, f"phase[{i}].kind", "'recover' checks the store after a crash: put it directly after a "
                    'phase with crash = { after = N, how = "kill" }'
                )
            recovered_at = i
        if spec.crash is None:
            continue
        if spec.rate is not None or spec.capacity or spec.sweep is not None:
            raise ConfigError(
                where, f"phase[{i}].crash", "a crashed phase runs closed loop, once: remove its rate or capacity"
            )
        if i + 1 >= len(phases) or kinds[phases[i + 1].kind].action is not Action.RECOVER:
            raise ConfigError(where, f"phase[{i}].crash", "needs a 'recover' phase directly after it")


def check_crash_sizes(cfg: BenchConfig, where: str) -> None:
    """``crash.after`` within the crashed phase's operations at every profile count, and a
    crash in one process (the scaled-out client processes run no crash)."""
    for i, spec in enumerate(cfg.phases):
        if spec.crash is None:
            continue
        if cfg.processes is not None or cfg.cluster is not None:
            raise ConfigError(
                where, f"phase[{i}].crash", "a crash runs the engine in one process: remove --processes and --cluster"
            )
        wl = cfg.workload_impl
        for profiles in cfg.profiles:
            counts = cfg.counts_for(profiles)
            ops = profiles if spec.stream is None else getattr(counts, stream_count(wl, spec.stream))
            if spec.operations is not None:  # a phase of its own size (YCSB's mixed phase)
                ops = spec.operations
            if spec.count is not None:
                ops = min(ops, spec.count)
            if spec.crash.after > ops:
                raise ConfigError(
                    where,
                    f"phase[{i}].crash.after",
                    f"{spec.crash.after:_d} exceeds the phase's {ops:_d} operations at {profiles:_d} {wl.unit}",
                )
