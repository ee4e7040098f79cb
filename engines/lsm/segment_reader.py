"""Reading an immutable segment file: point lookups, and cursors for the merging
iterator (see ``segment_writer.py`` for the file format, ``block.py`` for blocks).

Why it is shaped this way: the sparse index (every block's first key, offset, length,
checksum) is in memory, the blocks stay in the file's memory mapping and only bounded
caches hold Python objects made from them, so a segment of any size costs a few
bytes per block. A point lookup is a bisect over the first keys and then, in a
fixed-width block, one C-level ``find`` in the mapping. Each block's checksum is
tested the first time the block is touched (``_Blocks.read``, the only read that
checks) and its shape remembered as a small id, so later lookups skip the header too.
With the compiled module, ``get`` is that lookup in one C call and ``scan_keys`` a key
range read in place (``_native.FixedLookup``), which the tree uses while this is its only
source (after a stabilization); a block not checked yet is tested through ``_Blocks.shape``.

Caches (``cache.py``, all bounded, all through ``get_or_load`` or its bound form
``getter``): the *value cache* holds recently read values by key; the *key cache*
decoded block keys (scans, mixed-width lookups); the *block cache* raw blocks for
iterators, dropped when idle longer than the lifetime. Compaction reads bypass them.

A compressed segment (format 4, LZ4, or 3, zlib: written by merges of a tree past its
compression threshold) cannot be searched in place: every read of a block decompresses
it (its crc32, of the stored bytes, tested first; then the recorded length, and zlib's
own adler32). With the compiled module a point lookup is one C call that decompresses
the block straight from the mapping and searches it (``FixedLookup`` given the
index's lengths, crc32s and raw lengths; the crc32 tested at a block's first read, as a
plain block's is); otherwise, and for what that call hands back, the Python closure
(``_compressed_lookup``) reads it through the block cache. Iterators read blocks through
the block cache; a merge copies none of its blocks verbatim.
"""

from __future__ import annotations

import mmap
import os
import struct
import weakref
import zlib
from array import array
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterator
from functools import cached_property
from pathlib import Path
from typing import Any, cast

from . import block, native
from .cache import GenerationalCache
from .codec import LZ4, CodecError, lz4_missing, unpack
from .errors import CorruptSegment
from .merging_iterator import NOT_READ, Chunk, Cursor
from .native import KeyList
from .segment_writer import (
    CODEC_OF_VERSION,
    FOOTER,
    FOOTER_MAGIC,
    FOOTER_SIZE,
    HEADER,
    KEYS_FIXED,
    KEYS_MIXED,
    KEYS_PADDED,
    MAGIC,
    PLAIN_VERSION,
    READABLE_VERSIONS,
    BlockRun,
)

__all__ = ["TOMBSTONE", "SegmentCursor", "SegmentReader"]

TOMBSTONE = block.TOMBSTONE
_U32 = struct.Struct("<I")
_U32X2 = struct.Struct("<II")
#: zlib's largest inflation ratio, about 1032:1: a recorded decompressed length beyond it
#: is damage, refused before a buffer of that size is allocated (``csrc/compress.h`` alike).
_MAX_INFLATE = 1032
#: Blocks a segment remembers the shape of by a 16-bit id (id 0: not yet checked).
_MAX_SHAPES = 0xFFFF


