"""Writing an immutable sorted segment file (flushes and merges); the file format.

File layout (all integers little-endian)::

    header   16 B   b"LSMSEG01" | u32 format version (1) | u32 sparse step
    blocks          one block (see ``block.py``) per ``sparse step`` entries, in key order
    index           per block: u32 first-key length | first key | u64 offset | u32 length
                      | u32 crc32(block); then u32 last-key length | last key
    footer   52 B   u64 index offset | u64 index length | u64 entries | u64 live entries
                      | u32 blocks | u32 crc32(index) | u32 crc32(these 40 bytes) | b"LSMFOOT1"

The index is the reader's sparse in-memory array: the first key of every block plus
where the block is and its checksum. Why ``*.tmp`` then rename: a file named
``seg-*.sst`` is always complete, so open never has to guess about a half-written one.
"""

from __future__ import annotations

import os
import struct
import zlib
from array import array
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import accumulate
from pathlib import Path

from . import block

__all__ = [
    "BlockRun",
    "FOOTER",
    "FOOTER_MAGIC",
    "FOOTER_SIZE",
    "HEADER",
    "INDEX_ENTRY",
    "MAGIC",
    "SegmentWriter",
]

MAGIC = b"LSMSEG01"
FOOTER_MAGIC = b"LSMFOOT1"
VERSION = 1
HEADER = struct.Struct("<8sII")
FOOTER = struct.Struct("<QQQQII")
FOOTER_SIZE = FOOTER.size + 4 + 8
INDEX_ENTRY = struct.Struct("<QII")
_U32 = struct.Struct("<I")


@dataclass(frozen=True, slots=True)
class BlockRun:
    """Consecutive encoded blocks taken verbatim from a segment, with their index data,
    for a merge to append without decoding (see ``SegmentReader.block_run``)."""

    raw: bytes
    first_keys: list[bytes]
    lengths: Sequence[int]
    crcs: Sequence[int]
    last_key: bytes
    entries: int
    live: int


class SegmentWriter:
    """Streams sorted entries into a new segment file (``finish`` makes it visible)."""

    def __init__(self, path: Path, step: int) -> None:
        self.path = Path(path)
        self.tmp = self.path.with_name(self.path.name + ".tmp")
        self.step = step
        self._f = open(self.tmp, "wb", buffering=1 << 20)  # noqa: SIM115 - closed in finish/abort
        self._f.write(HEADER.pack(MAGIC, VERSION, step))
        self._pos = HEADER.size
        self._keys: list[bytes] = []
        self._vals: list[bytes | None] = []
        # the index, encoded by ``finish``
        self._firsts: list[bytes] = []
        self._offsets = array("Q")
        self._lengths = array("I")
        self._crcs = array("I")
        self._last: bytes | None = None
        self.entries = 0
        self.live = 0
        self._finished = False

    def add(self, keys: Sequence[bytes], values: Sequence[bytes | None]) -> None:
        """Append entries whose keys are strictly greater than every key added before."""
        if not keys:
            return
        self._check_order(keys[0])
        self._last = keys[-1]
        self._keys.extend(keys)
        self._vals.extend(values)
        step = self.step
        if len(self._keys) >= step:
            ks, vs = self._keys, self._vals
            full = len(ks) - len(ks) % step
            for i in range(0, full, step):
                self._emit(ks[i : i + step], vs[i : i + step])
            self._keys = ks[full:]
            self._vals = vs[full:]

    def add_run(self, run: BlockRun) -> None:
        """Append already encoded blocks verbatim (a merge copying untouched blocks)."""
        self._check_order(run.first_keys[0])
        if self._keys:
            self._emit(self._keys, self._vals)
            self._keys, self._vals = [], []
        self._last = run.last_key
        self._firsts += run.first_keys
        self._offsets.extend(accumulate(run.lengths[:-1], initial=self._pos))
        self._lengths.extend(run.lengths)
        self._crcs.extend(run.crcs)
        self._f.write(run.raw)
        self._pos += len(run.raw)
        self.entries += run.entries
        self.live += run.live

    def _check_order(self, first: bytes) -> None:
        if self._last is not None and first <= self._last:
            raise ValueError("segment keys must be strictly increasing")

    def _emit(self, keys: list[bytes], values: list[bytes | None]) -> None:
        raw = block.encode(keys, values)
        self._firsts.append(keys[0])
        self._offsets.append(self._pos)
        self._lengths.append(len(raw))
        self._crcs.append(zlib.crc32(raw))
        self._f.write(raw)
        self._pos += len(raw)
        self.entries += len(keys)
        self.live += len(keys) - values.count(None)

    def finish(self, publish: bool = True) -> None:
        """Write index and footer, fsync, and (``publish``) rename into place. A tree
        passes ``publish=False`` and calls :meth:`publish` only after the manifest that
        lists the segment is on disk, so an unlisted ``seg-*.sst`` is never a crash's
        leftover (see ``meta.py``)."""
        if self._keys:
            self._emit(self._keys, self._vals)
            self._keys, self._vals = [], []
        last = self._last or b""
        pack_len, pack_entry = _U32.pack, INDEX_ENTRY.pack
        parts = [
            pack_len(len(first)) + first + pack_entry(off, length, crc)
            for first, off, length, crc in zip(
                self._firsts, self._offsets, self._lengths, self._crcs, strict=True
            )
        ]
        index = b"".join(parts) + pack_len(len(last)) + last
        footer = FOOTER.pack(
            self._pos, len(index), self.entries, self.live, len(self._firsts), zlib.crc32(index)
        )
        self._f.write(index)
        self._f.write(footer + _U32.pack(zlib.crc32(footer)) + FOOTER_MAGIC)
        self._f.flush()
        os.fsync(self._f.fileno())
        self._f.close()
        if publish:
            self.publish()

    def publish(self) -> None:
        """Rename the finished ``.tmp`` file to its name (not yet durable: the next
        directory fsync makes it so, and open completes the rename of a listed ``.tmp``)."""
        os.replace(self.tmp, self.path)
        self._finished = True

    def abort(self) -> None:
        """Give the segment up: it will never be committed, even if already renamed."""
        self._f.close()
        self.tmp.unlink(missing_ok=True)
        if self._finished:
            self.path.unlink(missing_ok=True)
