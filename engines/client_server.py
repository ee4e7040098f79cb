"""What the client/server engines (mysql, postgres) share: endpoints, how workers are
spread over them, per-node facts.

A client/server engine (mysql, postgres) may be given several endpoints, the SQL ports of
the nodes of a multi-primary cluster (Galera) or of anything else that accepts the same
writes. Worker ``w`` of ``P`` then connects to endpoint ``w % K``: round-robin, so with
``P = K`` every node takes one worker's writes and reads, and the assignment is a pure
function of ``w`` (a report, or a second process running other workers, can recompute it).

Written once here so both engines parse ``host:port`` lists, state the assignment and
per-node facts, and keep their connections (:class:`SessionPoolEngine`: a session per
worker, a probe for an endpoint no worker uses, retries summed over sessions) the same
way; each engine says only how its driver opens a session and what it reads from one.
"""

from __future__ import annotations

import abc
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Generic, Protocol, TypeVar

import psutil

from asyncbench.engine import BackgroundThreads, Engine, EngineConfig, nodes_pids
from asyncbench.engines.server_lock import DEFAULT_LOCK_WAIT_S, Lease, is_held

if TYPE_CHECKING:
    from anyio.abc import TaskGroup

    from asyncbench.engines.sql_retry import Retrier
    from asyncbench.store import SqlPrimitives

__all__ = [
    "Endpoint",
    "PooledSession",
    "SessionPoolEngine",
    "assign",
    "hybridmethod",
    "is_local_host",
    "local_process",
    "parse_endpoint",
    "parse_endpoints",
    "summarize",
    "worker_map",
]


#: Host names that are this machine (a server there has its processes here).
LOCAL_HOSTS = frozenset({"localhost", "127.0.0.1", "::1", "[::1]"})


def is_local_host(host: str) -> bool:
    """The host is this machine: a loopback name or address."""
    return host in LOCAL_HOSTS or host.startswith("127.") or host.startswith("/")


def local_process(pid: int, names: tuple[str, ...]) -> psutil.Process | str:
    """Process ``pid`` of this machine if its name starts with one of ``names`` (the
    server's), else why not: a pid from a server in another container or host names
    another process here, or none."""
    try:
        proc = psutil.Process(pid)
        name = proc.name()
    except psutil.NoSuchProcess:
        return f"server pid {pid} is not a process on this machine (the server runs in another container or host)"
    except psutil.AccessDenied:
        return f"permission: server process {pid} cannot be inspected by this user"
    if not name.startswith(names):
        return f"server pid {pid} is {name!r} here, not the server (the server runs in another container or host)"
    return proc


@dataclass(frozen=True)
class Endpoint:
    host: str
    port: int

    def __str__(self) -> str:
        return f"[{self.host}]:{self.port}" if ":" in self.host else f"{self.host}:{self.port}"


def _port(text: str, what: str) -> int:
    try:
        port = int(text)
    except ValueError:
        raise ValueError(f"{what}: port must be an integer, got {text!r}") from None
    if not 0 < port < 65536:
        raise ValueError(f"{what}: port must be between 1 and 65535, got {port}")
    return port


def parse_endpoint(text: str, default_port: int) -> Endpoint:
    """``host``, ``host:port`` or ``[ipv6]:port``; the port defaults to ``default_port``."""
    item = text.strip()
    if not item:
        raise ValueError("empty endpoint")
    if item.startswith("["):  # [::1]:5432
        host, sep, rest = item[1:].partition("]")
        if not sep or (rest and not rest.startswith(":")):
            raise ValueError(f"endpoint {text!r}: expected [address]:port")
        return Endpoint(host, _port(rest[1:], f"endpoint {text!r}") if rest else default_port)
    if item.count(":") == 1:
        host, _, port = item.partition(":")
        if not host:
            raise ValueError(f"endpoint {text!r}: no host")
        return Endpoint(host, _port(port, f"endpoint {text!r}"))
    return Endpoint(item, default_port)  # a bare host (or a bare IPv6 address)


def parse_endpoints(items: str | Sequence[str], default_port: int) -> list[Endpoint]:
    """A comma list or a list of endpoints, in order (duplicates kept: they are deliberate)."""
    parts = items.split(",") if isinstance(items, str) else list(items)
    if not all(isinstance(p, str) for p in parts):
        raise ValueError(f"endpoints must be strings like 'host:port', got {items!r}")
    out = [parse_endpoint(p, default_port) for p in parts]
    if not out:
        raise ValueError("no endpoints given")
    return out


def assign(workers: int, endpoints: int) -> list[int]:
    """Endpoint index of each worker: round-robin, worker ``w`` -> ``w % endpoints``."""
    return [w % endpoints for w in range(workers)]


