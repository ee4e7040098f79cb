"""YCSB's ``usertable`` record: ``fieldcount`` fields field0.. of ``fieldlength`` bytes, seeded.

YCSB fills fields with random printable bytes and never checks them; here every value is
a function of the plan's seed and a 64-bit *tag* (the record's key number for a loaded or
inserted record, a drawn number for an update), so a read's result is known in advance and
its checksum is exact. A value is a window of a seeded pool of printable ASCII (as YCSB's
``RandomByteIterator``, characters ' '..'~') at an offset hashed from (tag, field): cheap
(one slice) yet different per record and field.

:func:`encode` / :func:`decode` are the canonical encoding for key/value engines: the
record as one value, fields in index order, each length-prefixed.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from asyncbench.workloads.common import draws
from asyncbench.workloads.common.fnv import fnvhash64, fnvhash64_array

_POOL_WINDOWS = 1 << 16
_M64 = (1 << 64) - 1
_GOLDEN = 0x9E3779B97F4A7C15


def field_names(fieldcount: int, prefix: str = "field") -> list[str]:
    return [f"{prefix}{i}" for i in range(fieldcount)]


class Values:
    """The field values of a plan: ``value(tag, field)`` is fixed by the seed."""

    __slots__ = ("fieldcount", "fieldlength", "pool")

    def __init__(self, seed: int, fieldcount: int, fieldlength: int) -> None:
        if fieldcount < 1:
            raise ValueError(f"fieldcount must be >= 1, got {fieldcount}")
        if fieldlength < 1:
            raise ValueError(f"fieldlength must be >= 1, got {fieldlength}")
        self.fieldcount = fieldcount
        self.fieldlength = fieldlength
        raw = draws.Stream(seed, draws.POOL).raw((_POOL_WINDOWS + fieldlength + 7) // 8 + 1)
        printable = np.frombuffer(raw.tobytes(), dtype=np.uint8) % 95 + 32
        self.pool = printable[: _POOL_WINDOWS + fieldlength].tobytes()

    def value(self, tag: int, field: int) -> bytes:
        offset = fnvhash64((tag * _GOLDEN + field) & _M64) % _POOL_WINDOWS
        return self.pool[offset : offset + self.fieldlength]

    def record(self, tag: int) -> list[bytes]:
        """All fields of the record written with ``tag`` (loaded/inserted: tag = key number)."""
        return [self.value(tag, f) for f in range(self.fieldcount)]

    def records(self, tags: npt.NDArray[np.uint64] | npt.NDArray[np.int64]) -> list[list[bytes]]:
        """:meth:`record` for many tags at once: the offsets hashed with numpy (a load phase
        builds millions of records; per-field Python hashing would cost microseconds each)."""
        t = np.asarray(tags).astype(np.uint64)
        fields = np.arange(self.fieldcount, dtype=np.uint64)
        with np.errstate(over="ignore"):
            mixed = t[:, None] * np.uint64(_GOLDEN) + fields[None, :]
        offsets = (fnvhash64_array(mixed) % np.uint64(_POOL_WINDOWS)).tolist()
        pool, n = self.pool, self.fieldlength
        return [[pool[o : o + n] for o in row] for row in offsets]


_COUNT = struct.Struct("<H")
_LEN = struct.Struct("<I")


def encode(fields: Sequence[bytes]) -> bytes:
    """The canonical record value: field count (u16), then each field's length (u32) and bytes.

    Field names are implied by position (field0..), so renaming the prefix changes no value.
    """
    parts = [_COUNT.pack(len(fields))]
    for value in fields:
        parts.append(_LEN.pack(len(value)))
        parts.append(value)
    return b"".join(parts)


def decode(data: bytes) -> list[bytes]:
    """The fields of :func:`encode`'s output; ValueError on a truncated or padded value."""
    if len(data) < _COUNT.size:
        raise ValueError(f"a record value of {len(data)} bytes is shorter than its header")
    (count,) = _COUNT.unpack_from(data, 0)
    pos = _COUNT.size
    fields = []
    for i in range(count):
        if pos + _LEN.size > len(data):
            raise ValueError(f"record value truncated at field {i} of {count}")
        (n,) = _LEN.unpack_from(data, pos)
        pos += _LEN.size
        if pos + n > len(data):
            raise ValueError(f"record value truncated inside field {i} of {count}")
        fields.append(data[pos : pos + n])
        pos += n
    if pos != len(data):
        raise ValueError(f"record value has {len(data) - pos} bytes after its {count} fields")
    return fields