class SegmentReader:
    """A read-only segment: sparse index in memory, blocks read through bounded caches."""

    def __init__(
        self,
        path: Path,
        seg_id: int,
        *,
        key_cache: int = 1024,
        value_cache: int = 1024,
        block_cache: int = 1024,
    ) -> None:
        self.path = Path(path)
        self.id = seg_id
        # The footer's counts and the index, read by ``_read_index`` below.
        self.entries = 0  # records, tombstones included
        self.live = 0  # records that are not tombstones
        self.step = 0  # keys per block
        #: Each block's first key: ``native.key_column`` (fixed width) or a ``KeyList``.
        self.first_keys: Any = KeyList()
        self.offsets = array("Q")  # block i's file offset
        self.lengths = array("I")  # block i's length
        self.crcs = array("I")  # block i's crc32 (of its stored bytes)
        #: Formats 3 and 4: block i's length decompressed; None: the blocks are stored plain.
        self.raw_lengths: array[int] | None = None
        #: The blocks' codec (``codec.LZ4``, ``codec.ZLIB``); None: stored plain.
        self.codec: str | None = None
        #: ``scan_keys(start, end, inclusive, limit)``: the first ``limit`` live keys of
        #: the range read in place in one C call (``_native.FixedLookup.scan``), or None
        #: when the cursor has to read them; None itself where there is no compiled path
        #: (the pure-Python build, a compressed segment, first keys of mixed width).
        self.scan_keys: Callable[[bytes, bytes | None, bool, int], list[bytes] | None] | None = None
        self.last_key = b""
        self.min_key = b"\x01"
        #: Foreground cursors opened (scans through the merging iterator); with the
        #: compiled lookup's count, what ``idle`` watches.
        self._cursors = 0
        self._seen: int | None = None  # reads() at the last ``idle``
        self._released = False  # the mapped pages were released and not read since
        self._index_map: weakref.ref[Any] | None = None  # the index's mapping (``mappings``)
        with open(self.path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            if size < HEADER.size + FOOTER_SIZE:
                raise CorruptSegment(self.path, None, f"too short for a segment ({size} bytes)")
            self._mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)  # keeps its own descriptor
            try:
                self._read_index(size, f.fileno())
            except BaseException:
                self._mm.close()
                raise
        self.size = size
        self.block_cache = GenerationalCache(block_cache)
        self.key_cache = GenerationalCache(key_cache)
        self.value_cache = GenerationalCache(value_cache)
        self._blocks = blocks = _Blocks(
            self.path, self._mm, self.offsets, self.lengths, self.crcs, self.raw_lengths, self.codec
        )
        #: Block ``i``'s bytes, bypassing the caches (the checksum is tested here).
        self.read_block = blocks.read
        #: Block ``i``'s bytes, checksum tested, through the block cache.
        self.raw_block = self.block_cache.getter(blocks.read)
        #: Block ``i``'s keys decoded (positions absolute in the mapping; in a compressed
        #: segment, in the decompressed block), through the key cache.
        if self.compressed:
            raw = self.raw_block
            self.block_keys = self.key_cache.getter(lambda i: block.decode_keys(raw(i)))
            #: The value of a key, ``TOMBSTONE`` if deleted here, None if this segment lacks it.
            self.get = slow = _compressed_lookup(self, self.value_cache)
            if (
                native.fixed_lookup is not None
                and type(self.first_keys) is native.key_column
                and (self.codec != LZ4 or native.LZ4)
            ):
                self.get = self._compiled_lookup(
                    slow, None, self.lengths, self.crcs, self.raw_lengths, self.codec == LZ4
                )
            return
        self.block_keys = self.key_cache.getter(blocks.decode_keys)
        self.get = get = _lookup(blocks, self, self.key_cache, self.value_cache)
        if native.fixed_lookup is not None and type(self.first_keys) is native.key_column:
            # the same lookup in one C call; what it does not handle goes to ``get``; a
            # block not checked yet: its checksum tested, its shape learned (``learn``)
            lookup = self._compiled_lookup(get, blocks.shape)
            self.get = lookup
            self.scan_keys = lookup.scan  # a key-range read of this segment in one C call

    def _compiled_lookup(self, fallback: Callable[[bytes], Any], *more: Any) -> Any:
        """``native.fixed_lookup`` over this segment's tables, handing what it does not
        handle to ``fallback``; ``more``: ``learn``, and for a compressed segment the
        columns its reads need (see ``native.fixed_lookup``)."""
        assert native.fixed_lookup is not None
        b = self._blocks
        return native.fixed_lookup(
            self._mm,
            self.offsets,
            b.shape_ids,
            b.shapes,
            self.first_keys,
            self.min_key,
            self.last_key,
            self.value_cache,
            TOMBSTONE,
            fallback,
            *more,
        )

    def _read_index(self, size: int, fd: int) -> None:
        """The footer (from the mapping) and the block index. Compiled, the index is
        mapped (``native.index_map``): its crc32 is tested over the mapping before any of
        it is used, the columns are copied into arrays, and the first keys stay in the
        mapping (copying a 10M store's ~150 MB of indexes into fresh memory was most of a
        reopen). Pure Python, one ``pread`` of ``fd``. The crc32, and the pread, run with
        the GIL released, so the trees of a store check their indexes side by side
        (``parallel_open``)."""
        mm = self._mm
        magic, version, step = HEADER.unpack_from(mm, 0)
        if magic != MAGIC:
            raise CorruptSegment(self.path, 0, "bad header")
        if version not in READABLE_VERSIONS:
            readable = ", ".join(map(str, READABLE_VERSIONS))
            raise CorruptSegment(self.path, 0, f"segment format {version}, this engine reads formats {readable}")
        fo = size - FOOTER_SIZE
        footer = mm[fo : fo + FOOTER.size]
        (fcrc,) = _U32.unpack_from(mm, fo + FOOTER.size)
        if mm[size - 8 : size] != FOOTER_MAGIC or zlib.crc32(footer) != fcrc:
            raise CorruptSegment(self.path, fo, "bad footer")
        ioff, ilen, self.entries, self.live, nblocks, icrc = FOOTER.unpack(footer)
        if ioff + ilen > fo:
            raise CorruptSegment(self.path, fo, "index runs past the footer")
        # the whole index at once: mapped (held by the first keys), or read
        data = os.pread(fd, ilen, ioff) if native.index_map is None else native.index_map(fd, ioff, ilen)
        if native.index_map is not None:
            self._index_map = weakref.ref(data)
        index = memoryview(data)
        if len(index) != ilen or zlib.crc32(index) != icrc:
            raise CorruptSegment(self.path, ioff, "index checksum mismatch")
        self.step = step
        width, kind = _U32X2.unpack_from(index, 0)
        pos = 8
        if kind in (KEYS_FIXED, KEYS_PADDED) and width:
            end = pos + nblocks * width
            if end > len(index):
                raise CorruptSegment(self.path, ioff, "index shorter than its first keys")
            # read in place (``native.key_column``): no object per block at open
            self.first_keys = native.key_column(data, pos, nblocks, width, kind == KEYS_PADDED)
        elif kind == KEYS_MIXED:
            kends = _column("I", index[pos : pos + 4 * nblocks])
            kb = pos + 4 * nblocks
            end = kb + (kends[-1] if nblocks else 0)
            starts = [kb, *(kb + e for e in kends[:-1])] if nblocks else []
            self.first_keys = KeyList(bytes(index[a:b]) for a, b in zip(starts, (kb + e for e in kends), strict=True))
        else:
            raise CorruptSegment(self.path, ioff, f"unknown first-key layout {kind} (width {width})")
        # the columns blocks are found and checked by: private copies, one copy each
        self.offsets = _column("Q", index[end : end + 8 * nblocks])
        end += 8 * nblocks
        self.lengths = _column("I", index[end : end + 4 * nblocks])
        end += 4 * nblocks
        self.crcs = _column("I", index[end : end + 4 * nblocks])
        end += 4 * nblocks
        if version != PLAIN_VERSION:
            self.raw_lengths = _column("I", index[end : end + 4 * nblocks])
            end += 4 * nblocks
            self.codec = CODEC_OF_VERSION[version]
            missing = lz4_missing() if self.codec == LZ4 else None
            if missing is not None:
                raise CorruptSegment(self.path, 0, f"segment format {version} holds LZ4 blocks, and {missing}")
        if end + 4 > len(index):
            raise CorruptSegment(self.path, ioff, "index does not match its block count")
        (klen,) = _U32.unpack_from(index, end)
        self.last_key = bytes(index[end + 4 : end + 4 + klen])
        if len(self.first_keys) != nblocks or end + 4 + klen != len(index):
            raise CorruptSegment(self.path, ioff, "index does not match its block count")
        # an empty segment gets min > last, so every lookup is out of range
        self.min_key = self.first_keys[0] if self.first_keys else b"\x01"

    def __len__(self) -> int:
        return self.entries

    @property
    def compressed(self) -> bool:
        """Whether the blocks are stored compressed (format 3 or 4)."""
        return self.raw_lengths is not None

    @cached_property
    def plain_size(self) -> int:
        """The file's bytes with its blocks stored plain: what a tree's compression
        threshold is measured in, so a tree that compressed does not fall back below it
        (computed once: a merge asks on the event loop, and a 10M tree has 125_000 blocks)."""
        if self.raw_lengths is None:
            return self.size
        return self.size - sum(self.lengths) + sum(self.raw_lengths)

    def mappings(self) -> list[Any]:
        """The objects that map this segment's file (``held_files.py``): its own mapping
        and, compiled, its index's (while the first keys or a lookup hold it)."""
        index = self._index_map() if self._index_map is not None else None
        return [self._mm] if index is None else [self._mm, index]

    def renamed(self, path: Path) -> None:
        """The file was renamed (a committed ``.tmp`` published): errors name the new path."""
        self.path = self._blocks.path = Path(path)

    # --- blocks ---------------------------------------------------------------------
    def native_source(self) -> tuple[Any, ...]:
        """This segment as a source of the compiled merge (``native.write_blocks``). The
        fifth item says the buffer maps a file: the merge then releases the pages it has
        read past (they stay in the page cache), so a full merge does not hold its
        sources resident beside the reads of its output (issue 40 item 3). A sixth, the
        decompressed lengths, says the blocks are compressed; a seventh, true, that they
        are LZ4 blocks (else zlib)."""
        if self.raw_lengths is not None:
            return self._mm, self.offsets, self.lengths, self.crcs, True, self.raw_lengths, self.codec == LZ4
        return self._mm, self.offsets, self.lengths, self.crcs, True

    def block_run(self, i: int, stop: int, drop_tombstones: bool, max_entries: int) -> BlockRun | None:
        """Blocks ``i..stop-1`` (about ``max_entries`` entries at most, ending before a
        block with tombstones when they are to be dropped) to copy verbatim, or None
        (always for a compressed segment: a merge decodes its blocks)."""
        if self.raw_lengths is not None:
            return None
        blocks = self._blocks
        mm, offsets, shapes, ids = self._mm, self.offsets, blocks.shapes, blocks.shape_ids
        entries = dead = 0
        b = i
        while b < stop and entries < max_entries:
            n, _w, _kx, _ve, fl, _ks = shapes[ids[b]] or blocks.shape(b)
            flags = offsets[b] + fl
            if drop_tombstones:
                if mm.find(b"\x01", flags, flags + n) >= 0:
                    break
            else:
                dead += mm[flags : flags + n].count(1)
            entries += n
            b += 1
        if b == i:
            return None
        last = self.last_key if b == len(self.first_keys) else block.last_key(mm, offsets[b - 1])
        return BlockRun(
            mm[offsets[i] : offsets[b - 1] + self.lengths[b - 1]],
            self.first_keys[i:b],
            self.lengths[i:b],
            self.crcs[i:b],
            last,
            entries,
            entries - dead,
        )

    # --- lookups (``get`` is made by ``_lookup``) -----------------------------------------
    def locate(self, key: bytes) -> tuple[int, int]:
        """(block, position) of the first entry >= key; block == len(blocks) at the end."""
        i = self.first_keys.bisect_right(key) - 1
        if i < 0:
            return 0, 0
        keys = self.block_keys(i)[0]
        j = bisect_left(keys, key)
        if j == len(keys):
            return i + 1, 0
        return i, j

    def cursor(
        self,
        start: bytes | None = None,
        end: bytes | None = None,
        inclusive: bool = False,
        blocks: int = 1,
        max_blocks: int = 1,
        min_entries: int = 0,
        keys_only: bool = False,
        cached: bool = True,
    ) -> SegmentCursor:
        """Entries with start <= key < end (<= end if inclusive; None: unbounded). Each
        read takes ``blocks`` blocks (doubling up to ``max_blocks``, so short walks stay
        short) and more while fewer than ``min_entries`` entries are in hand (scans).
        ``keys_only``: live entries' values are ``NOT_READ`` (only keys and tombstones
        are read, through the key cache); ``cached=False`` (compaction) bypasses the caches."""
        if cached:  # a foreground read (a compaction's is not one)
            self._cursors += 1
        return SegmentCursor(self, start, end, inclusive, blocks, max_blocks, min_entries, keys_only, cached)

    def reads(self) -> int | None:
        """Gets and scans that reached this segment so far: the compiled lookup's count
        (``FixedLookup.calls``) and the foreground cursors; None where the lookup is the
        Python closure, which keeps no count (the pure-Python build, mixed-width keys)."""
        calls = getattr(self.get, "calls", None)
        return None if calls is None else calls + self._cursors

    def idle(self) -> bool:
        """True when no get or scan reached this segment since the previous call and its
        mapped pages have not been released since the last one that did: the caller
        (``Maintainer``, every ``IDLE_RELEASE_S``) then releases them (``release_pages``)."""
        n = self.reads()
        if n is None or self._mm.closed:
            return False
        seen, self._seen = self._seen, n
        if n != seen:
            self._released = False
            return False
        return not self._released

    def release_pages(self, chunk: int) -> Iterator[None]:
        """Drop this segment's mapped pages from the process's RSS, ``chunk`` bytes at a
        time (a step between chunks, so the event loop runs: 1.7 GB took 54 ms in one
        call here); the file's pages stay in the kernel's page cache, and a later read
        maps them again with a minor fault. Why: reads search blocks in place in the
        mapping, so every page a phase touched stayed in the RSS until the segment
        closed, a tree that no phase reads any more included (at 10M the update phase
        held the index trees' pages touched by the queries before it: the peak RSS was
        1.53x RocksDB's). Safe on a read-only shared file mapping: ``MADV_DONTNEED``
        there discards mappings, never data."""
        self._released = True
        size = self.size
        for start in range(0, size, chunk):
            try:
                self._mm.madvise(mmap.MADV_DONTNEED, start, min(chunk, size - start))
            except ValueError:
                if self._mm.closed:  # a merge retired it meanwhile: its mapping went with it
                    return
                raise
            yield

    def rotate_caches(self) -> None:
        """Lifetime tick: idle blocks age out of the block cache."""
        self.block_cache.rotate()

    def close(self) -> None:
        self.block_cache.clear()
        self.key_cache.clear()
        self.value_cache.clear()
        self._mm.close()
        # The first keys may hold the index's mapping (``native.index_map``), and the
        # lookups hold them: let go here, so the mapping goes with this close (or the
        # last user still reading), as the segment's own mapping does; a mapped file
        # deleted by a merge or a reset keeps its disk space while it is mapped.
        self.first_keys = KeyList()
        self.get = _closed_get(self.path)
        self.scan_keys = None