def worker_map(workers: int, endpoints: Sequence[Endpoint]) -> str:
    """Where each worker connected, e.g. ``workers 0, 3 -> 127.0.0.1:3307; worker 1 -> ...``."""
    by_endpoint: dict[int, list[int]] = {}
    for w, e in enumerate(assign(workers, len(endpoints))):
        by_endpoint.setdefault(e, []).append(w)
    parts = []
    for e, endpoint in enumerate(endpoints):
        ws = by_endpoint.get(e, [])
        if not ws:
            parts.append(f"no worker -> {endpoint}")
        else:
            label = "worker" if len(ws) == 1 else "workers"
            parts.append(f"{label} {', '.join(map(str, ws))} -> {endpoint}")
    return "; ".join(parts)


def summarize(per_node: Mapping[str, str | None]) -> str:
    """One value when every node agrees, else ``value (node), ...``; unknowns say so."""
    values = {v for v in per_node.values()}
    if len(values) == 1:
        (value,) = values
        return "unknown" if value is None else value
    return ", ".join(f"{'unknown' if v is None else v} ({node})" for node, v in per_node.items())


class hybridmethod:
    """A method callable on the class (before open) and on an instance (knows more after
    open, e.g. the server versions): ``library_versions`` of a client/server engine."""

    def __init__(self, func: Callable[[Any], dict[str, str]]) -> None:
        self.func = func

    def __get__(self, obj: object, owner: type) -> Callable[[], dict[str, str]]:
        target = owner if obj is None else obj
        return lambda: self.func(target)


class PooledSession(Protocol):
    """What :class:`SessionPoolEngine` needs of an engine's session: the endpoint it is
    connected to, the primitives a workload's store runs over, their retry (for the retry
    count) and a close."""

    @property
    def endpoint(self) -> Endpoint | None: ...

    @property
    def primitives(self) -> SqlPrimitives: ...

    @property
    def retrier(self) -> Retrier: ...

    async def close(self) -> None: ...


S = TypeVar("S", bound=PooledSession)
T = TypeVar("T")


