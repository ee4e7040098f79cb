"""YCSB properties set on the command line (``run -P PLAN -p KEY=VALUE``) applied to a TOML
YCSB plan, as YCSB's ``-p`` overrides a workload file's property.

A YCSB file given to ``-P`` is converted with its ``-p`` properties merged in
(:func:`.convert.convert`); a TOML YCSB plan (the shipped ``benchmarks/ycsb/workloadb.toml``)
takes them here, each landing where the converter would have put it: the record layout
in ``[ycsb]``, the operation count, proportions and distribution in every ``mixed``
phase, ``threadcount`` in ``[run] parallelism``, ``target`` as the mixed phases' rate,
``maxexecutiontime`` as their ``duration``.
The values are checked as the converter checks a file's (one shared parser), the rules
between them by the plan's own checks when it loads; every refusal is listed at once.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from asyncbench.workloads.ycsb.convert import (
    COMMAND_LINE,
    YcsbFileError,
    duration_text,
    is_measurement,
    parse_value,
    refusal,
    where_set,
    zipfianconstant_note,
)
from asyncbench.workloads.ycsb.properties import Property

__all__ = ["override_plan"]

#: properties of the ``[ycsb]`` table
SECTION_KEYS = ("recordcount", "fieldcount", "fieldlength", "insertorder", "zeropadding")
#: YCSB property -> a mixed phase's key
MIXED_KEYS = {
    "operationcount": "operations",
    "readproportion": "readproportion",
    "updateproportion": "updateproportion",
    "insertproportion": "insertproportion",
    "scanproportion": "scanproportion",
    "readmodifywriteproportion": "readmodifywriteproportion",
    "requestdistribution": "requestdistribution",
    "readallfields": "readallfields",
    "writeallfields": "writeallfields",
    "minscanlength": "minscanlength",
    "maxscanlength": "maxscanlength",
    "scanlengthdistribution": "scanlengthdistribution",
    "hotspotdatafraction": "hotspotdatafraction",
    "hotspotopnfraction": "hotspotopnfraction",
    "exponential.percentile": "exponential_percentile",
    "exponential.frac": "exponential_frac",
}


def _table(doc: dict[str, Any], name: str, source: str) -> dict[str, Any]:
    table = doc.setdefault(name, {})
    if not isinstance(table, dict):
        raise YcsbFileError(f"{source}: [{name}] is not a table")
    return table


def override_plan(doc: dict[str, Any], overrides: Sequence[tuple[str, str]], source: str) -> list[str]:
    """Set each (key, value) YCSB property in the plan document ``doc`` (in place); the
    notes to print; YcsbFileError listing every refused property at once."""
    phases = doc.get("phase")
    mixed = [p for p in phases if isinstance(p, dict) and p.get("kind") == "mixed"] if isinstance(phases, list) else []
    errors: list[str] = []
    notes: list[str] = []
    measurement: list[str] = []
    for key, text in overrides:
        prop = Property(key, text, COMMAND_LINE)
        where = where_set(source, prop)
        why = refusal(prop)
        if why is not None:
            errors.append(f"{where}: {why}")
        elif key == "workload" or key.startswith("core_workload_insertion_") or key == "fieldlengthdistribution":
            continue  # CoreWorkload, no insert retries, constant fields: what the plan does already
        elif is_measurement(key):
            measurement.append(key)
        elif key == "zipfianconstant":
            notes.append(zipfianconstant_note(source, prop))
        elif (key in MIXED_KEYS or key in ("target", "maxexecutiontime")) and not mixed:
            errors.append(f"{where}: the plan has no mixed phase to set it on")
        else:
            try:
                value = parse_value(source, prop)
            except YcsbFileError as exc:
                errors.append(str(exc))
                continue
            if key in SECTION_KEYS:
                _table(doc, "ycsb", source)[key] = value
            elif key == "threadcount":
                _table(doc, "run", source)["parallelism"] = value
            elif key == "maxexecutiontime":
                for phase in mixed:
                    if value:
                        phase["duration"] = duration_text(value)
                    else:  # YCSB's 0: no time limit
                        phase.pop("duration", None)
            elif key == "target":
                for phase in mixed:
                    if value:
                        phase["rate"] = value
                    else:  # YCSB's target 0: unthrottled
                        phase.pop("rate", None)
            else:
                for phase in mixed:
                    phase[MIXED_KEYS[key]] = value
    if measurement:
        notes.append(
            f"{source}: -p {', '.join(repr(k) for k in measurement)} accepted and ignored: YCSB measurement "
            "settings; asyncbench records every operation's latency in an HDR histogram per phase and kind"
        )
    if errors:
        raise YcsbFileError("\n".join(errors))
    return notes
