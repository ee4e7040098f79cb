"""A YCSB plan's own keys checked: the ``[ycsb]`` table and a ``mixed`` phase's keys.

A TOML plan carries typed values (the converter, :mod:`.convert`, checks YCSB's text
properties); each wrong one is a :class:`~asyncbench.workload.SettingError` naming the key
and the problem, which config turns into an error naming the file too (exit 2, nothing
created). The rules are those of the converter: proportions summing to 1, no negative or
unknown value, known distributions, at least one record and field, scans within the
records (:func:`cross_check` is shared with it).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

from asyncbench.limits import MAX_PROFILES
from asyncbench.workload import SettingError
from asyncbench.workloads.common.distributions import NAMES
from asyncbench.workloads.ycsb.keys import INSERT_ORDERS
from asyncbench.workloads.ycsb.operations import KINDS, SCAN_LENGTH_DISTRIBUTIONS

__all__ = ["MIX_DEFAULTS", "PROPORTIONS", "cross_check", "mixed_params", "section"]

PROPORTIONS = tuple(f"{kind}proportion" for kind in KINDS)
#: The ``[ycsb]`` table: key -> (kind, default); recordcount is required.
SECTION: dict[str, tuple[str, Any]] = {
    "recordcount": ("int", None),
    "fieldcount": ("int", 10),
    "fieldlength": ("int", 100),
    "insertorder": ("choice", "hashed"),
    "zeropadding": ("int", 1),
}
#: A mixed phase's keys: key -> (kind, default: YCSB's CoreWorkload's); operations is required.
MIX_DEFAULTS: dict[str, tuple[str, Any]] = {
    "operations": ("int", None),
    **{p: ("fraction", 0.0) for p in PROPORTIONS},
    "requestdistribution": ("choice", "uniform"),
    "zipfianconstant": ("number", 0.99),
    "readallfields": ("bool", True),
    "writeallfields": ("bool", False),
    "minscanlength": ("int", 1),
    "maxscanlength": ("int", 1000),
    "scanlengthdistribution": ("choice", "uniform"),
    "hotspotdatafraction": ("fraction", 0.2),
    "hotspotopnfraction": ("fraction", 0.8),
    "exponential_percentile": ("number", 95.0),
    "exponential_frac": ("number", 0.8571428571),
}
_CHOICES: dict[str, tuple[str, ...]] = {
    "insertorder": INSERT_ORDERS,
    "requestdistribution": NAMES,
    "scanlengthdistribution": SCAN_LENGTH_DISTRIBUTIONS,
}
#: the most operations one mixed phase draws (the stream is drawn before the phase's clock)
MAX_OPERATIONS = MAX_PROFILES * 10


def _typed(key: str, kind: str, v: Any) -> Any:
    if kind == "int":
        if isinstance(v, bool) or not isinstance(v, int):
            raise SettingError(key, f"must be a whole number, got {v!r}")
        hi = MAX_OPERATIONS if key == "operations" else MAX_PROFILES
        if not 1 <= v <= hi:
            raise SettingError(key, f"must be between 1 and {hi:_d}, got {v:_d}")
        return v
    if kind == "bool":
        if not isinstance(v, bool):
            raise SettingError(key, f"must be true or false, got {v!r}")
        return v
    if kind == "choice":
        if v not in _CHOICES[key]:
            raise SettingError(key, f"unknown value {v!r} (one of {', '.join(_CHOICES[key])})")
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


def _read(table: Mapping[str, Any], rows: Mapping[str, tuple[str, Any]], where: str) -> dict[str, Any]:
    for key in table:
        if key not in rows:
            raise SettingError(key, f"unknown key of {where}; allowed: {', '.join(rows)}")
    out = {}
    for key, (kind, default) in rows.items():
        if key in table:
            out[key] = _typed(key, kind, table[key])
        elif default is None:
            raise SettingError(key, f"is required in {where}")
        else:
            out[key] = default
    return out


def section(table: Mapping[str, Any]) -> dict[str, Any]:
    """The ``[ycsb]`` table with YCSB's defaults filled in (SettingError naming the key)."""
    return _read(table, SECTION, "[ycsb]")


def cross_check(v: Mapping[str, Any], recordcount: int, bad: Callable[[str, str], Exception]) -> None:
    """The rules between a mixed phase's values (the converter's and the plan's): raises
    ``bad(key, problem)``; ``v`` uses the plan's names (``exponential_frac``...)."""
    total = math.fsum(v[p] for p in PROPORTIONS)
    if abs(total - 1.0) > 1e-9:
        raise bad(PROPORTIONS[0], f"the proportions ({', '.join(PROPORTIONS)}) sum to {total:g}, not 1")
    if v["scanproportion"] > 0:
        if v["minscanlength"] > v["maxscanlength"]:
            raise bad("minscanlength", f"{v['minscanlength']} is above maxscanlength {v['maxscanlength']}")
        if v["maxscanlength"] > recordcount:
            raise bad("maxscanlength", f"{v['maxscanlength']} is past the record count {recordcount}")
    dist = v["requestdistribution"]
    if dist == "latest" and recordcount < 2:
        raise bad("recordcount", "the latest distribution needs at least 2 records")
    if dist == "hotspot":
        hot = int(recordcount * v["hotspotdatafraction"])
        if hot == 0 and v["hotspotopnfraction"] > 0:
            raise bad("hotspotdatafraction", f"leaves no hot key of {recordcount} records")
        if hot == recordcount and v["hotspotopnfraction"] < 1:
            raise bad("hotspotdatafraction", "leaves no cold key for the operations off the hot set")


def mixed_params(table: Mapping[str, Any], settings: Mapping[str, Any]) -> dict[str, Any]:
    """A ``mixed`` phase's keys with YCSB's defaults filled in, checked against the records."""
    v = _read(table, MIX_DEFAULTS, "a mixed phase")
    cross_check(v, settings["recordcount"], SettingError)
    return v
