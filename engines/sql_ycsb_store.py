"""YCSB's usertable in SQL, written once for every SQL engine.

As YCSB's JDBC binding: one ``usertable`` with the key (``ycsb_key``, primary key, compared
byte by byte so a scan's key order is the key/value engines') and one column per field
(``field0`` ...). Each YCSB operation is one statement in its own autocommit transaction:
a read one SELECT (all fields or one column), an update one UPDATE (one field or all), an
insert one INSERT, a scan one SELECT of a key range in key order, a read-modify-write a
SELECT then an UPDATE. The table is created (``CREATE TABLE IF NOT EXISTS``) by the load's
first batch, when the field count is known; it lives where the engine's ``profiles``
lives, in the store the engine has claimed and marked as its own (a SQLite file it created,
MySQL's database and PostgreSQL's schema holding asyncbench's marker table), and it is
dropped where and when ``profiles`` is (a reset, ``delete_store``): never anywhere else.

Engines give only their column types and placeholders (:class:`UsertableSql`); the
statements, the operations and where a batch runs are the shared SQL store's
(:class:`~asyncbench.engines.sql_profile_store.SqlProfileStore`: its session, its hop).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from time import perf_counter_ns
from typing import Any, Protocol

import anyio

from asyncbench.workloads.ycsb.operations import ALL_FIELDS
from asyncbench.workloads.ycsb.record import decode, encode
from asyncbench.workloads.ycsb.store import Marks, Ops, Record, run_async

__all__ = ["KEY", "USERTABLE", "SqlTable", "SqlYcsbStore", "UsertableSql"]



class SqlSession(Protocol):
    """A worker's driver calls (``sql_profile_store.SqlSession``, which imports this module)."""

    async def fetch_one(self, statement: str, args: Sequence[Any]) -> Sequence[Any] | None: ...

    async def fetch_all(self, statement: str, args: Sequence[Any]) -> Sequence[Sequence[Any]]: ...

    async def execute(self, statement: str, args: Sequence[Any]) -> None: ...


USERTABLE = "usertable"
#: Attempts of the usertable's CREATE TABLE IF NOT EXISTS racing the other workers', and the
#: pause before attempt n (CREATE_PAUSE_S * n).
CREATE_ATTEMPTS = 10
CREATE_PAUSE_S = 0.05
KEY = "ycsb_key"
#: What a batch body is run by (the shared SQL store's hop: the event loop, a connection thread).
Hop = Callable[..., Any]


@dataclass(frozen=True)
class UsertableSql:
    """An engine's dialect for the usertable: key and field column types, placeholders."""

    key_type: str  # e.g. 'TEXT COLLATE "C"': byte order, as the KV engines' scans
    field_type: str  # bytes: BLOB, BYTEA, LONGBLOB
    placeholder: Callable[[int], str]
    table_suffix: str = ""  # e.g. MySQL's ENGINE=InnoDB

    def create(self, fieldcount: int) -> str:
        fields = ", ".join(f"field{i} {self.field_type}" for i in range(fieldcount))
        return f"CREATE TABLE IF NOT EXISTS {USERTABLE} ({KEY} {self.key_type} PRIMARY KEY, {fields}){self.table_suffix}"


class _Statements:
    """Every statement of one field count: a read, an update and a scan per field and for
    all fields (key ALL_FIELDS), and the insert."""

    def __init__(self, dialect: UsertableSql, fieldcount: int) -> None:
        p, self.n = dialect.placeholder, fieldcount
        self.read: dict[int, str] = {}
        self.update: dict[int, str] = {}
        self.scan: dict[int, str] = {}
        for field in (ALL_FIELDS, *range(fieldcount)):
            numbers = self.columns(field)
            cols = ", ".join(f"field{i}" for i in numbers)
            sets = ", ".join(f"field{f} = {p(i)}" for i, f in enumerate(numbers, 1))
            self.read[field] = f"SELECT {cols} FROM {USERTABLE} WHERE {KEY} = {p(1)}"
            self.update[field] = f"UPDATE {USERTABLE} SET {sets} WHERE {KEY} = {p(len(numbers) + 1)}"
            self.scan[field] = (
                f"SELECT {KEY}, {cols} FROM {USERTABLE} WHERE {KEY} >= {p(1)} AND {KEY} <= {p(2)} ORDER BY {KEY}"
            )
        cols = ", ".join(f"field{i}" for i in range(fieldcount))
        values = ", ".join(p(i) for i in range(1, fieldcount + 2))
        self.insert = f"INSERT INTO {USERTABLE} ({KEY}, {cols}) VALUES ({values})"

    def columns(self, field: int) -> list[int]:
        return list(range(self.n)) if field == ALL_FIELDS else [field]

    def texts(self) -> list[str]:
        """Every statement (what a driver that prepares statements prepares)."""
        return [*self.read.values(), *self.update.values(), *self.scan.values(), self.insert]


