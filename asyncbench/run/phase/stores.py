"""The workload's stores over an engine's workers: where the seam is crossed, once.

An engine's ``worker(i)`` hands out primitives (:mod:`asyncbench.store`) and the workload
builds its store over them (``Workload.store``); every place that runs a workload's calls
(phases, capacity, client processes, verify, crash recovery, the floor tools) takes its
stores from here, so the two meet in one line.
"""

from __future__ import annotations

from typing import Any

from asyncbench.engine import Engine
from asyncbench.workload import Workload

__all__ = ["worker_store", "worker_stores"]


def worker_store(workload: Workload, engine: Engine, index: int) -> Any:
    """The workload's store over worker ``index``'s primitives (the engine is open)."""
    return workload.store(engine.worker(index), engine.limit)


def worker_stores(workload: Workload, engine: Engine, workers: range | list[int] | None = None) -> list[Any]:
    """The stores of ``workers`` (default: every worker the engine opened), in order."""
    indexes = range(engine.config.workers) if workers is None else workers
    return [worker_store(workload, engine, w) for w in indexes]
