"""A YCSB workload file -> an asyncbench plan (a dict, and its TOML text).

YCSB's own files (``workloads/workloada`` ... ``workloadf``) are the shared vocabulary,
so they are accepted unchanged and turned into the plan shape docs/workloads.md
describes: ``[run]`` (``workload = "ycsb"``), ``[ycsb]`` (the record and key layout) and
two phases, ``load`` then ``mixed`` (proportions and request distribution). Every
property is accounted for: a CoreWorkload property we carry over lands in the plan; one
YCSB itself ignores (``zipfianconstant``: YCSB always draws with 0.99) or one that only
tunes YCSB's measurements (``measurementtype``, ``hdrhistogram.*``...) is accepted and
ignored *with a note* saying so; ``threadcount`` becomes the run's parallelism and
``target`` the mixed phase's rate and ``maxexecutiontime`` its ``duration``; one we do not support, an unknown one, or a bad value
is an error naming the file, the key and the problem, never silently dropped, and every
such error of a file is listed at once (a file is fixed in one go, not one key per try).
``db`` and ``exporter`` choose YCSB's binding and output, which asyncbench decides itself
(``--engine``, its result files): refused. ``asyncbench plan --from-ycsb`` and ``run -P``
call :func:`convert` (``-p KEY=VALUE`` are its ``overrides``) and :func:`plan_toml`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
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
    "fieldlengthdistribution": "fields have the constant length fieldlength (only 'constant' is accepted)",
    "minfieldlength": "fields have the constant length fieldlength",
    "fieldlengthhistogram": "fields have the constant length fieldlength",
    "dataintegrity": "every read is checked already (the phase checksum)",
    "readallfieldsbyname": "a read of all fields is one operation on every engine",
    "insertstart": "one plan loads all records (scale out with --processes/--cluster)",
    "insertcount": "one plan loads all records (scale out with --processes/--cluster)",
}
#: CoreWorkload's insertion error handling (``core_workload_insertion_*``): asyncbench's
#: insert that fails fails the run, so only the values that mean that are accepted
INSERTION_PREFIX = "core_workload_insertion_"
INSERTION_ACCEPTED = {"core_workload_insertion_retry_limit": "0", "core_workload_insertion_keep_going_on_error": "false"}
INSERTION_REASON = "a failed insert fails the run (asyncbench neither retries nor skips one)"
#: Properties that only tune YCSB's measurements or status output (and prefixes of such):
#: accepted with a note, since asyncbench always records every operation's latency in an
#: HDR histogram per phase and kind (``report --format ycsb`` prints YCSB's summary of it)
MEASUREMENT = {
    "measurementtype",
    "measurement.interval",
    "measurement.trackjvm",
    "measurement.raw.output_file",
    "measurement.raw.separate_threads",
    "histogram.buckets",
    "timeseries.granularity",
    "status.interval",
    "reportlatencyforeacherror",
    "latencytrackederrors",
}
MEASUREMENT_PREFIXES = ("hdrhistogram.",)

_INT = re.compile(r"[+-]?[0-9]+", re.ASCII)
_FLOAT = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?", re.ASCII)
_INTS = {
    "recordcount",
    "operationcount",
    "fieldcount",
    "fieldlength",
    "minscanlength",
    "maxscanlength",
    "zeropadding",
    "threadcount",
}
_BOOLS = {"readallfields", "writeallfields"}
_CHOICES: dict[str, tuple[str, ...]] = {
    "requestdistribution": NAMES,
    "scanlengthdistribution": SCAN_LENGTH_DISTRIBUTIONS,
    "insertorder": INSERT_ORDERS,
}
KNOWN = {"workload", "recordcount", "operationcount", "threadcount", "target", "maxexecutiontime", *DEFAULTS}
#: The longest ``maxexecutiontime`` a plan takes: a year, as a phase's ``duration``.
MAX_EXECUTION_SECONDS = 365 * 24 * 3600


def duration_text(seconds: int) -> str:
    """YCSB's ``maxexecutiontime`` (whole seconds) as a phase's ``duration``."""
    return f"{seconds}s"


#: the line number of a property set on the command line (``-p KEY=VALUE``), not in the file
COMMAND_LINE = 0


class YcsbFileError(PropertiesError):
    """A YCSB workload file that cannot become a plan (file, key and problem in the message;
    one line per problem when there are several)."""


@dataclass
class Conversion:
    """A YCSB file's plan and the notes about what it accepted without carrying it (a
    property YCSB ignores, a measurement setting), which the caller prints: never silent."""

    plan: dict[str, Any]
    notes: list[str] = field(default_factory=list)


def where_set(source: str, prop: Property) -> str:
    """``FILE: key 'k' (line 3)``, or ``(-p on the command line)`` for an override."""
    place = "-p on the command line" if prop.line == COMMAND_LINE else f"line {prop.line}"
    return f"{source}: key {prop.key!r} ({place})"


def is_measurement(key: str) -> bool:
    """A property that only tunes YCSB's measurements or status output."""
    return key in MEASUREMENT or key.startswith(MEASUREMENT_PREFIXES)


