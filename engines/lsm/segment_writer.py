"""Writing an immutable sorted segment file (flushes and merges); the file format.

File layout (all integers little-endian)::

    header   16 B   b"LSMSEG01" | u32 format version (2, 3 or 4) | u32 sparse step
    blocks          one block (see ``block.py``) per ``sparse step`` entries, in key order;
                    format 3: each block compressed on its own (zlib format, level 1);
                    format 4: each block an LZ4 block (LZ4_compress_default, no frame)
    index           u32 first-key width W | u32 kind; then the first keys:
                    kind 1 (fixed):  n x W bytes, every block's first key
                    kind 2 (padded): n x W bytes, each key right-padded with zero bytes
                                     (used when widths differ and no first key ends in 0)
                    kind 0 (mixed):  n x u32 first-key end offsets | the keys, concatenated
                    n x u64 block offsets | n x u32 block lengths | n x u32 crc32(block)
                    formats 3 and 4: n x u32 block lengths once decompressed
                    u32 last-key length | last key
    footer   52 B   u64 index offset | u64 index length | u64 entries | u64 live entries
                      | u32 blocks (n) | u32 crc32(index) | u32 crc32(these 40 bytes) | b"LSMFOOT1"

The index is the reader's sparse in-memory array: the first key of every block plus
where the block is and its checksum. Why columns of fixed width (format 2; format 1 had
one variable-length record per block): the reader loads the index in one read and turns
each column into an ``array`` with one ``frombytes`` and the first keys into a list with
one C-level ``struct`` unpack (and, padded, one ``map(bytes.rstrip)``), instead of
unpacking entries in Python (reopen at 2M profiles, 625_000
blocks over five trees, went from 0.66 s). Why ``*.tmp`` then rename: a file named
``seg-*.sst`` is always complete and, in a tree, committed (see ``meta.py``).

Why compressed formats (issue 40 item 2): a tree past its compression threshold writes
its merges in format 4 (LZ4; format 3, zlib, where liblz4 is missing), whose blocks are
compressed (2.3x with LZ4 on the profiles tree, 3.2x with zlib, as RocksDB compresses
below its base level); below it, format 2, whose blocks a point lookup searches in place
in the mapping. Lengths and checksums are of the stored (compressed) bytes, so a block's
crc32 is tested before it is decompressed; the recorded decompressed length (and zlib's
own adler32) then catch a payload damaged in a way that kept its crc32. Why LZ4 over
zlib: ``codec.py`` and ``docs/lsm.md``.
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
from typing import Any

from . import block, native
from .codec import LZ4, ZLIB, ZLIB_LEVEL, lz4_missing, pack

__all__ = [
    "BlockRun",
    "CODEC_OF_VERSION",
    "COMPRESSED_VERSION",
    "LZ4_VERSION",
    "FOOTER",
    "FOOTER_MAGIC",
    "FOOTER_SIZE",
    "HEADER",
    "KEYS_FIXED",
    "KEYS_MIXED",
    "KEYS_PADDED",
    "MAGIC",
    "PLAIN_VERSION",
    "READABLE_VERSIONS",
    "VERSION",
    "SegmentWriter",
    "default_codec",
    "encode_index",
]

MAGIC = b"LSMSEG01"
FOOTER_MAGIC = b"LSMFOOT1"
#: Format 2: plain blocks; format 3: each block compressed with zlib (``ZLIB_LEVEL``),
#: format 4 with LZ4, both plus a column of the blocks' decompressed lengths in the index.
PLAIN_VERSION, COMPRESSED_VERSION, LZ4_VERSION = 2, 3, 4
#: The codec of each compressed format.
CODEC_OF_VERSION = {COMPRESSED_VERSION: ZLIB, LZ4_VERSION: LZ4}
_VERSION_OF_CODEC = {c: v for v, c in CODEC_OF_VERSION.items()}
#: The newest format; a reader reads ``READABLE_VERSIONS``.
VERSION = LZ4_VERSION
READABLE_VERSIONS = (PLAIN_VERSION, COMPRESSED_VERSION, LZ4_VERSION)
#: ``write_blocks``' level argument per codec (1..9 a zlib level, -1 LZ4).
_NATIVE_LEVEL = {ZLIB: ZLIB_LEVEL, LZ4: -1}


def default_codec() -> str:
    """What a compressing merge writes: LZ4 where ``liblz4.so.1`` loads (in Python, and in
    the compiled writer when it is used), zlib otherwise."""
    if lz4_missing() is not None:
        return ZLIB
    if native.ACCELERATED and not native.LZ4:
        return ZLIB
    return LZ4
HEADER = struct.Struct("<8sII")
FOOTER = struct.Struct("<QQQQII")
FOOTER_SIZE = FOOTER.size + 4 + 8
_U32 = struct.Struct("<I")
_U32X2 = struct.Struct("<II")
#: How an index stores its first keys (see the module doc).
KEYS_MIXED, KEYS_FIXED, KEYS_PADDED = 0, 1, 2


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


def encode_index(
    firsts: list[bytes] | bytes,
    offsets: array[int],
    lengths: array[int],
    crcs: array[int],
    last: bytes,
    raw_lengths: array[int] | None = None,
) -> bytes:
    """The index region (layout in the module doc); ``raw_lengths`` for format 3.
    ``firsts``: the first keys, or their region already encoded (the compiled merge's,
    ``add_merged``). The first keys go through the compiled ``first_keys_region`` where
    it is built: a merge's index holds a first key per block, and this layout test and
    padding in Python held the GIL on the merge lane (about 1.8 s of a 10M-profile
    insert) while the event loop waited."""
    assert offsets.itemsize == 8 and lengths.itemsize == crcs.itemsize == 4
    raw = [] if raw_lengths is None else [raw_lengths.tobytes()]
    tail = [offsets.tobytes(), lengths.tobytes(), crcs.tobytes(), *raw, _U32.pack(len(last)), last]
    if isinstance(firsts, bytes):
        return b"".join([firsts, *tail])
    if native.first_keys_region is not None:
        return b"".join([native.first_keys_region(firsts), *tail])
    return b"".join([*first_keys_region_py(firsts), *tail])


def first_keys_region_py(firsts: list[bytes]) -> list[bytes]:
    """The first-key region of an index as parts to join: u32 width, u32 kind, then the
    keys fixed (every key ``width`` bytes), padded (zero bytes after the shorter ones;
    only when no key is empty or ends in a zero byte) or mixed (u32 end offsets, then
    the keys); the pure-Python twin of ``native.first_keys_region``."""
    width = max(map(len, firsts), default=0)
    if width and min(map(len, firsts)) == width:
        keys = [_U32X2.pack(width, KEYS_FIXED), *firsts]
    elif width and all(firsts) and not any(k[-1] == 0 for k in firsts):
        keys = [_U32X2.pack(width, KEYS_PADDED), *(k.ljust(width, b"\0") for k in firsts)]
    else:
        ends = array("I", accumulate(map(len, firsts)))
        keys = [_U32X2.pack(0, KEYS_MIXED), ends.tobytes(), *firsts]
    return keys


class SegmentWriter:
    """Streams sorted entries into a new segment file (``finish`` makes it visible);
    ``compress``: every block compressed on its own with ``codec`` (default:
    :func:`default_codec`), format 4 for LZ4, 3 for zlib."""

    def __init__(self, path: Path, step: int, compress: bool = False, codec: str | None = None) -> None:
        self.path = Path(path)
        self.tmp = self.path.with_name(self.path.name + ".tmp")
        self.step = step
        #: The blocks' codec; None: stored plain (format 2).
        self.codec = (codec or default_codec()) if compress else None
        if self.codec is not None and self.codec not in _VERSION_OF_CODEC:
            raise ValueError(f"unknown block codec {self.codec!r}")
        version = _VERSION_OF_CODEC[self.codec] if self.codec is not None else PLAIN_VERSION
        self._f = open(self.tmp, "wb", buffering=1 << 20)  # noqa: SIM115 - closed in finish/abort
        self._f.write(HEADER.pack(MAGIC, version, step))
        self._pos = HEADER.size
        self._keys: list[bytes] = []
        self._vals: list[bytes | None] = []
        # the index, encoded by ``finish``
        self._firsts: list[bytes] = []
        #: The first keys' region as ``add_merged``'s compiled merge encoded it (then
        #: ``_firsts`` stays empty: no bytes object per block).
        self._firsts_region: bytes | None = None
        self._offsets = array("Q")
        self._lengths = array("I")
        self._crcs = array("I")
        self._raw_lengths = array("I")  # format 3: each block's decompressed length
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
            self._emit_many(ks[:full], vs[:full])
            self._keys = ks[full:]
            self._vals = vs[full:]

    def add_run(self, run: BlockRun) -> None:
        """Append already encoded (plain) blocks: verbatim (a merge copying untouched
        blocks), or each compressed on its own into a compressed segment."""
        self._check_order(run.first_keys[0])
        if self._keys:
            self._emit(self._keys, self._vals)
            self._keys, self._vals = [], []
        if self.codec is not None:
            self._last = run.last_key
            self._firsts += run.first_keys
            raws = []
            at = 0
            for n in run.lengths:
                raws.append(run.raw[at : at + n])
                at += n
            self._write_blocks(raws)
            self.entries += run.entries
            self.live += run.live
            return
        self._last = run.last_key
        self._firsts += run.first_keys
        self._offsets.extend(accumulate(run.lengths[:-1], initial=self._pos))
        self._lengths.extend(run.lengths)
        self._crcs.extend(run.crcs)
        self._f.write(run.raw)
        self._pos += len(run.raw)
        self.entries += run.entries
        self.live += run.live

    @property
    def pending(self) -> int:
        """Entries added but not yet in a block (``finish`` writes them)."""
        return len(self._keys)

    def add_merged(self, sources: list[Any], drop_tombstones: bool) -> None:
        """Write the merge of ``sources`` (newest first: a frozen memtable's dict, or
        ``SegmentReader.native_source()``) as this segment's blocks, in C with the GIL
        released (``native.py``): the same bytes ``add`` would write for the merged
        entries. Only into an empty writer. A damaged source block raises
        ``native.BlockCorrupt(source index, block index, reason)``."""
        write = native.write_blocks
        if write is None:
            raise RuntimeError(f"the compiled LSM writer is not available: {native.FALLBACK_REASON}")
        if self._firsts or self._keys or self._firsts_region is not None:
            raise ValueError("add_merged writes a whole segment: the writer must be empty")
        self._f.flush()
        level = _NATIVE_LEVEL[self.codec] if self.codec is not None else 0
        region, offsets, lengths, crcs, last, entries, live, end, raw_lengths = write(
            self._f.fileno(), self._pos, sources, self.step, drop_tombstones, level
        )
        self._f.seek(end)
        self._pos = end
        self._firsts_region = region
        self._offsets.frombytes(offsets)
        self._lengths.frombytes(lengths)
        self._crcs.frombytes(crcs)
        if self.codec is not None:
            self._raw_lengths.frombytes(raw_lengths)
        self._last = last
        self.entries += entries
        self.live += live

    def _check_order(self, first: bytes) -> None:
        if self._firsts_region is not None:
            raise ValueError("add_merged wrote the whole segment: nothing can follow it")
        if self._last is not None and first <= self._last:
            raise ValueError("segment keys must be strictly increasing")

    def _emit(self, keys: list[bytes], values: list[bytes | None]) -> None:
        self._firsts.append(keys[0])
        self._write_blocks([block.encode(keys, values)])
        self.entries += len(keys)
        self.live += len(keys) - values.count(None)

    def _emit_many(self, keys: list[bytes], values: list[bytes | None]) -> None:
        """Whole blocks of ``step`` entries: encoded together, indexed in C-level passes."""
        self._firsts += keys[:: self.step]
        self._write_blocks(block.encode_many(keys, values, self.step))
        self.entries += len(keys)
        self.live += len(keys) - values.count(None)

    def _write_blocks(self, raws: list[bytes]) -> None:
        """Store encoded blocks (compressed first in format 3) and index them: offset,
        stored length, crc32 of the stored bytes (and the decompressed length)."""
        if self.codec is not None:
            self._raw_lengths.extend(map(len, raws))
            codec = self.codec
            raws = [pack(codec, r) for r in raws]
        lengths = list(map(len, raws))
        self._offsets.extend(accumulate(lengths[:-1], initial=self._pos))
        self._lengths.extend(lengths)
        self._crcs.extend(map(zlib.crc32, raws))
        data = b"".join(raws)
        self._f.write(data)
        self._pos += len(data)

    def finish(self, publish: bool = True) -> None:
        """Write index and footer, fsync, and (``publish``) rename into place. A tree
        passes ``publish=False`` and calls :meth:`publish` only after the manifest that
        lists the segment is on disk, so an unlisted ``seg-*.sst`` is never a crash's
        leftover (see ``meta.py``)."""
        if self._keys:
            self._emit(self._keys, self._vals)
            self._keys, self._vals = [], []
        last = self._last or b""
        raw = self._raw_lengths if self.codec is not None else None
        firsts = self._firsts if self._firsts_region is None else self._firsts_region
        index = encode_index(firsts, self._offsets, self._lengths, self._crcs, last, raw)
        footer = FOOTER.pack(  # (a block count: one length per block)
            self._pos, len(index), self.entries, self.live, len(self._lengths), zlib.crc32(index)
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
