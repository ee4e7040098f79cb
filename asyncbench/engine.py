"""The engine lifecycle every adapter implements, and the facts it states.

An engine knows no workload: what it gives one is its store primitives
(:mod:`asyncbench.store`: named key/value stores, or a SQL session and dialect, and where
a batch runs), handed out per worker by :meth:`Engine.worker`; the workload builds its own
store over them (``Workload.store``). This module holds what every engine has whatever it
runs: open / close / stabilize / settle / storage, per-worker primitives, settings and
:class:`~asyncbench.facts.EngineFacts`.

Lifetime follows anyio's structured concurrency: ``open`` receives the task group that
outlives ``open() .. close()`` as an argument, so an engine with background work (merges,
log writers) starts it there and stops it in ``close``; it never enters a task group in
``open`` and leaves it in ``close``.
"""

from __future__ import annotations

import abc
import contextlib
import os
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, TypeVar

import anyio
from anyio.abc import TaskGroup

from asyncbench.facts import EngineFacts, Setting

__all__ = [
    "COST_GROWTH_KNEE",
    "BackgroundThreads",
    "Engine",
    "EngineConfig",
    "EngineCounters",
    "EngineUnavailable",
    "cost_growth_problem",
    "directory_size",
    "opened",
]


class EngineUnavailable(RuntimeError):
    """The engine's library or server is missing; the message says how to get it."""


#: The store size ``Engine.cost_growth`` is stated against: below it an engine's cost per
#: operation is taken as flat (asyncbench.run.estimate, where the knee is explained).
COST_GROWTH_KNEE = 200_000


def cost_growth_problem(stated: object) -> str | None:
    """What is wrong with an ``Engine.cost_growth`` value, or None when the estimate can
    use it. Why a check of its own: a plug-in states it, and a point at or below the knee,
    two points at one size or a factor of 0 made the estimate divide by zero or take the
    log of 0 before the run started, a traceback instead of a message naming the problem.

    Accepted: a finite exponent (int or float, not bool); or a tuple or list of
    ``(profiles, factor)`` pairs, profiles whole numbers above COST_GROWTH_KNEE in
    increasing order, factors finite and above 0 (empty: flat)."""
    import math

    def real(v: object) -> bool:
        return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)

    if isinstance(stated, (int, float)) and not isinstance(stated, bool):
        return None if real(stated) else f"exponent {stated!r} is not a finite number"
    if not isinstance(stated, (tuple, list)):
        return f"{stated!r} is neither an exponent nor a tuple of (profiles, factor) points"
    last = COST_GROWTH_KNEE
    for i, point in enumerate(stated):
        if not (isinstance(point, (tuple, list)) and len(point) == 2):
            return f"point {i} {point!r} is not a (profiles, factor) pair"
        n, f = point
        if not (isinstance(n, int) and not isinstance(n, bool)):
            return f"point {i}: profiles {n!r} is not a whole number"
        if n <= last:
            after = f"the knee ({COST_GROWTH_KNEE:_d})" if i == 0 else f"point {i - 1}'s {last:_d}"
            return f"point {i}: profiles {n:_d} is not above {after}; points go in increasing size"
        if not (real(f) and f > 0):
            return f"point {i}: factor {f!r} is not a finite number above 0"
        last = n
    return None


@dataclass(frozen=True)
class EngineConfig:
    name: str
    data_dir: Path
    settings: Mapping[str, Any] = field(default_factory=dict)
    limit: int = 50
    seed: int = 570123434
    workers: int = 1  # P: how many concurrent workers will call ``worker(i)`` handles
    #: The key/value stores the run's workload keeps (``Workload.kv_stores``): a key/value
    #: engine that holds a fixed set of stores opens these, by these names. An engine knows
    #: no workload; the workload declares what it keeps.
    stores: tuple[str, ...] = ()


@dataclass(frozen=True)
class BackgroundThreads:
    """An engine's own threads in this process (its flushes, merges, compactions), for the
    cost of a phase: by native thread id, or by a prefix of the name the OS knows them by
    (``/proc/self/task/TID/comm``, e.g. ``rocksdb:``: a library's threads Python never
    sees). Read at every cost snapshot, so threads started later are counted from then."""

    ids: frozenset[int] = frozenset()
    names: tuple[str, ...] = ()


