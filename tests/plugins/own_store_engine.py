"""An engine that is its own profile store, in memory: the base of the tests' faulty,
slow and counting engines, which override a profile-store operation on the engine itself.

The memory engine hands out in-process primitives and the workload keeps its store; an
engine that keeps ``Engine.worker`` is instead its own store (a plug-in that implements
the profile store's ten operations itself), and this one is the memory store so.
"""

from __future__ import annotations

from anyio.abc import TaskGroup

from asyncbench.engine import Engine, EngineConfig
from asyncbench.engines.memory import MemoryEngine
from asyncbench.workloads.profile_store.memory_store import MemoryProfileStore


class OwnStoreMemoryEngine(MemoryProfileStore, MemoryEngine):
    """The memory engine as its own profile store (``worker(i)`` is the engine)."""

    worker = Engine.worker  # its own store: every workload call lands on the engine

    def __init__(self, config: EngineConfig) -> None:
        MemoryEngine.__init__(self, config)
        MemoryProfileStore.__init__(self, config.limit)

    async def open(self, reset: bool, background: TaskGroup | None = None) -> None:
        if reset:
            MemoryProfileStore.__init__(self, self.limit)
