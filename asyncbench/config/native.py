"""A plan given YCSB's way: ``run -P FILE`` (a YCSB workload file, or a plan) and
``-p KEY=VALUE`` (repeatable) setting one of the workload's properties, as YCSB's own
client takes them; ``-p`` wins over the file, as in YCSB.

``-P`` takes a YCSB workload file (Java properties) directly: it is converted as
``asyncbench plan --from-ycsb`` converts it, with the ``-p`` properties merged in first
(so a ``-p`` value is checked, defaulted and cross-checked like the file's own). A TOML
plan (``-P benchmarks/ycsb/workloadb.toml``, or the positional plan with ``-p``) takes the
``-p`` properties through its workload (``PlanConversion.override_plan``: YCSB's land in
``[ycsb]``, the mixed phases, ``[run] parallelism``). A bare name that is no file
(``-P workloadb``) is looked up as YCSB users name YCSB's shipped files: the shipped plan
``benchmarks/ycsb/workloadb.toml`` (under the working directory, then the repository's).
The conversion's notes (a property accepted without being carried) are returned to be
printed; every problem is a :class:`ConfigError` naming the file, the key and the reason.
"""

from __future__ import annotations

import tomllib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from asyncbench.config.errors import ConfigError
from asyncbench.config.model import BenchConfig
from asyncbench.config.plan import MAX_PLAN_BYTES, from_document
from asyncbench.parse import escape_unprintable
from asyncbench.workload import Workload
from asyncbench.workload_capabilities import PlanConversion
from asyncbench.workloads import DEFAULT, workload

__all__ = ["SHIPPED_YCSB", "NativeFileError", "load_with_properties", "parse_properties_flags", "resolve_plan"]

#: Where YCSB's shipped workloads live as plans, relative to a repository root
SHIPPED_YCSB = Path("benchmarks") / "ycsb"
_REPOSITORY = Path(__file__).resolve().parent.parent.parent


class NativeFileError(ConfigError):
    """A workload file or ``-p`` property refused by the workload's conversion: its message
    already names the file, each key (with its line, or ``-p``) and problem, one a line."""

    def __init__(self, where: str, message: str) -> None:
        ValueError.__init__(self, "\n".join(escape_unprintable(line) for line in message.split("\n")))
        self.where, self.key, self.reason = where, "file", message


def resolve_plan(name: str) -> Path:
    """``name`` as a path; a bare name that is no file (``workloadb``) as the shipped
    ``benchmarks/ycsb/<name>.toml`` of the working directory or the repository."""
    path = Path(name)
    if path.exists() or len(path.parts) != 1:
        return path
    for root in (Path.cwd(), _REPOSITORY):
        for candidate in (root / SHIPPED_YCSB / name, root / SHIPPED_YCSB / f"{name}.toml"):
            if candidate.is_file():
                return candidate
    return path


def parse_properties_flags(values: Sequence[str]) -> list[tuple[str, str]]:
    """``-p KEY=VALUE`` flags as (key, value), in order (a key given twice: the last wins,
    as in YCSB's client)."""
    out: dict[str, str] = {}
    for text in values:
        key, sep, value = text.partition("=")
        if not sep or not key.strip():
            raise ConfigError("command line", "-p", f"{text!r} is not KEY=VALUE (a YCSB property, e.g. -p recordcount=5000)")
        out.pop(key.strip(), None)
        out[key.strip()] = value.strip()
    return list(out.items())


def _read(path: Path) -> bytes:
    from asyncbench.fs.inputs import InputError, read_input

    try:
        return read_input(path, MAX_PLAN_BYTES, "a plan or a YCSB workload file")
    except InputError as exc:
        raise ConfigError(str(path), "file", exc.reason) from None


def _toml_plan(raw: bytes) -> dict[str, Any] | None:
    """The TOML plan ``raw`` holds, or None when it is no plan (not TOML, or TOML without
    a ``[run]`` table, as a YCSB file of plain numbers reads)."""
    try:
        doc = tomllib.loads(raw.decode("utf-8-sig"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError, RecursionError):
        return None
    return doc if isinstance(doc.get("run"), dict) else None


def _conversion(wl: Workload, source: str) -> PlanConversion:
    """The workload's own file format and properties (ValueError naming ``source`` when it
    has none: ``-p`` sets nothing on a plan whose workload takes no properties)."""
    if not isinstance(wl, PlanConversion):
        raise ValueError(f"{source}: -p sets a workload property; the {wl.name} workload has none (use its [run] flags)")
    return wl


def load_with_properties(name: str, properties: Sequence[str]) -> tuple[BenchConfig, list[str]]:
    """The config of plan or YCSB file ``name`` with the ``-p`` ``properties`` applied,
    and the notes to print."""
    overrides = parse_properties_flags(properties)
    path = resolve_plan(name)
    where = str(path)
    raw = _read(path)
    doc = _toml_plan(raw)
    notes: list[str] = []
    if path != Path(name):
        notes.append(f"-P {name}: no file of that name here; running the shipped plan {path}")
    try:
        if doc is None:  # a YCSB workload file: Java properties, ISO-8859-1
            native = _conversion(workload("ycsb"), where).plan_from_native(raw.decode("latin-1"), where, overrides)
            doc = tomllib.loads(native.text)
            notes += native.notes
        elif overrides:
            name_given = doc["run"].get("workload")
            target = workload(name_given if isinstance(name_given, str) else DEFAULT)
            notes += _conversion(target, where).override_plan(doc, overrides, where)
    except KeyError as exc:  # an unknown workload name: the plan's own check says it better
        raise ConfigError(where, "run.workload", f"unknown workload {exc}") from None
    except ValueError as exc:
        raise NativeFileError(where, str(exc)) from None
    return from_document(doc, where), notes
