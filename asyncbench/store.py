"""What an engine gives a workload: its store primitives, defined once.

An engine knows no workload. Its ``worker(i)`` hands out *primitives*, and the workload
builds its own store over them (``Workload.store``), as YCSB's ``DB.java`` gives every
workload the same five calls. Three kinds, one per family of engine:

- :class:`KvPrimitives`: named ordered key/value stores (:class:`KvStore`: get, put,
  delete, a scan from a key) and where a batch of calls runs (:class:`Placement`: a worker
  thread, or the event loop followed by a turn for the engine's background work);
- :class:`SqlPrimitives`: one connection (:class:`SqlSession`: fetch one row, fetch all,
  execute), the engine's :class:`Dialect` (placeholders, index hints, column types), where
  a batch runs (:data:`Hop`), a causal barrier before a batch that reads, and the engine's
  retry of a write that lost a conflict;
- :class:`InProcess`: the memory engine's. Nothing stands between the harness and the
  workload: the workload keeps its own reference store in this process (the harness
  floor), which survives a reopen (only a reset replaces the primitives).

The primitives are synchronous where an ``await`` per call would cost more than the call
(a RocksDB get): a workload's key/value batch body runs whole in one placed call. Every
workload operation is still one engine call: no multi-get, no write batch.

This module imports nothing of the package: engines and workloads both build on it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Coroutine, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar, cast

__all__ = [
    "Dialect",
    "Hop",
    "InProcess",
    "KvPrimitives",
    "KvStore",
    "Place",
    "Placement",
    "Primitives",
    "Retry",
    "SqlPrimitives",
    "SqlSession",
    "no_barrier",
    "no_retry",
    "on_loop",
    "run_to_completion",
]

T = TypeVar("T")


# --- key/value ----------------------------------------------------------------------------


class KvStore(Protocol):
    """One ordered key/value store, implemented natively by each engine."""

    def get(self, key: bytes) -> bytes | None: ...

    def put(self, key: bytes, value: bytes) -> None: ...

    def delete(self, key: bytes) -> None: ...

    def scan(self, start: bytes, last: bytes | None, limit: int) -> list[bytes]:
        """The first ``limit`` keys >= ``start`` and <= ``last`` (None: no upper bound),
        in key order: one iteration from ``start``."""
        ...

    def items(self) -> Iterable[tuple[bytes, bytes]]:
        """Every (key, value) in key order (crash repair, checks)."""
        ...

    def count(self) -> int:
        """How many keys the store holds."""
        ...


class Place(Protocol):
    """Runs one synchronous batch body, ``body(*args)``, where the engine runs batches."""

    def __call__(self, body: Callable[..., T], /, *args: Any) -> Awaitable[T]: ...


@dataclass(frozen=True)
class Placement:
    """Where an engine runs each class of batch: ``writes``, ``reads`` (point reads) and
    ``scans`` (scans, queries, counts). Each is called as ``await place(body, *args)`` and
    returns what the body returns: e.g. in a worker thread (``anyio.to_thread.run_sync``),
    or on the event loop followed by a turn for the engine's background work."""

    writes: Place
    reads: Place
    scans: Place

    @classmethod
    def everywhere(cls, place: Place) -> Placement:
        """Every batch the same way."""
        return cls(place, place, place)


@dataclass(eq=False)
class KvPrimitives:
    """A key/value engine's worker primitives: its named stores and where batches run."""

    #: The engine's stores by name. An engine may make a store on first use (a mapping
    #: whose ``__getitem__`` creates it: an in-memory engine), or hold a fixed set it
    #: opened (RocksDB's databases, the LSM's trees), which :meth:`store` serves.
    stores: Mapping[str, KvStore]
    place: Placement
    #: The engine keeps secondary-index entries with empty values (its keys alone carry
    #: what a scan reads; the LSM saves the bytes); otherwise an entry's value may repeat
    #: the primary key, as RocksDB's reference store does. A workload's mapping honours it.
    empty_index_values: bool = False
    #: The engine's last close was not clean (no clean-shutdown mark at this open): a
    #: workload that writes one record as several puts repairs what a crash left half
    #: written before its first batch, once (``repaired`` then says what it did).
    unclean: bool = False
    #: What that repair did (the workload's report), for the engine's facts and tests.
    repaired: object | None = None
    #: The workload stores built over these primitives, by workload name (one each).
    built: dict[str, Any] = field(default_factory=dict)

    def store(self, name: str) -> KvStore:
        """The engine's store ``name``: one the workload declared (``Workload.kv_stores``,
        which an engine holding a fixed set opened as ``EngineConfig.stores``). A name it
        does not hold is the workload's mistake, named, never another store in its place."""
        try:
            return self.stores[name]
        except KeyError:
            held = ", ".join(map(repr, self.stores)) or "none"
            raise RuntimeError(
                f"the engine holds no key/value store {name!r} (it holds {held}): a workload declares every "
                "store it keeps in its kv_stores"
            ) from None


# --- SQL ----------------------------------------------------------------------------------