class SessionPoolEngine(Engine, Generic[S]):
    """The connections of a client/server engine: one session per worker (``open`` makes
    them: worker 0's in ``_session``, the others' in ``_worker_sessions``), handed out by
    :meth:`worker` as their SQL primitives, closed together, their retries summed; per-endpoint facts in ``_nodes``;
    the storage figure ``measure_storage`` queries, cached in ``_storage_bytes``.

    A subclass sets :attr:`product`, opens the sessions and says, in :meth:`_probe` and
    :meth:`_node_values`, how to reach an endpoint no worker uses and what to read there.
    """

    #: The engine as messages name it ("MySQL engine is not open").
    product: ClassVar[str]
    endpoints: list[Endpoint]
    multi_process: ClassVar[bool] = True  # a connection per worker: any process may hold some
    # a server engine: run by "all" when its server is configured, durable, no maintenance phase
    in_all = True
    needs_server = True
    needs_stabilization = False
    persistent = True
    #: The settings every server engine takes (a subclass adds its own to its ``default_settings``).
    SERVER_SETTINGS: ClassVar[Mapping[str, Any]] = {
        "host": "",
        "port": 0,
        "hosts": [],
        "database": "",
        "user": "",
        "password": "",
        "lock_wait_seconds": DEFAULT_LOCK_WAIT_S,
        # a scaled-out run's client processes take the connection from their own environment
        # (where the plan sets none) instead of the coordinator's resolved one: Engine.pinned_settings
        "client_environment": False,
    }

    def __init__(self, config: EngineConfig) -> None:
        super().__init__(config)
        self._session: S | None = None
        self._worker_sessions: list[S] = []
        #: endpoint -> what :meth:`_node_values` read there at open
        self._nodes: dict[str, dict[str, str]] = {}
        self._storage_bytes: int | None = None
        #: endpoint -> a probe session kept for the cost's readings (a node no worker uses)
        self._probes: dict[str, S] = {}

    def pinned_settings(self) -> dict[str, Any]:
        """Every endpoint, the database and the account as this process resolved them
        (``hosts`` wins over ``host``/``port`` and the environment in every engine), unless
        ``client_environment = true`` lets each client process resolve its own."""
        if self.settings.get("client_environment"):
            return {}
        s: Mapping[str, Any] = getattr(self, "conn_settings", {})
        return {
            "hosts": [str(e) for e in self.endpoints],
            **{key: str(s[key]) for key in ("database", "user", "password") if key in s},
        }

    # --- hooks --------------------------------------------------------------------------
    @abc.abstractmethod
    async def _probe(self, endpoint: Endpoint) -> S:
        """A session on ``endpoint`` for reading its facts when no worker uses it; closed
        right after."""

    @abc.abstractmethod
    async def _node_values(self, session: S) -> dict[str, str]:
        """What the report states about the server behind ``session`` (version, settings)."""

    @abc.abstractmethod
    async def measure_storage(self) -> int:
        """Query the server's storage figure (untimed, after settle) and cache it in
        ``_storage_bytes`` for :meth:`storage_bytes`."""

    # --- sessions -----------------------------------------------------------------------
    def _sessions(self) -> list[S]:
        return [s for s in (self._session, *self._worker_sessions) if s is not None]

    @property
    def _db(self) -> S:
        if self._session is None:
            raise RuntimeError(f"{self.product} engine is not open")
        return self._session

    async def _read_nodes(self) -> None:
        """Every endpoint's facts, for the report."""
        self._nodes = await self._on_each_endpoint(self._node_values)

    async def _on_each_endpoint(self, read: Callable[[S], Awaitable[T]], keep: bool = False) -> dict[str, T]:
        """``read`` on every distinct endpoint, in order: through a worker's session on it,
        else through a probe session opened for it, closed afterwards or, with ``keep``,
        kept until :meth:`close` (the cost's readings at every phase's start and end)."""
        sessions = {str(s.endpoint): s for s in self._sessions()}
        out: dict[str, T] = {}
        for endpoint in self.endpoints:
            key = str(endpoint)
            if key in out:
                continue
            session = sessions.get(key) or self._probes.get(key)
            if session is None:
                session = await self._probe(endpoint)
                if keep:
                    self._probes[key] = session
            try:
                out[key] = await read(session)
            finally:
                if key not in sessions and key not in self._probes:
                    await session.close()
        return out

    def worker(self, index: int) -> SqlPrimitives:
        """The SQL primitives over worker ``index``'s own session."""
        return (self._db if index == 0 else self._worker_sessions[index - 1]).primitives

    # --- cost: the server's processes on this machine ------------------------------------
    async def _server_pids(self, sessions: list[S]) -> list[int] | str:
        """The pids of the server processes that do the work of ``sessions`` (all on one
        local endpoint), or why they cannot be known. Subclasses that can find them
        override this."""
        return f"{self.product} does not say which processes serve its connections"

    def background_threads(self) -> BackgroundThreads | str:
        return "none in the client: the server's processes do the engine's work (server CPU)"

    async def server_processes(self) -> list[int] | str | None:
        """The server's processes on this machine, endpoint by endpoint (each Galera node
        its own); a server on another machine cannot be measured from here."""
        nodes = await self.server_nodes()
        if nodes:  # a cluster: every node, also one no worker uses
            measured, unknown = nodes_pids(nodes)
            return unknown or measured
        by_endpoint: dict[str, list[S]] = {}
        for session in self._sessions():
            by_endpoint.setdefault(str(session.endpoint), []).append(session)
        if not by_endpoint:
            return f"{self.product} engine is not open"
        pids: set[int] = set()
        for key, sessions in by_endpoint.items():
            endpoint = sessions[0].endpoint
            if endpoint is None or not is_local_host(endpoint.host):
                return f"the server at {key} is not on this machine"
            found = await self._server_pids(sessions)
            if isinstance(found, str):
                return found
            pids.update(found)
        return sorted(pids)

    # --- the server run lock (engines/server_lock.py) --------------------------------------
    #: Taken by :meth:`open` when no runner holds the lock (an engine opened on its own);
    #: given back at :meth:`close` or when the open fails.
    _own_lease: Lease | None = None

    @abc.abstractmethod
    async def take_lock(self) -> Lease:
        """Take this engine's server-side run lock (waits a bounded time, then refuses)."""

    @abc.abstractmethod
    async def _open(self, reset: bool) -> None:
        """Open the sessions (the engine's own open, under the run lock)."""

    async def open(self, reset: bool, background: TaskGroup | None = None) -> None:
        key = self.lock_key()
        if key is not None and not is_held(key):  # opened on its own: the lock lives until close
            self._own_lease = await self.take_lock()
        try:
            await self._open(reset)
        except BaseException:
            await self._release_own_lease()
            raise

    async def _release_own_lease(self) -> None:
        lease, self._own_lease = self._own_lease, None
        if lease is not None:
            await lease.release()

    async def close(self) -> None:
        try:
            sessions = self._sessions() + list(self._probes.values())
            self._session, self._worker_sessions, self._probes = None, [], {}
            for session in sessions:
                await session.close()
        finally:
            await self._release_own_lease()

    def take_retries(self) -> int:
        total = 0
        for session in self._sessions():
            total += session.retrier.retries
            session.retrier.retries = 0
        return total

    def storage_bytes(self) -> int:
        """The server's figure cached by :meth:`measure_storage` (0 before it)."""
        return self._storage_bytes or 0

    def _effective(self, name: str) -> str | None:
        """One value read at open over every endpoint (None before open)."""
        if not self._nodes:
            return None
        return summarize({node: values.get(name) for node, values in self._nodes.items()})
