"""Block codec, segment writer and reader, cursors and compaction: round trips,
lookups, ranges, corruption."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from asyncbench.engines.lsm import block
from asyncbench.engines.lsm.cache import GenerationalCache
from asyncbench.engines.lsm.errors import CorruptSegment
from asyncbench.engines.lsm.merging_iterator import compact, merge
from asyncbench.engines.lsm.segment_reader import TOMBSTONE, SegmentReader
from asyncbench.engines.lsm.segment_writer import SegmentWriter


def write_segment(path: Path, items: list[tuple[bytes, bytes | None]], step: int = 4) -> SegmentReader:
    w = SegmentWriter(path, step)
    for i in range(0, len(items), 7):  # odd slices: blocks span add() calls
        chunk = items[i : i + 7]
        w.add([k for k, _ in chunk], [v for _, v in chunk])
    w.finish()
    return SegmentReader(path, 1, key_cache=8, value_cache=8, block_cache=8)


def damage_block_3(path: Path) -> int:
    """Write 64 entries (k000..k063, 4 per block) to ``path`` and flip a byte in block 3
    (keys k012..k015), so its checksum no longer matches; the block's offset."""
    seg = write_segment(path, [(b"k%03d" % i, b"value%d" % i) for i in range(64)])
    off = seg.offsets[3]
    seg.close()
    data = bytearray(path.read_bytes())
    data[off + 7] ^= 0xFF
    path.write_bytes(bytes(data))
    return off


def entries(seg: SegmentReader, start: bytes | None = None, **kw: object) -> list[tuple[bytes, bytes | None]]:
    """Everything a cursor yields (tombstones included)."""
    return [(k, v) for ks, vs in merge([seg.cursor(start, **kw)], False) for k, v in zip(ks, vs, strict=True)]  # type: ignore[arg-type, misc]


def range_keys(seg: SegmentReader, start: bytes, end: bytes | None, inclusive: bool) -> tuple[list, list]:
    got = entries(
        seg, start, end=end, inclusive=inclusive, blocks=1, max_blocks=2, min_entries=3, keys_only=True
    )
    return [k for k, _ in got], [int(v is None) for _, v in got]


def test_block_round_trip_with_tombstones_and_empty_values() -> None:
    keys = [b"a", b"bb", b"c\x00", b"d" * 300]
    values = [b"1", None, b"", b"x" * 1000]
    assert block.decode(block.encode(keys, values)) == (keys, values)
    fixed = [b"aa", b"bb", b"cc"]
    raw = block.encode(fixed, [b"1", None, b"333"])
    assert block.decode(raw) == (fixed, [b"1", None, b"333"])
    n, width, _kx, _ve, _fl, keys_at = block.shape_at(raw)
    assert (n, width, keys_at) == (3, 2, 4 + 5 * 3)
    assert block.last_key(raw) == b"cc"
    assert block.last_key(block.encode(keys, values)) == b"d" * 300


def test_point_lookups(tmp_path: Path) -> None:
    items = [(b"k%05d" % i, None if i % 10 == 3 else b"v%d" % i) for i in range(0, 1000, 2)]
    seg = write_segment(tmp_path / "s.sst", items)
    assert seg.entries == 500
    assert seg.live == sum(v is not None for _, v in items)
    for k, v in items:
        assert seg.get(k) == (TOMBSTONE if v is None else v)
        assert seg.get(k) == (TOMBSTONE if v is None else v)  # cached path
    for missing in (b"", b"k00001", b"k00999", b"k99999", b"zzz", b"k0"):
        assert seg.get(missing) is None
    seg.close()


def test_cursor_ranges(tmp_path: Path) -> None:
    items = [(b"k%03d" % i, None if i % 5 == 0 else b"") for i in range(100)]
    seg = write_segment(tmp_path / "s.sst", items, step=3)
    keys, flags = range_keys(seg, b"k010", b"k020", False)
    assert keys == [b"k%03d" % i for i in range(10, 20)]
    assert flags == [int(i % 5 == 0) for i in range(10, 20)]
    keys, _ = range_keys(seg, b"k010", b"k020", True)
    assert keys[-1] == b"k020"
    keys, _ = range_keys(seg, b"k0105", b"k015", False)
    assert keys == [b"k011", b"k012", b"k013", b"k014"]
    keys, _ = range_keys(seg, b"k095", b"k099", True)
    assert keys == [b"k%03d" % i for i in range(95, 100)]
    assert range_keys(seg, b"zz", None, False) == ([], [])
    assert range_keys(seg, b"", b"k000", False) == ([], [])
    assert range_keys(seg, b"", b"k000", True) == ([b"k000"], [1])