def _closed_get(path: Path) -> Callable[[bytes], Any]:
    """A closed segment's ``get``: refuses, as a read of its closed mapping would."""

    def get(key: bytes) -> Any:
        raise ValueError(f"{path}: the segment is closed")

    return get


def _column(typecode: str, data: memoryview) -> array[int]:
    """An index column as an array, copied from ``data`` once (``array(code, bytes)``
    would need a bytes slice first: two copies). A column cut short by a damaged index
    comes out short, which the block count check after the columns refuses."""
    out = array(typecode)
    out.frombytes(data[: len(data) - len(data) % out.itemsize])
    return out


class _Blocks:
    """A segment's blocks: where they are, their checksums and shapes. Apart from the
    reader so that ``_lookup``'s closure can hold it without holding the reader."""

    __slots__ = (
        "path",
        "mm",
        "offsets",
        "lengths",
        "crcs",
        "raw_lengths",
        "codec",
        "shapes",
        "shape_ids",
        "_shape_index",
    )

    def __init__(
        self,
        path: Path,
        mm: mmap.mmap,
        offsets: array[int],
        lengths: array[int],
        crcs: array[int],
        raw_lengths: array[int] | None,
        codec: str | None,
    ) -> None:
        self.path, self.mm, self.offsets, self.lengths, self.crcs = path, mm, offsets, lengths, crcs
        self.raw_lengths, self.codec = raw_lengths, codec
        #: Per block a shape id, 0 until the block's checksum passed; ``shapes[id]``.
        self.shape_ids = array("H", bytes(2 * len(offsets)))
        self.shapes: list[block.Shape | None] = [None]
        self._shape_index: dict[bytes, int] = {}  # block header -> shape id

    def read(self, i: int) -> bytes:
        """Block ``i``'s bytes (decompressed); the one place a block's checksum is
        tested, and a compressed one's decompression checked."""
        off = self.offsets[i]
        raw = self.mm[off : off + self.lengths[i]]
        if zlib.crc32(raw) != self.crcs[i]:
            raise CorruptSegment(self.path, off, f"block {i} checksum mismatch")
        if self.raw_lengths is None:
            return raw
        size = self.raw_lengths[i]
        if not 4 <= size <= _MAX_INFLATE * len(raw) + 64:  # zlib inflates at most ~1032:1, LZ4 ~255:1
            raise CorruptSegment(
                self.path, off, f"block {i} records a decompressed length of {size} bytes, impossible from {len(raw)} stored"
            )
        try:
            return unpack(self.codec or "", raw, size)
        except CodecError as exc:
            raise CorruptSegment(self.path, off, f"block {i} {exc}") from None

    def shape(self, i: int) -> block.Shape:
        """Block ``i``'s shape; the first call tests the block's checksum."""
        shp = self.shapes[self.shape_ids[i]]
        if shp is None:
            head = self.read(i)[:4]
            sid = self._shape_index.get(head)
            if sid is not None:
                shp = cast("block.Shape", self.shapes[sid])  # only shapes[0] is None
            else:
                shp = block.shape_at(head)
                if len(self.shapes) <= _MAX_SHAPES:  # else tested again next time
                    sid = self._shape_index[head] = len(self.shapes)
                    self.shapes.append(shp)
            if sid is not None:
                self.shape_ids[i] = sid
        return shp

    def decode_keys(self, i: int) -> block.Decoded:
        return block.decode_keys(self.mm, self.offsets[i], self.shapes[self.shape_ids[i]] or self.shape(i))