@dataclass(frozen=True)
class EngineCounters:
    """An engine's own cumulative counters, read at the start and end of every phase (the
    phase's figure is the difference). ``written``: bytes the engine says it wrote, by what
    (log, flush, merge...): their sum is a lower bound of the device bytes it made written.
    ``other``: any other counter worth its difference (pages, reads). ``stall_seconds``:
    the time writes were stalled or slowed by the engine, where it keeps one."""

    written: Mapping[str, int] = field(default_factory=dict)
    other: Mapping[str, float] = field(default_factory=dict)
    stall_seconds: float | None = None
    #: The server's own cumulative counters (a reopen's new adapter reads on from the old
    #: one's figures), not counts since this adapter opened (which restart at a reopen).
    server_wide: bool = False
    #: A cluster's nodes, each its own counters (endpoint -> them; the figures above are
    #: their sum); empty for one server or none.
    nodes: Mapping[str, EngineCounters] = field(default_factory=dict)


def nodes_pids(nodes: Mapping[str, list[int] | str]) -> tuple[list[int], str | None]:
    """A cluster's measured pids (:meth:`Engine.server_nodes`: every node whose processes
    are known), and why their sum is not the server's when a node's are not known (None
    when every node's are)."""
    pids = sorted({pid for found in nodes.values() if not isinstance(found, str) for pid in found})
    unknown = [f"node {key}: {why}" for key, why in nodes.items() if isinstance(why, str)]
    return pids, ("; ".join(unknown) if unknown else None)


def distinct_nodes(nodes: Mapping[str, list[int] | str]) -> dict[str, list[int] | str]:
    """``nodes`` with every node that shares a process with another made "not measured":
    one process cannot be two nodes' (their pid files name the same one), so neither is
    proven to be its node's, and counting it for both would double it."""
    owners: dict[int, list[str]] = {}
    for key, found in nodes.items():
        for pid in found if not isinstance(found, str) else ():
            owners.setdefault(pid, []).append(key)
    out = dict(nodes)
    for pid, keys in owners.items():
        if len(keys) > 1:
            for key in keys:
                others = ", ".join(k for k in keys if k != key)
                out[key] = f"process {pid} is also node {others}'s (their pid files name the same process): not proven to be this node's"
    return out


def directory_size(path: Path) -> int:
    """Bytes of every regular file under ``path`` (the reference's storage figure)."""
    total = 0
    for root, _dirs, files in os.walk(path):
        for name in files:
            with contextlib.suppress(FileNotFoundError):  # a file may vanish mid-walk
                total += os.lstat(os.path.join(root, name)).st_size
    return total


