"""Coordinator of a scaled-out run: the P workers of a client/server engine across K
client processes, on this host (``--processes K``: a Dask ``LocalCluster``) or on the
worker processes of an existing Dask cluster (``--cluster ADDRESS``).

Dask distributed does the process management, placement and messaging (actors, one
:class:`~asyncbench.run.scale_out.client_process.ClientProcessActor` per Dask worker process); this
module is the protocol's logic only, chosen by measurement (docs/scaling.md):

- every process draws the same plan from the config (nothing but the config is shipped);
  worker ``w``'s partition depends only on (plan, phase, P, w) (contiguous blocks of
  workers per process, :func:`~asyncbench.run.scale_out.client_process.hosted_workers`);
- per operation phase: every process builds its partitions (``prepare``), then all are
  released at one wall-clock instant a little ahead (``go``): the phase is timed from the
  first process's release to the last worker's end, and the release skew is reported;
- the phase checksum is :meth:`Workload.combine` of the workers' checksums in worker
  order; operations and retries are summed, latency histograms merged (HdrHistogram
  counts add exactly), client CPU summed; each process's peak memory is its own;
- every batch of every process reaches the observers live (the JSON log's batch lines,
  with the process's index and host; the progress bar; the status line), carried by Dask
  events a few batches at a time (:mod:`asyncbench.run.scale_out.batch_lines`); a phase ends once
  each process's batches have all arrived, so its batch lines precede its ``phase_end``;
- stabilize, settle, reopen and verify run once, in process 0, as the single-process
  runner runs them once;
- the phases are sequenced by :class:`~asyncbench.run.sequence.phase_sequence.PhaseSequence`, the
  class the in-process run uses: skips, rows, sweeps and the cost figures the coordinator
  can get (storage, logical bytes) are its; :class:`DistributedEngineRun` is only where a
  phase's work runs (its ``PhaseExecutor``), and each cost figure no client process
  measures is "not measured" with the reason;
- a process that dies, or a phase that fails in one, ends the engine's run as a Failed row
  with the phases completed so far; the others are aborted and closed; a cluster this
  module started is stopped (nothing is left running), on Ctrl-C too.

Clock: phase times compare ``time.time()`` stamps of different processes: one clock on one
host; across hosts it is as good as their clock synchronisation (say so in the report).
"""

from __future__ import annotations

import contextlib
import dataclasses
import statistics
import time
import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from functools import partial
from time import perf_counter
from typing import Any, TypeVar

import anyio

from asyncbench.config import BenchConfig, Level, PhaseSpec, slo_for, to_json
from asyncbench.dirs.paths import store_root
from asyncbench.engine import EngineConfig, EngineUnavailable
from asyncbench.engines import engine_class
from asyncbench.measure.cost import cost_enabled
from asyncbench.measure.latency import LatencyHistogram
from asyncbench.measure.latency_recorder import PhaseRecorder
from asyncbench.rate import Rate
from asyncbench.result import (
    ClientProcess,
    EngineResult,
    LatencyStats,
    OpenLoop,
    PhaseCost,
    PhaseResult,
    Status,
)
from asyncbench.run.capacity.capacity import (
    SearchRecord,
    measure_capacity,
    probe_length,
    stream_checksum,
    warm_store,
    writes,
)
from asyncbench.run.capacity.saturation import (
    CLIENT_BOUND_BUSY,
    PhaseLoad,
    bottleneck_line,
    host_load,
    runqueue_wait_seconds,
)
from asyncbench.run.observe.observers import Observer
from asyncbench.run.phase.phase_rows import add_figures
from asyncbench.run.scale_out.batch_lines import BatchLineReceiver
from asyncbench.run.scale_out.capacity_remote import ProbePart, coordinated_probe, merged_probe
from asyncbench.run.scale_out.client_process import ClientProcessActor, OtherOutcome, PhasePart
from asyncbench.run.sequence.phase_sequence import PhaseSequence, Ran
from asyncbench.slo import make_slo
from asyncbench.workload import Action, DrawnPlan, MixFigures, PhaseKind, Workload
from asyncbench.workload_capabilities import mix_figures

__all__ = [
    "CLIENT_BOUND_BUSY",
    "MergedPhase",
    "Placement",
    "DistributedEngineRun",
    "PlacementError",
    "ScaledOut",
    "check_placement",
    "merge_phase",
    "ordinary_path_note",
    "scale_out",
]

T = TypeVar("T")

