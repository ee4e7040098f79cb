"""A workload's own plan keys read and checked: typed values with bounds, defaults filled in.

Shared by YCSB's ``[ycsb]`` table and mixed phase (:mod:`asyncbench.workloads.ycsb.settings`)
and the profile store's mixed phase (:mod:`asyncbench.workloads.profile_store.mix`), so
both refuse a wrong value with the same words. Each problem is a
:class:`~asyncbench.workload.SettingError` naming the key; config adds the file (exit 2).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

from asyncbench.limits import MAX_OPERATIONS, size_bound
from asyncbench.workload import SettingError

__all__ = ["MAX_OPERATIONS", "Rows", "check_distribution", "read"]
#: key -> (kind, default): kind is int, bool, choice, number or fraction; default None: required
Rows = Mapping[str, tuple[str, Any]]


def _typed(key: str, kind: str, v: Any, choices: Mapping[str, tuple[str, ...]]) -> Any:
    if kind == "int":
        if isinstance(v, bool) or not isinstance(v, int):
            raise SettingError(key, f"must be a whole number, got {v!r}")
        hi = size_bound(key)  # one table of bounds, the converter's too (asyncbench/limits.py)
        if not 1 <= v <= hi:
            raise SettingError(key, f"must be between 1 and {hi:_d}, got {v:_d}")
        return v
    if kind == "bool":
        if not isinstance(v, bool):
            raise SettingError(key, f"must be true or false, got {v!r}")
        return v
    if kind == "choice":
        if v not in choices[key]:
            raise SettingError(key, f"unknown value {v!r} (one of {', '.join(choices[key])})")
        return v
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        raise SettingError(key, f"must be a number, got {v!r}")
    if v < 0:
        raise SettingError(key, f"must be >= 0, got {v}")
    if kind == "fraction" and v > 1:
        raise SettingError(key, f"a fraction must be <= 1, got {v}")
    if key == "zipfianconstant" and not 0 < v < 1:
        raise SettingError(key, f"must be between 0 and 1 (exclusive), got {v}")
    if key == "exponential_percentile" and not 0 < v < 100:
        raise SettingError(key, f"must be between 0 and 100 (exclusive), got {v}")
    if key == "exponential_frac" and v == 0:
        raise SettingError(key, "must be > 0")
    return float(v)


def read(table: Mapping[str, Any], rows: Rows, where: str, choices: Mapping[str, tuple[str, ...]]) -> dict[str, Any]:
    """``table``'s keys typed and checked against ``rows``, defaults filled in (an unknown
    key, a missing required one or a wrong value: SettingError naming it)."""
    for key in table:
        if key not in rows:
            raise SettingError(key, f"unknown key of {where}; allowed: {', '.join(rows)}")
    out = {}
    for key, (kind, default) in rows.items():
        if key in table:
            out[key] = _typed(key, kind, table[key], choices)
        elif default is None:
            raise SettingError(key, f"is required in {where}")
        else:
            out[key] = default
    return out


def check_distribution(v: Mapping[str, Any], recordcount: int, bad: Callable[[str, str], Exception]) -> None:
    """The request distribution's values against the records it draws from: raises
    ``bad(key, problem)`` (``recordcount`` names the size, whatever the plan calls it)."""
    dist = v["requestdistribution"]
    if dist == "latest" and recordcount < 2:
        raise bad("recordcount", "the latest distribution needs at least 2 records")
    if dist == "hotspot":
        hot = int(recordcount * v["hotspotdatafraction"])
        if hot == 0 and v["hotspotopnfraction"] > 0:
            raise bad("hotspotdatafraction", f"leaves no hot key of {recordcount} records")
        if hot == recordcount and v["hotspotopnfraction"] < 1:
            raise bad("hotspotdatafraction", "leaves no cold key for the operations off the hot set")