def _mixed_value(buf: Any, decoded: block.Decoded, key: bytes) -> Any:
    """A block of mixed-width keys searched through its decoded keys (``buf`` the mapping
    or the decompressed block the offsets are into): the value, ``TOMBSTONE``, or None.
    One function for the mapped and the compressed lookup, which search it alike."""
    keys, vends, vb, fb = decoded
    j = bisect_left(keys, key)
    if j == len(keys) or keys[j] != key:
        return None
    if buf[fb + j]:
        return TOMBSTONE
    return buf[vb + (vends[j - 1] if j else 0) : vb + vends[j]]


def _lookup(
    blocks: _Blocks, seg: SegmentReader, key_cache: GenerationalCache, value_cache: GenerationalCache
) -> Callable[[bytes], Any]:
    """``SegmentReader.get``: the value cache in front of an in-place search, in one function.

    Why a closure over the segment's tables and not a method: point reads are the
    hottest path (a query fetches 50 profiles), and this saves the bound methods and
    attribute lookups per call; it holds no reference to the reader, so a retired
    segment is still freed (and unmapped) as soon as its last user lets go. Why the
    cache's ``getter`` logic is written out here instead of wrapping ``find`` in it:
    one Python call per lookup instead of two, 5-10% of a point read (the generations
    are still only read and rotated the way ``GenerationalCache.getter`` does, and
    ``tests/test_lsm_segment.py`` holds this function to the same bound and aging)."""
    mm, offsets, shapes, ids = blocks.mm, blocks.offsets, blocks.shapes, blocks.shape_ids
    learn, decode = blocks.shape, blocks.decode_keys
    first_block_after, last_key, min_key = seg.first_keys.bisect_right, seg.last_key, seg.min_key
    keys_of = key_cache.getter(decode)
    u32, u32x2 = _U32.unpack_from, _U32X2.unpack_from
    cache = value_cache
    half = cache.half

    def get(key: bytes) -> Any:
        """The cached value, else the block's: a fixed-width block is searched in place
        (one C-level ``find`` over its key area, at the offsets its shape gives)."""
        v = cache.young.get(key)
        if v is not None:
            return v
        v = cache.old.get(key)
        if v is None:
            if key > last_key or key < min_key:
                return None
            i = first_block_after(key) - 1
            n, width, _kx, ve, fl, ks = shapes[ids[i]] or learn(i)
            if not width:
                v = _mixed_value(mm, keys_of(i), key)
                if v is None:
                    return None
            elif len(key) != width:
                return None
            else:
                off = offsets[i]
                kb = off + ks
                ke = kb + n * width  # values follow the keys
                p = mm.find(key, kb, ke)
                while p >= 0 and (p - kb) % width:  # a match across two keys
                    p = mm.find(key, p + 1, ke)
                if p < 0:
                    return None
                j = (p - kb) // width
                if mm[off + fl + j]:
                    v = TOMBSTONE
                elif j:
                    a, b = u32x2(mm, off + ve + 4 * (j - 1))
                    v = mm[ke + a : ke + b]
                else:
                    v = mm[ke : ke + u32(mm, off + ve)[0]]
        if half:  # cache it (a hit in the old generation moves to the young one)
            young = cache.young
            if len(young) >= half:
                cache.old = young
                cache.young = young = {}
            young[key] = v
        return v

    return get


