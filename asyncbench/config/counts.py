"""Counts: a flag's ``20k``/``2M``/``2_000_000`` text, and the plan's ``[counts]`` table.

Kept apart from the ``[run]`` table because both a key's flag and ``[counts]`` read counts,
and the workload (not the framework) names which counts exist.
"""

from __future__ import annotations

from asyncbench import fmt
from asyncbench.config.errors import ConfigError
from asyncbench.config.readers import read_int
from asyncbench.limits import MAX_PROFILES
from asyncbench.workload import Workload


def count_text(where: str, flag: str, text: str) -> int:
    try:
        return fmt.parse_count(text)
    except (ValueError, IndexError) as exc:
        raise ConfigError(where, flag, str(exc)) from None


def read_counts(where: str, table: object, wl: Workload) -> dict[str, int]:
    """``[counts]``: explicit overrides of the counts of workload ``wl`` (the plan's) (the others follow its defaults)."""
    if not isinstance(table, dict):
        raise ConfigError(where, "counts", "must be a table")
    out: dict[str, int] = {}
    for k, v in table.items():
        if k not in wl.count_names:
            raise ConfigError(where, f"counts.{k}", f"unknown count; known: {', '.join(wl.count_names)}")
        out[k] = read_int(where, f"counts.{k}", v, 1, MAX_PROFILES * 10)
    return out
