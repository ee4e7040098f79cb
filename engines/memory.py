"""The in-memory reference engine: the workload's own store in this process, nothing between.

It exists to check the workloads and the runner (its checksums must equal the spec's) and
to measure the harness-overhead floor. Its primitives are
:class:`~asyncbench.store.InProcess`: the workload keeps its reference store in the
engine's ``held`` dict (the profile store: dicts and sorted index lists; YCSB: an ordered
dict of records), which survives a reopen: nothing persists.
"""

from __future__ import annotations

from anyio.abc import TaskGroup

from asyncbench.engine import Engine, EngineConfig
from asyncbench.facts import Durability, EngineFacts, StorageMethod
from asyncbench.store import InProcess

__all__ = ["MemoryEngine"]


class MemoryEngine(Engine):
    """The reference engine in this process's memory. Nothing persists (reopen keeps the
    object), and it is the harness floor: what the harness itself costs, with no store in
    between. It checks the workload (its checksums are the spec's) and is not run by
    ``--engine all``."""

    name = "memory"
    cost_growth = 0.0  # per operation, above the estimate's knee (docs/results/estimate.md)
    persistent = False
    harness_floor = True  # not in ``all``: the reference engine of the tests and the overhead floor

    def __init__(self, config: EngineConfig) -> None:
        super().__init__(config)
        self._primitives = InProcess()

    async def open(self, reset: bool, background: TaskGroup | None = None) -> None:
        if reset:
            self._primitives = InProcess()

    async def close(self) -> None:
        pass

    def worker(self, index: int) -> InProcess:
        """Every worker shares the one in-process store."""
        return self._primitives

    def storage_bytes(self) -> int:
        return 0

    def facts(self) -> EngineFacts:
        facts = super().facts()
        facts.durability = Durability(persistent=False)
        facts.storage_method = StorageMethod.NONE
        facts.colour = "#8c8c8c"
        return facts
