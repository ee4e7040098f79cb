"""Immutable sorted disk segments: writer, reader, block codec.

File layout (all integers little-endian)::

    header   16 B   b"LSMSEG01" | u32 format version (1) | u32 sparse step
    blocks          one block per ``sparse step`` entries, in key order:
                      u16 n | u16 key width (0 = keys of mixed length)
                      | n x u32 key end offsets (only when width is 0)
                      | n x u32 value end offsets | n x u8 flags (1 = tombstone)
                      | keys | values
    index           per block: u32 first-key length | first key | u64 offset | u32 length
                      | u32 crc32(block); then u32 last-key length | last key
    footer   52 B   u64 index offset | u64 index length | u64 entries | u64 live entries
                      | u32 blocks | u32 crc32(index) | u32 crc32(these 40 bytes) | b"LSMFOOT1"

The index is the sparse in-memory array: the first key of every block (every
``sparse step``-th key) plus the block offsets, so a point lookup is a bisect over the
first keys and then, in a fixed-width block, one C-level ``find`` over the key area in
the mapping (mixed-width blocks are decoded and bisected). Every block's crc32 is checked
the first time it is read. Caches (all bounded): the *key cache* holds decoded block
keys (scans, mixed-width lookups); the *value cache* holds recently read values by key;
the *block cache* holds raw blocks for iterators and merges and drops blocks idle longer
than the lifetime. Values of disk segments are never held in Python objects beyond
those caches. A segment is written to ``*.tmp``, fsynced and renamed, so a listed
segment file is always complete.
"""

from __future__ import annotations

import mmap
import os
import struct
import zlib
from array import array
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterator, Sequence
from functools import partial
from itertools import accumulate
from pathlib import Path
from typing import Any

from engines.lsm.cache import GenerationalCache
from engines.lsm.errors import CorruptSegment

MAGIC = b"LSMSEG01"
FOOTER_MAGIC = b"LSMFOOT1"
VERSION = 1
_HEADER = struct.Struct("<8sII")
_FOOTER = struct.Struct("<QQQQII")
_FOOTER_SIZE = _FOOTER.size + 4 + 8
_INDEX_ENTRY = struct.Struct("<QII")
_U32 = struct.Struct("<I")

#: What a segment lookup returns for a key it holds as deleted.
TOMBSTONE = object()


_u32_structs: dict[int, struct.Struct] = {}
_HDR = struct.Struct("<HH")
_U32X2 = struct.Struct("<II")


def _u32s(n: int) -> struct.Struct:
    s = _u32_structs.get(n)
    if s is None:
        s = _u32_structs[n] = struct.Struct(f"<{n}I")
    return s


def encode_block(keys: Sequence[bytes], values: Sequence[bytes | None]) -> bytes:
    """One data block; ``None`` values are tombstones. Keys of one width are stored
    without a key offset table (point lookups then search the key area directly)."""
    n = len(keys)
    vals = [b"" if v is None else v for v in values]
    width = len(keys[0])
    vends = accumulate(map(len, vals))
    if 0 < width < 0x10000 and len(set(map(len, keys))) == 1:
        head = _HDR.pack(n, width) + _u32s(n).pack(*vends)
    else:
        head = _HDR.pack(n, 0) + _u32s(2 * n).pack(*accumulate(map(len, keys)), *vends)
    flags = bytes([v is None for v in values])
    return b"".join((head, flags, *keys, *vals))


def decode_keys(buf: Any, off: int = 0) -> tuple[list[bytes], tuple[int, ...], int, int]:
    """(keys, value end offsets, values start, flags start) of the block at ``off`` of
    ``buf`` (bytes or the segment's mapping); positions are absolute in ``buf``."""
    n, width = _HDR.unpack_from(buf, off)
    if width:
        vends = _u32s(n).unpack_from(buf, off + 4)
        kb = off + 4 + 5 * n
        ke = kb + n * width
        return [buf[p : p + width] for p in range(kb, ke, width)], vends, ke, off + 4 + 4 * n
    offs = _u32s(2 * n).unpack_from(buf, off + 4)
    kb = off + 4 + 9 * n
    keys = [buf[kb + a : kb + b] for a, b in zip((0, *offs[: n - 1]), offs[:n], strict=False)]
    return keys, offs[n:], kb + offs[n - 1], off + 4 + 8 * n


