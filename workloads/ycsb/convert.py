"""A YCSB workload file -> an asyncbench plan (a dict, and its TOML text).

YCSB's own files (``workloads/workloada`` ... ``workloadf``) are the shared vocabulary,
so they are accepted unchanged and turned into the plan shape docs/workloads.md
describes: ``[run]`` (``workload = "ycsb"``), ``[ycsb]`` (the record and key layout) and
two phases, ``load`` then ``mixed`` (proportions and request distribution). Every
property is accounted for: a CoreWorkload property we carry over lands in the plan; one
we do not support, an unknown one, or a bad value is an error naming the file, the key
and the problem, never silently dropped. ``db`` and ``exporter`` choose YCSB's binding
and output, which asyncbench decides itself (``--engine``, its result files): refused.
The ``asyncbench plan --from-ycsb`` command is for later; :func:`plan_from_ycsb` and
:func:`plan_toml` are what it will call.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

from asyncbench.limits import record_problem, size_bound
from asyncbench.workloads.common.distributions import NAMES
from asyncbench.workloads.common.zipfian import ZIPFIAN_CONSTANT
from asyncbench.workloads.ycsb.keys import INSERT_ORDERS
from asyncbench.workloads.ycsb.operations import KINDS, SCAN_LENGTH_DISTRIBUTIONS
from asyncbench.workloads.ycsb.properties import PropertiesError, Property, read_properties

#: the plan's seed when the file gives none (YCSB files have no seed): the project's reference seed
DEFAULT_SEED = 570123434
WORKLOAD_CLASSES = ("site.ycsb.workloads.CoreWorkload", "com.yahoo.ycsb.workloads.CoreWorkload")
PROPORTIONS = tuple(f"{kind}proportion" for kind in KINDS)

#: CoreWorkload's defaults for what the plan carries
DEFAULTS: dict[str, Any] = {
    "fieldcount": 10,
    "fieldlength": 100,
    "readallfields": True,
    "writeallfields": False,
    "readproportion": 0.95,
    "updateproportion": 0.05,
    "insertproportion": 0.0,
    "scanproportion": 0.0,
    "readmodifywriteproportion": 0.0,
    "requestdistribution": "uniform",
    "zipfianconstant": ZIPFIAN_CONSTANT,
    "minscanlength": 1,
    "maxscanlength": 1000,
    "scanlengthdistribution": "uniform",
    "insertorder": "hashed",
    "zeropadding": 1,
    "hotspotdatafraction": 0.2,
    "hotspotopnfraction": 0.8,
    "exponential.percentile": 95.0,
    "exponential.frac": 0.8571428571,
}

#: properties YCSB knows that a plan cannot express, and why
UNSUPPORTED = {
    "db": "the engine is chosen by asyncbench (--engine), not by a YCSB binding",
    "exporter": "asyncbench writes its own result files, report and CSV",
    "table": "the table is always usertable (engines claim and mark it as their own)",
    "fieldnameprefix": "field names are always field0, field1, ...",
    "fieldlengthdistribution": "fields have the constant length fieldlength",
    "minfieldlength": "fields have the constant length fieldlength",
    "fieldlengthhistogram": "fields have the constant length fieldlength",
    "dataintegrity": "every read is checked already (the phase checksum)",
    "readallfieldsbyname": "a read of all fields is one operation on every engine",
    "insertstart": "one plan loads all records (scale out with --processes/--cluster)",
    "insertcount": "one plan loads all records (scale out with --processes/--cluster)",
    "threadcount": "workers are the run's --parallelism",
    "target": "the open loop's rate is a phase setting of the plan",
    "maxexecutiontime": "a phase runs its operations to the end",
    "measurementtype": "latency is always an HDR histogram per phase and kind",
    "core_workload_insertion_retry_limit": "a failed insert fails the run",
    "core_workload_insertion_retry_interval": "a failed insert fails the run",
}

_INT = re.compile(r"[+-]?[0-9]+", re.ASCII)
_FLOAT = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?", re.ASCII)
_INTS = {"recordcount", "operationcount", "fieldcount", "fieldlength", "minscanlength", "maxscanlength", "zeropadding"}
_BOOLS = {"readallfields", "writeallfields"}
_CHOICES: dict[str, tuple[str, ...]] = {
    "requestdistribution": NAMES,
    "scanlengthdistribution": SCAN_LENGTH_DISTRIBUTIONS,
    "insertorder": INSERT_ORDERS,
}
KNOWN = {"workload", "recordcount", "operationcount", *DEFAULTS}


class YcsbFileError(PropertiesError):
    """A YCSB workload file that cannot become a plan (file, key and problem in the message)."""


def _value(source: str, prop: Property) -> Any:
    key, text = prop.key, prop.value

    def bad(problem: str) -> YcsbFileError:
        return YcsbFileError(f"{source}: key {key!r} (line {prop.line}): {problem}")

    if key in _INTS:
        if not _INT.fullmatch(text):
            raise bad(f"{text!r} is not a whole number")
        if len(text.lstrip("+-0")) > 30:  # int() of a huge digit string is slow, and refused below anyway
            raise bad(f"must be between 1 and {size_bound(key):_d}, got {text[:20]}... ({len(text)} digits)")
        whole = int(text)
        if whole < 1:
            raise bad(f"must be >= 1, got {whole}")
        if whole > size_bound(key):  # the plan reader's bounds (asyncbench/limits.py)
            raise bad(f"must be between 1 and {size_bound(key):_d}, got {whole:_d}")
        return whole
    if key in _BOOLS:
        if text.lower() not in ("true", "false"):
            raise bad(f"{text!r} is not true or false")
        return text.lower() == "true"
    if key in _CHOICES:
        if text not in _CHOICES[key]:
            raise bad(f"unknown value {text!r} (one of {', '.join(_CHOICES[key])})")
        return text
    if not _FLOAT.fullmatch(text) or not math.isfinite(float(text)):
        raise bad(f"{text!r} is not a number")
    number = float(text)
    if number < 0:
        raise bad(f"must be >= 0, got {text}")
    if key in ("hotspotdatafraction", "hotspotopnfraction") and number > 1:
        raise bad(f"a fraction must be <= 1, got {text}")
    if key == "zipfianconstant" and not 0 < number < 1:
        raise bad(f"must be between 0 and 1 (exclusive), got {text}")
    if key == "exponential.percentile" and not 0 < number < 100:
        raise bad(f"must be between 0 and 100 (exclusive), got {text}")
    if key == "exponential.frac" and number == 0:
        raise bad("must be > 0")
    return number


def plan_from_properties(props: list[Property], source: str) -> dict[str, Any]:
    """The plan dict for a YCSB workload's properties; YcsbFileError on anything it cannot carry."""
    values: dict[str, Any] = {}
    lines: dict[str, int] = {}
    for prop in props:
        where = f"{source}: key {prop.key!r} (line {prop.line})"
        if prop.key in UNSUPPORTED:
            raise YcsbFileError(f"{where}: not supported: {UNSUPPORTED[prop.key]}")
        if prop.key not in KNOWN:
            raise YcsbFileError(f"{where}: unknown property (not one of YCSB's CoreWorkload properties)")
        lines[prop.key] = prop.line
        if prop.key == "workload":
            if prop.value not in WORKLOAD_CLASSES:
                raise YcsbFileError(f"{where}: only YCSB's CoreWorkload is supported, got {prop.value!r}")
            continue
        values[prop.key] = _value(source, prop)
    for required in ("recordcount", "operationcount"):
        if required not in values:
            raise YcsbFileError(f"{source}: key {required!r}: missing (YCSB's client needs it)")
    v = {**DEFAULTS, **values}

    def bad(key: str, problem: str) -> YcsbFileError:
        line = f" (line {lines[key]})" if key in lines else " (default)"
        return YcsbFileError(f"{source}: key {key!r}{line}: {problem}")

    record = record_problem(v["fieldcount"], v["fieldlength"])
    if record is not None:
        raise bad("fieldlength" if "fieldlength" in lines else "fieldcount", record)
    total = math.fsum(v[p] for p in PROPORTIONS)
    if abs(total - 1.0) > 1e-9:
        named = [p for p in PROPORTIONS if p in lines] or list(PROPORTIONS)
        raise bad(named[0], f"the proportions ({', '.join(PROPORTIONS)}) sum to {total:g}, not 1")
    scanning = v["scanproportion"] > 0
    if scanning and v["minscanlength"] > v["maxscanlength"]:
        raise bad("minscanlength", f"{v['minscanlength']} is above maxscanlength {v['maxscanlength']}")
    if scanning and v["maxscanlength"] > v["recordcount"]:
        raise bad("maxscanlength", f"{v['maxscanlength']} is past the record count {v['recordcount']}")
    dist = v["requestdistribution"]
    if dist == "latest" and v["recordcount"] < 2:
        raise bad("recordcount", "the latest distribution needs at least 2 records")
    if dist == "hotspot":
        hot = int(v["recordcount"] * v["hotspotdatafraction"])
        if hot == 0 and v["hotspotopnfraction"] > 0:
            raise bad("hotspotdatafraction", f"leaves no hot key of {v['recordcount']} records")
        if hot == v["recordcount"] and v["hotspotopnfraction"] < 1:
            raise bad("hotspotdatafraction", "leaves no cold key for the operations off the hot set")

    mixed: dict[str, Any] = {"kind": "mixed", "operations": v["operationcount"]}
    mixed.update({p: float(v[p]) for p in PROPORTIONS})
    mixed["requestdistribution"] = dist
    if dist in ("zipfian", "clustered_zipfian", "latest"):
        mixed["zipfianconstant"] = v["zipfianconstant"]
    elif dist == "hotspot":
        mixed["hotspotdatafraction"] = v["hotspotdatafraction"]
        mixed["hotspotopnfraction"] = v["hotspotopnfraction"]
    elif dist == "exponential":
        mixed["exponential_percentile"] = v["exponential.percentile"]
        mixed["exponential_frac"] = v["exponential.frac"]
    mixed["readallfields"] = v["readallfields"]
    mixed["writeallfields"] = v["writeallfields"]
    if scanning:
        mixed["minscanlength"] = v["minscanlength"]
        mixed["maxscanlength"] = v["maxscanlength"]
        mixed["scanlengthdistribution"] = v["scanlengthdistribution"]
    return {
        "run": {"name": f"ycsb-{Path(source).name}", "workload": "ycsb", "seed": DEFAULT_SEED},
        "ycsb": {
            "recordcount": v["recordcount"],
            "fieldcount": v["fieldcount"],
            "fieldlength": v["fieldlength"],
            "insertorder": v["insertorder"],
            "zeropadding": v["zeropadding"],
        },
        "phase": [{"kind": "load"}, mixed],
    }


def plan_from_ycsb(path: Path) -> dict[str, Any]:
    """The plan for YCSB workload file ``path`` (YcsbFileError/PropertiesError naming file and key)."""
    return plan_from_properties(read_properties(path), str(path))


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return f"{value:_}" if value >= 10_000 else str(value)
    if isinstance(value, float):
        return repr(value)
    return '"' + str(value).replace("\\", "\\\\").replace('"', '\\"') + '"'


def plan_toml(plan: dict[str, Any], source_name: str) -> str:
    """The plan as TOML text (tables in the shape docs/workloads.md describes)."""
    lines = [
        f"# YCSB's {source_name}, converted by asyncbench.workloads.ycsb.convert (docs/workloads.md).",
        "# Record, key and phase settings are YCSB's; seed is asyncbench's (YCSB files have none).",
        "",
    ]
    for table in ("run", "ycsb"):
        lines.append(f"[{table}]")
        lines += [f"{k} = {_toml_value(val)}" for k, val in plan[table].items()]
        lines.append("")
    for phase in plan["phase"]:
        lines.append("[[phase]]")
        lines += [f"{k} = {_toml_value(val)}" for k, val in phase.items()]
        lines.append("")
    return "\n".join(lines[:-1]) + "\n"
