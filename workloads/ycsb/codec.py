"""The canonical record encoding and the seeded records, defined in pure Python.

A record value, for the key/value engines and for every checksum alike: the field count
(u16), then each field's length (u32) and bytes, in field order. ``py_records``,
``py_value`` and ``py_splice`` are the executable definitions the compiled kernels
(the C source beside them) are tested against and their fallback; :mod:`.kernels` picks one or the
other. This module never imports the kernels (no import cycle).

A field value is a window of the plan's printable pool at an offset hashed from (tag,
field): ``fnvhash64((tag * GOLDEN + field) mod 2**64) mod POOL_WINDOWS``.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Sequence

from asyncbench.workloads.common.fnv import fnvhash64

POOL_WINDOWS = 1 << 16
GOLDEN = 0x9E3779B97F4A7C15
M64 = (1 << 64) - 1

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


def spans(data: bytes) -> list[tuple[int, int]]:
    """(start, end) of each field's bytes in an encoded record; ValueError on a truncated or
    padded value."""
    if len(data) < _COUNT.size:
        raise ValueError(f"a record value of {len(data)} bytes is shorter than its header")
    (count,) = _COUNT.unpack_from(data, 0)
    pos = _COUNT.size
    out = []
    for i in range(count):
        if pos + _LEN.size > len(data):
            raise ValueError(f"record value truncated at field {i} of {count}")
        (n,) = _LEN.unpack_from(data, pos)
        pos += _LEN.size
        if pos + n > len(data):
            raise ValueError(f"record value truncated inside field {i} of {count}")
        out.append((pos, pos + n))
        pos += n
    if pos != len(data):
        raise ValueError(f"record value has {len(data) - pos} bytes after its {count} fields")
    return out


def decode(data: bytes) -> list[bytes]:
    """The fields of :func:`encode`'s output; ValueError on a truncated or padded value."""
    return [data[a:b] for a, b in spans(data)]


def field_record(data: bytes, field: int) -> bytes:
    """The one-field record of field ``field`` of an encoded record: what a read of one field
    returns to the checksum (a SQL engine's one column, encoded alike)."""
    a, b = spans(data)[field]
    return encode([data[a:b]])


def _offset(tag: int, field: int) -> int:
    return fnvhash64((tag * GOLDEN + field) & M64) % POOL_WINDOWS


def py_value(pool: bytes, tag: int, fieldcount: int, fieldlength: int, field: int) -> bytes:
    """Field ``field`` of the record written with ``tag``."""
    offset = _offset(tag & M64, field)
    return pool[offset : offset + fieldlength]


def py_records(pool: bytes, tags: Iterable[int], fieldcount: int, fieldlength: int) -> list[bytes]:
    """The encoded record written with each tag (loaded/inserted: tag = key number)."""
    return [
        encode([py_value(pool, tag, fieldcount, fieldlength, f) for f in range(fieldcount)]) for tag in tags
    ]


def py_splice(record: bytes, field: int, value: bytes) -> bytes:
    """The encoded record with field ``field`` replaced by ``value`` (a one-field update)."""
    found = spans(record)
    if not 0 <= field < len(found):
        raise ValueError(f"field {field} is not in a record of {len(found)} fields")
    a, b = found[field]
    return record[: a - _LEN.size] + _LEN.pack(len(value)) + value + record[b:]