#: How far ahead of "now" the coordinator schedules a phase's release: enough for the
#: ``go`` call to reach every process first (measured: a 6-11 ms median round trip to 4
#: processes on the shared 2-core machine, 37 ms at worst), not counted in the phase's time.
RELEASE_LEAD_SECONDS = 0.1
#: How long to wait for the client processes to join the scheduler.
WORKERS_WAIT_SECONDS = 60.0
#: --cluster without --processes: the worker count must stay the same this long.
WORKERS_SETTLE_SECONDS = 2.0
#: How often the coordinator checks that every client process is still in the cluster.
WATCH_SECONDS = 0.5
#: Closing, aborting and stopping after a failure, each bounded.
CLOSE_GRACE_SECONDS = 60.0
#: Dask settings for the LocalCluster of ``--processes`` (a ``--cluster``'s workers keep their own).
DASK_CONFIG = {
    "distributed.worker.profile.enabled": False,
    "distributed.admin.system-monitor.interval": "2s",
    # the event-loop health check (a warning past 3 s blocked) every 1 s, not every 20 ms: an
    # idle client process took 2.1 % of a core with 20 ms, 0.36 % with 1 s; during a phase
    # that was 4-8 % of the client's CPU per operation (docs/scaling.md, the K=1 overhead)
    "distributed.admin.tick.interval": "1s",
    # no environment of Dask's own for the client processes: its MALLOC_TRIM_THRESHOLD_=65536
    # (glibc hands freed memory back to the system past 64 KiB, and fixes the threshold
    # instead of letting it adapt) made a 50-row query cost 2.6x the client CPU in
    # asyncpg's row decoding (py-spy, docs/scaling.md); the single-process runner has none
    "distributed.nanny.pre-spawn-environ": {},
}
#: How long a phase's end waits for the last batch lines (measured: they arrive 0.1-0.2 s after
#: their batch; a line still missing then is noted and left out of the log).
LINES_WAIT_SECONDS = 10.0


#: The cost figures no client process measures (each measures its own CPU only).
UNMEASURED = ("engine_cpu", "server_cpu", "client_io", "server_io", "counters")
CLIENTS_MEASURE_CPU = "not measured in a scaled-out run: the client processes measure only their own CPU"
PROBES_MEASURE_NONE = (
    "not measured in a scaled-out run: a capacity search's probes bring back their response times only"
)
PROCESS_0_RAN_IT = "client CPU: client process 0's, which ran the phase alone (the other client processes waited)"


class PlacementError(ValueError):
    """``--processes``/``--cluster`` asked of an engine or a level that cannot take it."""


@dataclass(frozen=True)
class Placement:
    """Where the client runs: ``processes`` Dask worker processes started on this host, or
    the workers of the existing cluster at ``cluster`` (a scheduler address: ``processes``
    of its workers, else all of them). ``None`` and no cluster: today's single-process
    runner; ``processes = 1`` is the scaled path with one client process (its overhead
    against the single-process runner is measured)."""

    processes: int | None = None
    cluster: str | None = None

    @property
    def scaled(self) -> bool:
        return self.processes is not None or self.cluster is not None

    @property
    def count(self) -> int:
        return self.processes or 1


def check_placement(engines: Sequence[str], parallelism: Sequence[int], placement: Placement) -> None:
    """Refuse, before anything runs, an engine whose store belongs to one process (the
    embedded engines) and K > P (a process with no worker)."""
    if not placement.scaled or (placement.cluster is None and placement.count == 1):
        return  # one client process: every engine can run (an embedded one in this process)
    single = [name for name in engines if not engine_class(name).multi_process]
    if single:
        raise PlacementError(
            f"engine(s) {', '.join(single)} run in one process only (an embedded store belongs "
            "to the process that opened it); scale out only the client/server engines (mysql, postgres)"
        )
    if placement.processes is not None:
        low = [p for p in parallelism if p < placement.count]
        if low:
            raise PlacementError(
                f"parallelism {low[0]} is less than the {placement.count} client processes "
                "(every process hosts at least one worker)"
            )


def ordinary_path_note(engine: str, placement: Placement) -> str:
    """The note of an engine a scaled run ran on the ordinary path: ``--processes 1`` lets an
    embedded engine run, but in this process (or its isolated child), not in a client process."""
    return (
        f"--processes {placement.count}: {engine} is an embedded engine (its store belongs to the process "
        "that opens it), so it ran on the ordinary single-process path, not in a client process; "
        "its figures are those of a run without --processes"
    )


@dataclass(frozen=True)
class ScaledOut:
    """The scale-out the command line chose (:class:`~asyncbench.run.sequence.engine_runs.ScaleOut`):
    the client/server engines run across the client processes of ``placement``; the
    embedded ones (``--processes 1`` lets them run) on the ordinary path, with a note."""

    placement: Placement

    def runs(self, name: str) -> bool:
        return engine_class(name).multi_process

    def engine_run(self, cfg: BenchConfig, level: Level, name: str, observer: Observer) -> DistributedEngineRun:
        return DistributedEngineRun(cfg, level, name, observer, self.placement)

    def ordinary_note(self, name: str) -> str:
        return ordinary_path_note(name, self.placement)


def scale_out(cfg: BenchConfig) -> ScaledOut | None:
    """The run's scale-out (``--processes``/``--cluster``), None for a run in one process."""
    placement = Placement(cfg.processes, cfg.cluster)
    return ScaledOut(placement) if placement.scaled else None


@dataclass
class MergedPhase:
    ops: int
    checksum: str
    seconds: float
    release_skew_seconds: float
    retries: int
    cpu_seconds: float
    latency: LatencyStats | None
    busiest: float  # the largest process's CPU seconds / phase seconds


