"""What a phase costs beyond its time: CPU seconds and device bytes of the processes and
threads doing the work, and the engine's own counters (issue: an engine fast because it
burns three cores or writes thirty times the data is not the one a user wants).

Why snapshots and a sampler thread, never per-operation work: every figure here is a
cumulative counter the kernel or the engine keeps anyway (``/proc/self/task/TID/schedstat``,
``/proc/PID/io`` through psutil, the process's CPU times, RocksDB's statistics), so a
phase's figure is the difference of two readings taken outside its time (before its clock
starts, after it stops), and the per-second series is a thread that reads them once a
second. Nothing is added to the path of an operation.

Whose figures:

- the client: this process, every thread (psutil's CPU times; for an in-process engine
  its threads are in it). Its device bytes include the harness's own writes (the run's
  log, latency stamps spilled to temporary files: about 8 bytes per operation);
- the engine's threads: those it names (:meth:`Engine.background_threads`), a part of
  the client's CPU;
- the server: the processes the engine found on this machine
  (:meth:`Engine.server_processes`); a process that started during the phase counts from
  0, one that ended during it is lost (said in ``not_measured``). A cluster's nodes
  (:meth:`Engine.server_nodes`) are measured each on its own (``PhaseCost.server_nodes``)
  and summed; when one node cannot be measured the sum is not measured either (a sum
  without it would pass for the cluster's), while the others still show theirs.

A figure that cannot be read (no ``/proc``, a remote server, a process of another user
without the privilege) is None with the reason in ``PhaseCost.not_measured``, never 0.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field

import psutil

from asyncbench.engine import BackgroundThreads, Engine, EngineCounters, nodes_pids
from asyncbench.result import NO_SERVER, NodeCost, PhaseCost

__all__ = ["NO_COST_ENV", "CostMeter", "Snapshot", "client_cpu_seconds", "cost_enabled", "take_snapshot"]

TASKS = "/proc/self/task"
#: Set to 1, runs measure no cost (phases get no ``cost``): only for the benchmark of the
#: measurement's own overhead (benchmarks/bench_cost_overhead.py), which compares both.
NO_COST_ENV = "ASYNCBENCH_NO_COST"


def cost_enabled() -> bool:
    return os.environ.get(NO_COST_ENV) != "1"

#: The per-second sampler's period.
SERIES_INTERVAL_S = 1.0


def client_cpu_seconds() -> float:
    """User + system CPU seconds of this process, every thread: the kernel's account
    (``CLOCK_PROCESS_CPUTIME_ID``, in ns, where psutil's times tick at 10 ms)."""
    return time.process_time()


def _thread_cpu(threads: BackgroundThreads) -> dict[int, int] | str:
    """CPU ns of each of the engine's threads alive now (``schedstat``'s first field: time
    on a CPU, ns), or why not measured."""
    try:
        tids = os.listdir(TASKS)
    except OSError as exc:
        return f"no {TASKS} on this system ({exc.strerror})"
    out: dict[int, int] = {}
    for name in tids:
        tid = int(name)
        try:
            if tid not in threads.ids:
                if not threads.names:
                    continue
                with open(f"{TASKS}/{name}/comm") as fh:
                    comm = fh.read().strip()
                if not comm.startswith(threads.names):
                    continue
            with open(f"{TASKS}/{name}/schedstat") as fh:
                out[tid] = int(fh.read().split()[0])
        except (OSError, ValueError, IndexError):
            continue  # the thread ended between the listing and the read
    return out


def _io(proc: psutil.Process) -> tuple[int, int]:
    io = proc.io_counters()
    return io.read_bytes, io.write_bytes


@dataclass
class Snapshot:
    """The cumulative counters at one instant; a figure is None with its reason in ``why``."""

    wall: float
    client_cpu: float
    client_io: tuple[int, int] | None = None
    engine_threads: dict[int, int] | None = None  # tid -> CPU ns
    server_cpu: dict[int, float] | None = None  # pid -> CPU s
    server_io: dict[int, tuple[int, int]] | None = None
    #: When each server process started (epoch seconds), and when this snapshot was taken.
    created: dict[int, float] = field(default_factory=dict)
    epoch: float = field(default_factory=time.time)
    why: dict[str, str] = field(default_factory=dict)


def take_snapshot(
    threads: BackgroundThreads | str, pids: list[int] | str | None, partial: str | None = None
) -> Snapshot:
    """Read every counter now (a few ``/proc`` reads per process: well under a millisecond
    for a handful of processes). ``partial``: why ``pids`` are not all the server's (a
    cluster node not measured): they are read, for their nodes' figures, but their sum is
    not the server's."""
    snap = Snapshot(wall=time.perf_counter(), client_cpu=client_cpu_seconds())
    me = psutil.Process()
    try:
        snap.client_io = _io(me)
    except (AttributeError, psutil.Error, OSError) as exc:  # no io_counters on this platform
        snap.why["client_io"] = f"this system gives no per-process I/O counters ({type(exc).__name__})"
    if isinstance(threads, str):
        snap.why["engine_cpu"] = threads
    else:
        cpu = _thread_cpu(threads)
        if isinstance(cpu, str):
            snap.why["engine_cpu"] = cpu
        else:
            snap.engine_threads = cpu
    if pids is None:
        snap.why["server_cpu"] = snap.why["server_io"] = NO_SERVER
    elif isinstance(pids, str):
        snap.why["server_cpu"] = snap.why["server_io"] = pids
    else:
        _server(snap, pids)
        if partial is not None:
            snap.why.setdefault("server_cpu", partial)
            snap.why.setdefault("server_io", partial)
    return snap


def _server(snap: Snapshot, pids: list[int]) -> None:
    cpu: dict[int, float] = {}
    io: dict[int, tuple[int, int]] | None = {}
    for pid in pids:
        try:
            proc = psutil.Process(pid)
            with proc.oneshot():
                t = proc.cpu_times()
                cpu[pid] = t.user + t.system
                snap.created[pid] = proc.create_time()
                if io is not None:
                    try:
                        io[pid] = _io(proc)
                    except psutil.AccessDenied:
                        io = None
                        snap.why["server_io"] = f"permission: /proc/{pid}/io of the server is not readable by this user"
                    except AttributeError:
                        io = None
                        snap.why["server_io"] = "this system gives no per-process I/O counters"
        except psutil.NoSuchProcess:
            continue  # ended: the difference says what was lost
        except psutil.AccessDenied:
            snap.why["server_cpu"] = f"permission: the CPU times of server process {pid} are not readable by this user"
            snap.why.setdefault("server_io", f"permission: server process {pid} is not readable by this user")
            return
    snap.server_cpu = cpu
    snap.server_io = io


def _born_before(a: Snapshot, b: Snapshot) -> set[int]:
    """Server processes in ``b`` but not in ``a`` that were already running at ``a`` (found
    only at the end, e.g. after a reopen): their counters hold their whole past, not the
    phase's, so they are left out."""
    if a.server_cpu is None or b.server_cpu is None:
        return set()
    return {pid for pid in set(b.server_cpu) - set(a.server_cpu) if b.created.get(pid, 0.0) < a.epoch - 1.0}


def _diff_threads(a: Mapping[int, int], b: Mapping[int, int]) -> float:
    """CPU seconds between two thread readings; a thread new in ``b`` counts from 0."""
    return sum(max(0, ns - a.get(tid, 0)) for tid, ns in b.items()) / 1e9


def _diff_pids(a: Mapping[int, float], b: Mapping[int, float]) -> float:
    return sum(max(0.0, v - a.get(pid, 0.0)) for pid, v in b.items())


def _diff_io(a: Mapping[int, tuple[int, int]], b: Mapping[int, tuple[int, int]]) -> tuple[int, int]:
    r = sum(max(0, v[0] - a.get(pid, (0, 0))[0]) for pid, v in b.items())
    w = sum(max(0, v[1] - a.get(pid, (0, 0))[1]) for pid, v in b.items())
    return r, w


def difference(a: Snapshot, b: Snapshot, nodes: Mapping[str, list[int] | str] | None = None) -> PhaseCost:
    """The cost between two snapshots: every figure both measured, the others None with
    why; ``nodes``: a cluster's nodes (endpoint -> pids or why not), each its own part."""
    cost = PhaseCost(client_cpu_seconds=max(0.0, b.client_cpu - a.client_cpu))
    why = {**a.why, **b.why}
    if a.client_io is not None and b.client_io is not None:
        cost.client_read_bytes = max(0, b.client_io[0] - a.client_io[0])
        cost.client_write_bytes = max(0, b.client_io[1] - a.client_io[1])
    if a.engine_threads is not None and b.engine_threads is not None:
        cost.engine_cpu_seconds = _diff_threads(a.engine_threads, b.engine_threads)
    old = _born_before(a, b)
    if old:
        cost.notes.append(
            f"server process(es) {', '.join(map(str, sorted(old)))} were found only at the phase's end and"
            " had started before it: left out"
        )
    if a.server_cpu is not None and b.server_cpu is not None and "server_cpu" not in why:
        b_cpu = {pid: v for pid, v in b.server_cpu.items() if pid not in old}
        cost.server_cpu_seconds = _diff_pids(a.server_cpu, b_cpu)
        gone = sorted(set(a.server_cpu) - set(b.server_cpu))
        if gone:  # its last figures are lost: a lower bound, said so
            cost.notes.append(
                f"server CPU and I/O are lower bounds: process(es) {', '.join(map(str, gone))} ended during the"
                " phase, and their figures since its start are lost"
            )
    if a.server_io is not None and b.server_io is not None and "server_io" not in why:
        b_io = {pid: v for pid, v in b.server_io.items() if pid not in old}
        cost.server_read_bytes, cost.server_write_bytes = _diff_io(a.server_io, b_io)
    for name in ("client_io", "engine_cpu", "server_cpu", "server_io"):
        if name in why:
            cost.not_measured[name] = why[name]
    for key, found in (nodes or {}).items():
        cost.server_nodes[key] = _node(a, b, found, old)
    return cost


def _node(a: Snapshot, b: Snapshot, found: list[int] | str, old: set[int]) -> NodeCost:
    """One cluster node's part: its processes' differences, or why not measured."""
    if isinstance(found, str):
        return NodeCost(not_measured={"server_cpu": found, "server_io": found})
    node = NodeCost(pids=list(found))
    mine = set(found) - old
    if a.server_cpu is not None and b.server_cpu is not None:
        node.cpu_seconds = _diff_pids(a.server_cpu, {p: v for p, v in b.server_cpu.items() if p in mine})
    else:
        node.not_measured["server_cpu"] = b.why.get("server_cpu") or a.why.get("server_cpu") or "not read"
    if a.server_io is not None and b.server_io is not None:
        node.read_bytes, node.write_bytes = _diff_io(a.server_io, {p: v for p, v in b.server_io.items() if p in mine})
    else:
        node.not_measured["server_io"] = b.why.get("server_io") or a.why.get("server_io") or "not read"
    return node


def _counters_diff(cost: PhaseCost, a: EngineCounters | str, b: EngineCounters | str) -> None:
    if isinstance(b, str) or isinstance(a, str):
        cost.not_measured["counters"] = b if isinstance(b, str) else str(a)
        return
    cost.engine_written = {k: max(0, v - a.written.get(k, 0)) for k, v in b.written.items()}
    cost.engine_counters = {k: v - a.other.get(k, 0.0) for k, v in b.other.items()}
    for key, n in b.nodes.items():
        was = a.nodes.get(key, EngineCounters())
        node = cost.server_nodes.setdefault(key, NodeCost())
        node.engine_written = {k: max(0, v - was.written.get(k, 0)) for k, v in n.written.items()}
        node.engine_counters = {k: v - was.other.get(k, 0.0) for k, v in n.other.items()}
    if b.stall_seconds is not None:
        cost.stall_seconds = max(0.0, b.stall_seconds - (a.stall_seconds or 0.0))


class _Series(threading.Thread):
    """Once a second, the costs of the second just past (a daemon thread: a few ``/proc``
    reads a second, off the event loop and off every operation's path)."""

    def __init__(self, engine: Engine, pids: list[int] | str | None, partial: str | None, first: Snapshot) -> None:
        super().__init__(name="asyncbench-cost", daemon=True)
        self.engine, self.pids, self.partial, self.last, self.start_wall = engine, pids, partial, first, first.wall
        self.rows: list[list[float]] = []
        self.halt = threading.Event()

    def run(self) -> None:
        while not self.halt.wait(SERIES_INTERVAL_S):
            try:
                snap = take_snapshot(self.engine.background_threads(), self.pids, self.partial)
            except Exception:  # a sampler fault costs the series, never the phase
                return
            self.add(snap)

    def add(self, snap: Snapshot) -> None:
        """The row from the last reading to ``snap`` (the last one: the phase's partial second)."""
        c = difference(self.last, snap)
        self.last = snap
        if snap.wall - self.start_wall > 0:
            self.rows.append(
                [
                    round(snap.wall - self.start_wall, 3),
                    c.client_cpu_seconds or 0.0,
                    c.engine_cpu_seconds or 0.0,
                    c.server_cpu_seconds or 0.0,
                    float(c.read_bytes or 0),
                    float(c.write_bytes or 0),
                ]
            )


class CostMeter:
    """One phase's cost: ``await start()`` before its clock starts, ``await stop()`` after
    it stops (the engine may have been replaced in between: a reopen)."""

    def __init__(self, engine: Engine, series: bool = True) -> None:
        self.engine = engine
        self.series = series
        self._first: Snapshot | None = None
        self._counters: EngineCounters | str = "not read"
        self._sampler: _Series | None = None

    async def start(self) -> None:
        """The device and CPU snapshot is taken before the engine's counters are read (and
        in :meth:`stop` after them), so the engine's window lies inside the device's: a
        background writer (the LSM's log writer thread) that writes between the two reads
        is in both figures or in the device's alone, never in the engine's alone."""
        self._nodes, self._pids, self._partial = await self._server(self.engine)
        self._first = take_snapshot(self.engine.background_threads(), self._pids, self._partial)
        self._counters = await self._read_counters(self.engine)
        if self.series:
            self._sampler = _Series(self.engine, self._pids, self._partial, self._first)
            self._sampler.start()

    async def stop(self, engine: Engine) -> PhaseCost:
        """The phase's cost, ``engine`` being the one open now."""
        assert self._first is not None, "stop() before start()"
        nodes, pids, partial = (
            (self._nodes, self._pids, self._partial) if engine is self.engine else await self._server(engine)
        )
        after = await self._read_counters(engine)  # before the snapshot: see start()
        last = take_snapshot(engine.background_threads(), pids, partial)
        rows = None
        if self._sampler is not None:
            self._sampler.halt.set()
            self._sampler.join()
            if self._sampler.is_alive() is False and engine is self.engine:
                self._sampler.add(last)  # the phase's last, partial second
            rows = self._sampler.rows
        cost = difference(self._first, last, nodes)
        # a reopen's new engine counts from zero when its counters started with it; a
        # server's cumulative counters go on from the old adapter's reading
        fresh = engine is not self.engine and not (isinstance(after, EngineCounters) and after.server_wide)
        _counters_diff(cost, EngineCounters() if fresh else self._counters, after)
        cost.series = rows or None
        return cost

    @staticmethod
    async def _server(engine: Engine) -> tuple[dict[str, list[int] | str], list[int] | str | None, str | None]:
        """The server's nodes (a cluster's; empty otherwise), the pids to read, and why
        their sum is not the server's (a node not measured)."""
        try:
            nodes = await engine.server_nodes()
            if nodes:
                pids, partial = nodes_pids(nodes)
                return nodes, pids, partial
            return {}, await engine.server_processes(), None
        except Exception as exc:  # finding them must never fail the phase
            return {}, f"the server's processes could not be found: {type(exc).__name__}: {exc}", None

    @staticmethod
    async def _read_counters(engine: Engine) -> EngineCounters | str:
        try:
            return await engine.cost_counters()
        except Exception as exc:
            return f"the engine's counters could not be read: {type(exc).__name__}: {exc}"

    def close(self) -> None:
        """Stop the sampler without a figure (a phase that failed)."""
        if self._sampler is not None:
            self._sampler.halt.set()
            self._sampler.join()
