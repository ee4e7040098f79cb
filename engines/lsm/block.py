"""The data block: a run of sorted entries, the unit a segment reads, caches, checksums
and copies.

Layout (all integers little-endian)::

    u16 n | u16 key width (0 = keys of mixed length)
    width > 0:  n x u32 value end offsets | n x u8 flags | n x width key bytes | values
    width = 0:  n x u32 key end offsets | n x u32 value end offsets | n x u8 flags
                | keys | values

Flags: 1 = tombstone. Why two layouts: keys of one width (every key of the workload's
trees) need no offset table, and a point lookup then searches the key area in place with
one C-level ``find`` (``SegmentReader``'s lookup) instead of decoding the block. Where
the parts of a block start is computed in one place, :func:`shape`. A block's checksum lives in the
segment index and is tested in one place, ``SegmentReader.read_block``.
"""

from __future__ import annotations

import mmap
import struct
from collections.abc import Sequence
from itertools import accumulate
from typing import Any

__all__ = [
    "TOMBSTONE",
    "Decoded",
    "Shape",
    "decode",
    "decode_keys",
    "encode",
    "encode_many",
    "last_key",
    "shape",
    "shape_at",
]

#: What a lookup returns for a key a block holds as deleted.
TOMBSTONE: Any = object()

_HEADER = struct.Struct("<HH")
_U32 = struct.Struct("<I")
_U32X2 = struct.Struct("<II")
_u32_structs: dict[int, struct.Struct] = {}

#: (keys, value end offsets, values start, flags start): a block's keys decoded, the
#: positions absolute in the buffer they were decoded from.
Decoded = tuple[list[bytes], tuple[int, ...], int, int]


#: Where the parts of a block start, relative to the block: (n, width, key ends, value
#: ends, flags, keys); key ends is 0 in a fixed-width block, which has none. A plain
#: tuple, not a NamedTuple: lookups unpack it, and unpacking a tuple subclass is
#: several times slower.
Shape = tuple[int, int, int, int, int, int]


def shape(n: int, width: int) -> Shape:
    """The one place that knows the block layout's offsets."""
    if width:
        return (n, width, 0, 4, 4 + 4 * n, 4 + 5 * n)
    return (n, width, 4, 4 + 4 * n, 4 + 8 * n, 4 + 9 * n)


_shapes: dict[bytes, Shape] = {}


def shape_at(buf: Any, off: int = 0) -> Shape:
    """The shape of the block at ``off`` of ``buf`` (bytes or a mapping), memoized by
    header (blocks of a segment share a few shapes)."""
    head = buf[off : off + 4]
    s = _shapes.get(head)
    if s is None:
        s = shape(*_HEADER.unpack(head))
        if len(_shapes) < 65536:
            _shapes[head] = s
    return s


def _u32s(n: int) -> struct.Struct:
    s = _u32_structs.get(n)
    if s is None:
        s = _u32_structs[n] = struct.Struct(f"<{n}I")
    return s


def encode(keys: Sequence[bytes], values: Sequence[bytes | None]) -> bytes:
    """One block of sorted ``keys``; ``None`` values are tombstones."""
    n = len(keys)
    vals = [b"" if v is None else v for v in values]
    width = len(keys[0])
    vends = accumulate(map(len, vals))
    if 0 < width < 0x10000 and len(set(map(len, keys))) == 1:
        head = _HEADER.pack(n, width) + _u32s(n).pack(*vends)
    else:
        head = _HEADER.pack(n, 0) + _u32s(2 * n).pack(*accumulate(map(len, keys)), *vends)
    flags = bytes([v is None for v in values])
    return b"".join((head, flags, *keys, *vals))


def encode_many(keys: list[bytes], values: list[bytes | None], step: int) -> list[bytes]:
    """``[encode(keys[i:i+step], values[i:i+step]) for i in range(0, len(keys), step)]``,
    byte for byte. A run of one key width with only empty values (the index trees: most
    of what a stabilization writes) shares one block header, so a block is one ``join``
    of that header and its keys: about twice as fast as encoding it. Other runs go
    block by block through :func:`encode` (bulk variants measured no faster there: the
    values' memory traffic dominates)."""
    n = len(keys)
    width = len(keys[0]) if n else 0
    if n < step or not 0 < width < 0x10000 or None in values or any(values) or len(set(map(len, keys))) != 1:
        return [encode(keys[i : i + step], values[i : i + step]) for i in range(0, n, step)]
    out: list[bytes] = []
    append, join = out.append, b"".join
    full = _HEADER.pack(step, width) + bytes(5 * step)  # n, width, value ends 0, flags 0
    for a in range(0, n - n % step, step):
        append(join((full, *keys[a : a + step])))
    if n % step:
        m = n % step
        append(join((_HEADER.pack(m, width), bytes(5 * m), *keys[n - m :])))
    return out


def _fixed_keys(n: int, width: int) -> struct.Struct:
    """The struct that cuts ``n`` keys of ``width`` bytes out of a key area in one C call
    (several times faster than slicing key by key: a range scan over cold blocks, the
    created-at phases, decodes about four blocks per query)."""
    s = _key_structs.get((n, width))
    if s is None:
        s = struct.Struct(f"{width}s" * n)
        if len(_key_structs) < 4096:
            _key_structs[(n, width)] = s
    return s


_key_structs: dict[tuple[int, int], struct.Struct] = {}


def decode_keys(buf: Any, off: int = 0, shp: Shape | None = None) -> Decoded:
    """The keys of the block at ``off`` of ``buf`` (whose shape may be known), with
    where its values and flags are."""
    n, width, kx, ve, fl, ks = shp or shape_at(buf, off)
    kb = off + ks
    if width:
        return (
            list(_fixed_keys(n, width).unpack_from(buf, kb)),
            _u32s(n).unpack_from(buf, off + ve),
            kb + n * width,
            off + fl,
        )
    kends = _u32s(n).unpack_from(buf, off + kx)
    keys = [buf[kb + a : kb + b] for a, b in zip((0, *kends[: n - 1]), kends, strict=True)]
    return keys, _u32s(n).unpack_from(buf, off + ve), kb + kends[n - 1], off + fl


def decode(buf: Any, off: int = 0) -> tuple[list[bytes], list[bytes | None]]:
    """Keys and values of a block (``None`` = tombstone)."""
    keys, vends, vb, fb = decode_keys(buf, off)
    n = len(keys)
    values: list[bytes | None] = [
        buf[vb + a : vb + b] for a, b in zip((0, *vends[: n - 1]), vends, strict=True)
    ]
    flags = buf[fb : fb + n]
    if any(flags):
        for i, f in enumerate(flags):
            if f:
                values[i] = None
    return keys, values


def last_key(buf: bytes | mmap.mmap, off: int = 0) -> bytes:
    n, width, kx, _ve, _fl, ks = shape_at(buf, off)
    kb = off + ks
    if width:
        return buf[kb + (n - 1) * width : kb + n * width]
    start, end = (
        _U32X2.unpack_from(buf, off + kx + 4 * (n - 2)) if n > 1 else (0, _U32.unpack_from(buf, off + kx)[0])
    )
    return buf[kb + start : kb + end]