def merge_phase(parts: Sequence[PhasePart], parallelism: int, wl: Workload) -> MergedPhase:
    """The processes' shares of one operation phase as one phase, exactly as
    :func:`~asyncbench.run.phase.phase_loop.run_operations` would report it at the same P:
    the checksum combines the non-empty workers' checksums in worker order (P1: the one
    worker's), ops and retries are sums, histograms are merged, never averaged."""
    workers = sorted((w for p in parts for w in p.workers), key=lambda w: w.worker)
    if [w.worker for w in workers] != list(range(parallelism)):
        raise RuntimeError(
            f"the client processes reported workers {[w.worker for w in workers]}, expected 0..{parallelism - 1}"
        )
    if parallelism == 1:
        checksum = workers[0].checksum
    else:
        active = [w.checksum for w in workers if w.items]
        checksum = wl.combine(active) if active else wl.checksum().hex()
    release = min(p.release for p in parts)
    end = max(w.end for w in workers)
    seconds = max(end - release, 0.0)
    hists = [LatencyHistogram.from_encoded(p.histogram) for p in parts if p.histogram]
    latency = None
    if hists:
        merged = LatencyHistogram.merge(hists)
        if merged.count:
            latency = merged.summary()
    return MergedPhase(
        ops=sum(w.items for w in workers),
        checksum=checksum,
        seconds=seconds,
        release_skew_seconds=max(p.release for p in parts) - release,
        retries=sum(p.retries for p in parts),
        cpu_seconds=sum(p.cpu_seconds for p in parts),
        latency=latency,
        busiest=max(p.cpu_seconds for p in parts) / seconds if seconds > 0 else 0.0,
    )


class ClientProcessLost(RuntimeError):
    """A client process left the cluster (killed, crashed, its host gone)."""


class ServerMismatch(RuntimeError):
    """A client process would reach another server than the one the coordinator locked."""


def same_server(locked: dict[str, str | None], reached: dict[str, str | None]) -> bool:
    """Whether a client process reaches the server the coordinator locked: the servers'
    own identities when both say one (an address may name another server elsewhere), and
    the lock keys (endpoint, database/schema) when not."""
    if locked.get("identity") is not None and reached.get("identity") is not None:
        return locked["identity"] == reached["identity"]
    return locked.get("lock_key") == reached.get("lock_key")


def shipped_config(cfg: BenchConfig, level: Level, name: str) -> BenchConfig:
    """The config the client processes get: the engine's connection settings as resolved
    here, where the run's lock is taken (the plan's, else this process's environment), so
    a worker's own environment (another host's, or none at all) cannot choose the server;
    the engine's ``client_environment`` setting lets each process resolve its own."""
    probe = engine_class(name)(_probe_config(cfg, level, name))
    pinned = probe.pinned_settings()
    if not pinned:
        return cfg
    settings = {**cfg.engine_settings, name: {**cfg.engine_settings.get(name, {}), **pinned}}
    return dataclasses.replace(cfg, engine_settings=settings)


async def _all(calls: Sequence[Callable[[], Awaitable[T]]]) -> list[T]:
    """Every call concurrently; the first failure cancels the waits for the others."""
    out: list[Any] = [None] * len(calls)

    async def one(i: int) -> None:
        out[i] = await calls[i]()

    async with anyio.create_task_group() as tg:
        for i in range(len(calls)):
            tg.start_soon(one, i)
    return out