def _compressed_lookup(seg: SegmentReader, value_cache: GenerationalCache) -> Callable[[bytes], Any]:
    """``SegmentReader.get`` of a compressed segment: the value cache, then the block,
    decompressed through the block cache, searched as ``_lookup`` searches the mapping
    (one ``find`` over a fixed-width key area; a bisect over decoded mixed keys).
    Holds the reader's caches and tables, not the reader."""
    raw, keys_of = seg.raw_block, seg.block_keys
    first_block_after, last_key, min_key = seg.first_keys.bisect_right, seg.last_key, seg.min_key
    u32, u32x2 = _U32.unpack_from, _U32X2.unpack_from

    def find(key: bytes) -> Any:
        if key > last_key or key < min_key:
            return None
        i = first_block_after(key) - 1
        buf = raw(i)
        n, width, _kx, ve, fl, ks = block.shape_at(buf)
        if not width:
            return _mixed_value(buf, keys_of(i), key)
        if len(key) != width:
            return None
        ke = ks + n * width  # values follow the keys
        p = buf.find(key, ks, ke)
        while p >= 0 and (p - ks) % width:  # a match across two keys
            p = buf.find(key, p + 1, ke)
        if p < 0:
            return None
        j = (p - ks) // width
        if buf[fl + j]:
            return TOMBSTONE
        if j:
            a, b = u32x2(buf, ve + 4 * (j - 1))
            return buf[ke + a : ke + b]
        return buf[ke : ke + u32(buf, ve)[0]]

    return value_cache.getter(find)


