"""The one import point of the compiled flush/merge writer (``_native``, built from ``csrc/``).

Why compiled: a stabilization is memtable flushes and merges, and profiled in Python
about 40 % of it was reading memtables in key order and 40 % encoding blocks. The C
loop sorts, merges, encodes, checksums and writes with the GIL released, so a flush or
merge run in a worker thread takes the second core while the event loop serves reads.
It writes exactly the bytes the Python path writes for the same entries
(``tests/test_lsm_native.py``).

Without a compiler the package still installs (the extension is optional) and the
engine uses the pure-Python path (``merging_iterator.merge`` into
``SegmentWriter.add``); ``ACCELERATED`` says which, and ``FALLBACK_REASON`` why.
``KeyColumn`` holds a segment's first keys in its index's one bytes object and bisects
them in place: a 2M reopen no longer makes 625_000 key objects. Setting
``ASYNCBENCH_LSM_PURE=1`` selects the Python path on purpose (comparisons); the switch, a
missing build and a stale one are told apart as for the workloads' kernels
(``asyncbench/native_build.py`` states the policy).
``fixed_lookup`` is a segment's point lookup (value cache, bisect, in-place search of a
fixed-width block) as one C call: a 50-row query makes 50 of them; its ``scan`` is the
segment's key-range read, one C call per index scan of a stabilized tree.
``encode_records`` packs a log frame's records (``wal.encode_records``) in one C call.
``index_map`` maps a segment's block index read-only, so a reopen checks and keeps it
without copying it (``segment_reader``).
"""

from __future__ import annotations

import bisect
import struct
from collections.abc import Callable
from itertools import repeat
from pathlib import Path
from typing import Any

from asyncbench.native_build import load_extension

__all__ = [
    "ACCELERATED",
    "FALLBACK_REASON",
    "PURE_ENV",
    "BlockCorrupt",
    "KeyList",
    "encode_records",
    "first_keys_region",
    "fixed_lookup",
    "index_map",
    "key_column",
    "lz4_log_frame",
    "write_blocks",
]

write_blocks: Callable[..., tuple[Any, ...]] | None
FALLBACK_REASON: str | None = None


class KeyList(list[bytes]):
    """A segment's first keys as a list, with the two bisects ``_native.KeyColumn`` has
    (the pure-Python path, and indexes whose first keys are of mixed width)."""

    __slots__ = ()

    def bisect_right(self, key: bytes, lo: int = 0, hi: int | None = None) -> int:
        return bisect.bisect_right(self, key, lo, len(self) if hi is None else hi)

    def bisect_left(self, key: bytes, lo: int = 0, hi: int | None = None) -> int:
        return bisect.bisect_left(self, key, lo, len(self) if hi is None else hi)


def _key_list(data: bytes, start: int, n: int, width: int, padded: bool) -> KeyList:
    """``KeyColumn``'s pure-Python twin: the keys unpacked into a list (one C-level
    ``struct`` unpack, and for padded keys one ``map(bytes.rstrip)``)."""
    keys = list(struct.Struct(f"{width}s" * n).unpack_from(data, start)) if n else []
    if padded:
        keys = list(map(bytes.rstrip, keys, repeat(b"\0")))
    return KeyList(keys)


#: ``key_column(data, start, n, width, padded)``: the n fixed-width first keys at
#: ``data[start:]`` (bytes, or an ``index_map``) as a sequence with ``bisect_left`` /
#: ``bisect_right``; the compiled one reads them in place and holds ``data``.
key_column: Callable[[Any, int, int, int, bool], Any] = _key_list
#: ``index_map(fd, offset, length)``: those bytes of the file mapped read-only, as a
#: buffer, unmapped when the last holder lets go (``_native.IndexMap``); None on the
#: pure-Python path, which reads the index into bytes.
index_map: Callable[[int, int, int], Any] | None = None


class _NoBlockCorrupt(Exception):
    """Stands in for the C module's exception when it is not built (never raised)."""


BlockCorrupt: type[Exception] = _NoBlockCorrupt

#: ``fixed_lookup(mm, offsets, shape_ids, shapes, first_keys, min_key, last_key, cache,
#: tombstone, fallback[, learn[, lengths, crcs, raw_lengths, lz4]])``: a segment's
#: point lookup in one C call for blocks of fixed-width keys (``first_keys`` a
#: ``KeyColumn``), handing everything else to ``fallback`` (see
#: ``segment_reader._lookup``); its ``scan(start, end, inclusive, limit)`` reads a key
#: range in place (``learn(i)`` tests a block not checked yet). With ``lengths``, the
#: segment is compressed: each lookup decompresses its block from the mapping (its crc32
#: tested at the block's first read) and searches it (no scan). None on the pure-Python
#: path.
fixed_lookup: Callable[..., Callable[[bytes], Any]] | None = None
#: ``encode_records(records)``: a log frame's payload in one C call for the log's flat
#: records (key, value, key, value, ...), the same bytes as ``wal``'s Python encoder;
#: None on the pure-Python path.
encode_records: Callable[[list[bytes | None]], bytes] | None = None
#: ``lz4_log_frame(records)``: a whole LZ4 log frame (kind 2, ``wal.py``) of the flat
#: records, copied and compressed with the GIL released; None on the pure-Python path
#: and where ``liblz4.so.1`` did not load.
lz4_log_frame: Callable[[list[bytes | None]], bytes] | None = None
#: ``first_keys_region(first_keys)``: the first-key region of a segment index in one C
#: call, the bytes ``segment_writer.encode_index`` writes in Python; None on the
#: pure-Python path. It reads the list with the GIL released: pass a list nothing else
#: can change meanwhile (a writer's own).
first_keys_region: Callable[[list[bytes]], bytes] | None = None
#: Whether the compiled module loaded ``liblz4.so.1`` (``write_blocks`` level -1, LZ4
#: sources, ``fixed_lookup`` over LZ4 segments); False on the pure-Python path.
LZ4 = False

#: The C sources of ``_native`` (one concept per file, ``csrc/module.c`` lists them), whose
#: digest the build carries.
SOURCES = Path(__file__).with_name("csrc")
#: On (anything but empty or ``0``, as every fallback switch: ``native_build.disabled_by``),
#: it keeps the engine on its pure-Python path on purpose.
PURE_ENV = "ASYNCBENCH_LSM_PURE"

_native, FALLBACK_REASON = load_extension("asyncbench.engines.lsm._native", SOURCES, PURE_ENV)
if _native is None:  # switched off, built without a compiler, or stale: the pure-Python path
    write_blocks = None
else:
    write_blocks = _native.write_blocks
    BlockCorrupt = _native.BlockCorrupt
    key_column = _native.KeyColumn
    index_map = _native.IndexMap
    fixed_lookup = _native.FixedLookup
    encode_records = _native.encode_records
    LZ4 = bool(_native.LZ4)
    lz4_log_frame = _native.lz4_log_frame if LZ4 else None
    first_keys_region = _native.first_keys_region

ACCELERATED = write_blocks is not None