def parse_value(source: str, prop: Property) -> Any:
    key, text = prop.key, prop.value

    def bad(problem: str) -> YcsbFileError:
        return YcsbFileError(f"{where_set(source, prop)}: {problem}")

    if key == "maxexecutiontime":  # YCSB's: whole seconds, 0 (its default) no limit
        if not _INT.fullmatch(text) or len(text.lstrip("+-0")) > 30:
            raise bad(f"{text!r} is not a whole number of seconds")
        seconds = int(text)
        if not 0 <= seconds <= MAX_EXECUTION_SECONDS:
            raise bad(f"must be between 0 (no limit) and {MAX_EXECUTION_SECONDS:_d} seconds, got {seconds:_d}")
        return seconds
    if key in _INTS:
        if not _INT.fullmatch(text):
            raise bad(f"{text!r} is not a whole number")
        if len(text.lstrip("+-0")) > 30:  # int() of a huge digit string is slow, and refused below anyway
            raise bad(f"must be between 1 and {size_bound(key):_d}, got {text[:20]}... ({len(text)} digits)")
        whole = int(text)
        if whole < 1 and key == "operationcount":
            raise bad(
                f"must be >= 1, got {whole}: asyncbench draws the run phase's operations before it starts, so "
                "operationcount is their number (with maxexecutiontime, their upper bound); YCSB's 0, "
                "'run until maxexecutiontime', has no equal: give the most operations the time could take"
            )
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
    if key == "exponential.percentile" and not 0 < number < 100:
        raise bad(f"must be between 0 and 100 (exclusive), got {text}")
    if key == "exponential.frac" and number == 0:
        raise bad("must be > 0")
    return number


def refusal(prop: Property) -> str | None:
    """Why a property cannot be carried (None: it can, or it is noted)."""
    key = prop.key
    if key == "fieldlengthdistribution" and prop.value == "constant":
        return None  # YCSB's default, what asyncbench does
    if key in UNSUPPORTED:
        return f"not supported: {UNSUPPORTED[key]}"
    if key.startswith(INSERTION_PREFIX):
        return None if INSERTION_ACCEPTED.get(key) == prop.value else f"not supported: {INSERTION_REASON}"
    if key not in KNOWN and not is_measurement(key):
        return "unknown property (not one of YCSB's CoreWorkload or client properties)"
    if key == "workload" and prop.value not in WORKLOAD_CLASSES:
        return f"only YCSB's CoreWorkload is supported, got {prop.value!r}"
    return None


def zipfianconstant_note(source: str, prop: Property) -> str:
    """What a ``zipfianconstant`` line does: nothing, in YCSB; said, and how to get one."""
    return (
        f"{where_set(source, prop)}: ignored, as YCSB ignores it: YCSB's zipfian generators always "
        f"draw with {ZIPFIAN_CONSTANT} (ZipfianGenerator.ZIPFIAN_CONSTANT); to draw with "
        f"{prop.value} instead, set zipfianconstant = {prop.value} in the plan's mixed [[phase]] "
        "(asyncbench plan --from-ycsb FILE > plan.toml, then edit it)"
    )


def merged(props: Sequence[Property], overrides: Sequence[Property]) -> list[Property]:
    """The file's properties with the command line's ``-p`` ones replacing theirs (YCSB's
    rule: ``-p`` wins over ``-P``), file order first, then the new keys."""
    given = {o.key: o for o in overrides}
    out = [given.pop(p.key, p) for p in props]
    return out + list(given.values())


def convert(props: Sequence[Property], source: str, overrides: Sequence[Property] = ()) -> Conversion:
    """The plan for a YCSB workload's properties (``overrides``: ``-p`` ones, line
    :data:`COMMAND_LINE`) and its notes; YcsbFileError listing every problem at once."""
    values: dict[str, Any] = {}
    lines: dict[str, int] = {}
    errors: list[str] = []
    notes: list[str] = []
    measurement: list[str] = []
    for prop in merged(props, overrides):
        why = refusal(prop)
        if why is not None:
            errors.append(f"{where_set(source, prop)}: {why}")
            continue
        lines[prop.key] = prop.line
        if prop.key == "workload" or prop.key.startswith(INSERTION_PREFIX) or prop.key == "fieldlengthdistribution":
            continue
        if is_measurement(prop.key):
            measurement.append(prop.key)
            continue
        if prop.key == "zipfianconstant":
            notes.append(zipfianconstant_note(source, prop))
            continue
        try:
            values[prop.key] = parse_value(source, prop)
        except YcsbFileError as exc:
            errors.append(str(exc))
    if measurement:
        notes.append(
            f"{source}: {', '.join(repr(k) for k in measurement)} accepted and ignored: "
            f"{'they tune' if len(measurement) > 1 else 'it tunes'} YCSB's measurements; asyncbench "
            "records every operation's latency in an HDR histogram per phase and kind "
            "(asyncbench report --format ycsb RESULT.json prints YCSB's summary of it)"
        )
    for required in ("recordcount", "operationcount"):
        if required not in values and required not in lines:
            errors.append(f"{source}: key {required!r}: missing (YCSB's client needs it)")
    if not errors:
        _cross_check({**DEFAULTS, **values}, lines, source, errors)
    if errors:
        raise YcsbFileError("\n".join(errors))
    return Conversion(_plan(source, {**DEFAULTS, **values}), notes)


