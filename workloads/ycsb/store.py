"""What an engine gives YCSB: a ``usertable`` of four calls, and the operations run over it once.

The workload builds its store over an engine's primitives (:mod:`.stores`), a
:class:`Table` of four calls (read a record, update a field or all, insert a record, scan
a key range in key order). Keys are the key names' ASCII bytes and
records travel in the canonical encoding (:func:`asyncbench.workloads.ycsb.record.encode`),
built once per operation by the compiled kernels: a key/value engine stores and returns
them as they are (:mod:`.kv_store`: a record is one value), a SQL engine maps them to and
from its columns (:mod:`.sql_store`). What each YCSB operation
does with those calls and what its checksum digest folds (the bytes a read returned, as
returned: :mod:`.checksum`) is written here once, as :func:`steps`: a generator that
yields each table call and receives its result, so the same operations run through a
synchronous table (a key/value batch body, in the engine's thread) and an asynchronous
one (a SQL session) by :func:`run_sync` and :func:`run_async`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Generator, Sequence
from time import perf_counter_ns
from typing import Any, Protocol

from asyncbench.workloads.ycsb import kernels
from asyncbench.workloads.ycsb.checksum import scan_digest
from asyncbench.workloads.ycsb.operations import ALL_FIELDS, INSERT, READ, READMODIFYWRITE, SCAN, UPDATE

__all__ = ["Call", "Marks", "Ops", "Record", "Table", "YcsbStore", "run_async", "run_sync", "steps"]

#: (key name, encoded record): a record as the load and the engines carry it
Record = tuple[bytes, bytes]
Marks = list[int]
#: a table call: (method name, arguments)
Call = tuple[str, tuple[Any, ...]]


class Table(Protocol):
    """A worker's usertable; each method is one engine call (a KV ``read``/``update`` of
    one field reads the record's one value). Methods are sync (KV) or async (SQL). Names
    are key names' ASCII bytes; records are in the canonical encoding."""

    def read(self, name: bytes, field: int) -> Any:
        """The fields read (``field``: one, or ALL_FIELDS) as an encoded record (of that one
        field, or of all), or None when absent."""
        ...

    def update(self, name: bytes, field: int, value: bytes) -> Any:
        """Overwrite field ``field`` of an existing record with ``value``, or (ALL_FIELDS)
        every field with those of the encoded record ``value``."""
        ...

    def insert(self, name: bytes, record: bytes) -> Any:
        """A new record (encoded, every field)."""
        ...

    def scan(self, first: bytes, last: bytes, field: int) -> Any:
        """(name, encoded record of the fields read) of every record with first <= name <=
        last, in key order."""
        ...


class YcsbStore(Protocol):
    """What a YCSB batch calls: an engine family's store over its :class:`Table`."""

    async def load(self, records: Sequence[Record], marks: Marks) -> None:
        """The load phase's inserts, one engine call per record, ``marks`` stamped after each."""
        ...

    async def run(self, ops: Ops, marks: Marks) -> list[int]:
        """A share of a mixed phase (:func:`run_sync` or :func:`run_async` over its table)."""
        ...

    async def records(self, names: Sequence[bytes], fieldcount: int) -> list[bytes | None]:
        """Every field of each named record, encoded as stored, or None where absent: what
        the recover phase compares byte for byte with the plan's versions after a crash
        (:mod:`.recovery`). Untimed, one engine call a record."""
        ...


class Ops(Protocol):
    """One worker's share of a mixed phase (``phases.Ops``): what :func:`steps` reads."""

    def rows(self) -> Sequence[tuple[int, int, int, int, int, int, int]]: ...

    def names(self) -> Sequence[bytes]:
        """The key name of each row's key, in row order (built in one kernel call)."""
        ...

    def record(self, tag: int) -> bytes: ...

    def value(self, tag: int, field: int) -> bytes: ...

    def fieldcount(self) -> int: ...

    def scan_bounds(self, start: bytes, length: int) -> tuple[bytes, bytes] | None: ...

    def written(self, name: bytes) -> bool: ...