def decode_block(buf: Any, off: int = 0) -> tuple[list[bytes], list[bytes | None]]:
    """Keys and values of a block (``None`` = tombstone)."""
    keys, vends, vb, fb = decode_keys(buf, off)
    n = len(keys)
    values: list[bytes | None] = [
        buf[vb + a : vb + b] for a, b in zip((0, *vends[: n - 1]), vends, strict=False)
    ]
    flags = buf[fb : fb + n]
    if any(flags):
        for i, f in enumerate(flags):
            if f:
                values[i] = None
    return keys, values


class SegmentWriter:
    """Streams sorted entries into a new segment file (``finish`` makes it visible)."""

    def __init__(self, path: Path, step: int) -> None:
        self.path = Path(path)
        self.tmp = self.path.with_name(self.path.name + ".tmp")
        self.step = step
        self._f = open(self.tmp, "wb", buffering=1 << 20)  # noqa: SIM115 - closed in finish/abort
        self._f.write(_HEADER.pack(MAGIC, VERSION, step))
        self._pos = _HEADER.size
        self._keys: list[bytes] = []
        self._vals: list[bytes | None] = []
        self._index: list[bytes] = []
        self._last: bytes | None = None
        self.entries = 0
        self.live = 0
        self.blocks = 0
        self._finished = False

    def add(self, keys: Sequence[bytes], values: Sequence[bytes | None]) -> None:
        """Append entries whose keys are strictly greater than every key added before."""
        if not keys:
            return
        if self._last is not None and keys[0] <= self._last:
            raise ValueError("segment keys must be strictly increasing")
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

    def add_blocks(
        self,
        raw: bytes,
        firsts: Sequence[bytes],
        lengths: Sequence[int],
        crcs: Sequence[int],
        last: bytes,
        entries: int,
        live: int,
    ) -> None:
        """Append already encoded, consecutive blocks verbatim (merges copy untouched
        runs of blocks); ``raw`` is their bytes, the other arguments their index data."""
        if self._last is not None and firsts[0] <= self._last:
            raise ValueError("segment keys must be strictly increasing")
        if self._keys:
            self._emit(self._keys, self._vals)
            self._keys, self._vals = [], []
        self._last = last
        pos = self._pos
        add = self._index.append
        pack_len, pack_entry = _U32.pack, _INDEX_ENTRY.pack
        for first, length, crc in zip(firsts, lengths, crcs, strict=True):
            add(pack_len(len(first)) + first + pack_entry(pos, length, crc))
            pos += length
        self._f.write(raw)
        self._pos = pos
        self.entries += entries
        self.live += live
        self.blocks += len(firsts)

    def _emit(self, keys: list[bytes], values: list[bytes | None]) -> None:
        raw = encode_block(keys, values)
        first = keys[0]
        self._index.append(
            _U32.pack(len(first)) + first + _INDEX_ENTRY.pack(self._pos, len(raw), zlib.crc32(raw))
        )
        self._f.write(raw)
        self._pos += len(raw)
        self.entries += len(keys)
        self.live += len(keys) - values.count(None)
        self.blocks += 1

    def finish(self) -> None:
        """Write index and footer, fsync and rename into place."""
        if self._keys:
            self._emit(self._keys, self._vals)
            self._keys, self._vals = [], []
        last = self._last or b""
        index = b"".join(self._index) + _U32.pack(len(last)) + last
        footer = _FOOTER.pack(self._pos, len(index), self.entries, self.live, self.blocks, zlib.crc32(index))
        self._f.write(index)
        self._f.write(footer + _U32.pack(zlib.crc32(footer)) + FOOTER_MAGIC)
        self._f.flush()
        os.fsync(self._f.fileno())
        self._f.close()
        os.replace(self.tmp, self.path)
        self._finished = True

    def abort(self) -> None:
        """Give the segment up: it will never be committed, even if already renamed."""
        self._f.close()
        self.tmp.unlink(missing_ok=True)
        if self._finished:
            self.path.unlink(missing_ok=True)


