"""YCSB's usertable in SQL, written once for every SQL engine.

As YCSB's JDBC binding: one ``usertable`` with the key (``ycsb_key``, primary key, compared
byte by byte so a scan's key order is the key/value engines') and one column per field
(``field0`` ...). Each YCSB operation is one statement in its own autocommit transaction:
a read one SELECT (all fields or one column), an update one UPDATE (one field or all), an
insert one INSERT, a scan one SELECT of a key range in key order, a read-modify-write a
SELECT then an UPDATE. The table is declared here (:func:`usertable`) and made by the
engine (``SqlPrimitives.create``) before the load's first batch, when the field count is
known: the engine writes its DDL, makes it in the place it has claimed and marked as its
own (a SQLite file it created, MySQL's database, PostgreSQL's schema) and records it there,
so a reset or ``delete_store`` drops it: never anything else.

Engines give only their primitives (:class:`asyncbench.store.SqlPrimitives`: a session,
their :class:`~asyncbench.store.Dialect`'s key and bytes column types and placeholders,
where a batch runs, the barrier and the retry of a write that lost a conflict); the
statements and the operations are written here.
"""

from __future__ import annotations

from collections.abc import Sequence
from time import perf_counter_ns
from typing import Any

from asyncbench.store import Column, Dialect, Retry, SqlPrimitives, SqlSession, Table
from asyncbench.workloads.ycsb.operations import ALL_FIELDS
from asyncbench.workloads.ycsb.record import decode, encode
from asyncbench.workloads.ycsb.store import Marks, Ops, Record, run_async

__all__ = ["KEY", "USERTABLE", "SqlTable", "SqlYcsbStore", "usertable"]



USERTABLE = "usertable"
KEY = "ycsb_key"
#: The longest key: YCSB's "user" and a number (its keys are ASCII).
KEY_CHARS = 255


def usertable(fieldcount: int) -> Table:
    """The usertable: the key (text, compared as bytes, as the key/value engines' scans)
    and ``fieldcount`` fields of bytes."""
    fields = tuple(Column(f"field{i}", "blob") for i in range(fieldcount))
    return Table(USERTABLE, (Column(KEY, "text", KEY_CHARS), *fields), key=KEY)


class _Statements:
    """Every statement of one field count: a read, an update and a scan per field and for
    all fields (key ALL_FIELDS), and the insert."""

    def __init__(self, dialect: Dialect, fieldcount: int) -> None:
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
    """A worker's YCSB store over its SQL primitives (``Workload.store`` builds it)."""

    def __init__(self, primitives: SqlPrimitives) -> None:
        self.primitives = primitives
        self.session, self.dialect, self.hop = primitives.session, primitives.dialect, primitives.hop
        self.barrier, self.retry = primitives.barrier, primitives.retry
        self._table: SqlTable | None = None

    async def _ensure(self, fieldcount: int) -> SqlTable:
        """The table (created if missing: the load's first batch of each worker)."""
        if self._table is None:
            # every worker's first batch asks: the engine makes it once, the others
            # find it (its own, recorded), client processes racing included
            await self.primitives.create(usertable(fieldcount))
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

    @staticmethod
    async def _records(table: SqlTable, names: Sequence[bytes]) -> list[bytes | None]:
        return [await table.read(name, ALL_FIELDS) for name in names]

    async def records(self, names: Sequence[bytes], fieldcount: int) -> list[bytes | None]:
        table = await self._ensure(fieldcount)
        result: list[bytes | None] = await self.hop(self._records, table, names)
        return result