class SegmentCursor(Cursor):
    """A segment's entries for :func:`~asyncbench.engines.lsm.merging_iterator.merge`."""

    __slots__ = (
        "seg",
        "_i",
        "_j",
        "_stop",
        "_end",
        "_inclusive",
        "_want",
        "_max",
        "_min",
        "_keys_only",
        "_cached",
    )

    def __init__(
        self,
        seg: SegmentReader,
        start: bytes | None,
        end: bytes | None,
        inclusive: bool,
        blocks: int,
        max_blocks: int,
        min_entries: int,
        keys_only: bool,
        cached: bool,
    ) -> None:
        self.keys: list[bytes] = []
        self.values: list[bytes | None] = []
        self.pos = 0
        self.seg = seg
        fk = seg.first_keys
        if start is None:
            self._i, self._j = 0, 0
        elif start > seg.last_key:
            self._i, self._j = len(fk), 0
        else:
            self._i, self._j = seg.locate(start)
        #: Blocks from ``_stop`` on start past ``end``.
        if end is None:
            self._stop = len(fk)
        else:
            self._stop = fk.bisect_right(end) if inclusive else fk.bisect_left(end)
        self._end = end
        self._inclusive = inclusive
        self._want = blocks
        self._max = max(blocks, max_blocks)
        self._min = min_entries
        self._keys_only = keys_only
        self._cached = cached

    def head(self) -> bytes | None:
        if self.pos < len(self.keys):
            return self.keys[self.pos]
        if self._j == 0 and self._end is None:  # at a block boundary: no need to read it
            return self.seg.first_keys[self._i] if self._i < self._stop else None
        return super().head()

    def next_chunk(self) -> Chunk | None:
        i, stop = self._i, self._stop
        if i >= stop:
            return None
        seg = self.seg
        ks: list[bytes] = []
        vs: list[bytes | None] = []
        want = i + self._want
        need = self._min + self._j  # entries before the seek position are cut off below
        if self._keys_only and seg.raw_lengths is None:
            mm, block_keys = seg._mm, seg.block_keys
            flags = bytearray()
            while i < stop and (i < want or len(ks) < need):
                keys, _vends, _vb, fb = block_keys(i)
                ks += keys
                flags += mm[fb : fb + len(keys)]
                i += 1
            vs = [None if f else NOT_READ for f in flags] if 1 in flags else [NOT_READ] * len(ks)
        elif self._keys_only:  # compressed: the keys' flags are in the decompressed block
            raw = seg.raw_block if self._cached else seg.read_block
            while i < stop and (i < want or len(ks) < need):
                k, v = block.decode(raw(i))
                ks += k
                vs += [NOT_READ if x is not None else None for x in v]
                i += 1
        else:
            read = seg.raw_block if self._cached else seg.read_block
            while i < stop and (i < want or len(ks) < need):
                k, v = block.decode(read(i))
                ks += k
                vs += v
                i += 1
        if self._j:
            del ks[: self._j], vs[: self._j]
            self._j = 0
        end = self._end
        if i == stop and end is not None:  # the last block may run past the end
            cut = bisect_right(ks, end) if self._inclusive else bisect_left(ks, end)
            del ks[cut:], vs[cut:]
        self._i = i
        self._want = min(self._max, self._want * 2)
        return ks, vs

    def take_run(self, below: bytes | None, drop_tombstones: bool, max_entries: int) -> BlockRun | None:
        if self.pos < len(self.keys) or self._j or self._end is not None:
            return None
        seg, i, n = self.seg, self._i, self._stop
        fk = seg.first_keys
        if below is None:
            stop = n
        else:
            # blocks before k-1 end below their successor's first key (< below); block
            # k-1 only if the next first key is ``below`` itself or nothing follows
            k = fk.bisect_left(below, i)
            whole = (fk[k] == below) if k < n else seg.last_key < below
            stop = k if whole else k - 1
        if stop <= i:
            return None
        run = seg.block_run(i, stop, drop_tombstones, max_entries)
        if run is not None:
            self._i = i + len(run.first_keys)
        return run