class DistributedEngineRun:
    """One engine at one profile count across K client processes; ``result`` keeps what
    completed if it stops early (the same contract as :class:`~asyncbench.run.runner.EngineRun`)."""

    def __init__(
        self, cfg: BenchConfig, level: Level, name: str, observer: Observer, placement: Placement
    ) -> None:
        self.cfg, self.level, self.name, self.observer, self.placement = cfg, level, name, observer, placement
        self.profiles, self.parallelism = level.profiles, level.parallelism
        self.result = EngineResult(engine=name)
        self.sequence = PhaseSequence(cfg, name, observer, self.result, self)
        self.step = "setup"
        self.actors: list[Any] = []
        self.opened = False
        self._stabilizes = False  # the engine needs its stabilize phases (process 0's, after open)
        self._loads: list[PhaseLoad] = []  # per operation phase: CPU share, run-queue wait, host load
        self._addresses: list[str] = []
        self._lost: set[int] = set()  # processes that left the cluster: not called again
        #: the Dask event topic of this run's batch lines (one run's own, on a shared cluster too)
        self.topic = f"asyncbench-batches-{uuid.uuid4().hex}"
        self.lines = BatchLineReceiver(name, [p.name for p in cfg.phases], observer, self._host)

    @property
    def current(self) -> str | None:
        """The phase running now (a display name; "open" while the processes open the engine)."""
        return self.sequence.current

    async def run(self) -> EngineResult:
        res = self.result
        started = perf_counter()
        interrupted = False
        self.observer.engine_start(self.name, self.profiles, self.cfg.workload_impl.unit)
        stack = contextlib.AsyncExitStack()
        try:
            try:
                client = await self._connect(stack)
                # the server lock of the whole run, held here (the client processes adopt it):
                # taken after the cluster starts, released before it stops, after the clean-up
                await stack.enter_async_context(
                    engine_class(self.name).exclusive(_probe_config(self.cfg, self.level, self.name))
                )
                with anyio.move_on_after(self.cfg.timeout_seconds) as scope:
                    async with anyio.create_task_group() as tg:
                        tg.start_soon(self._watch, client)
                        try:
                            await self._run_phases(client)
                        finally:
                            with anyio.CancelScope(shield=True):
                                await self._finish(client)
                        tg.cancel_scope.cancel()
                if scope.cancelled_caught:
                    res.set_status(Status.TIMED_OUT, self.current, f"{self.cfg.timeout_seconds:g} seconds")
            finally:  # the cluster this run started stops, on a failure and on Ctrl-C too
                with anyio.CancelScope(shield=True), anyio.move_on_after(CLOSE_GRACE_SECONDS):
                    await stack.aclose()
        except* EngineUnavailable as group:
            exc = group.exceptions[0]
            if self.name in self.cfg.optional_engines:
                res.set_status(Status.SKIPPED, None, str(exc))
            else:
                res.set_status(Status.FAILED, self.current or "open", str(exc))
        except* anyio.get_cancelled_exc_class():
            interrupted = True
            res.set_status(Status.INTERRUPTED, self.current)
            raise
        except* Exception as group:  # a process or engine fault ends this engine's run, not the benchmark
            flat = _leaves(group)  # a lost process is the cause; the calls it broke are symptoms
            cause = next((e for e in flat if isinstance(e, ClientProcessLost)), flat[0])
            res.fail_with(self.current or self.step, cause)
        finally:
            res.run_seconds = perf_counter() - started
            peaks = [p.peak_rss_bytes for p in res.client_processes if p.peak_rss_bytes is not None]
            res.peak_rss_bytes = max(peaks) if peaks else None
            self._state_facts()
            if not interrupted:  # (a stop must not wait for seconds of arithmetic)
                await self.sequence.logical_figures()
            try:
                self.observer.engine_end(res)
            except Exception as exc:
                res.notes.append(f"reporting the engine's end failed: {type(exc).__name__}: {exc}")
        return res

    # --- the cluster -------------------------------------------------------------------
    async def _connect(self, stack: contextlib.AsyncExitStack) -> Any:
        """A Dask client: to the scheduler at ``--cluster``, else to a LocalCluster of K
        worker processes started here (stopped on the way out, whatever happens)."""
        from distributed import Client, LocalCluster

        self.step = "starting the client processes"
        if self.placement.cluster is not None:
            client = await stack.enter_async_context(
                Client(self.placement.cluster, asynchronous=True, timeout=30)
            )
        else:
            import dask

            # The client processes are measured: no statistical profiler sampling them (Dask's
            # own diagnostics; an idle worker took 3.0 % of a core with it, 1.8 % without
            # it and with a slower system monitor), a slow event-loop tick, and no memory limit (Dask would pause or
            # restart a worker over it: a benchmark's memory is a result, not a fault).
            with dask.config.set(DASK_CONFIG):
                cluster = await stack.enter_async_context(
                    LocalCluster(
                        n_workers=self.placement.count,
                        threads_per_worker=1,
                        processes=True,
                        host="127.0.0.1",
                        dashboard_address=None,
                        memory_limit=0,
                        asynchronous=True,
                    )
                )
            client = await stack.enter_async_context(Client(cluster, asynchronous=True))
        stack.push_async_callback(self._release_actors)
        client.subscribe_topic(self.topic, self.lines)
        stack.push_async_callback(self._unsubscribe, client)
        return client

    async def _unsubscribe(self, client: Any) -> None:
        """Stop the batch lines and drop what the scheduler keeps of the topic (its last
        ``distributed.admin.low-level-log-length`` events: on a shared ``--cluster`` they
        would outlive the run); a failure is a note, never silent."""
        try:
            client.unsubscribe_topic(self.topic)
            await client.run_on_scheduler(_truncate_topic, topic=self.topic)
        except Exception as exc:
            self.result.notes.append(
                f"the scheduler still keeps this run's batch-line events (topic {self.topic}): "
                f"dropping them failed: {type(exc).__name__}: {exc}"
            )

    def _host(self, k: int) -> str:
        procs = self.result.client_processes
        return procs[k].host if k < len(procs) else "?"

    async def _release_actors(self) -> None:
        self.actors = []

    async def _watch(self, client: Any) -> None:
        """Fail the run when a client process leaves the cluster (the actor's call may
        otherwise wait for a worker that will never answer)."""
        while True:
            await anyio.sleep(WATCH_SECONDS)
            if not self.result.client_processes:
                continue
            present = set(await client.run_on_scheduler(_worker_addresses))
            lost = [k for k, addr in enumerate(self._addresses) if addr not in present]
            if lost:
                self._lost.update(lost)
                hosts = ", ".join(
                    f"{k} (pid {self.result.client_processes[k].pid} on {self.result.client_processes[k].host})"
                    for k in lost
                )
                raise ClientProcessLost(f"client process {hosts} left the cluster")

    async def _cluster_workers(self, client: Any) -> list[str]:
        """The worker processes to use: K of them when K is given (waiting up to
        ``WORKERS_WAIT_SECONDS`` for them to join), else, on a cluster, every worker present
        once their number has stayed the same for ``WORKERS_SETTLE_SECONDS``."""
        wanted = self.placement.processes
        with anyio.fail_after(WORKERS_WAIT_SECONDS):
            await client.wait_for_workers(wanted or 1)
            if wanted is None:
                seen = -1
                while True:
                    now = len(await client.run_on_scheduler(_worker_addresses))
                    if now == seen:
                        break
                    seen = now
                    await anyio.sleep(WORKERS_SETTLE_SECONDS)
        workers = sorted(await client.run_on_scheduler(_worker_addresses))
        return workers[:wanted] if wanted else workers

    async def _start_actors(self, client: Any) -> None:
        workers = await self._cluster_workers(client)
        k_total = len(workers)
        if k_total > self.parallelism:
            raise RuntimeError(
                f"the cluster has {k_total} worker processes, more than the {self.parallelism} workers "
                "to place (every process hosts at least one): raise --parallelism or use --processes K of them"
            )
        self._addresses = workers
        futures = [
            client.submit(ClientProcessActor, actor=True, workers=[addr], allow_other_workers=False, pure=False)
            for addr in workers
        ]
        self.actors = [await f for f in futures]
        config = to_json(shipped_config(self.cfg, self.level, self.name))
        infos = await _all(
            [
                partial(a.start, config, self.name, self.profiles, self.parallelism, k, k_total, self.topic)
                for k, a in enumerate(self.actors)
            ]
        )
        self.result.client_processes = [ClientProcess(i["host"], i["pid"], i["workers"]) for i in infos]
        await self._check_reach()
        trimmed = [k for k, i in enumerate(infos) if i.get("malloc_trim")]
        if trimmed:
            self.result.notes.append(
                f"client process(es) {', '.join(map(str, trimmed))} run with MALLOC_TRIM_THRESHOLD_="
                f"{infos[trimmed[0]]['malloc_trim']} (a Dask nanny's default), which costs allocation-heavy "
                "phases up to 2x client CPU; start the workers with --no-nanny, or with "
                "distributed.nanny.pre-spawn-environ.MALLOC_TRIM_THRESHOLD_: null in their Dask config (docs/scaling.md)"
            )

    async def _check_reach(self) -> None:
        """Refuse the run, before any process opens the engine, when a client process would
        reach another server (or database/schema) than the one this coordinator locked: the
        lock would not protect it, and process 0's reset would drop a table there."""
        self.step = "checking the client processes' server"
        probe = engine_class(self.name)(_probe_config(self.cfg, self.level, self.name))
        mine = {"lock_key": probe.lock_key(), "identity": await probe.server_identity()}
        reached = await _all([self._named(k, a.reach) for k, a in enumerate(self.actors)])
        wrong = [(k, r) for k, r in enumerate(reached) if not same_server(mine, r)]
        if wrong:
            procs = self.result.client_processes
            raise ServerMismatch(
                "client process(es) would reach another server than the one this run locked ("
                + (mine["identity"] or mine["lock_key"] or "?")
                + "): "
                + "; ".join(
                    f"{k} (pid {procs[k].pid} on {procs[k].host}): {r.get('identity') or r.get('lock_key')}"
                    for k, r in wrong
                )
                + ". A client process takes the coordinator's connection settings unless the engine's "
                "client_environment setting is true (docs/scaling.md)"
            )

    # --- the phases --------------------------------------------------------------------
    async def _run_phases(self, client: Any) -> None:
        res = self.result
        await self._start_actors(client)
        self.step = "open"
        cls = engine_class(self.name)
        res.facts = cls(_probe_config(self.cfg, self.level, self.name)).facts()
        self.sequence.current = "open"
        first, *rest = self.actors
        await self._named(0, partial(first.open, True))()  # the schema first, then the others join it
        self.opened = True
        for actor in rest:  # one at a time: each runs the schema's IF NOT EXISTS statements
            await self._named(self.actors.index(actor), partial(actor.open, False))()
        self._stabilizes = await first.needs_stabilization()
        await self.sequence.run()
        self.step = "after the last phase"
        await self.sequence.storage_after()
        facts = await first.facts()
        if facts is not None:
            res.facts = facts

    # --- the PhaseExecutor: a phase's work on the client processes ----------------------
    @property
    def storage_changes_state(self) -> str | None:
        return engine_class(self.name).storage_changes_state

    async def needs_stabilization(self) -> bool:
        return self._stabilizes

    async def prepare(self, index: int, spec: PhaseSpec, kind: PhaseKind) -> int:
        """An operation phase: every process builds its workers' partitions (outside the
        phase's time); the others run in process 0, or are a search, and count none ahead."""
        if kind.action is not Action.OPERATIONS or spec.capacity:
            return 0
        sizes = await _all([self._named(k, partial(a.prepare, index)) for k, a in enumerate(self.actors)])
        return sum(sizes)

    async def operations(self, index: int, spec: PhaseSpec, kind: PhaseKind, rate: Rate | None) -> Ran:
        # every batch of every process, as the client processes ship them (outside their time)
        recorder = PhaseRecorder(self.parallelism)
        try:
            self.lines.begin(index, recorder)
            release_at = time.time() + RELEASE_LEAD_SECONDS
            waited = runqueue_wait_seconds()  # the coordinator's own, over the phase
            try:
                parts: list[PhasePart] = await _all(
                    [self._named(k, partial(a.go, release_at)) for k, a in enumerate(self.actors)]
                )
                if waited is not None:
                    now = runqueue_wait_seconds()
                    waited = None if now is None else now - waited
                whole = await self._await_lines(index, parts)
            finally:
                self.lines.end()
            merged = merge_phase(parts, self.parallelism, self.cfg.workload_impl)
        except BaseException:
            recorder.close()
            raise
        self._loads.append(phase_load(merged, parts, waited))
        cost = None
        if cost_enabled():
            cost = PhaseCost(client_cpu_seconds=merged.cpu_seconds)  # every client process, summed
            cost.not_measured.update(dict.fromkeys(UNMEASURED, CLIENTS_MEASURE_CPU))

        def figures(pr: PhaseResult) -> None:
            with recorder:
                pr.latency = merged.latency  # the processes' histograms, merged
                pr.release_skew_seconds = merged.release_skew_seconds
                pr.client_cpu_seconds = merged.cpu_seconds
                if whole and recorder.ops == merged.ops:
                    add_figures(pr, recorder, rate, latency=False)
                elif rate is not None:  # the target (and the achieved-rate check) without the figures
                    pr.open_loop = OpenLoop(rate=rate.ops_per_s, arrivals=rate.arrivals)

        return Ran(
            merged.ops,
            merged.seconds,
            merged.checksum,
            merged.retries,
            cost=cost,
            figures=figures,
            kind_latencies=[p.kind_histograms for p in parts],
        )

    async def capacity(
        self, index: int, spec: PhaseSpec, kind: PhaseKind, record: Callable[[SearchRecord], None]
    ) -> Ran:
        """Phase ``index``'s capacity (asyncbench.run.capacity.capacity): each probe runs on every
        client process, released together (asyncbench.run.scale_out.capacity_remote)."""
        slo = make_slo(slo_for(self.cfg, spec.kind))
        warmup, judged = probe_length(slo)

        async def on_every(number: int, rate: float | None, release_at: float) -> list[ProbePart]:
            return await _all(
                [
                    self._named(k, partial(a.probe, index, number, rate, warmup + judged, release_at))
                    for k, a in enumerate(self.actors)
                ]
            )

        async def send(number: int, rate: float, release_at: float) -> list[ProbePart]:
            return await on_every(number, rate, release_at)

        async def whole_stream() -> int:  # the store's warm-up: every process's share, closed loop
            return sum(p.ops for p in await on_every(0, None, time.time()))

        searches = SearchRecord(slo, self.cfg.capacity_range, self.cfg.capacity_probe_seconds)
        record(searches)
        warm_ops, warm_seconds = await warm_store(kind, whole_stream)
        probe = coordinated_probe(send, RELEASE_LEAD_SECONDS, self.cfg.workload_impl)
        found, ops, seconds = await measure_capacity(
            probe,
            slo,
            self.cfg.capacity_range,
            self.cfg.capacity_repeats,
            partial(self.observer.probe, self.name, spec.name),
            self.cfg.capacity_probe_seconds,
            searches,
        )
        found.store_warmup_ops, found.store_warmup_seconds = warm_ops, warm_seconds
        ops, seconds = ops + warm_ops, seconds + warm_seconds
        checksum = None
        if writes(kind):  # the rest of its stream, closed loop, on every process
            t0 = time.perf_counter()
            parts = await on_every(found.slices_taken, None, time.time())
            rest = merged_probe(parts, self.cfg.workload_impl)
            assert rest.checksum is not None
            checksum = stream_checksum(found.slice_checksums, rest.checksum, self.cfg.workload_impl)
            ops += sum(p.ops for p in parts)
            seconds += time.perf_counter() - t0
        cost = None
        if cost_enabled():
            cost = PhaseCost(not_measured=dict.fromkeys(("client_cpu", *UNMEASURED), PROBES_MEASURE_NONE))
        return Ran(ops, seconds, checksum, capacity=found, cost=cost)

    async def action(self, index: int, spec: PhaseSpec, kind: PhaseKind) -> Ran:
        """Stabilize, settle, reopen or verify: once, in process 0 (as in one process)."""
        out: OtherOutcome = await self._named(0, partial(self.actors[0].other, index))()
        cost = None
        if cost_enabled():
            cost = PhaseCost(client_cpu_seconds=out.cpu_seconds)
            cost.notes.append(PROCESS_0_RAN_IT)
            cost.not_measured.update(dict.fromkeys(UNMEASURED, CLIENTS_MEASURE_CPU))
        return Ran(out.ops, out.seconds, out.checksum, close_seconds=out.close_seconds, cost=cost)

    async def crash_or_recover(self, index: int, spec: PhaseSpec) -> PhaseResult:
        raise RuntimeError(
            f"{spec.name}: a crash runs the engine in one process; a plan with one is refused with --processes and --cluster"
        )

    async def mix(self, index: int, spec: PhaseSpec, kind: PhaseKind) -> MixFigures | None:
        if not kind.mixes:  # one operation kind: nothing to draw
            return None
        return await anyio.to_thread.run_sync(self._mix, spec, kind)

    def _mix(self, spec: PhaseSpec, kind: PhaseKind) -> MixFigures | None:
        """A mixed phase's kinds and skew, drawn here from the plan (what the processes ran
        is a pure function of it); its kinds' latencies come from the processes that ran them."""
        plan = self.cfg.workload_impl.draw_plan(self.level.counts, self.cfg.seed)
        return mix_figures(self.cfg.workload_impl, kind, self.cfg.workload_impl.phase_items(kind, spec.stream, spec.count, plan, dict(spec.params)))

    async def storage(self) -> int | None:
        """The store's size, measured by process 0 (untimed)."""
        if not self.actors:
            return None
        size: int | None = await self._named(0, self.actors[0].storage)()
        return size

    async def drawn_plan(self) -> DrawnPlan:
        """The run's plan, drawn here from the config as every client process draws it
        (the coordinator keeps none between phases)."""
        return await anyio.to_thread.run_sync(self.cfg.workload_impl.draw_plan, self.level.counts, self.cfg.seed)

    async def _await_lines(self, index: int, parts: Sequence[PhasePart]) -> bool:
        """Until every process's batch lines of the phase have arrived (bounded); False
        (and a note) if some did not."""
        with anyio.move_on_after(LINES_WAIT_SECONDS):
            while any(self.lines.count(index, p.process) < p.batches for p in parts):
                await anyio.sleep(0.005)
        missing = [
            f"client process {p.process}: {p.batches - self.lines.count(index, p.process)} of {p.batches}"
            for p in parts
            if self.lines.count(index, p.process) < p.batches
        ]
        if missing:
            self.result.notes.append(
                f"{self.cfg.phases[index].name}: batch lines not received within {LINES_WAIT_SECONDS:g} s "
                f"({'; '.join(missing)}); its checksum, operations and latency are whole, "
                "its per-second series and open-loop figures left out"
            )
        return not missing

    def _named(self, k: int, call: Callable[[], Awaitable[T]]) -> Callable[[], Awaitable[T]]:
        """``call`` on client process ``k``, whose failure names the process (which one
        failed matters more than the RPC error a lost process shows first)."""

        async def named() -> T:
            try:
                return await call()
            except EngineUnavailable:
                raise  # no server: the engine's own message (and an optional engine's skip)
            except Exception as exc:
                procs = self.result.client_processes
                where = f" (pid {procs[k].pid} on {procs[k].host})" if k < len(procs) else ""
                lost = isinstance(exc, OSError) or type(exc).__name__ == "CommClosedError"
                if lost:  # never called again: the clean-up skips it (and does its part itself)
                    self._lost.add(k)
                kind = ClientProcessLost if lost else RuntimeError
                raise kind(f"client process {k}{where}: {type(exc).__name__}: {exc}") from exc

        return named

    # --- the end -----------------------------------------------------------------------
    async def _finish(self, client: Any) -> None:
        """Abort what still runs, close every process's engine, delete the store (process
        0, when the run cleans data; this coordinator, which holds the run's lock, when
        process 0 is gone), read each process's peak memory, stop their loops.
        Each step bounded; a process that is gone is skipped, never called again."""
        notes = self.result.notes
        await self._refresh_lost(client)
        live = [(k, a) for k, a in enumerate(self.actors) if k not in self._lost]
        for _k, actor in live:
            with anyio.move_on_after(5), contextlib.suppress(Exception):
                await actor.abort()
        for k, actor in live:  # every connection closed before the store is deleted (locks)
            try:
                with anyio.fail_after(CLOSE_GRACE_SECONDS):
                    failed = await actor.close()
                if failed:
                    notes.append(f"client process {k}: {failed}")
            except Exception as exc:
                notes.append(f"client process {k}: not closed ({type(exc).__name__}: {exc})")
        if self.opened and self.cfg.clean_data:
            here = not (live and live[0][0] == 0)  # process 0 is gone: the coordinator cleans up
            try:
                with anyio.fail_after(CLOSE_GRACE_SECONDS):
                    if here:
                        engine = engine_class(self.name)(
                            _probe_config(shipped_config(self.cfg, self.level, self.name), self.level, self.name)
                        )
                        deleted = await engine.delete_store()
                    else:
                        deleted = await live[0][1].delete_store()
                if not deleted:
                    notes.append("store kept: the engine cannot delete it")
                elif here:
                    notes.append("store deleted by the coordinator: client process 0 was lost")
            except Exception as exc:
                notes.append(f"deleting the store failed: {type(exc).__name__}: {exc}")
        for k, actor in live:
            try:
                with anyio.fail_after(CLOSE_GRACE_SECONDS):
                    peak = await actor.peak_rss()
                    if k < len(self.result.client_processes):
                        self.result.client_processes[k].peak_rss_bytes = peak
                    await actor.stop()
            except Exception as exc:
                notes.append(f"client process {k}: not stopped ({type(exc).__name__}: {exc})")

    async def _refresh_lost(self, client: Any) -> None:
        """Mark lost the client processes no longer in the cluster (a loss the watch had
        not seen yet), so that the clean-up calls none of them; bounded."""
        if not self._addresses:
            return
        try:
            with anyio.fail_after(5):
                present = set(await client.run_on_scheduler(_worker_addresses))
        except Exception:
            return  # the scheduler does not answer: each call below is bounded anyway
        self._lost.update(k for k, addr in enumerate(self._addresses) if addr not in present)

    def _state_facts(self) -> None:
        """Where the client ran and whether it was the bottleneck, as engine facts."""
        procs = self.result.client_processes
        if not procs:
            return
        hosts = sorted({p.host for p in procs})
        cluster = self.result.facts.cluster
        cluster["client processes"] = (
            f"{len(procs)} on {len(hosts)} host{'s' if len(hosts) > 1 else ''} ({', '.join(hosts)})"
            + (f", Dask cluster at {self.placement.cluster}" if self.placement.cluster else ", Dask LocalCluster")
        )
        cluster["client workers"] = "; ".join(
            f"process {k} (pid {p.pid}): worker{'s' if len(p.workers) > 1 else ''} {', '.join(map(str, p.workers))}"
            for k, p in enumerate(procs)
        )
        skews = [p.release_skew_seconds for p in self.result.phases if p.release_skew_seconds is not None]
        if skews:
            cluster["release skew"] = (
                f"median {statistics.median(skews) * 1e3:.2f} ms, max {max(skews) * 1e3:.2f} ms over "
                f"{len(skews)} operation phases (each phase is timed from the first process's release; "
                + ("one host: one clock)" if len(hosts) == 1 else "several hosts: as good as their clock sync)")
            )
        delays = sorted(self.lines.delays)
        if delays:
            cluster["batch lines"] = (
                f"{len(delays)} received live, each after its batch's end: median "
                f"{statistics.median(delays) * 1e3:.0f} ms, p99 {delays[int(0.99 * (len(delays) - 1))] * 1e3:.0f} ms"
            )
        if self.lines.error is not None:
            self.result.notes.append(
                f"reporting the client processes' batches failed: {type(self.lines.error).__name__}: {self.lines.error}"
            )
        if self._loads:
            cluster["bottleneck"] = bottleneck_line(self._loads)


