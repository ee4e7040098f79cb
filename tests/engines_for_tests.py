"""Deliberately broken engines, registered by tests to prove failures are loud."""

from __future__ import annotations

import time

import anyio
from plugins.own_store_engine import OwnStoreMemoryEngine


class FaultyEngine(OwnStoreMemoryEngine):
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


class WrongEngine(OwnStoreMemoryEngine):
    """Returns one profile too few from each email lookup batch: a silent bug made loud."""

    name = "wrong"

    async def lookup_by_email(self, emails, marks):  # type: ignore[no-untyped-def]
        return (await super().lookup_by_email(emails, marks))[:-1]


class SlowEngine(OwnStoreMemoryEngine):
    """Each read batch takes a long time, so a small timeout interrupts the read phase."""

    name = "slow"

    async def read_by_id(self, uids, marks):  # type: ignore[no-untyped-def]
        await anyio.sleep(30)
        return await super().read_by_id(uids, marks)


class CrashingEngine(OwnStoreMemoryEngine):
    """Kills its own process with SIGKILL during the lookup phase: a hard crash."""

    name = "crashing"

    async def lookup_by_email(self, emails, marks):  # type: ignore[no-untyped-def]
        import os
        import signal

        os.kill(os.getpid(), signal.SIGKILL)


class SlowCloseEngine(SlowEngine):
    """Slow reads, and a close that waits until the test opens a gate (the file named by
    ``ASYNCBENCH_TEST_CLOSE_GATE``; at most 60 s): a graceful stop that lasts exactly as
    long as the test needs to send more signals into it. ``<gate>.closing`` tells the
    test the close has begun."""

    name = "slowclose"

    async def close(self) -> None:  # type: ignore[override]
        import os
        from pathlib import Path

        gate = os.environ.get("ASYNCBENCH_TEST_CLOSE_GATE")
        if gate:
            Path(gate + ".closing").touch()
        with anyio.move_on_after(60):
            while gate and not Path(gate).exists():
                await anyio.sleep(0.05)
        await super().close()


class LateWrongEngine(OwnStoreMemoryEngine):
    """Right on its first email lookup batch, one profile short on every later one: a
    mismatch only a later phase of the same kind can see."""

    name = "latewrong"

    def __init__(self, config) -> None:  # type: ignore[no-untyped-def]
        super().__init__(config)
        self.lookups = 0

    async def lookup_by_email(self, emails, marks):  # type: ignore[no-untyped-def]
        self.lookups += 1
        out = await super().lookup_by_email(emails, marks)
        return out if self.lookups == 1 else out[:-1]


class BrokenConstructorEngine(OwnStoreMemoryEngine):
    """A plug-in whose constructor fails: a failure before open."""

    name = "brokenctor"

    def __init__(self, config) -> None:  # type: ignore[no-untyped-def]
        raise ValueError("this plug-in cannot be constructed")


# --- faulty variants of every file-based engine (the sentinel test runs them all) -------


class _Overridden:
    """A worker's store with some operations replaced (the rest are the store's own)."""

    def __init__(self, store, **methods) -> None:  # type: ignore[no-untyped-def]
        self._store = store
        self.__dict__.update(methods)

    def __getattr__(self, name: str):  # type: ignore[no-untyped-def]
        return getattr(self._store, name)


def _variants() -> dict[str, type]:
    """``failing-<engine>`` raises in the lookup phase; ``slow-<engine>`` sleeps in reads."""
    from asyncbench.engines import engine_class

    async def fail(emails, marks):  # type: ignore[no-untyped-def]
        raise OSError("simulated device error")

    async def slow(uids, marks):  # type: ignore[no-untyped-def]
        await anyio.sleep(30)
        raise AssertionError("unreachable: the run stops first")

    def overriding(base: type, **methods):  # type: ignore[no-untyped-def]
        def worker(self, index):  # type: ignore[no-untyped-def]
            from asyncbench.workloads.profile_store.stores import profile_store

            return _Overridden(profile_store(base.worker(self, index), self.limit), **methods)

        return worker

    out: dict[str, type] = {}
    for base_name in ("memory", "lsm", "rocksdb", "sqlite"):
        base = engine_class(base_name)
        title = base_name.capitalize()
        out[f"Failing{title}"] = type(
            f"Failing{title}",
            (base,),
            {"worker": overriding(base, lookup_by_email=fail), "__module__": __name__},
        )
        out[f"Slow{title}"] = type(
            f"Slow{title}", (base,), {"worker": overriding(base, read_by_id=slow), "__module__": __name__}
        )
    return out


globals().update(_variants())
#: registry name -> "module:Class" of every variant
VARIANTS = {
    f"{kind.lower()}-{e}": f"engines_for_tests:{kind}{e.capitalize()}"
    for kind in ("Failing", "Slow")
    for e in ("memory", "lsm", "rocksdb", "sqlite")
}


class RetryingEngine(OwnStoreMemoryEngine):
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


class PacedEngine(OwnStoreMemoryEngine):
    """Each read batch takes ``ASYNCBENCH_TEST_PACE`` seconds (default 0.3) before its reads,
    so a read phase lasts seconds and a test can watch it while it runs (the live log)."""

    name = "paced"

    async def read_by_id(self, uids, marks):  # type: ignore[no-untyped-def]
        import os

        await anyio.sleep(float(os.environ.get("ASYNCBENCH_TEST_PACE", "0.3")))
        return await super().read_by_id(uids, marks)