class DiskSegment:
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
        self._file = open(self.path, "rb")  # noqa: SIM115 - closed right after mapping
        size = os.fstat(self._file.fileno()).st_size
        if size < _HEADER.size + _FOOTER_SIZE:
            self._file.close()
            raise CorruptSegment(self.path, None, f"too short for a segment ({size} bytes)")
        self._mm = mmap.mmap(self._file.fileno(), 0, access=mmap.ACCESS_READ)
        self._file.close()  # the mapping keeps its own descriptor
        mm = self._mm
        magic, version, step = _HEADER.unpack_from(mm, 0)
        if magic != MAGIC or version != VERSION:
            raise CorruptSegment(self.path, 0, "bad header")
        fo = size - _FOOTER_SIZE
        footer = mm[fo : fo + _FOOTER.size]
        (fcrc,) = _U32.unpack_from(mm, fo + _FOOTER.size)
        if mm[size - 8 : size] != FOOTER_MAGIC or zlib.crc32(footer) != fcrc:
            raise CorruptSegment(self.path, fo, "bad footer")
        ioff, ilen, self.entries, self.live, nblocks, icrc = _FOOTER.unpack(footer)
        index = mm[ioff : ioff + ilen]
        if zlib.crc32(index) != icrc:
            raise CorruptSegment(self.path, ioff, "index checksum mismatch")
        self.step = step
        self.first_keys: list[bytes] = []
        self.offsets = array("Q")
        self.lengths = array("I")
        self.crcs = array("I")
        pos = 0
        unpack_len = _U32.unpack_from
        unpack_entry = _INDEX_ENTRY.unpack_from
        for _ in range(nblocks):
            (klen,) = unpack_len(index, pos)
            pos += 4
            self.first_keys.append(index[pos : pos + klen])
            pos += klen
            off, length, crc = unpack_entry(index, pos)
            pos += _INDEX_ENTRY.size
            self.offsets.append(off)
            self.lengths.append(length)
            self.crcs.append(crc)
        (klen,) = unpack_len(index, pos)
        self.last_key = index[pos + 4 : pos + 4 + klen]
        # an empty segment gets min > last, so every lookup is out of range
        self.min_key = self.first_keys[0] if self.first_keys else b"\x01"
        self.size = size
        self.block_cache = GenerationalCache(block_cache)
        self.key_cache = GenerationalCache(key_cache)
        self.value_cache = GenerationalCache(value_cache)
        self._verified = bytearray(nblocks)

    def __len__(self) -> int:
        return self.entries

    # --- block access ---------------------------------------------------------------
    def _verify(self, i: int) -> None:
        off = self.offsets[i]
        if zlib.crc32(self._mm[off : off + self.lengths[i]]) != self.crcs[i]:
            raise CorruptSegment(self.path, off, f"block {i} checksum mismatch")
        self._verified[i] = 1

    def raw_block(self, i: int) -> bytes:
        """A block's bytes, checksum verified, through the block cache."""
        raw = self.block_cache.get(i)
        if raw is None:
            off = self.offsets[i]
            raw = self._mm[off : off + self.lengths[i]]
            if zlib.crc32(raw) != self.crcs[i]:
                raise CorruptSegment(self.path, off, f"block {i} checksum mismatch")
            self._verified[i] = 1
            self.block_cache.put(i, raw)
        return raw

    def block_keys(self, i: int) -> tuple[list[bytes], tuple[int, ...], int, int]:
        """Decoded keys of block ``i`` (keys, value ends, values start, flags start;
        positions absolute in the mapping), through the key cache."""
        kc = self.key_cache
        entry = kc.young.get(i)
        if entry is None:
            entry = kc.old.get(i)
            if entry is None:
                if not self._verified[i]:
                    self._verify(i)
                entry = decode_keys(self._mm, self.offsets[i])
            kc.put(i, entry)
        return entry

    def block(self, i: int) -> tuple[list[bytes], list[bytes | None]]:
        return decode_block(self.raw_block(i))

    def copy_blocks(
        self, i: int, j: int, writer: SegmentWriter, drop_tombstones: bool, max_entries: int
    ) -> tuple[int, int, Callable[[], None] | None]:
        """Prepare appending blocks ``i..j-1`` verbatim to ``writer`` (about ``max_entries``
        at most, stopping before a block with tombstones when they are to be dropped).
        Returns (next block, entries, the write to run, e.g. in a worker thread)."""
        mm = self._mm
        offsets, lengths, verified = self.offsets, self.lengths, self._verified
        entries = 0
        b = i
        while b < j and entries < max_entries:
            off = offsets[b]
            n, width = _HDR.unpack_from(mm, off)
            if drop_tombstones:
                fb = off + 4 + (4 if width else 8) * n
                if mm.find(b"\x01", fb, fb + n) >= 0:
                    break
            if not verified[b]:
                self._verify(b)
            entries += n
            b += 1
        if b == i:
            return i, 0, None
        end = offsets[b - 1] + lengths[b - 1]
        last = self.last_key if b == len(self.first_keys) else block_last_key(self.read_block(b - 1))
        live = entries - (0 if drop_tombstones else self._dead(i, b))
        write = partial(
            writer.add_blocks,
            mm[offsets[i] : end],
            self.first_keys[i:b],
            lengths[i:b],
            self.crcs[i:b],
            last,
            entries,
            live,
        )
        return b, entries, write

    def _dead(self, i: int, j: int) -> int:
        """Tombstones in blocks ``i..j-1``."""
        mm = self._mm
        dead = 0
        for b in range(i, j):
            off = self.offsets[b]
            n, width = _HDR.unpack_from(mm, off)
            fb = off + 4 + (4 if width else 8) * n
            dead += mm[fb : fb + n].count(1)
        return dead

    def read_block(self, i: int) -> bytes:
        """A block's bytes, checksum verified, bypassing the caches (merges)."""
        off = self.offsets[i]
        raw = self._mm[off : off + self.lengths[i]]
        if zlib.crc32(raw) != self.crcs[i]:
            raise CorruptSegment(self.path, off, f"block {i} checksum mismatch")
        return raw

    # --- lookups --------------------------------------------------------------------
    def get(self, key: bytes) -> object:
        """The value, ``TOMBSTONE`` if deleted here, or None if this segment lacks the key.

        Fixed-width blocks are searched in place in the mapping (one C-level ``find``
        over the key area, each block's checksum verified on first touch); other
        blocks are decoded through the key cache. Hits land in the value cache."""
        vc = self.value_cache
        v = vc.young.get(key)
        if v is not None:
            return v
        if key > self.last_key or key < self.min_key:
            return None
        v = vc.old.get(key)
        if v is not None:
            vc.put(key, v)
            return v
        i = bisect_right(self.first_keys, key) - 1
        if not self._verified[i]:
            self._verify(i)
        mm = self._mm
        off = self.offsets[i]
        n, width = _HDR.unpack_from(mm, off)
        if width:
            if len(key) != width:
                return None
            kb = off + 4 + 5 * n
            ke = kb + n * width
            p = mm.find(key, kb, ke)
            while p >= 0 and (p - kb) % width:
                p = mm.find(key, p + 1, ke)
            if p < 0:
                return None
            j = (p - kb) // width
            if mm[off + 4 + 4 * n + j]:
                v = TOMBSTONE
            elif j:
                a, b = _U32X2.unpack_from(mm, off + 4 * j)
                v = mm[ke + a : ke + b]
            else:
                (b,) = _U32.unpack_from(mm, off + 4)
                v = mm[ke : ke + b]
        else:
            keys, vends, vb, fb = self.block_keys(i)
            j = bisect_left(keys, key)
            if j == len(keys) or keys[j] != key:
                return None
            v = TOMBSTONE if mm[fb + j] else mm[vb + (vends[j - 1] if j else 0) : vb + vends[j]]
        young = vc.young
        if len(young) >= vc.half:
            if not vc.half:
                return v
            vc.old = young
            vc.young = young = {}
        young[key] = v
        return v

    def locate(self, key: bytes) -> tuple[int, int]:
        """(block, position) of the first entry >= key; block == len(blocks) at the end."""
        fk = self.first_keys
        i = bisect_right(fk, key) - 1
        if i < 0:
            return 0, 0
        keys = self.block_keys(i)[0]
        j = bisect_left(keys, key)
        if j == len(keys):
            return i + 1, 0
        return i, j

    def range_keys(
        self, start: bytes, end: bytes | None, inclusive: bool, limit: int
    ) -> tuple[list, list, bool]:
        """Up to ``limit`` entries with start <= key < end (<= end if inclusive) as
        (keys, tombstone flags, truncated). ``truncated`` says more may follow."""
        if start > self.last_key:
            return [], [], False
        i, j = self.locate(start)
        nblocks = len(self.first_keys)
        out_k: list[bytes] = []
        out_f: list[int] = []
        mm = self._mm
        block_keys = self.block_keys
        while i < nblocks:
            keys, _vends, _vb, fb = block_keys(i)
            n = len(keys)
            if end is None:
                stop = n
            else:
                stop = bisect_right(keys, end, j) if inclusive else bisect_left(keys, end, j)
            take = min(stop, j + limit - len(out_k))
            out_k += keys[j:take]
            out_f += mm[fb + j : fb + take]
            if take < stop:
                return out_k, out_f, True
            if stop < n:
                return out_k, out_f, False
            i += 1
            j = 0
            if len(out_k) >= limit:
                return out_k, out_f, i < nblocks and (end is None or self._more_before(i, end, inclusive))
        return out_k, out_f, False

    def _more_before(self, i: int, end: bytes, inclusive: bool) -> bool:
        fk = self.first_keys[i]
        return fk <= end if inclusive else fk < end

    def iter_chunks(self, start: bytes | None = None, prefetch: int = 16) -> Iterator[tuple[list, list]]:
        """(keys, values) chunks in key order from ``start``; reads ramp from one block
        up to ``prefetch`` blocks per chunk, so short scans stay short."""
        if start is None:
            i, j = 0, 0
        else:
            i, j = self.locate(start)
        nblocks = len(self.first_keys)
        want = 1
        while i < nblocks:
            hi = min(nblocks, i + want)
            ks: list[bytes] = []
            vs: list[bytes | None] = []
            for b in range(i, hi):
                k, v = decode_block(self.raw_block(b))
                if j:
                    k, v = k[j:], v[j:]
                    j = 0
                ks += k
                vs += v
            i = hi
            want = min(prefetch, want * 2)
            if ks:
                yield ks, vs

    def rotate_caches(self) -> None:
        """Lifetime tick: idle blocks age out of the block cache."""
        self.block_cache.rotate()

    def close(self) -> None:
        self.block_cache.clear()
        self.key_cache.clear()
        self.value_cache.clear()
        self._mm.close()