def _cross_check(v: dict[str, Any], lines: dict[str, int], source: str, errors: list[str]) -> None:
    """The rules between values (proportions, scan lengths, distribution parameters)."""

    def bad(key: str, problem: str) -> None:
        place = " (default)"
        if key in lines:
            place = " (-p on the command line)" if lines[key] == COMMAND_LINE else f" (line {lines[key]})"
        errors.append(f"{source}: key {key!r}{place}: {problem}")

    record = record_problem(v["fieldcount"], v["fieldlength"])
    if record is not None:  # a record past the bound: no further rule needs checking
        bad("fieldlength" if "fieldlength" in lines else "fieldcount", record)
        return
    total = math.fsum(v[p] for p in PROPORTIONS)
    if abs(total - 1.0) > 1e-9:
        named = [p for p in PROPORTIONS if p in lines] or list(PROPORTIONS)
        bad(named[0], f"the proportions ({', '.join(PROPORTIONS)}) sum to {total:g}, not 1")
    scanning = v["scanproportion"] > 0
    if scanning and v["minscanlength"] > v["maxscanlength"]:
        bad("minscanlength", f"{v['minscanlength']} is above maxscanlength {v['maxscanlength']}")
    if scanning and v["maxscanlength"] > v["recordcount"]:
        bad("maxscanlength", f"{v['maxscanlength']} is past the record count {v['recordcount']}")
    dist = v["requestdistribution"]
    if dist == "latest" and v["recordcount"] < 2:
        bad("recordcount", "the latest distribution needs at least 2 records")
    if dist == "hotspot":
        hot = int(v["recordcount"] * v["hotspotdatafraction"])
        if hot == 0 and v["hotspotopnfraction"] > 0:
            bad("hotspotdatafraction", f"leaves no hot key of {v['recordcount']} records")
        if hot == v["recordcount"] and v["hotspotopnfraction"] < 1:
            bad("hotspotdatafraction", "leaves no cold key for the operations off the hot set")


def _plan(source: str, v: dict[str, Any]) -> dict[str, Any]:
    """The plan dict of checked values (YCSB's defaults filled in)."""
    dist = v["requestdistribution"]
    scanning = v["scanproportion"] > 0
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
    if v.get("maxexecutiontime"):  # YCSB's time bound on the run (0: none); operationcount bounds it too
        mixed["duration"] = duration_text(v["maxexecutiontime"])
    if v.get("target"):  # YCSB's -target: operations per second of the whole run (0: unthrottled)
        mixed["rate"] = v["target"]
    run: dict[str, Any] = {"name": f"ycsb-{Path(source).name}", "workload": "ycsb", "seed": DEFAULT_SEED}
    if "threadcount" in v:  # YCSB's client threads: the workers of each phase
        run["parallelism"] = v["threadcount"]
    return {
        "run": run,
        "ycsb": {
            "recordcount": v["recordcount"],
            "fieldcount": v["fieldcount"],
            "fieldlength": v["fieldlength"],
            "insertorder": v["insertorder"],
            "zeropadding": v["zeropadding"],
        },
        "phase": [{"kind": "load"}, mixed],
    }



def plan_from_ycsb(path: Path) -> Conversion:
    """The plan for YCSB workload file ``path`` (YcsbFileError/PropertiesError naming file and key)."""
    return convert(read_properties(path), str(path))


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return f"{value:_}" if value >= 10_000 else str(value)
    if isinstance(value, float):
        return repr(value)
    return '"' + str(value).replace("\\", "\\\\").replace('"', '\\"') + '"'


def plan_toml(plan: dict[str, Any], source_name: str, notes: Sequence[str] = ()) -> str:
    """The plan as TOML text (tables in the shape docs/workloads.md describes); ``notes``
    (what the conversion accepted without carrying) as comments at the top."""
    lines = [
        f"# YCSB's {source_name}, converted by asyncbench.workloads.ycsb.convert (docs/workloads.md).",
        "# Record, key and phase settings are YCSB's; seed is asyncbench's (YCSB files have none).",
        *(f"# note: {note}" for note in notes),
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
