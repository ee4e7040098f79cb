"""What an engine gives YCSB: a ``usertable`` of five calls, and the operations run over it once.

An engine's worker object (the profile store an engine's ``worker(i)`` returns) gives its
YCSB table with ``usertable()``: :class:`Table` (read a record's fields, update some
fields, insert a record, scan a key range in key order). The key/value engines share one
(``engines/kv_ycsb_store.py``: a record is one value), the SQL engines another
(``engines/sql_ycsb_store.py``: a ``usertable`` of their own). What each YCSB operation
does with those calls and what its checksum digest folds is written here once, as
:func:`steps`: a generator that yields each table call and receives its result, so the
same operations run through a synchronous table (a key/value batch body, in the engine's
thread) and an asynchronous one (a SQL session) by :func:`run_sync` and :func:`run_async`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Generator, Sequence
from time import perf_counter_ns
from typing import Any, Protocol

from asyncbench.workloads.ycsb.checksum import op_digest, scan_digest
from asyncbench.workloads.ycsb.operations import ALL_FIELDS, INSERT, READ, READMODIFYWRITE, SCAN, UPDATE

__all__ = ["Call", "Fields", "HasUsertable", "Marks", "Ops", "Table", "YcsbStore", "run_async", "run_sync", "steps"]

#: (field number, value) pairs in field order
Fields = list[tuple[int, bytes]]
Marks = list[int]
#: a table call: (method name, arguments)
Call = tuple[str, tuple[Any, ...]]


class Table(Protocol):
    """A worker's usertable; each method is one engine call (a KV ``read``/``update`` of
    one field reads the record's one value). Methods are sync (KV) or async (SQL)."""

    def read(self, name: str, field: int) -> Any:
        """The record's fields (``field``: one, or ALL_FIELDS), or None when absent."""
        ...

    def update(self, name: str, fields: Fields) -> Any:
        """Overwrite these fields of an existing record."""
        ...

    def insert(self, name: str, values: list[bytes]) -> Any:
        """A new record with every field."""
        ...

    def scan(self, first: str, last: str, field: int) -> Any:
        """(name, fields) of every record with first <= name <= last, in key order."""
        ...



class YcsbStore(Protocol):
    """What a YCSB batch calls: an engine family's store over its :class:`Table`."""

    async def load(self, records: Sequence[tuple[str, list[bytes]]], marks: Marks) -> None:
        """The load phase's inserts, one engine call per record, ``marks`` stamped after each."""
        ...

    async def run(self, ops: Ops, marks: Marks) -> list[int]:
        """A share of a mixed phase (:func:`run_sync` or :func:`run_async` over its table)."""
        ...


class HasUsertable(Protocol):
    """An engine's worker object that can run YCSB."""

    def usertable(self) -> YcsbStore: ...


class Ops(Protocol):
    """One worker's share of a mixed phase (``phases.Ops``): what :func:`steps` reads."""

    def rows(self) -> Sequence[tuple[int, int, int, int, int, int, int]]: ...

    def name(self, key: int) -> str: ...

    def value(self, tag: int, field: int) -> bytes: ...

    def fieldcount(self) -> int: ...

    def scan_bounds(self, start: str, length: int) -> tuple[str, str] | None: ...

    def written(self, name: str) -> bool: ...


def _writes(ops: Ops, field: int, tag: int) -> Fields:
    fields = range(ops.fieldcount()) if field == ALL_FIELDS else (field,)
    return [(f, ops.value(tag, f)) for f in fields]


def steps(ops: Ops, marks: Marks) -> Generator[Call, Any, list[int]]:
    """Each operation's table calls (yielded; the result is sent back) and digest, in order.

    ``marks`` gets the batch's start stamp, then one after each operation (the latency
    recorder's protocol), stamped where the calls run.
    """
    mark, clock = marks.append, perf_counter_ns
    out: list[int] = []
    mark(clock())
    for index, kind, key, rf, wf, length, tag in ops.rows():
        name = ops.name(key)
        if kind == READ:
            out.append(op_digest(index, kind, name, (yield ("read", (name, rf)))))
        elif kind == UPDATE:
            yield ("update", (name, _writes(ops, wf, tag)))
            out.append(op_digest(index, kind, name))
        elif kind == INSERT:
            yield ("insert", (name, [ops.value(tag, f) for f in range(ops.fieldcount())]))
            out.append(op_digest(index, kind, name))
        elif kind == READMODIFYWRITE:
            read = yield ("read", (name, rf))
            yield ("update", (name, _writes(ops, wf, tag)))
            out.append(op_digest(index, kind, name, read))
        elif kind == SCAN:
            bounds = ops.scan_bounds(name, length)
            found: list[tuple[str, Fields]] = [] if bounds is None else (yield ("scan", (*bounds, rf)))
            stable = [(n, f) for n, f in found if not ops.written(n)]
            out.append(scan_digest(index, kind, name, stable))
        else:
            raise ValueError(f"operation {index}: unknown kind {kind}")
        mark(clock())
    return out


def run_sync(table: Any, ops: Ops, marks: Marks) -> list[int]:
    """The operations through a synchronous table (a key/value batch body)."""
    gen = steps(ops, marks)
    try:
        method, args = next(gen)
        while True:
            method, args = gen.send(getattr(table, method)(*args))
    except StopIteration as done:
        result: list[int] = done.value
        return result


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
