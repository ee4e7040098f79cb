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
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from asyncbench.limits import record_problem
from asyncbench.workload import RecordMemory, SettingError
from asyncbench.workloads.common import params
from asyncbench.workloads.common.distributions import NAMES
from asyncbench.workloads.ycsb.keys import INSERT_ORDERS
from asyncbench.workloads.ycsb.operations import KINDS, SCAN_LENGTH_DISTRIBUTIONS

__all__ = ["MIX_DEFAULTS", "PROPORTIONS", "check_records", "cross_check", "mixed_params", "record_memory", "section"]

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


def section(table: Mapping[str, Any]) -> dict[str, Any]:
    """The ``[ycsb]`` table with YCSB's defaults filled in (SettingError naming the key)."""
    out = params.read(table, SECTION, "[ycsb]", _CHOICES)
    record = record_problem(out["fieldcount"], out["fieldlength"])  # the converter's check too
    if record is not None:
        raise SettingError("fieldlength" if "fieldlength" in table else "fieldcount", record)
    return out


def check_records(phases: Sequence[tuple[str, Mapping[str, Any]]], records: int) -> None:
    """The mixed phases' values against ``records`` (``--profiles`` overrides the
    recordcount the phases were checked with at load): SettingError naming the key."""
    for kind, v in phases:
        if kind == "mixed":
            cross_check(v, records, SettingError)


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
    params.check_distribution(v, recordcount, bad)


def mixed_params(table: Mapping[str, Any], settings: Mapping[str, Any]) -> dict[str, Any]:
    """A ``mixed`` phase's keys with YCSB's defaults filled in, checked against the records."""
    v = params.read(table, MIX_DEFAULTS, "a mixed phase", _CHOICES)
    cross_check(v, settings["recordcount"], SettingError)
    return v


#: A ``bytes`` object's own header (CPython, 64-bit): what a record's value costs beyond its bytes.
BYTES_HEADER = 33
#: What the memory engine's usertable (a dict of key name to record, and its sorted key
#: list) keeps per record beyond the record's bytes: measured with
#: ``benchmarks/bench_memory_per_record.py --plan benchmarks/ycsb/workloadc.toml --sizes
#: 50k,100k`` (and ``-p fieldlength=1000`` at 10k,20k; ``-p fieldlength=100000`` at
#: 500,1000): the memory engine's peak RSS grew 1_247, 10_199 and 1_000_407 bytes a record
#: for records of 1_042, 10_042 and 1_000_042 bytes, so 160-370 bytes beyond them; with margin.
KEPT_OVERHEAD = 400


def record_memory(settings: Mapping[str, Any]) -> RecordMemory:
    """One record in memory: its canonical encoding (the field count as u16, each field's
    length as u32 and its bytes: :func:`asyncbench.workloads.ycsb.codec.encode`) as one
    ``bytes`` object; kept in the memory engine's usertable, :data:`KEPT_OVERHEAD` more."""
    built = 2 + int(settings["fieldcount"]) * (4 + int(settings["fieldlength"])) + BYTES_HEADER
    return RecordMemory(built=built, kept=built + KEPT_OVERHEAD)
