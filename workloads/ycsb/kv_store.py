"""YCSB's usertable over one ordered key/value store, written once for every KV engine.

The key is the record's key name (``user...``, ASCII), the value the whole record in the
canonical encoding (:func:`asyncbench.workloads.ycsb.record.encode`), stored as the
workload built it and returned to the checksum as the engine gave it (a read of every
field is the value itself: nothing decoded). Each YCSB operation
is engine calls on that one store, one per record touched, no multi-get and no batch: a
read is one get; an update of one field or all is a get and a put (a record is one
value); an insert one put; a scan one key-range scan then a get per record. A batch body
is synchronous and handed whole to the engine's :class:`~asyncbench.store.Placement`
(a RocksDB worker thread, the LSM's event loop), as the profile store's are. The records
live in the engine's store named ``usertable`` (``KvPrimitives.store``).
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterable, Sequence
from time import perf_counter_ns

from asyncbench.store import KvStore, Placement
from asyncbench.workloads.ycsb.codec import field_record
from asyncbench.workloads.ycsb.kernels import splice
from asyncbench.workloads.ycsb.operations import ALL_FIELDS
from asyncbench.workloads.ycsb.store import Marks, Ops, Record, run_sync

__all__ = ["DictKv", "KvTable", "KvYcsbStore"]


class KvTable:
    """The :class:`~asyncbench.workloads.ycsb.store.Table` calls over one KV store (synchronous)."""

    __slots__ = ("kv",)

    def __init__(self, kv: KvStore) -> None:
        self.kv = kv

    def read(self, name: bytes, field: int) -> bytes | None:
        raw = self.kv.get(name)
        if raw is None or field == ALL_FIELDS:
            return raw
        return field_record(raw, field)

    def update(self, name: bytes, field: int, value: bytes) -> None:
        raw = self.kv.get(name)
        if raw is None:
            raise KeyError(f"update of {name.decode()}: no such record")
        self.kv.put(name, value if field == ALL_FIELDS else splice(raw, field, value))

    def insert(self, name: bytes, record: bytes) -> None:
        self.kv.put(name, record)

    def scan(self, first: bytes, last: bytes, field: int) -> list[Record]:
        get = self.kv.get
        out = []
        for key in self.kv.scan(first, last, 1 << 62):
            raw = get(key)
            if raw is not None:
                out.append((key, raw if field == ALL_FIELDS else field_record(raw, field)))
        return out


class KvYcsbStore:
    """A worker's YCSB store over a KV engine's store (``Workload.store`` builds it)."""

    def __init__(self, kv: KvStore, place: Placement) -> None:
        self.table = KvTable(kv)
        self.place = place

    def _load(self, records: Sequence[Record], marks: Marks) -> None:
        put = self.table.kv.put
        mark, clock = marks.append, perf_counter_ns
        mark(clock())
        for name, record in records:
            put(name, record)
            mark(clock())

    async def load(self, records: Sequence[Record], marks: Marks) -> None:
        await self.place.writes(self._load, records, marks)

    async def run(self, ops: Ops, marks: Marks) -> list[int]:
        result: list[int] = await self.place.writes(run_sync, self.table, ops, marks)
        return result

    def _records(self, names: Sequence[bytes]) -> list[bytes | None]:
        get = self.table.kv.get
        return [get(name) for name in names]

    async def records(self, names: Sequence[bytes], fieldcount: int) -> list[bytes | None]:
        result: list[bytes | None] = await self.place.reads(self._records, names)
        return result


class DictKv:
    """An ordered KV store in a dict with a lazily sorted key list: the memory engine's
    usertable (a :class:`KvStore`)."""

    __slots__ = ("data", "get", "_sorted")

    def __init__(self) -> None:
        self.data: dict[bytes, bytes] = {}
        self._sorted: list[bytes] | None = []
        #: the dict's own get (``get(key)``: the value or None): no Python frame per read
        self.get: Callable[[bytes], bytes | None] = self.data.get

    def put(self, key: bytes, value: bytes) -> None:
        if key not in self.data:
            self._sorted = None
        self.data[key] = value

    def delete(self, key: bytes) -> None:
        if self.data.pop(key, None) is not None:
            self._sorted = None

    def scan(self, start: bytes, last: bytes | None, limit: int) -> list[bytes]:
        if self._sorted is None:
            self._sorted = sorted(self.data)
        keys = self._sorted
        i = bisect_left(keys, start)
        j = len(keys) if last is None else bisect_right(keys, last)
        return keys[i : min(j, i + limit)]

    def items(self) -> Iterable[tuple[bytes, bytes]]:
        return sorted(self.data.items())

    def count(self) -> int:
        return len(self.data)
