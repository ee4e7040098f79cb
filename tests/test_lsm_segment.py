"""Disk segment codec, writer and reader: round trips, lookups, ranges, corruption."""

from __future__ import annotations

from pathlib import Path

import pytest

from engines.lsm.cache import GenerationalCache
from engines.lsm.segment import (
    TOMBSTONE,
    CorruptSegment,
    DiskSegment,
    SegmentWriter,
    decode_block,
    encode_block,
    merge_segments,
)


def write_segment(path: Path, items: list[tuple[bytes, bytes | None]], step: int = 4) -> DiskSegment:
    w = SegmentWriter(path, step)
    for i in range(0, len(items), 7):  # odd slices: blocks span add() calls
        chunk = items[i : i + 7]
        w.add([k for k, _ in chunk], [v for _, v in chunk])
    w.finish()
    return DiskSegment(path, 1, key_cache=8, value_cache=8, block_cache=8)


def test_block_round_trip_with_tombstones_and_empty_values() -> None:
    keys = [b"a", b"bb", b"c\x00", b"d" * 300]
    values = [b"1", None, b"", b"x" * 1000]
    assert decode_block(encode_block(keys, values)) == (keys, values)


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


def test_range_keys_and_truncation(tmp_path: Path) -> None:
    items = [(b"k%03d" % i, None if i % 5 == 0 else b"") for i in range(100)]
    seg = write_segment(tmp_path / "s.sst", items, step=3)
    keys, flags, more = seg.range_keys(b"k010", b"k020", False, 100)
    assert keys == [b"k%03d" % i for i in range(10, 20)]
    assert flags == [int(i % 5 == 0) for i in range(10, 20)]
    assert not more
    keys, _, more = seg.range_keys(b"k010", b"k020", True, 100)
    assert keys[-1] == b"k020" and not more
    keys, _, more = seg.range_keys(b"k0105", None, False, 4)
    assert keys == [b"k011", b"k012", b"k013", b"k014"] and more
    keys, _, more = seg.range_keys(b"k095", b"k099", True, 5)
    assert len(keys) == 5 and not more
    keys, _, more = seg.range_keys(b"k095", b"k099", True, 4)
    assert len(keys) == 4 and more
    assert seg.range_keys(b"zz", None, False, 10) == ([], [], False)


def test_iter_chunks_seeks_and_covers_everything(tmp_path: Path) -> None:
    items = [(b"%04d" % i, b"v" * (i % 7)) for i in range(500)]
    seg = write_segment(tmp_path / "s.sst", items, step=16)
    got = [(k, v) for ks, vs in seg.iter_chunks(None, 4) for k, v in zip(ks, vs, strict=True)]
    assert got == items
    got = [k for ks, _ in seg.iter_chunks(b"0250x", 4) for k in ks]
    assert got == [b"%04d" % i for i in range(251, 500)]


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
    seg = DiskSegment(path, 1)
    with pytest.raises(CorruptSegment):
        for i in range(64):
            seg.get(b"k%03d" % i)


def test_truncated_file_is_rejected(tmp_path: Path) -> None:
    path = tmp_path / "s.sst"
    write_segment(path, [(b"a", b"1"), (b"b", b"2")]).close()
    path.write_bytes(path.read_bytes()[:-3])
    with pytest.raises(CorruptSegment):
        DiskSegment(path, 1)


def test_generational_cache_is_bounded_and_ages() -> None:
    c = GenerationalCache(10)
    for i in range(100):
        c.put(i, i)
        assert len(c) <= 10
    assert c.get(99) == 99 and c.get(0) is None
    c.rotate()
    assert c.get(99) == 99  # promoted back to young
    c.rotate()
    c.rotate()
    assert c.get(99) is None
    off = GenerationalCache(0)
    off.put(1, 1)
    assert off.get(1) is None


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
    for step in merge_segments(sources, w, drop, slice_entries=7):
        if step is not None:
            step()
    w.finish()
    out = DiskSegment(tmp_path / "out.sst", 9)
    got = [(k, v) for ks, vs in out.iter_chunks(None, 4) for k, v in zip(ks, vs, strict=True)]
    expected = sorted((k, v) for k, v in model.items() if not (drop and v is None))
    assert got == expected
    assert out.live == sum(v is not None for _, v in expected)


def test_merge_of_disjoint_segments_copies_blocks(tmp_path: Path) -> None:
    old = write_segment(tmp_path / "a.sst", [(b"a%03d" % i, b"x" * i) for i in range(40)], step=4)
    new = write_segment(tmp_path / "b.sst", [(b"b%03d" % i, b"y") for i in range(40)], step=4)
    w = SegmentWriter(tmp_path / "out.sst", 4)
    for step in merge_segments([new, old], w, True):
        if step is not None:
            step()
    w.finish()
    out = DiskSegment(tmp_path / "out.sst", 3)
    raw_blocks = [out.read_block(i) for i in range(len(out.first_keys))]
    assert raw_blocks == [old.read_block(i) for i in range(10)] + [new.read_block(i) for i in range(10)]
    assert out.last_key == b"b039" and out.entries == 80


def test_empty_segment(tmp_path: Path) -> None:
    w = SegmentWriter(tmp_path / "e.sst", 4)
    w.finish()
    seg = DiskSegment(tmp_path / "e.sst", 1)
    assert seg.entries == 0 and seg.get(b"") is None and seg.get(b"a") is None
    assert seg.range_keys(b"", None, False, 5) == ([], [], False)
    assert list(seg.iter_chunks()) == []