class Engine(abc.ABC):
    """Base class of engine adapters. Subclasses set ``name`` and ``default_settings``."""

    name: ClassVar[str]
    #: Settings the TOML may set under ``[engines.<name>]``, with their defaults; the
    #: config validator rejects other keys and values of another type.
    default_settings: ClassVar[Mapping[str, Any]] = {}
    #: Whether the runner should run stabilize phases for this engine.
    needs_stabilization: ClassVar[bool] = False
    #: Whether data survives close + reopen (the memory engine only keeps its object).
    persistent: ClassVar[bool] = True
    # Membership: the registry (``asyncbench.engines``) derives ``--engine all``, the default
    # set and the harness floor from these, for the built-in engines (a plug-in joins none).
    #: ``--engine all`` runs it.
    in_all: ClassVar[bool] = False
    #: It talks to a server, so a plan without ``engines`` leaves it out.
    needs_server: ClassVar[bool] = False
    #: It is the harness floor: the workload's own checksums with no store in between, the
    #: overhead floor of the harness (the report and charts mark it).
    harness_floor: ClassVar[bool] = False
    #: How its cost per operation grows with the store above the estimate's knee
    #: (asyncbench.run.estimate): an exponent b, seconds per operation at n profiles being
    #: those at the knee times (n / knee) ** b; or, for an engine whose cost does not grow
    #: as a power (the LSM's steps up once its largest tree is compressed), measured points
    #: ``((profiles, cost over the knee's), ...)`` in increasing size, joined on a log-log
    #: scale and carried past the last with the last stretch's slope. Fitted per engine
    #: from the reference plan (docs/results/estimate.md); an engine that states none gets
    #: this.
    cost_growth: ClassVar[float | tuple[tuple[int, float], ...]] = 0.06
    #: Several client processes may each open it and run some of the P workers
    #: (``--processes``/``--cluster``): true of a server's independent connections, false
    #: of an embedded store, which belongs to the one process that opened it.
    multi_process: ClassVar[bool] = False
    #: Why :meth:`measure_storage` may not run between phases (it changes what later
    #: phases measure, e.g. MySQL's ANALYZE TABLE refreshes the optimizer's statistics),
    #: or None: then the cost measurement takes the storage after each write phase too,
    #: not only at settle, as the reference does.
    storage_changes_state: ClassVar[str | None] = None

    @classmethod
    def setting_sources(cls) -> Mapping[str, str]:
        """Where a setting left at its placeholder default (``''``, ``0``) takes its effective
        value, by key: ``"MYSQL_HOST, else '127.0.0.1'"``. ``engines`` shows it beside the
        default, so ``host = ''`` does not read as "no host"."""
        return {}

    @classmethod
    def check_settings(cls, settings: Mapping[str, Any]) -> None:
        """Raise ValueError naming the setting when a value (of the right type) is not
        acceptable; called by the config validator before anything runs."""

    @classmethod
    def check_environment(cls, settings: Mapping[str, Any], environ: Mapping[str, str]) -> None:
        """Raise ValueError whose first word is the variable's name when an environment
        variable the engine would read (its setting left unset in ``settings``) is not
        acceptable, e.g. a server engine's database name; called before anything runs,
        for every engine the run selected (a plan need not have the engine's table)."""

    def __init__(self, config: EngineConfig) -> None:
        self.config = config
        self.settings: dict[str, Any] = {**self.default_settings, **config.settings}
        self.limit = config.limit
        self.data_dir = Path(config.data_dir)

    # --- lifecycle --------------------------------------------------------------------
    @abc.abstractmethod
    async def open(self, reset: bool, background: TaskGroup | None = None) -> None:
        """Open the store (``reset`` wipes any previous data first). Background work, if
        the engine has any, is started in ``background``, which stays open until after
        ``close``; an engine that needs one raises TypeError without it."""

    @abc.abstractmethod
    async def close(self) -> None:
        """Flush what the engine normally flushes on close, stop its background work and
        release every handle."""

    async def stabilize(self) -> None:
        """Bring background work to rest (flush, compact) before timed reads."""

    async def settle(self) -> None:
        """Make everything durable before storage is measured (checkpoint, flush)."""

    def storage_bytes(self) -> int:
        return directory_size(self.data_dir)

    def take_retries(self) -> int:
        """Writes retried after a transient conflict (e.g. a cluster's certification
        failure) since the last call, over every worker, and reset to zero; the runner
        calls it after each operation phase and stores it in that phase's result."""
        return 0

    async def measure_storage(self) -> int:
        """The storage figure, taken outside any phase's time (after settle, or after the last
        phase); an engine whose figure needs a query (a server) overrides this."""
        return await anyio.to_thread.run_sync(self.storage_bytes)

    async def read_fingerprint(self) -> dict[str, Any]:
        """What built the existing store (written by :meth:`write_fingerprint` after the
        run that built it), before ``open(reset=False)`` of a run that reuses it; raises
        RuntimeError saying why when there is none. Engines whose store cannot be
        fingerprinted keep this default, so a reuse run refuses them."""
        raise RuntimeError(f"engine {self.name!r} cannot reuse a store: it keeps no fingerprint of what built it")

    async def write_fingerprint(self, fingerprint: dict[str, Any]) -> bool:
        """Keep ``fingerprint`` (JSON) with the store after a clean ``close``; False if
        this engine cannot (its store is then never reusable)."""
        return False

    def lock_key(self) -> str | None:
        """What :meth:`exclusive` locks (a server and database/schema), None when nothing: a
        client process of a run whose coordinator holds the lock adopts it by this key."""
        return None

    def pinned_settings(self) -> dict[str, Any]:
        """The settings that fix which server, database and account this engine reaches, as
        resolved in this process (the plan's, else this process's environment, else the
        defaults). A scaled-out run's coordinator, which locks that server, ships them to its
        client processes so that a worker's own environment (another host's, or none) cannot
        send it elsewhere. Empty for an engine that reaches no server, or whose settings let
        each client process take its own environment."""
        return {}

    async def server_identity(self) -> str | None:
        """Which server, and which database/schema on it, this engine's tables and lock are
        on, as the server itself says (an address is not enough: ``127.0.0.1`` is another
        server on another host). A scaled-out run refuses client processes whose identity
        differs from its coordinator's. None when the engine cannot say (the lock key is
        compared instead). Creates nothing on the server."""
        return None

    @classmethod
    def exclusive(cls, config: EngineConfig) -> contextlib.AbstractAsyncContextManager[object]:
        """Held around a whole engine run (open, phases, reopen, close, clean-up): a
        client/server engine holds a server-side lock in it so two runs against one server
        never reset each other's tables (engines/server_lock.py). Nothing by default: a
        file engine's store directory has its own lock."""
        return contextlib.nullcontext()

    async def delete_store(self) -> bool:
        """Delete this engine's own store after ``close`` (the run's clean-up, as the
        reference's ``--clean-data``): only the files, directories or tables the engine
        itself created, never the data directory wholesale (it may hold other things).
        Returns False when the engine cannot delete its store (the run keeps it and says
        so); engines that write nothing return True."""
        return not self.persistent

    def worker(self, index: int) -> object:
        """The primitives worker ``index`` (of ``config.workers``) runs on, opened in
        ``open`` (the verify phase uses worker 0's): :class:`~asyncbench.store.KvPrimitives`,
        :class:`~asyncbench.store.SqlPrimitives` or :class:`~asyncbench.store.InProcess`,
        over which each workload builds its own store (``Workload.store``), so an engine
        runs every workload that maps onto its kind. The same object for workers that
        share one store (an embedded engine), one per connection otherwise. A plug-in
        engine that implements a workload's store itself (the profile store's ten
        operations) keeps this default, ``self``, and runs that workload only."""
        return self

    # --- cost (what a phase costs beyond its time: asyncbench.measure.cost) --------------
    def background_threads(self) -> BackgroundThreads | str:
        """The engine's own background threads in this process, or why there are none to
        measure (the phase's engine CPU then says "not measured" with that reason). Cheap:
        called from the per-second sampler's thread too."""
        return "the engine names no background threads of its own (its CPU is in the client's)"

    async def server_processes(self) -> list[int] | str | None:
        """The pids of the server's processes on this machine (a server engine, after
        open), a reason why they are not known (a remote server), or None: no server (the
        engine runs in this process). Called outside every phase's time."""
        return None

    async def server_nodes(self) -> dict[str, list[int] | str]:
        """Where the server is several nodes on this machine (a cluster): each node's
        server processes (endpoint -> pids), or why a node's cannot be known (remote, not
        proven to be its process); every node, also one no worker talks to, since each
        does the cluster's work. Empty: one server or none (:meth:`server_processes`
        says). Called outside every phase's time."""
        return {}

    async def cost_counters(self) -> EngineCounters | str:
        """The engine's own cumulative counters (:class:`EngineCounters`), or why it has
        none; called outside every phase's time (at its start and end)."""
        return "the engine keeps no counters of its own"

    # --- facts ------------------------------------------------------------------------
    def facts(self) -> EngineFacts:
        """What this engine states about itself; called before open and again after
        close (when a server version or effective settings are known)."""
        return EngineFacts(
            settings=[Setting(k, str(v)) for k, v in self.settings.items()],
            versions=self.library_versions(),
            needs_stabilization=self.needs_stabilization,
            harness_floor=self.harness_floor,
        )

    @classmethod
    def library_versions(cls) -> dict[str, str]:
        """Versions of the libraries this engine measures (works before open)."""
        return {}


E = TypeVar("E", bound=Engine)


@contextlib.asynccontextmanager
async def opened(engine: E, reset: bool = True) -> AsyncIterator[E]:
    """Open ``engine`` with a background task group around its lifetime; close it on exit.

    For tests and scripts; the runner does the same with timeouts and failure handling.
    """
    async with anyio.create_task_group() as tg:
        await engine.open(reset, tg)
        try:
            yield engine
        finally:
            with anyio.CancelScope(shield=True):
                await engine.close()
            tg.cancel_scope.cancel()