def block_last_key(raw: bytes) -> bytes:
    n, width = _HDR.unpack_from(raw, 0)
    if width:
        ke = 4 + 5 * n + n * width
        return raw[ke - width : ke]
    kb = 4 + 9 * n
    start, end = _U32X2.unpack_from(raw, 4 + 4 * (n - 2)) if n > 1 else (0, _U32.unpack_from(raw, 4)[0])
    return raw[kb + start : kb + end]


class _BlockCursor:
    """Position in one merge source: next undecoded block plus a decoded buffer."""

    __slots__ = ("seg", "i", "n", "keys", "values", "pos")

    def __init__(self, seg: DiskSegment) -> None:
        self.seg = seg
        self.i = 0
        self.n = len(seg.first_keys)
        self.keys: list[bytes] = []
        self.values: list[bytes | None] = []
        self.pos = 0

    def head(self) -> bytes | None:
        if self.pos < len(self.keys):
            return self.keys[self.pos]
        if self.i < self.n:
            return self.seg.first_keys[self.i]
        return None

    def load(self, blocks: int) -> None:
        """Decode up to ``blocks`` next blocks after the unread rest of the buffer."""
        ks, vs = self.keys[self.pos :], self.values[self.pos :]
        for b in range(self.i, min(self.n, self.i + blocks)):
            k, v = decode_block(self.seg.read_block(b))
            ks += k
            vs += v
            self.i = b + 1
        self.keys, self.values, self.pos = ks, vs, 0


