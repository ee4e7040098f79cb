"""asyncbench: an async benchmark framework for storage engines (the profile-store workload).

The package's layers, top to bottom (each imports only the ones below it; the contracts
are in pyproject.toml and ``scripts/lint-layers`` checks them):

- ``asyncbench.cli``: the command line (parser and commands);
- ``asyncbench.run``: running a plan: the runner at its top, the rest in sub-packages by concern, in layers;
- ``asyncbench.report``: Markdown report, charts, CSV, the files a run writes;
- ``asyncbench.measure``: latency, statistics, repeats, correctness, provenance;
- ``asyncbench.dirs``: the run's directories, checked and locked before it starts;
- ``asyncbench.config`` (the plan) and ``asyncbench.result`` (the one JSON result model);
- ``asyncbench.engines``: the engine adapters and their registry;
- ``asyncbench.engine`` (what an engine implements) and ``asyncbench.workloads`` (the workload);
- ``asyncbench.facts``, ``asyncbench.fs``, ``asyncbench.fmt``: facts, file primitives, formatting.

The names most users need are re-exported here, loaded on first use (PEP 562) so that
importing the package costs nothing and imports no layer.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.2.0"  # keep equal to pyproject.toml (a test checks)

#: name -> the module that defines it
_EXPORTS = {
    "Engine": "asyncbench.engine",
    "EngineConfig": "asyncbench.engine",
    "EngineUnavailable": "asyncbench.engine",
    "EngineFacts": "asyncbench.facts",
    "Setting": "asyncbench.facts",
    "BenchConfig": "asyncbench.config",
    "ConfigError": "asyncbench.config",
    "RunResult": "asyncbench.result",
    "EngineResult": "asyncbench.result",
    "PhaseResult": "asyncbench.result",
    "Status": "asyncbench.result",
}

__all__ = [  # noqa: RUF022 (grouped as _EXPORTS)
    "__version__",
    "Engine",
    "EngineConfig",
    "EngineUnavailable",
    "EngineFacts",
    "Setting",
    "BenchConfig",
    "ConfigError",
    "RunResult",
    "EngineResult",
    "PhaseResult",
    "Status",
]

if TYPE_CHECKING:
    from asyncbench.config import BenchConfig, ConfigError
    from asyncbench.engine import Engine, EngineConfig, EngineUnavailable
    from asyncbench.facts import EngineFacts, Setting
    from asyncbench.result import EngineResult, PhaseResult, RunResult, Status


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'asyncbench' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
