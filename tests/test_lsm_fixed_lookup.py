"""The compiled point lookup (``native.fixed_lookup``) against the Python closure it
stands in for: the same answer for every key, the same value cache afterwards, and the
same errors (a damaged block, a closed mapping)."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_lsm_segment import damage_block_3

from asyncbench.engines.lsm.errors import CorruptSegment
from asyncbench.engines.lsm.merging_iterator import merge
from asyncbench.engines.lsm.segment_reader import TOMBSTONE, SegmentReader, _lookup
from asyncbench.engines.lsm.segment_writer import SegmentWriter

pytestmark = pytest.mark.usefixtures("lsm_compiled")  # runs, skips or fails as tests/compiled.py says


def _write(path: Path, items: list[tuple[bytes, bytes | None]], step: int) -> None:
    w = SegmentWriter(path, step)
    w.add([k for k, _ in items], [v for _, v in items])
    w.finish()


def _python_get(seg: SegmentReader):  # noqa: ANN202 - the closure's type is Callable
    """The pure-Python lookup over the same segment (its own caches)."""
    return _lookup(seg._blocks, seg, seg.key_cache, seg.value_cache)


def _cache_state(seg: SegmentReader) -> tuple[dict, dict]:
    return dict(seg.value_cache.young), dict(seg.value_cache.old)


def test_a_fixed_width_segment_gets_the_compiled_lookup(tmp_path: Path) -> None:
    _write(tmp_path / "s.sst", [(b"k%04d" % i, b"v") for i in range(100)], 8)
    seg = SegmentReader(tmp_path / "s.sst", 1)
    assert type(seg.get).__name__ == "FixedLookup"


@settings(max_examples=60, deadline=None)
@given(
    width=st.integers(1, 12),
    mixed=st.booleans(),
    n=st.integers(0, 300),
    step=st.sampled_from([1, 2, 4, 16, 64]),
    capacity=st.sampled_from([0, 1, 5, 64, 10_000]),
    seed=st.integers(0, 2**32 - 1),
    probes=st.lists(st.binary(min_size=0, max_size=14), max_size=40),
)
def test_the_compiled_lookup_answers_and_caches_as_the_python_one(
    tmp_path_factory: pytest.TempPathFactory,
    width: int,
    mixed: bool,
    n: int,
    step: int,
    capacity: int,
    seed: int,
    probes: list[bytes],
) -> None:
    rng = random.Random(seed)
    size = (lambda: rng.randrange(1, width + 1)) if mixed else (lambda: width)
    keys = sorted({bytes(rng.randrange(3) + 97 for _ in range(size())) for _ in range(n)})
    items = [(k, None if rng.random() < 0.2 else rng.randbytes(rng.randrange(6))) for k in keys]
    path = tmp_path_factory.mktemp("seg") / "s.sst"
    _write(path, items, step)
    compiled = SegmentReader(path, 1, key_cache=capacity, value_cache=capacity, block_cache=0)
    plain = SegmentReader(path, 2, key_cache=capacity, value_cache=capacity, block_cache=0)
    slow = _python_get(plain)
    if keys and not mixed:
        assert type(compiled.get).__name__ == "FixedLookup"
    # every key twice (the second one from the cache), misses, other widths, misaligned
    # substrings (keys of few letters repeat inside a block), in a shuffled order
    asked = [k for k, _ in items] * 2 + probes + [k[1:] + k[:1] for k in keys[:20]] + [b"", b"\xff" * width]
    rng.shuffle(asked)
    for k in asked:
        got, want = compiled.get(k), slow(k)
        assert got == want and (got is TOMBSTONE) == (want is TOMBSTONE), k
        assert _cache_state(compiled) == _cache_state(plain), k
    for seg in (compiled, plain):
        seg.close()


@st.composite
def shared_prefix_columns(draw: st.DrawFn) -> tuple[bytes, list[bytes], list[bytes]]:
    """(prefix, keys, probes): 64-400 sorted keys sharing ``prefix``, differing in few
    letters over 1-13 bytes after it (of one width or, mixed, of several), and probes."""
    prefix = draw(st.binary(min_size=0, max_size=14))
    tail, mixed = draw(st.integers(0, 12)), draw(st.booleans())
    rng = random.Random(draw(st.integers(0, 2**32 - 1)))
    width = (lambda: rng.randrange(1, tail + 2)) if mixed else (lambda: tail + 1)
    n = draw(st.integers(64, 400))
    keys = sorted({prefix + bytes(rng.choice(b"ab\x01") for _ in range(width())) for _ in range(n)})
    return prefix, keys, draw(st.lists(st.binary(min_size=0, max_size=30), max_size=30))


@settings(max_examples=60, deadline=None)
@given(column=shared_prefix_columns())
def test_the_windowed_bisect_over_first_keys_finds_what_a_dict_holds(
    tmp_path_factory: pytest.TempPathFactory, column: tuple[bytes, list[bytes], list[bytes]]
) -> None:
    """The first-key search of a column of 64 or more blocks compares each key's 8 bytes
    after the prefix all keys share as a number, then whole keys where those are equal.
    Keys here share a prefix, differ in few letters (so many windows are equal: the
    difference lies past them when ``tail`` is long) and, mixed, differ in width (a
    padded column); probes are shorter than the prefix, outside it, and between keys.
    The compiled scan starts from the same search: its first keys from each probe too."""
    prefix, keys, probes = column
    rng = random.Random(len(keys))
    items = [(k, rng.randbytes(rng.randrange(1, 5))) for k in keys]
    path = tmp_path_factory.mktemp("seg") / "s.sst"
    _write(path, items, 1)  # one key a block: every key is a first key
    seg = SegmentReader(path, 1, value_cache=0, block_cache=0)
    want = dict(items)
    between = [k + b"\x00" for k in keys[:30]] + [k[:-1] for k in keys[:30]] + [prefix[:-1], prefix + b"\xff"]
    asked = keys + probes + between + [prefix + b"b" * 40, b""]
    rng.shuffle(asked)
    for k in asked:
        assert seg.get(k) == want.get(k), k
    assert seg.scan_keys is not None  # the compiled scan starts with the same search
    for k in asked:  # every block was read above, so the compiled scan answers
        assert seg.scan_keys(k, None, False, 3) == [x for x in keys if x >= k][:3], k
    seg.close()


def test_the_compiled_lookup_tests_a_blocks_checksum_before_trusting_it(tmp_path: Path) -> None:
    path = tmp_path / "s.sst"
    damage_block_3(path)
    seg = SegmentReader(path, 1)
    assert type(seg.get).__name__ == "FixedLookup"
    assert seg.get(b"k000") == b"value0"
    with pytest.raises(CorruptSegment):
        seg.get(b"k013")  # block 3: checksum tested on its first touch
    with pytest.raises(CorruptSegment):
        seg.get(b"k014")  # and again: a damaged block is never learned
    seg.close()


def test_the_compiled_lookup_raises_on_a_closed_mapping_and_does_not_hold_it_open(tmp_path: Path) -> None:
    path = tmp_path / "s.sst"
    _write(path, [(b"k%03d" % i, b"value%d" % i) for i in range(64)], 4)
    seg = SegmentReader(path, 1, value_cache=4)
    assert seg.get(b"k001") == b"value1"
    seg.close()  # would raise BufferError if the lookup kept a buffer on the mapping
    with pytest.raises(ValueError):
        seg.get(b"k001")
    with pytest.raises(TypeError):
        seg.get()  # type: ignore[call-arg]


def _cursor_scan(seg: SegmentReader, start: bytes, end: bytes | None, inclusive: bool, limit: int) -> list[bytes]:
    """What ``LsmTree.scan_keys`` read through the cursor and merging iterator before the
    compiled scan: the first ``limit`` live keys of the range."""
    out: list[bytes] = []
    if limit <= 0:
        return out
    for keys, _ in merge([seg.cursor(start, end, inclusive, 1, 16, limit, keys_only=True)], True):
        out += keys
        if len(out) >= limit:
            break
    return out[:limit]


@settings(max_examples=80, deadline=None)
@given(
    width=st.integers(1, 10),
    mixed=st.booleans(),
    n=st.integers(0, 300),
    step=st.sampled_from([1, 2, 4, 16, 64]),
    seed=st.integers(0, 2**32 - 1),
    tombstones=st.sampled_from([0.0, 0.2, 0.9]),
)
def test_the_compiled_scan_returns_what_the_cursor_returns(
    tmp_path_factory: pytest.TempPathFactory,
    width: int,
    mixed: bool,
    n: int,
    step: int,
    seed: int,
    tombstones: float,
) -> None:
    """Fixed-width keys (the created-at and reputation indexes) and mixed-width ones (the
    country/status index: its blocks hold keys of several lengths)."""
    rng = random.Random(seed)
    size = (lambda: rng.randrange(1, width + 1)) if mixed else (lambda: width)
    keys = sorted({bytes(rng.randrange(4) + 97 for _ in range(size())) for _ in range(n)})
    items = [(k, None if rng.random() < tombstones else b"") for k in keys]
    path = tmp_path_factory.mktemp("seg") / "s.sst"
    _write(path, items, step)
    seg = SegmentReader(path, 1)
    if not keys:
        seg.close()
        return
    assert seg.scan_keys is not None
    bounds = [*keys, b"", b"a", b"\xff", *(k[:-1] for k in keys[:5]), *(k + b"\xff" for k in keys[:5])]
    for _ in range(200):
        start = rng.choice(bounds)
        end = None if rng.random() < 0.25 else rng.choice(bounds)
        inclusive = rng.random() < 0.5
        limit = rng.choice([0, 1, 3, 16, 50, 1000])
        got = seg.scan_keys(start, end, inclusive, limit)
        assert got == _cursor_scan(seg, start, end, inclusive, limit), (start, end, inclusive, limit)
    seg.close()


def test_the_compiled_scan_tests_a_blocks_checksum_before_reading_it(tmp_path: Path) -> None:
    path = tmp_path / "s.sst"
    damage_block_3(path)
    seg = SegmentReader(path, 1)
    assert seg.scan_keys is not None
    assert seg.scan_keys(b"k000", None, False, 8) == [b"k%03d" % i for i in range(8)]
    with pytest.raises(CorruptSegment):
        seg.scan_keys(b"k010", None, False, 8)  # runs into block 3 (k012..k015)
    with pytest.raises(CorruptSegment):
        seg.scan_keys(b"k012", b"k013", True, 8)  # and again: a damaged block is never learned
    seg.close()


def test_the_compiled_scan_raises_on_a_closed_mapping_and_does_not_hold_it_open(tmp_path: Path) -> None:
    path = tmp_path / "s.sst"
    _write(path, [(b"k%03d" % i, b"") for i in range(64)], 4)
    seg = SegmentReader(path, 1)
    scan = seg.scan_keys
    assert scan is not None
    assert scan(b"k001", b"k003", True, 10) == [b"k001", b"k002", b"k003"]
    seg.close()  # would raise BufferError if the scan kept a buffer on the mapping
    with pytest.raises(ValueError):
        scan(b"k001", None, False, 10)
    with pytest.raises(TypeError):
        scan(b"k001", None, False)  # type: ignore[call-arg]