def _written(ops: Ops, wf: int, tag: int) -> bytes:
    """What an update writes: the field's value, or (ALL_FIELDS) the whole record, encoded."""
    return ops.record(tag) if wf == ALL_FIELDS else ops.value(tag, wf)


def _stable(ops: Ops, found: list[Record]) -> list[Record]:
    """The scanned records the scan rule folds: those no operation of the phase writes."""
    return [(n, r) for n, r in found if not ops.written(n)]


def steps(ops: Ops, marks: Marks) -> Generator[Call, Any, list[int]]:
    """Each operation's table calls (yielded; the result is sent back) and digest, in order.

    ``marks`` gets the batch's start stamp, then one after each operation (the latency
    recorder's protocol), stamped where the calls run. :func:`run_sync` is the same loop
    without the generator (kept in step with this one; tests/test_ycsb_run.py checks that
    the key/value and SQL engines give one checksum on every kind).
    """
    mark, clock, digest = marks.append, perf_counter_ns, kernels.digest
    out: list[int] = []
    rows, names = ops.rows(), ops.names()
    mark(clock())
    for (index, kind, _, rf, wf, length, tag), name in zip(rows, names, strict=True):
        if kind == READ:
            out.append(digest(index, kind, name, (yield ("read", (name, rf)))))
        elif kind == UPDATE:
            yield ("update", (name, wf, _written(ops, wf, tag)))
            out.append(digest(index, kind, name, None))
        elif kind == INSERT:
            yield ("insert", (name, ops.record(tag)))
            out.append(digest(index, kind, name, None))
        elif kind == READMODIFYWRITE:
            read = yield ("read", (name, rf))
            yield ("update", (name, wf, _written(ops, wf, tag)))
            out.append(digest(index, kind, name, read))
        elif kind == SCAN:
            bounds = ops.scan_bounds(name, length)
            found: list[Record] = [] if bounds is None else (yield ("scan", (*bounds, rf)))
            out.append(scan_digest(index, kind, name, _stable(ops, found)))
        else:
            raise ValueError(f"operation {index}: unknown kind {kind}")
        mark(clock())
    return out


def run_sync(table: Any, ops: Ops, marks: Marks) -> list[int]:
    """The operations through a synchronous table (a key/value batch body): :func:`steps`
    written as a plain loop, because a generator's send and the call by name cost about
    as much as a memory engine's whole read (issue 53: the harness at its floor)."""
    mark, clock, digest = marks.append, perf_counter_ns, kernels.digest
    read, update, insert, scan = table.read, table.update, table.insert, table.scan
    out: list[int] = []
    add = out.append
    rows, names = ops.rows(), ops.names()
    mark(clock())
    for (index, kind, _, rf, wf, length, tag), name in zip(rows, names, strict=True):
        if kind == READ:
            add(digest(index, kind, name, read(name, rf)))
        elif kind == UPDATE:
            update(name, wf, _written(ops, wf, tag))
            add(digest(index, kind, name, None))
        elif kind == INSERT:
            insert(name, ops.record(tag))
            add(digest(index, kind, name, None))
        elif kind == READMODIFYWRITE:
            got = read(name, rf)
            update(name, wf, _written(ops, wf, tag))
            add(digest(index, kind, name, got))
        elif kind == SCAN:
            bounds = ops.scan_bounds(name, length)
            found: list[Record] = [] if bounds is None else scan(*bounds, rf)
            add(scan_digest(index, kind, name, _stable(ops, found)))
        else:
            raise ValueError(f"operation {index}: unknown kind {kind}")
        mark(clock())
    return out


async def run_async(table: Any, ops: Ops, marks: Marks) -> list[int]:
    """The operations through an asynchronous table (a SQL session)."""
    gen = steps(ops, marks)
    try:
        method, args = next(gen)
        while True:
            call: Callable[..., Awaitable[Any]] = getattr(table, method)
            method, args = gen.send(await call(*args))
    except StopIteration as done:
        result: list[int] = done.value
        return result