class SqlSession(Protocol):
    """One connection of a SQL driver, as a workload's store needs it. A synchronous
    driver's methods are ``async`` too but never suspend (see :func:`run_to_completion`)."""

    async def fetch_one(self, statement: str, args: Sequence[Any]) -> Sequence[Any] | None: ...

    async def fetch_all(self, statement: str, args: Sequence[Any]) -> Sequence[Sequence[Any]]: ...

    async def execute(self, statement: str, args: Sequence[Any]) -> None: ...


class Hop(Protocol):
    """Runs one batch: ``await hop(body, *args)`` returns ``await body(*args)``, wherever the
    driver needs it run (e.g. on a synchronous driver's connection thread)."""

    def __call__(self, body: Callable[..., Awaitable[T]], /, *args: Any) -> Awaitable[T]: ...


#: ``await retry(exc, op, *args)``: called with the first failure of ``await op(*args)``;
#: re-raises it unless the engine calls it a transient conflict (a Galera certification
#: failure), else runs ``op`` again, counting each retry in the engine's figures.
Retry = Callable[..., Awaitable[Any]]


async def on_loop(body: Callable[..., Awaitable[T]], *args: Any) -> T:
    """The default hop: the batch on the event loop (an asyncio driver)."""
    return await body(*args)


async def no_barrier() -> None:
    """The default barrier: nothing to wait for before a batch that reads."""
    return None


async def no_retry(exc: BaseException, op: Callable[..., Awaitable[Any]], *args: Any) -> Any:
    """The default retry: none (a synchronous driver cannot pause to retry)."""
    raise exc


def run_to_completion(body: Callable[..., Coroutine[Any, Any, T]], *args: Any) -> T:
    """``body(*args)`` driven to its end right here, for a synchronous driver whose
    session methods never suspend (a batch on SQLite's connection thread). A batch that
    does suspend is a bug in that session, and an error, never a silent partial batch."""
    coro = body(*args)
    try:
        coro.send(None)
    except StopIteration as done:
        return cast(T, done.value)  # StopIteration.value is typed Any
    coro.close()
    raise RuntimeError(f"{getattr(body, '__qualname__', body)} suspended on a synchronous SQL session")


@dataclass(frozen=True)
class Dialect:
    """What differs between SQL engines in the statements a workload writes: placeholders,
    index hints and the column types of its DDL, each type with its NOT NULL where the
    engine wants one. Text keys compare byte by byte (as a key/value engine's scan)."""

    placeholder: Callable[[int], str]  # 1-based parameter position -> "?", "%s" or "$1"
    index_hint: Callable[[str], str] = lambda index: ""  # e.g. MySQL's FORCE INDEX (...)
    #: A primary or indexed key of text (byte order), e.g. 'TEXT COLLATE "C" NOT NULL'.
    key_text: str = "TEXT NOT NULL"
    #: A 64-bit integer, e.g. "BIGINT NOT NULL".
    integer: str = "INTEGER NOT NULL"
    #: Bytes of any length, e.g. "BYTEA NOT NULL", "LONGBLOB NOT NULL".
    blob: str = "BLOB NOT NULL"
    #: Appended to a CREATE TABLE, e.g. MySQL's " ENGINE=InnoDB".
    table_suffix: str = ""


@dataclass(eq=False)
class SqlPrimitives:
    """A SQL engine's worker primitives: one connection and how the engine runs it."""

    session: SqlSession
    dialect: Dialect
    hop: Hop = on_loop
    #: Awaited before every batch that reads, outside its marks (MySQL on Galera: one
    #: causal read, so the batch sees every write committed before it).
    barrier: Callable[[], Awaitable[None]] = no_barrier
    retry: Retry = no_retry
    #: A driver's row -> the tuple of its values.
    row: Callable[[Sequence[Any]], Any] = tuple
    #: Prepares statements on this connection once (a driver with server-side prepared
    #: statements): a workload's store calls it with every statement it will run, before
    #: its first batch's marks, so no operation's latency includes a prepare.
    prepare: Callable[[Sequence[str]], Awaitable[None]] | None = None
    #: The workload stores built over these primitives, by workload name (one each).
    built: dict[str, Any] = field(default_factory=dict)


# --- in process -----------------------------------------------------------------------------


@dataclass(eq=False)
class InProcess:
    """The memory engine's primitives: the workload holds its own reference store in this
    process (``built``, by workload name), with nothing in between."""

    built: dict[str, Any] = field(default_factory=dict)


#: What an engine's ``worker(i)`` returns; a plug-in engine may also return a workload's
#: store itself (it then runs that workload only).
Primitives = KvPrimitives | SqlPrimitives | InProcess


def build_once(primitives: Any, workload: str, build: Callable[[], T]) -> T:
    """The store ``workload`` built over ``primitives``, built on first use: a worker's
    store keeps state (a retry count, a table made on first use) across phases."""
    built: dict[str, Any] = primitives.built
    if workload not in built:
        built[workload] = build()
    return cast(T, built[workload])


__all__ += ["build_once"]
