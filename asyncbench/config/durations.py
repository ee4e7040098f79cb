"""A phase's ``duration``: it runs for a time instead of to its end (YCSB's ``maxexecutiontime``).

The phase's operation count stays its upper bound (its stream is drawn before its clock
starts); the phase stops at the first batch boundary after the duration, or at its last
operation if that comes first. Only a ``bounded`` phase kind takes one (its checksum at
any prefix of its stream is the same on every engine and P:
:mod:`asyncbench.workloads.ycsb.prefix`), and what may follow it is limited: a later
phase would read a store whose contents depend on how far this one ran.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping

from asyncbench.config.errors import ConfigError
from asyncbench.config.model import BenchConfig
from asyncbench.limits import MAX_TIMEOUT_SECONDS
from asyncbench.parse import parse_seconds
from asyncbench.workload import PhaseKind

__all__ = ["check_durations", "read_duration"]

_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}
_DURATION = re.compile(r"(.*?)(ms|s|m|h)")
#: The shortest duration a phase may run for: shorter is one batch, not a measurement.
MIN_DURATION = 0.001


def read_duration(where: str, key: str, v: object) -> float:
    """``"60s"``, ``"1.5m"``, ``"500ms"``, ``"2h"`` or a number of seconds -> seconds."""
    if isinstance(v, bool) or not isinstance(v, (str, int, float)):
        raise ConfigError(where, key, f"must be a duration such as \"60s\" or \"2m\", got {type(v).__name__} {v!r}")
    if isinstance(v, str):
        m = _DURATION.fullmatch(v)
        if m is None or not m.group(1):
            raise ConfigError(where, key, f"{v!r} is not a duration: write a number with ms, s, m or h (e.g. \"60s\")")
        try:
            seconds = parse_seconds(m.group(1)) * _UNITS[m.group(2)]
        except ValueError as exc:
            raise ConfigError(where, key, f"{v!r} is not a duration: {exc}") from None
    else:
        seconds = float(v)
    if not seconds > 0:
        raise ConfigError(where, key, f"must be a positive duration, got {v!r}")
    if seconds < MIN_DURATION:
        raise ConfigError(where, key, f"must be at least 1ms, got {v!r}")
    if not math.isfinite(seconds) or seconds > MAX_TIMEOUT_SECONDS:
        raise ConfigError(where, key, f"must be at most {MAX_TIMEOUT_SECONDS:_.0f} seconds (a year), got {v!r}")
    return seconds


def check_kind(where: str, key: str, kind_name: str, kind: PhaseKind, capacity: bool, kinds: Mapping[str, PhaseKind]) -> None:
    """A duration on a phase that can take one: a ``bounded`` kind and no capacity search
    (its operation count, the upper bound, is at least 1 by the workload's own check);
    ``kinds``: the workload's phase kinds, named in the error."""
    if not kind.bounded:
        takes = [k for k, row in kinds.items() if row.bounded]
        raise ConfigError(
            where,
            key,
            f"phase kind {kind_name!r} cannot run for a duration (its checksum at a prefix of its stream is not "
            f"comparable across engines); phase kinds that can: {', '.join(takes) or 'none in this workload'}",
        )
    if capacity:
        raise ConfigError(where, key, "a capacity search chooses its own probe lengths; remove duration or capacity")


def check_durations(cfg: BenchConfig, where: str) -> None:
    """A scaled-out run (``--processes``/``--cluster``) cannot yet stop a phase in time:
    its client processes would each need the others' positions to find the complete prefix."""
    if cfg.processes is None and cfg.cluster is None:
        return
    for i, ph in enumerate(cfg.phases):
        if ph.duration is not None:
            flag = "--processes" if cfg.processes is not None else "--cluster"
            raise ConfigError(
                where,
                flag,
                f"phase[{i}] ({ph.name!r}) runs for a duration, which a scaled-out run does not support yet; "
                "remove the duration (its operations then run to the end) or run in one process",
            )