class SlowStorageEngine(OwnStoreMemoryEngine):
    """The storage figure after the last phase waits for the test's gate (the file named by
    ``ASYNCBENCH_TEST_CLOSE_GATE``; at most 60 s), so a signal can arrive once every phase
    has ended; ``<gate>.measuring`` tells the test it is waiting."""

    name = "slowstorage"
    #: the gate is for the storage figure at settle only: a cost measurement after each
    #: write phase would stop at the gate in the first one
    storage_changes_state = "the test's gate waits in it"

    async def measure_storage(self) -> int:
        import os
        from pathlib import Path

        gate = os.environ.get("ASYNCBENCH_TEST_CLOSE_GATE")
        if gate:
            Path(gate + ".measuring").touch()
        with anyio.move_on_after(60):
            while gate and not Path(gate).exists():
                await anyio.sleep(0.05)
        return await super().measure_storage()


class StallingEngine(OwnStoreMemoryEngine):
    """Pauses 200 ms inside every ``ASYNCBENCH_TEST_STALL_EVERY``-th read (default 500):
    one operation's service time holds the stall. Closed loop it is one slow sample; under
    a rate every operation intended during it waits (coordinated omission made visible)."""

    name = "stalling"
    STALL_SECONDS = 0.2

    def __init__(self, config) -> None:  # type: ignore[no-untyped-def]
        import os

        super().__init__(config)
        self.every = int(os.environ.get("ASYNCBENCH_TEST_STALL_EVERY", "500"))
        self.reads = 0

    async def read_by_id(self, uids, marks):  # type: ignore[no-untyped-def]
        from time import perf_counter_ns

        marks.append(perf_counter_ns())  # the batch's start stamp
        out = []
        for uid in uids:  # one read at a time through the memory engine's own call
            self.reads += 1
            if self.reads % self.every == 0:
                await anyio.sleep(self.STALL_SECONDS)  # inside this read: before its end stamp
            one: list[int] = []
            out += await super().read_by_id([uid], one)
            marks.append(one[-1])
        return out


class StatefulStorageEngine(OwnStoreMemoryEngine):
    """Its storage figure changes what later phases measure (as MySQL's ANALYZE TABLE
    does), so the cost measurement may take it at settle only."""

    name = "statefulstorage"
    storage_changes_state = "measuring this engine's storage refreshes its statistics"


class SteepGrowthEngine(OwnStoreMemoryEngine):
    """States its own cost growth with the store (test_estimate_growth)."""

    name = "steep"
    cost_growth = 0.5


class NoYcsbEngine(OwnStoreMemoryEngine):
    """A plug-in written for the profile store only: it is its own profile store (the ten
    operations), so it hands out no primitives a YCSB store could be built over."""

    name = "noycsb"


class FixedServiceWorker:
    """A server worker whose every operation (a profile-store read, a YCSB mix's read or
    update) takes ``SERVICE`` seconds, served on a thread: the capacity tests' engine, whose
    capacity is known (P workers: P / SERVICE operations a second).

    Exactly, as a server's clock: a batch arrives when it is sent, and each of its
    operations ends ``SERVICE`` after the later of the batch's arrival and the previous
    operation's end. A sleep that oversleeps on a loaded machine, or the hop back to the
    event loop, then shortens the next queued operation instead of slowing the server: its
    capacity is 1 / SERVICE a second, whatever the machine's load."""

    SERVICE = 0.01

    def __init__(self) -> None:
        self.busy_until = 0.0

    def _serve(self, arrived: float, n: int, marks: list[int]) -> None:
        for _ in range(n):
            end = max(arrived, self.busy_until) + self.SERVICE
            self.busy_until = end
            left = end - time.perf_counter()
            if left > 0:
                time.sleep(left)
            marks.append(time.perf_counter_ns())

    async def _batch(self, n: int, marks: list[int]) -> None:
        arrived = time.perf_counter()
        marks.append(time.perf_counter_ns())
        await anyio.to_thread.run_sync(self._serve, arrived, n, marks)

    async def read_by_id(self, uids: list[int], marks: list[int]) -> list[object]:
        """The profile store's point reads (returning no profile: the checksum is not this test's)."""
        await self._batch(len(uids), marks)
        return []

    def usertable(self) -> FixedServiceWorker:
        return self

    async def run(self, ops: object, marks: list[int]) -> list[int]:
        """A YCSB mix's batch, reads and updates alike."""
        n = len(ops.rows())  # type: ignore[attr-defined]
        await self._batch(n, marks)
        return [0] * n


class HoggingEngine(OwnStoreMemoryEngine):
    """The memory engine beside a thread that spins in Python holding the GIL (from the first
    read on, for ``ASYNCBENCH_TEST_HOG_SECONDS``, default 20): the event loop waits for the
    interpreter up to a switch interval at every wake-up, so the harness issues its
    operations late while each read stays a memory read. The client late, not the engine:
    the verdicts' INCONCLUSIVE (issue 51)."""

    name = "hogging"

    async def read_by_id(self, uids, marks):  # type: ignore[no-untyped-def]
        if not getattr(self, "_hog", None):
            import os
            import threading
            import time

            until = time.monotonic() + float(os.environ.get("ASYNCBENCH_TEST_HOG_SECONDS", "20"))

            def spin() -> None:
                x = 0
                while time.monotonic() < until:
                    for _ in range(10_000):
                        x += 1

            self._hog = threading.Thread(target=spin, daemon=True)
            self._hog.start()
        return await super().read_by_id(uids, marks)
