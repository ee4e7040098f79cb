"""Deliberately broken engines, registered by tests to prove failures are loud."""

from __future__ import annotations

import anyio

from engines.memory import MemoryEngine


class FaultyEngine(MemoryEngine):
    """Raises in the middle of the country/status query phase."""

    name = "faulty"

    def __init__(self, config) -> None:  # type: ignore[no-untyped-def]
        super().__init__(config)
        self.calls = 0

    async def query_country_status(self, queries, marks):  # type: ignore[no-untyped-def]
        self.calls += 1
        if self.calls == 2:
            raise OSError("simulated device error")
        return await super().query_country_status(queries, marks)


class WrongEngine(MemoryEngine):
    """Returns one profile too few from each email lookup batch: a silent bug made loud."""

    name = "wrong"

    async def lookup_by_email(self, emails, marks):  # type: ignore[no-untyped-def]
        return (await super().lookup_by_email(emails, marks))[:-1]


class SlowEngine(MemoryEngine):
    """Each read batch takes a long time, so a small timeout interrupts the read phase."""

    name = "slow"

    async def read_by_id(self, uids, marks):  # type: ignore[no-untyped-def]
        await anyio.sleep(30)
        return await super().read_by_id(uids, marks)


class CrashingEngine(MemoryEngine):
    """Kills its own process with SIGKILL during the lookup phase: a hard crash."""

    name = "crashing"

    async def lookup_by_email(self, emails, marks):  # type: ignore[no-untyped-def]
        import os
        import signal

        os.kill(os.getpid(), signal.SIGKILL)


class RetryingEngine(MemoryEngine):
    """States a pretend two-node cluster and reports one retried write per update batch,
    so the runner's per-phase retries and the report's Cluster note can be checked
    without a cluster."""

    name = "retrying"

    def __init__(self, config) -> None:  # type: ignore[no-untyped-def]
        super().__init__(config)
        self.pending = 0

    async def update(self, uids, transform, marks):  # type: ignore[no-untyped-def]
        self.pending += 1
        return await super().update(uids, transform, marks)

    def take_retries(self) -> int:
        taken, self.pending = self.pending, 0
        return taken

    def facts(self):  # type: ignore[no-untyped-def]
        facts = super().facts()
        facts.endpoints = ["node-a:1", "node-b:2"]
        facts.cluster = {"nodes": "2 pretend nodes", "workers": "worker 0 -> node-a:1"}
        return facts