def test_cursor_seeks_and_covers_everything(tmp_path: Path) -> None:
    items = [(b"%04d" % i, b"v" * (i % 7)) for i in range(500)]
    seg = write_segment(tmp_path / "s.sst", items, step=16)
    assert entries(seg, blocks=1, max_blocks=4) == items
    assert entries(seg, cached=False, blocks=8) == items
    assert [k for k, _ in entries(seg, b"0250x", blocks=1, max_blocks=4)] == [
        b"%04d" % i for i in range(251, 500)
    ]
    assert [k for k, _ in entries(seg, b"0250", keys_only=True)] == [b"%04d" % i for i in range(250, 500)]


def test_writer_rejects_unsorted_keys(tmp_path: Path) -> None:
    w = SegmentWriter(tmp_path / "s.sst", 4)
    w.add([b"b"], [b""])
    with pytest.raises(ValueError):
        w.add([b"a"], [b""])
    w.abort()
    assert not list(tmp_path.iterdir())


def test_corrupt_block_is_detected(tmp_path: Path) -> None:
    path = tmp_path / "s.sst"
    seg = write_segment(path, [(b"k%03d" % i, b"value%d" % i) for i in range(64)])
    off = seg.offsets[3] + 5
    seg.close()
    data = bytearray(path.read_bytes())
    data[off] ^= 0xFF
    path.write_bytes(bytes(data))
    seg = SegmentReader(path, 1)
    with pytest.raises(CorruptSegment):
        for i in range(64):
            seg.get(b"k%03d" % i)


@pytest.mark.parametrize("read", ["get", "scan", "iterate", "compact"])
def test_every_read_path_checks_block_checksums(tmp_path: Path, read: str) -> None:
    path = tmp_path / "s.sst"
    off = damage_block_3(path)
    seg = SegmentReader(path, 1)
    with pytest.raises(CorruptSegment) as err:
        if read == "get":
            seg.get(b"k013")
        elif read == "scan":
            entries(seg, b"k010", keys_only=True, min_entries=50)
        elif read == "iterate":
            entries(seg, blocks=64)
        else:
            for step in compact(
                [seg.cursor(blocks=8, cached=False)], SegmentWriter(tmp_path / "o.sst", 4), True, 64
            ):
                if step is not None:
                    step()
    assert err.value.offset == off and "block 3" in str(err.value)


def test_truncated_file_is_rejected(tmp_path: Path) -> None:
    path = tmp_path / "s.sst"
    write_segment(path, [(b"a", b"1"), (b"b", b"2")]).close()
    path.write_bytes(path.read_bytes()[:-3])
    with pytest.raises(CorruptSegment) as err:
        SegmentReader(path, 1)
    assert err.value.path == path


def test_generational_cache_is_bounded_and_ages() -> None:
    c = GenerationalCache(10)
    loads: list[int] = []

    def load(k: int) -> int | None:
        loads.append(k)
        return None if k < 0 else k

    for i in range(100):
        assert c.get_or_load(i, load) == i
        assert len(c) <= 10
    loads.clear()
    assert c.get_or_load(99, load) == 99 and not loads  # cached
    assert c.get_or_load(0, load) == 0 and loads == [0]  # evicted long ago: loaded again
    assert c.get_or_load(-1, load) is None and c.get_or_load(-1, load) is None
    assert loads == [0, -1, -1]  # "nothing there" is never cached
    c.rotate()  # 0 is now in the old generation
    loads.clear()
    assert c.get_or_load(0, load) == 0 and not loads  # promoted back to young
    c.rotate()
    c.rotate()
    assert c.get_or_load(0, load) == 0 and loads == [0]  # idle for two rotations: gone
    get = c.getter(load)  # the bound form shares the generations
    assert get(0) == 0 and loads == [0]  # the value get_or_load cached
    off = GenerationalCache(0)
    assert off.get_or_load(1, load) == 1 and off.get_or_load(1, load) == 1 and len(off) == 0


