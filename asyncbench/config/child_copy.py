"""The effective config as JSON, for an isolated engine's child process to run exactly.

Written from the dataclass's fields and read back by their types, so a new ``[run]`` key
travels to the child without an edit here.
"""

from __future__ import annotations

import dataclasses
import typing
from pathlib import Path
from typing import Any

from asyncbench.config.model import BenchConfig, CrashPoint, PhaseSpec


def to_json(cfg: BenchConfig) -> bytes:
    """The effective (validated, flag-overridden) config, for a child process to run exactly:
    every field, so a new ``[run]`` key travels without an edit here."""
    import orjson

    def encode(v: object) -> Any:
        if isinstance(v, Path):
            return str(v)
        if isinstance(v, set):
            return sorted(v)
        if isinstance(v, list):
            return [encode(x) for x in v]
        if isinstance(v, PhaseSpec):
            return dataclasses.asdict(v)
        return v

    return orjson.dumps({f.name: encode(getattr(cfg, f.name)) for f in dataclasses.fields(cfg)})


def from_json(data: bytes) -> BenchConfig:
    """The config :func:`to_json` wrote, field by field from the dataclass's own types; its
    workload travels in it (``workload``), as every other ``[run]`` key does."""
    import orjson

    doc = orjson.loads(data)
    hints = typing.get_type_hints(BenchConfig)
    for name, value in doc.items():
        hint = hints[name]
        if hint is Path:
            doc[name] = Path(value)
        elif typing.get_origin(hint) is set:
            doc[name] = set(value)
        elif hint == list[PhaseSpec]:
            doc[name] = [PhaseSpec(**{**p, "params": tuple(map(tuple, p.get("params", ()))), "crash": _crash(p)}) for p in value]
    return BenchConfig(**doc)


def _crash(phase: dict[str, Any]) -> CrashPoint | None:
    crash = phase.get("crash")
    return None if crash is None else CrashPoint(**crash)
