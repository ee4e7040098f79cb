"""The run's Environment record: provenance plus the harness's own facts.

:mod:`asyncbench.measure.provenance` gathers where and on what a run happened (numbers stay
numbers); this module adds what the harness itself runs on (event loop, compiled
kernels) and renders the report's Environment rows.
"""

from __future__ import annotations

import sys
from importlib import metadata
from pathlib import Path
from typing import Any

from asyncbench.measure import provenance
from asyncbench.result import ResultError, load_as
from asyncbench.workload import Workload
from asyncbench.workload_capabilities import kernels_status

__all__ = ["collect", "event_loop_backend", "rows"]


def package_version(name: str) -> str:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "not installed"


def event_loop_backend() -> str:
    try:
        import uvloop  # noqa: F401

        return f"asyncio + uvloop {package_version('uvloop')}"
    except ImportError:
        return "asyncio"


def collect(
    plan: str | None, data_dir: Path, engines: list[str], wl: Workload, argv: list[str] | None = None
) -> dict[str, Any]:
    """Provenance of this run, with every engine's library versions asked through the
    registry (this module names no engine) and the kernels of the plan's workload ``wl``."""
    from asyncbench.engines import engine_class

    versions: dict[str, str] = {}
    for name in engines:
        try:
            versions.update({f"{name}: {k}": v for k, v in engine_class(name).library_versions().items()})
        except Exception as exc:  # an engine that cannot even be imported says so in its row
            versions[name] = f"unavailable ({type(exc).__name__})"
    env: dict[str, Any] = dict(provenance.collect(argv if argv is not None else sys.argv, plan, data_dir, versions))
    env["event_loop"] = event_loop_backend()
    env["compiled_kernels"] = kernels_status(wl)
    return env


def rows(env: dict[str, Any]) -> list[tuple[str, str]]:
    """(label, text) rows for the report. The record is open (each version wrote its own
    keys): one that does not have the provenance shape, such as an older result's, shows
    its items as text."""
    try:
        record = load_as(provenance.Provenance, env, "environment")
    except ResultError:
        return [(k, str(v)) for k, v in env.items() if isinstance(v, (str, int, float))]
    out = provenance.format_rows(record)
    out += [("Event loop", env.get("event_loop", "-")), ("Compiled kernels", env.get("compiled_kernels", "-"))]
    return out