@pytest.mark.parametrize("width", ["fixed", "mixed"])
def test_segment_lookups_keep_the_value_cache_bounded_and_aging(tmp_path: Path, width: str) -> None:
    """``SegmentReader.get`` writes the value cache's logic out for speed: it must keep the
    cache's bound, cache tombstones and empty values but never misses, promote an old
    hit, and serve what it cached without touching the block again."""
    items = [
        ((b"%04d" % i) + (b"x" * (i % 3) if width == "mixed" else b""), b"" if i % 7 == 0 else b"v%d" % i)
        for i in range(200)
    ]
    items.sort()
    items[5] = (items[5][0], None)  # a tombstone
    w = SegmentWriter(tmp_path / "s.sst", 4)
    w.add([k for k, _ in items], [v for _, v in items])
    w.finish()
    seg = SegmentReader(tmp_path / "s.sst", 1, key_cache=0, value_cache=10, block_cache=0)
    cache = seg.value_cache
    for k, v in items:
        assert seg.get(k) == (TOMBSTONE if v is None else v)
        assert len(cache) <= 10
    assert seg.get(b"9999") is None and b"9999" not in cache.young and b"9999" not in cache.old
    key, value = items[-1]
    assert cache.young.get(key) == value
    seg._mm.close()  # from here a lookup that reads the file raises
    with pytest.raises(ValueError):
        seg.get(items[0][0])  # evicted long ago: read again
    assert seg.get(key) == value  # served from the cache
    cache.rotate()
    assert seg.get(key) == value and cache.young.get(key) == value  # promoted back to young
    cache.rotate()
    cache.rotate()
    assert key not in cache.young and key not in cache.old  # idle for two rotations: gone
    tomb = items[5][0]
    seg2 = SegmentReader(tmp_path / "s.sst", 2, key_cache=0, value_cache=10, block_cache=0)
    assert seg2.get(tomb) is TOMBSTONE and seg2.value_cache.young.get(tomb) is TOMBSTONE
    off = SegmentReader(tmp_path / "s.sst", 3, key_cache=0, value_cache=0, block_cache=0)
    assert all(off.get(k) == (TOMBSTONE if v is None else v) for k, v in items) and len(off.value_cache) == 0


def test_fixed_width_lookup_ignores_matches_across_key_boundaries(tmp_path: Path) -> None:
    seg = write_segment(tmp_path / "s.sst", [(b"aba", b"1"), (b"bab", b"2"), (b"bcd", None)], step=8)
    assert seg.get(b"bab") == b"2"  # first occurrence of b"bab" in b"ababab..." is misaligned
    assert seg.get(b"abb") is None
    assert seg.get(b"bcd") is TOMBSTONE
    assert seg.get(b"ab") is None  # other width
    seg2 = write_segment(tmp_path / "t.sst", [(b"ab", b"1"), (b"cd", b"2")], step=8)
    assert seg2.get(b"bc") is None and seg2.get(b"cd") == b"2" and seg2.get(b"ab") == b"1"


def test_mixed_width_blocks(tmp_path: Path) -> None:
    items = [(b"k" * (1 + i % 5) + b"%03d" % i, b"v%d" % i) for i in range(60)]
    items.sort()
    seg = write_segment(tmp_path / "s.sst", items, step=4)
    for k, v in items:
        assert seg.get(k) == v
    assert seg.get(b"kk") is None


@pytest.mark.parametrize(
    "widths",
    [
        [8] * 40,  # one width throughout: the index is read as one table
        [8] * 36 + [9] * 4,  # the last blocks' first keys are longer
        [9] * 4 + [8] * 36,  # the first block's first key is longer than the rest
        [8] * 20 + [12] * 4 + [8] * 16,  # one wider block in the middle
    ],
)
def test_index_of_any_first_key_widths_reads_the_same(tmp_path: Path, widths: list[int]) -> None:
    """The fixed-width index (one column of W-byte keys) and the mixed-width one (key end
    offsets, then the keys) give every block's first key, offset, length and checksum,
    and every lookup."""
    items = [((b"%03d" % i).ljust(w, b"-"), b"v%d" % i) for i, w in enumerate(widths)]
    seg = write_segment(tmp_path / "s.sst", items, step=1)  # one entry a block: its first key
    check_index(seg, items)
    # a first key ending in a zero byte cannot be stored zero-padded: offsets instead
    items = [(k + b"\0" if i == 5 else k, v) for i, (k, v) in enumerate(items)]
    seg = write_segment(tmp_path / "z.sst", items, step=1)
    check_index(seg, items)


