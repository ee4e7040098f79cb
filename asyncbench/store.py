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

import re
from collections.abc import Awaitable, Callable, Coroutine, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar, cast

__all__ = [
    "COLUMN_KINDS",
    "Column",
    "Dialect",
    "Index",
    "Table",
    "Hop",
    "InProcess",
    "KvPrimitives",
    "KvStore",
    "Place",
    "Placement",
    "Primitives",
    "Retry",
    "STORE_NAME",
    "SqlPrimitives",
    "SqlSession",
    "no_barrier",
    "no_retry",
    "on_loop",
    "run_to_completion",
]

T = TypeVar("T")

#: A key/value store's name (``Workload.kv_stores``): one plain path component, since a
#: file engine keeps each store as a file or folder of that name in the data directory.
STORE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")


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


# --- a workload's table, declared once; each SQL engine writes it in its own flavour ----


@dataclass(frozen=True)
class Column:
    """One column of a workload's table, every one NOT NULL. ``kind``: "integer" (64
    bits), "text" (compared byte by byte, as a key/value engine's scan; ``max_chars`` is
    the longest value, for an engine that bounds its text columns) or "blob" (bytes)."""

    name: str
    kind: str
    max_chars: int = 255

    def __post_init__(self) -> None:
        if self.kind not in COLUMN_KINDS:
            raise ValueError(f"column {self.name}: kind must be one of {', '.join(COLUMN_KINDS)}, not {self.kind!r}")


COLUMN_KINDS = ("integer", "text", "blob")
#: A table's, column's or index's name: a plain identifier, the same in every engine.
_IDENT = re.compile(r"[a-z_][a-z0-9_]{0,62}")
#: An index's column: its name, maybe sorted descending.
_INDEX_COLUMN = re.compile(r"[a-z_][a-z0-9_]{0,62}( DESC)?")


@dataclass(frozen=True)
class Index:
    """A secondary index: its name (what an index hint names), its columns in order (a
    column followed by `` DESC`` sorts descending) and whether it is unique."""

    name: str
    columns: tuple[str, ...]
    unique: bool = False


@dataclass(frozen=True)
class Table:
    """A workload's table as it declares it to a SQL engine (``SqlPrimitives.create``):
    the engine writes the DDL in its flavour, makes it in the place it owns and records
    it there as its own, so its reset drops this table, and nothing it did not make."""

    name: str
    columns: tuple[Column, ...]
    #: The primary key's column.
    key: str
    indexes: tuple[Index, ...] = ()

    def __post_init__(self) -> None:
        # every name goes into DDL, DROP and statements as it is: plain identifiers only
        idents = [self.name, *(c.name for c in self.columns), *(i.name for i in self.indexes)]
        bad = [n for n in idents if not _IDENT.fullmatch(n)]
        bad += [c for i in self.indexes for c in i.columns if not _INDEX_COLUMN.fullmatch(c)]
        if bad:
            raise ValueError(f"table {self.name!r}: not plain SQL identifiers: {bad}")
        names = [c.name for c in self.columns]
        listed = [self.key, *(col.split()[0] for index in self.indexes for col in index.columns)]
        unknown = sorted({n for n in listed if n not in names})
        if unknown or len(set(names)) != len(names):
            raise ValueError(f"table {self.name}: columns {names} must be distinct and hold {unknown}")


@dataclass(frozen=True)
class Dialect:
    """What differs between SQL engines in the statements a workload writes and in the
    DDL an engine writes from a :class:`Table`: placeholders, index hints, column types
    (without NOT NULL: :meth:`create` adds it), a CREATE TABLE's suffix, and whether
    secondary indexes go inside the CREATE TABLE. Text compares byte by byte."""

    placeholder: Callable[[int], str]  # 1-based parameter position -> "?", "%s" or "$1"
    index_hint: Callable[[str], str] = lambda index: ""  # e.g. MySQL's FORCE INDEX (...)
    #: A 64-bit integer, e.g. "BIGINT".
    integer: str = "INTEGER"
    #: Text of at most n characters, byte order, e.g. 'TEXT COLLATE "C"', "VARCHAR(n)".
    text: Callable[[int], str] = lambda n: "TEXT"
    #: Bytes of any length, e.g. "BYTEA", "LONGBLOB".
    blob: str = "BLOB"
    #: Appended to a CREATE TABLE, e.g. MySQL's " ENGINE=InnoDB".
    table_suffix: str = ""
    #: Secondary indexes as ``[UNIQUE] KEY name (...)`` inside the CREATE TABLE (MySQL:
    #: one atomic statement) instead of CREATE INDEX statements after it.
    inline_indexes: bool = False

    def column_type(self, column: Column) -> str:
        if column.kind == "integer":
            return self.integer
        if column.kind == "text":
            return self.text(column.max_chars)
        return self.blob

    def create(self, table: Table) -> list[str]:
        """The DDL that makes ``table`` and its indexes, each statement idempotent."""
        lines = [f"{c.name} {self.column_type(c)} NOT NULL" for c in table.columns]
        lines.append(f"PRIMARY KEY ({table.key})")
        after = []
        for index in table.indexes:
            cols = ", ".join(index.columns)
            if self.inline_indexes:
                lines.append(f"{'UNIQUE ' if index.unique else ''}KEY {index.name} ({cols})")
            else:
                unique = "UNIQUE " if index.unique else ""
                after.append(f"CREATE {unique}INDEX IF NOT EXISTS {index.name} ON {table.name} ({cols})")
        body = ",\n    ".join(lines)
        return [f"CREATE TABLE IF NOT EXISTS {table.name} (\n    {body}\n){self.table_suffix}", *after]


async def _execute_ddl(session: SqlSession, dialect: Dialect, table: Table) -> None:
    for statement in dialect.create(table):
        await session.execute(statement, ())


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
    #: Makes a workload's table if it is not there yet (idempotent, safe to call from
    #: every worker at once), as the engine's own: a server engine records it in its
    #: claimed place, so a reset drops it and nothing it did not make. None: the
    #: engine's whole database is its own (a plug-in's), and the table's DDL
    #: (``dialect.create``) simply runs on the session.
    make_table: Callable[[Table], Awaitable[None]] | None = None
    #: The workload stores built over these primitives, by workload name (one each).
    built: dict[str, Any] = field(default_factory=dict)

    async def create(self, table: Table) -> None:
        """Make ``table`` (a workload's store calls it before its first batch's marks)."""
        if self.make_table is not None:
            await self.make_table(table)
        else:  # where the engine runs a batch: a synchronous session only inside its hop
            await self.hop(_execute_ddl, self.session, self.dialect, table)


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