def phase_load(merged: MergedPhase, parts: Sequence[PhasePart], coordinator_wait: float | None) -> PhaseLoad:
    """The phase's CPU share, the longest run-queue wait of its processes (the client
    processes' and the coordinator's) and the highest load per CPU of the hosts involved."""
    seconds = merged.seconds
    waits = [w for w in (*(p.wait_seconds for p in parts), coordinator_wait) if w is not None]
    load, cpus = host_load()
    loads = [p.load / p.cpus for p in parts if p.load is not None and p.cpus]
    if load is not None:
        loads.append(load / cpus)
    return PhaseLoad(
        busiest=merged.busiest,
        wait_share=max(waits) / seconds if waits and seconds > 0 else None,
        load_per_cpu=max(loads) if loads else None,
    )


def _leaves(group: BaseException) -> list[BaseException]:
    if isinstance(group, BaseExceptionGroup):
        return [leaf for e in group.exceptions for leaf in _leaves(e)]
    return [group]


def _truncate_topic(dask_scheduler: Any, topic: str) -> None:
    """Run on the scheduler: forget the events it kept of ``topic``.

    ``distributed`` has no public call for it: this is its scheduler's event broker
    (``Scheduler._broker``, :class:`distributed.broker.Broker`), whose ``truncate(topic)``
    empties one topic. The versions pyproject.toml allows are checked by
    tests/test_distributed.py; another layout raises here, naming the version (the caller
    notes it), instead of failing unseen."""
    broker: Any = getattr(dask_scheduler, "_broker", None)
    truncate = getattr(broker, "truncate", None)
    if broker is None or truncate is None:
        import distributed

        raise RuntimeError(
            f"distributed {distributed.__version__}'s scheduler has no event broker to truncate "
            "(asyncbench supports the versions its pyproject.toml allows)"
        )
    truncate(topic)
    if broker.get_events(topic):
        raise RuntimeError(f"the scheduler still holds {len(broker.get_events(topic))} events of {topic} after truncate")


def _worker_addresses(dask_scheduler: Any) -> list[str]:
    """Run on the scheduler: the addresses of the workers it knows now."""
    return list(dask_scheduler.workers)


def _probe_config(cfg: BenchConfig, level: Level, name: str) -> EngineConfig:
    return EngineConfig(
        name=name,
        data_dir=store_root(cfg.data, level.profiles, cfg.workload_impl.unit) / name,
        settings=cfg.engine_settings.get(name, {}),
        limit=cfg.limit,
        seed=cfg.seed,
        workers=level.workers,
        stores=cfg.workload_impl.kv_stores,
    )