def check_index(seg: SegmentReader, items: list[tuple[bytes, bytes]]) -> None:
    assert seg.first_keys == [k for k, _ in items]
    assert len(seg.offsets) == len(seg.lengths) == len(seg.crcs) == len(items)
    assert list(seg.offsets) == sorted(seg.offsets) and seg.offsets[0] == 16  # after the header
    assert all(seg.read_block(i) for i in range(len(items)))  # every crc matches its block
    assert seg.last_key == items[-1][0]
    for k, v in items:
        assert seg.get(k) == v


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("drop", [True, False])
def test_merge_segments_matches_a_dict_fold(tmp_path: Path, seed: int, drop: bool) -> None:
    import random

    rng = random.Random(seed)
    sources = []
    model: dict[bytes, bytes | None] = {}
    layers = []
    for s in range(rng.randint(2, 4)):
        lo = rng.randint(0, 300)
        keys = sorted(
            {b"%04d" % rng.randint(lo, lo + rng.choice([20, 200, 600])) for _ in range(rng.randint(1, 150))}
        )
        if rng.random() < 0.3:  # mixed widths too
            keys = sorted(set(keys) | {b"%d" % rng.randint(0, 999) for _ in range(10)})
        layers.append([(k, None if rng.random() < 0.2 else b"v%d-%d" % (s, i)) for i, k in enumerate(keys)])
    for layer in layers:  # oldest first into the model
        model.update(layer)
    for n, layer in enumerate(reversed(layers)):  # newest first as merge sources
        sources.append(write_segment(tmp_path / f"s{n}.sst", layer, step=rng.choice([1, 2, 4, 16])))
    w = SegmentWriter(tmp_path / "out.sst", 4)
    cursors = [s.cursor(blocks=rng.choice([1, 3, 8]), cached=False) for s in sources]
    for step in compact(cursors, w, drop, slice_entries=7):
        if step is not None:
            step()
    w.finish()
    out = SegmentReader(tmp_path / "out.sst", 9)
    got = entries(out)
    reads = [
        (k, v)
        for ks, vs in merge([s.cursor(min_entries=3) for s in sources], drop)
        for k, v in zip(ks, vs, strict=True)
    ]  # type: ignore[misc]
    expected = sorted((k, v) for k, v in model.items() if not (drop and v is None))
    assert reads == expected  # the read path merges the same way
    assert got == expected
    assert out.live == sum(v is not None for _, v in expected)


def test_merge_of_disjoint_segments_copies_blocks(tmp_path: Path) -> None:
    old = write_segment(tmp_path / "a.sst", [(b"a%03d" % i, b"x" * i) for i in range(40)], step=4)
    new = write_segment(tmp_path / "b.sst", [(b"b%03d" % i, b"y") for i in range(40)], step=4)
    w = SegmentWriter(tmp_path / "out.sst", 4)
    copies = 0
    for step in compact(
        [new.cursor(blocks=8, cached=False), old.cursor(blocks=8, cached=False)], w, True, 4096
    ):
        if step is not None:
            copies += 1
            step()
    w.finish()
    assert copies == 2  # one run per source, nothing decoded
    out = SegmentReader(tmp_path / "out.sst", 3)
    raw_blocks = [out.read_block(i) for i in range(len(out.first_keys))]
    assert raw_blocks == [old.read_block(i) for i in range(10)] + [new.read_block(i) for i in range(10)]
    assert out.last_key == b"b039" and out.entries == 80


def test_empty_segment(tmp_path: Path) -> None:
    w = SegmentWriter(tmp_path / "e.sst", 4)
    w.finish()
    seg = SegmentReader(tmp_path / "e.sst", 1)
    assert seg.entries == 0 and seg.get(b"") is None and seg.get(b"a") is None
    assert range_keys(seg, b"", None, False) == ([], [])
    assert entries(seg) == []


def test_a_reader_is_freed_as_soon_as_its_last_user_lets_go(tmp_path: Path) -> None:
    """No reference cycle (the lookup closures hold the tables, not the reader), so a
    merged-away segment is unmapped at once rather than at some later GC pass."""
    import gc
    import weakref

    seg = write_segment(tmp_path / "s.sst", [(b"k%03d" % i, b"v") for i in range(50)])
    assert seg.get(b"k007") == b"v" and entries(seg, keys_only=True)
    ref = weakref.ref(seg)
    gc.disable()
    try:
        del seg
        assert ref() is None
    finally:
        gc.enable()


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(st.binary(min_size=1, max_size=6), st.one_of(st.none(), st.binary(max_size=5))),
        max_size=80,
    ),
    st.integers(1, 9),
    st.sampled_from(["mixed", "fixed", "keys-only"]),
)
def test_encode_many_is_encode_per_block(
    entries: list[tuple[bytes, bytes | None]], step: int, shape: str
) -> None:
    """The bulk encoder (flushes, merges) writes exactly the blocks ``encode`` writes."""
    data = dict(entries)
    keys = sorted(data)
    if shape != "mixed":
        keys = sorted({k.ljust(6, b"_") for k in keys})
    values = [data.get(k.rstrip(b"_"), b"v") for k in keys]
    if shape == "keys-only":
        values = [b""] * len(keys)
    expected = [block.encode(keys[i : i + step], values[i : i + step]) for i in range(0, len(keys), step)]
    assert block.encode_many(keys, values, step) == expected
