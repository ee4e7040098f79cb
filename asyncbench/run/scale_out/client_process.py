"""Worker side of a scaled-out run: one client process hosting some of the P workers.

A :class:`ClientProcessActor` is a Dask actor living in a Dask worker process (a
``LocalCluster`` worker for ``--processes K``, a ``dask worker`` on another host for
``--cluster``). It is given the run's config, never operation lists: it draws the same plan
from the seed as every other process, opens the engine itself, and for each operation phase
computes the partitions of all P workers from (plan, phase, P) and runs only its own
workers' (``hosted``), each folding its own checksum.

Its work runs on its own event loop (uvloop when installed) in a thread of its own, through
an anyio blocking portal, so the benchmark never shares a loop with Dask's communication;
the actor's methods are coroutines on the Dask worker's loop that only hand work over to
that portal, so :meth:`abort` is served while a phase runs.

The coordinator is :mod:`asyncbench.run.scale_out.distributed`; this module has no Dask import (the
actor class is plain Python, Dask only hosts it).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import time
from collections.abc import Awaitable, Callable
from concurrent.futures import Future
from dataclasses import dataclass
from time import process_time
from typing import Any, TypeVar

import anyio
from anyio.abc import TaskGroup
from anyio.from_thread import BlockingPortal, start_blocking_portal

from asyncbench.config import BenchConfig, Level, from_json
from asyncbench.dirs.paths import store_root
from asyncbench.engine import Engine, EngineConfig
from asyncbench.engines import engine_class, server_lock
from asyncbench.facts import EngineFacts
from asyncbench.measure.latency_recorder import PhaseRecorder
from asyncbench.measure.memory_sampler import MemorySampler
from asyncbench.run.capacity.saturation import host_load, runqueue_wait_seconds
from asyncbench.run.phase.dispatch import Host, OperationPhase, run_action, run_workers, shares, split
from asyncbench.run.phase.phase_rows import kind_histograms, phase_rate
from asyncbench.run.phase.stores import worker_store
from asyncbench.run.scale_out.batch_lines import SHIP_SECONDS, Outbox, clock_offset_ns, pack
from asyncbench.run.scale_out.capacity_remote import ProbePart, run_probe_part
from asyncbench.workload import DrawnPlan
from asyncbench.workload_capabilities import batch_context

__all__ = ["ClientProcessActor", "OtherOutcome", "PhasePart", "WorkerPart", "hosted_workers"]

T = TypeVar("T")


def hosted_workers(k: int, processes: int, parallelism: int) -> list[int]:
    """Worker indexes process ``k`` of ``K`` hosts: contiguous blocks, ``range(k·P//K,
    (k+1)·P//K)``, so every worker is hosted exactly once and each process hosts P//K or
    P//K + 1 of them (a pure function of (k, K, P): any process can recompute it)."""
    if not 0 <= k < processes <= parallelism:
        raise ValueError(f"process {k} of {processes} with {parallelism} workers: need 0 <= k < K <= P")
    return list(range(k * parallelism // processes, (k + 1) * parallelism // processes))


@dataclass
class WorkerPart:
    """One worker's share of an operation phase, as its process reports it."""

    worker: int
    checksum: str  # the worker's own fold (hex)
    items: int  # the size of its partition (0: it takes no part in the phase checksum)
    end: float  # when it finished (wall clock, ``time.time()``)


@dataclass
class PhasePart:
    """One process's share of an operation phase: its workers, when it released them
    (wall clock, comparable between the processes of a host), the retries its sessions
    counted, its client CPU seconds over the phase and its workers' latency histogram
    (HdrHistogram, encoded: the coordinator merges them exactly)."""

    process: int
    release: float
    workers: list[WorkerPart]
    retries: int
    cpu_seconds: float
    histogram: str | None
    batches: int = 0  # the batch lines it shipped (the coordinator waits for them all)
    #: the seconds its threads waited for a CPU over the phase, and its host's load average
    #: and CPUs at the end (asyncbench.run.capacity.saturation: is the machine the limit?)
    wait_seconds: float | None = None
    load: float | None = None
    cpus: int | None = None
    #: a mixed phase: each operation kind's latencies in this process (HdrHistogram,
    #: encoded), which the coordinator merges into the phase's per-kind figures
    kind_histograms: dict[str, str] | None = None


@dataclass
class OtherOutcome:
    """A phase that is not operations (stabilize, settle, reopen, verify), run by process 0."""

    seconds: float
    ops: int = 0
    checksum: str | None = None
    close_seconds: float | None = None
    cpu_seconds: float = 0.0  # this process's CPU over the phase (process_time: every thread)


class ClientProcessActor:
    """The Dask actor: one per client process. Methods are called by the coordinator in
    this order: ``start``, ``reach``, ``open``, then per phase ``prepare`` + ``go`` (operations) or
    ``other`` (process 0 only), ``close`` (and process 0: ``delete_store``), ``stop``."""

    def __init__(self) -> None:
        self._portal_cm: Any = None
        self._portal: BlockingPortal | None = None
        self._cfg: BenchConfig | None = None
        self._level: Level | None = None
        self._name = ""
        self._plan: DrawnPlan | None = None
        self._k = 0
        self._hosted: list[int] = []
        self._engine: Engine | None = None
        self._background: TaskGroup | None = None
        self._closed: anyio.Event | None = None
        self._sampler = MemorySampler()
        self._ctx: object = None
        self._prepared: dict[str, Any] | None = None
        self._running: anyio.CancelScope | None = None
        self._outbox = Outbox()
        self._phase = -1  # the operation phase being prepared or run
        self._send: Callable[[dict[str, Any]], None] | None = None  # ships a batch-line event

    # --- plumbing: every call runs on the portal's loop --------------------------------
    async def _call(self, fn: Callable[..., Awaitable[T]], *args: Any) -> T:
        assert self._portal is not None, "ClientProcessActor.start was not called"
        future: Future[T] = self._portal.start_task_soon(fn, *args)
        return await asyncio.wrap_future(future)

    async def start(
        self,
        config_json: bytes,
        name: str,
        profiles: int,
        parallelism: int,
        k: int,
        processes: int,
        topic: str | None = None,
    ) -> dict[str, Any]:
        """Draw the plan (the same in every process) and start this process's event loop;
        returns where this process runs (host, pid) and the workers it hosts. ``topic``:
        the Dask event topic the batch lines go to (None: not shipped, no Dask here)."""
        from asyncbench.run.observe.signals import backend_options

        if topic is not None:
            from distributed import get_worker

            log_event = get_worker().log_event
            self._send = lambda msg: log_event(topic, msg)

        self._cfg = cfg = from_json(config_json)
        self._level = level = cfg.level(profiles, parallelism)
        self._name, self._k = name, k
        self._hosted = hosted_workers(k, processes, level.parallelism)
        self._ctx = batch_context(cfg.workload_impl, cfg.seed)
        loop = asyncio.get_running_loop()
        self._plan = await loop.run_in_executor(None, cfg.workload_impl.draw_plan, level.counts, cfg.seed)
        options = backend_options()
        self._portal_cm = start_blocking_portal("asyncio", options)
        self._portal = self._portal_cm.__enter__()
        self._sampler.reset()
        self._portal.start_task_soon(self._sampler.run)
        return {
            "host": socket.gethostname(),
            "pid": os.getpid(),
            "workers": list(self._hosted),
            # a Dask nanny's default (its pre-spawn-environ): it slows the client (docs/scaling.md)
            "malloc_trim": os.environ.get("MALLOC_TRIM_THRESHOLD_"),
        }

    async def open(self, reset: bool) -> None:
        """Open the engine (all P connections' worth of config; this process uses its own
        workers' handles). Process 0 opens first with ``reset`` (the schema), the others after."""
        assert self._portal is not None
        if self._closed is None:  # the engine's task group: a task of its own on the loop
            ready = await self._call(_new_event)
            self._closed = await self._call(_new_event)
            self._portal.start_task_soon(self._host, ready)
            await self._call(ready.wait)
        await self._call(self._open, reset)

    def _engine_config(self) -> EngineConfig:
        cfg, level = self._cfg, self._level
        assert cfg is not None and level is not None
        return EngineConfig(
            name=self._name,
            data_dir=store_root(cfg.data, level.profiles, cfg.workload_impl.unit) / self._name,
            settings=cfg.engine_settings.get(self._name, {}),
            limit=cfg.limit,
            seed=cfg.seed,
            workers=level.workers,
            stores=cfg.workload_impl.kv_stores,
        )

    async def reach(self) -> dict[str, str | None]:
        """Which server this process's engine would reach, before anything opens there: its
        lock key and the server's own identity (the coordinator refuses the run if either
        differs from what it locked)."""
        return await self._call(self._reach)

    async def _reach(self) -> dict[str, str | None]:
        engine = engine_class(self._name)(self._engine_config())
        return {"lock_key": engine.lock_key(), "identity": await engine.server_identity()}

    async def _open(self, reset: bool) -> None:
        cfg, plan, level = self._cfg, self._plan, self._level
        assert cfg is not None and plan is not None and level is not None
        # no directory is made: a multi-process engine keeps its data on its server, and on
        # another host a relative data path would land in the worker's working directory
        self._engine = engine = engine_class(self._name)(self._engine_config())
        assert self._background is not None
        key = engine.lock_key()
        if key is not None:  # the coordinator holds the run's server lock (Engine.exclusive)
            server_lock.adopt(key)
        await engine.open(reset, self._background)

    async def _host(self, ready: anyio.Event) -> None:
        """The engine's background task group, from before open until after close."""
        assert self._closed is not None
        async with anyio.create_task_group() as tg:
            self._background = tg
            ready.set()
            await self._closed.wait()
            tg.cancel_scope.cancel()

    # --- operation phases ---------------------------------------------------------------
    async def prepare(self, index: int) -> int:
        """Build this process's workers' partitions of phase ``index`` (outside its time);
        returns how many operations they hold."""
        return await self._call(self._prepare, index)

    async def _prepare(self, index: int) -> int:
        cfg, plan, engine = self._cfg, self._plan, self._engine
        assert cfg is not None and plan is not None and engine is not None
        spec = cfg.phases[index]
        kind = cfg.workload_impl.phases[spec.kind]
        items = cfg.workload_impl.phase_items(kind, spec.stream, spec.count, plan, dict(spec.params))
        assert self._level is not None
        parts = split(kind, items, self._level.workers)
        engine.take_retries()  # what the previous phases counted is theirs
        self._phase = index
        self._prepared = {
            "index": index,
            "rate": phase_rate(spec),
            "kind": kind,
            "items": items,  # a mixed phase's per-kind latencies are read from it after the phase
            "parts": {w: parts[w] for w in self._hosted},
            "shares": shares(kind, parts),
            "handles": {w: worker_store(cfg.workload_impl, engine, w) for w in self._hosted},
        }
        return sum(len(p) for p in self._prepared["parts"].values())

    async def go(self, release_at: float) -> PhasePart:
        """Release this process's workers at ``release_at`` (wall clock, the same instant
        for every process) and run them to their end (under a rate, each worker's intended
        times from ``release_at``: the same schedule as in one process); meanwhile, ship their batch lines
        every :data:`SHIP_SECONDS` from this (the Dask worker's) loop."""
        self._outbox.begin()
        shipper = asyncio.ensure_future(self._ship_every()) if self._send is not None else None
        try:
            return await self._call(self._go, release_at)
        finally:
            if shipper is not None:
                shipper.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await shipper
                self._ship()  # the last ones: the part's batch count covers them all

    async def _ship_every(self) -> None:
        while True:
            await asyncio.sleep(SHIP_SECONDS)
            self._ship()

    def _ship(self) -> None:
        batches = self._outbox.take()
        if batches and self._send is not None:
            self._send(pack(batches, self._phase, self._k))

    async def _go(self, release_at: float) -> PhasePart:
        cfg, engine, prepared, ctx = self._cfg, self._engine, self._prepared, self._ctx
        assert cfg is not None and engine is not None and prepared is not None and ctx is not None
        self._prepared = None
        kind, parts, handles = prepared["kind"], prepared["parts"], prepared["handles"]
        rate, phase = prepared["rate"], prepared["index"]
        assert self._level is not None
        workers = self._level.workers
        recorder = PhaseRecorder(workers)
        sums = {w: cfg.workload_impl.checksum() for w in parts}
        outbox = self._outbox.add if self._send is not None else None

        def on_batch(
            worker: int, index: int, ops: int, seconds: float, marks: list[int], intended: Any = None, blocked: int = 0
        ) -> None:
            stamps = recorder.add(worker, ops, seconds, marks, intended, blocked)
            if outbox is not None:
                outbox(worker, index, ops, seconds, stamps, intended, blocked)

        cpu0 = release = 0.0
        wait0: float | None = None

        async def released() -> int:
            """At ``release_at`` (the same instant for every process): the schedules' origin,
            that instant on this process's clock."""
            nonlocal cpu0, wait0, release
            wait = release_at - time.time()
            if wait > 0:
                await anyio.sleep(wait)
            cpu0 = process_time()
            wait0 = runqueue_wait_seconds()
            release = time.time()
            return round(release_at * 1e9) - clock_offset_ns()

        op = OperationPhase(kind, ctx, cfg.batch_size, on_batch, rate, cfg.seed, phase, workers, prepared["shares"])
        try:
            with anyio.CancelScope() as self._running:
                ends = await run_workers(op, parts, handles, sums, released)
                cpu = process_time() - cpu0
                wait1 = runqueue_wait_seconds()
            if self._running.cancelled_caught:
                raise RuntimeError(f"client process {self._k}: phase aborted by the coordinator")
            summary = recorder.summary()
            load, cpus = host_load()
            kinds = kind_histograms(kind, prepared["items"], cfg.workload_impl)  # after the phase's clock
            return PhasePart(
                process=self._k,
                release=release,
                workers=[WorkerPart(w, sums[w].hex(), len(parts[w]), ends[w]) for w in sorted(parts)],
                retries=engine.take_retries(),
                cpu_seconds=cpu,
                histogram=None if summary is None else summary.histogram,
                batches=self._outbox.count,
                wait_seconds=None if wait0 is None or wait1 is None else wait1 - wait0,
                load=load,
                cpus=cpus,
                kind_histograms=kinds,
            )
        finally:
            self._running = None
            recorder.close()

    async def probe(self, index: int, number: int, rate: float | None, length: int, release_at: float) -> ProbePart:
        """Probe ``number`` of a capacity search of phase ``index``: this process's workers
        run their share at ``rate`` from ``release_at`` (asyncbench.run.scale_out.capacity_remote);
        ``rate`` None: a writing phase's rest after ``number`` probes, closed loop."""
        return await self._call(self._probe, index, number, rate, length, release_at)

    async def _probe(self, index: int, number: int, rate: float | None, length: int, release_at: float) -> ProbePart:
        cfg, plan, engine, ctx = self._cfg, self._plan, self._engine, self._ctx
        assert cfg is not None and plan is not None and engine is not None and ctx is not None
        assert self._level is not None
        spec = cfg.phases[index]
        kind = cfg.workload_impl.phases[spec.kind]
        items = cfg.workload_impl.phase_items(kind, spec.stream, spec.count, plan, dict(spec.params))
        handles = {w: worker_store(cfg.workload_impl, engine, w) for w in self._hosted}
        return await run_probe_part(
            self._k, kind, items, handles, ctx, self._level.workers, cfg.batch_size, spec.arrivals,
            cfg.seed, index, number, rate, length, release_at, cfg.workload_impl,
        )  # fmt: skip

    async def abort(self) -> None:
        """Cancel a phase under way (another process failed): its workers stop now."""
        if self._portal is not None:
            await self._call(self._abort)

    async def _abort(self) -> None:
        if self._running is not None:
            self._running.cancel()

    # --- the rest: process 0 -------------------------------------------------------------
    async def other(self, index: int) -> OtherOutcome:
        """Stabilize, settle, reopen or verify: what the single-process runner does once,
        done once, here (the coordinator asks for the storage after a settle)."""
        return await self._call(self._other, index)

    async def _other(self, index: int) -> OtherOutcome:
        cfg, plan, engine = self._cfg, self._plan, self._engine
        assert cfg is not None and plan is not None and engine is not None and self._background is not None
        action = cfg.workload_impl.phases[cfg.phases[index].kind].action
        cpu0 = process_time()
        done = await run_action(action, Host(engine, self._background, self._adopt, plan.counts.profiles, cfg.workload_impl))
        cpu = process_time() - cpu0
        return OtherOutcome(done.seconds, done.ops, done.checksum, done.close_seconds, cpu)

    def _adopt(self, engine: Engine | None) -> None:
        self._engine = engine

    async def needs_stabilization(self) -> bool:
        return self._engine is not None and self._engine.needs_stabilization

    async def storage(self) -> int | None:
        return None if self._engine is None else await self._call(self._engine.measure_storage)

    async def facts(self) -> EngineFacts | None:
        return None if self._engine is None else self._engine.facts()

    async def close(self) -> str | None:
        """Close the engine (its connections); returns what failed, if anything."""
        if self._portal is None or self._engine is None:
            return None
        return await self._call(self._close)

    async def _close(self) -> str | None:
        engine, self._engine = self._engine, None
        try:
            with anyio.move_on_after(60):
                assert engine is not None
                await engine.close()
            return None
        except Exception as exc:
            return f"close failed: {type(exc).__name__}: {exc}"
        finally:
            self._engine = engine  # delete_store needs it (closed)
            if self._closed is not None:
                self._closed.set()

    async def delete_store(self) -> bool:
        if self._engine is None:
            return True
        return await self._call(self._engine.delete_store)

    async def peak_rss(self) -> int:
        self._sampler.sample()
        return self._sampler.peak

    async def stop(self) -> None:
        """Stop this process's event loop (after close)."""
        key = self._engine.lock_key() if self._engine is not None else None
        if key is not None:
            server_lock.unadopt(key)
        portal, portal_cm = self._portal, self._portal_cm
        self._portal_cm, self._portal = None, None
        if portal is not None:
            with contextlib.suppress(Exception):
                await asyncio.get_running_loop().run_in_executor(None, _stop_portal, portal, portal_cm)


async def _new_event() -> anyio.Event:
    return anyio.Event()


def _stop_portal(portal: BlockingPortal, portal_cm: Any) -> None:
    """Cancel what still runs on the portal's loop (the memory sampler), then end it."""
    try:
        portal.call(portal.stop, True)
    finally:
        portal_cm.__exit__(None, None, None)