def _live_only(keys: list[bytes], values: list[bytes | None]) -> tuple[list[bytes], list[bytes | None]]:
    if None not in values:
        return keys, values
    pairs = [(k, v) for k, v in zip(keys, values, strict=True) if v is not None]
    return [k for k, _ in pairs], [v for _, v in pairs]


def merge_segments(
    srcs: Sequence[DiskSegment], writer: SegmentWriter, drop_tombstones: bool, slice_entries: int = 4096
) -> Iterator[Callable[[], None] | None]:
    """Merge segments (newest first: newer values win) into ``writer``, yielding
    ``None`` between slices of about ``slice_entries`` entries and, for runs of copied
    blocks, the write itself as a callable for the caller to run (in a worker thread).

    A block that lies wholly below every other source's next key is copied verbatim
    (no decode / encode), which makes merging key-disjoint segments (ascending inserts)
    nearly free; interleaved ranges are decoded a few blocks at a time and merged with
    a dict fold plus a sort, newest source last so it wins."""
    cursors = [_BlockCursor(s) for s in srcs]
    done = 0
    while True:
        live = [c for c in cursors if c.head() is not None]
        if not live:
            return
        if done >= slice_entries:
            done = 0
            yield None
        heads = [c.head() for c in live]
        m = min(heads)  # type: ignore[type-var]
        c = live[heads.index(m)]
        if c.pos >= len(c.keys):  # at a block boundary: copy the blocks wholly below the rest
            seg = c.seg
            others = [h for h, x in zip(heads, live, strict=True) if x is not c]
            if others:
                limit = min(others)  # type: ignore[type-var]
                k = bisect_left(seg.first_keys, limit, c.i)
                # blocks before k-1 end below their successor's first key (< limit); block
                # k-1 only if the next first key is the limit itself or nothing follows
                whole = (seg.first_keys[k] == limit) if k < c.n else seg.last_key < limit
                stop = k if whole else k - 1
            else:
                stop = c.n
            if stop > c.i:
                nxt, n, write = seg.copy_blocks(c.i, stop, writer, drop_tombstones, 16 * slice_entries)
                if write is not None:
                    c.i = nxt
                    done = 0
                    yield write  # bulk file write: the driver runs it in a worker thread
                    continue
        if len(live) == 1:
            if c.pos >= len(c.keys):
                c.load(8)
            keys, values = (
                _live_only(c.keys[c.pos :], c.values[c.pos :])
                if drop_tombstones
                else (
                    c.keys[c.pos :],
                    c.values[c.pos :],
                )
            )
            c.pos = len(c.keys)
            writer.add(keys, values)
            done += len(keys) + 1
            continue
        for x in live:
            if x.pos >= len(x.keys):
                x.load(8)
        bound = min(x.keys[-1] for x in live)
        merged: dict[bytes, bytes | None] = {}
        for x in reversed(live):  # oldest first; newer sources overwrite
            end = bisect_right(x.keys, bound, x.pos)
            if end > x.pos:
                merged.update(zip(x.keys[x.pos : end], x.values[x.pos : end], strict=True))
                x.pos = end
        keys = sorted(merged)
        values = [merged[k] for k in keys]
        if drop_tombstones:
            keys, values = _live_only(keys, values)
        writer.add(keys, values)
        done += len(merged)