#: ``retry(exc, op, *args)``: the shared SQL store's retry of a write that failed with a
#: transient conflict (a Galera certification failure, error 1213), counted in its retries.
Retry = Callable[..., Awaitable[Any]]


class SqlTable:
    """The :class:`~asyncbench.workloads.ycsb.store.Table` calls over one SQL session (async)."""

    def __init__(self, session: SqlSession, sql: _Statements, retry: Retry) -> None:
        self.session, self.sql, self.retry = session, sql, retry

    async def _write(self, statement: str, args: Sequence[Any]) -> None:
        try:
            await self.session.execute(statement, args)
        except Exception as exc:  # re-raised unless the engine calls it transient
            await self.retry(exc, self.session.execute, statement, args)

    async def read(self, name: bytes, field: int) -> bytes | None:
        row = await self.session.fetch_one(self.sql.read[field], (name.decode(),))
        if row is None:
            return None
        return encode([bytes(v) for v in row])  # the fields read, encoded as a KV engine's value

    async def update(self, name: bytes, field: int, value: bytes) -> None:
        values = decode(value) if field == ALL_FIELDS else [value]
        await self._write(self.sql.update[field], (*values, name.decode()))

    async def insert(self, name: bytes, record: bytes) -> None:
        await self._write(self.sql.insert, (name.decode(), *decode(record)))

    async def scan(self, first: bytes, last: bytes, field: int) -> list[Record]:
        rows = await self.session.fetch_all(self.sql.scan[field], (first.decode(), last.decode()))
        return [(str(r[0]).encode(), encode([bytes(v) for v in r[1:]])) for r in rows]


class SqlYcsbStore:
    """A worker's YCSB store over its SQL session (``usertable()`` of the shared SQL store)."""

    def __init__(
        self,
        session: SqlSession,
        dialect: UsertableSql,
        hop: Hop,
        barrier: Callable[[], Awaitable[None]],
        retry: Retry,
    ) -> None:
        self.session, self.dialect, self.hop, self.barrier, self.retry = session, dialect, hop, barrier, retry
        self._table: SqlTable | None = None

    async def _ensure(self, fieldcount: int) -> SqlTable:
        """The table (created if missing: the load's first batch of each worker)."""
        if self._table is None:
            statement = self.dialect.create(fieldcount)
            for attempt in range(1, CREATE_ATTEMPTS + 1):
                try:
                    await self.hop(self.session.execute, statement, ())
                    break
                except Exception:
                    # Every worker's first batch creates it: PostgreSQL's concurrent CREATE
                    # TABLE IF NOT EXISTS can fail on its catalog's unique index, Galera's
                    # DDL (total order) can abort one node's; once made, IF NOT EXISTS passes.
                    if attempt == CREATE_ATTEMPTS:
                        raise
                    await anyio.sleep(CREATE_PAUSE_S * attempt)
            self._table = SqlTable(self.session, _Statements(self.dialect, fieldcount), self.retry)
        return self._table

    @staticmethod
    async def _load(table: SqlTable, records: Sequence[Record], marks: Marks) -> None:
        mark, clock = marks.append, perf_counter_ns
        mark(clock())
        for name, record in records:
            await table.insert(name, record)
            mark(clock())

    async def load(self, records: Sequence[Record], marks: Marks) -> None:
        if not records:
            return
        table = await self._ensure(len(decode(records[0][1])))
        await self.hop(self._load, table, records, marks)

    async def run(self, ops: Ops, marks: Marks) -> list[int]:
        table = await self._ensure(ops.fieldcount())
        await self.barrier()  # Galera: the batch sees every write committed before it (the load's)
        result: list[int] = await self.hop(run_async, table, ops, marks)
        return result


def usertable_of(
    store: Any,
    session: SqlSession,
    dialect: UsertableSql | None,
    hop: Hop,
    barrier: Callable[[], Awaitable[None]],
    retry: Retry,
) -> SqlYcsbStore:
    """The SQL store's YCSB store (an engine that gave no dialect cannot run YCSB)."""
    if dialect is None:
        raise RuntimeError(f"{type(store).__name__}: this SQL engine gives no usertable dialect")
    return SqlYcsbStore(session, dialect, hop, barrier, retry)


def drop_usertable() -> str:
    """The reset's (and delete_store's) statement, beside ``DROP TABLE ... profiles``."""
    return f"DROP TABLE IF EXISTS {USERTABLE}"


__all__ += ["drop_usertable", "usertable_of"]
