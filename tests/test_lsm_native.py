"""The compiled flush/merge writer (``engines/lsm/csrc/`` via ``native.py``) writes
exactly the bytes of the pure-Python path for the same entries, and refuses damage the
way the Python path's block reads do."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from asyncbench.engines.lsm import native
from asyncbench.engines.lsm.errors import CorruptSegment
from asyncbench.engines.lsm.segment_reader import SegmentReader
from asyncbench.engines.lsm.segment_writer import SegmentWriter, first_keys_region_py
from asyncbench.engines.lsm.tree import LsmTree, TreeOptions

pytestmark = pytest.mark.usefixtures("lsm_compiled")  # runs, skips or fails as tests/compiled.py says


def _pure_bytes(path: Path, keys: list[bytes], values: list[bytes | None], step: int) -> bytes:
    w = SegmentWriter(path, step)
    if keys:
        w.add(keys, values)
    w.finish()
    return path.read_bytes()


def _native_bytes(path: Path, sources: list, step: int, drop: bool) -> bytes:
    w = SegmentWriter(path, step)
    w.add_merged(sources, drop)
    w.finish()
    return path.read_bytes()


def _random_table(rng: random.Random, n: int, fixed: bool) -> dict[bytes, bytes | None]:
    out: dict[bytes, bytes | None] = {}
    for _ in range(n):
        k = b"%08d" % rng.randrange(10 * n + 1) if fixed else bytes(rng.randrange(97, 100) for _ in range(rng.randrange(0, 6)))
        out[k] = None if rng.random() < 0.15 else bytes(rng.randrange(256) for _ in range(rng.randrange(0, 30)))
    return out


@pytest.mark.parametrize("fixed", [True, False])
@pytest.mark.parametrize("drop", [True, False])
@pytest.mark.parametrize("step", [1, 3, 16])
def test_a_flush_writes_the_python_paths_bytes(tmp_path: Path, fixed: bool, drop: bool, step: int) -> None:
    rng = random.Random(step * 10 + fixed * 2 + drop)
    table = _random_table(rng, 500, fixed)
    keys = sorted(table)
    values = [table[k] for k in keys]
    if drop:
        keys = [k for k in keys if table[k] is not None]
        values = [table[k] for k in keys]
    assert _native_bytes(tmp_path / "n.sst", [table], step, drop) == _pure_bytes(
        tmp_path / "p.sst", keys, values, step
    )


@pytest.mark.parametrize("order", ["random", "sorted", "reversed"])
@pytest.mark.parametrize("shape", ["index keys", "long shared prefix", "prefixes of each other", "any bytes"])
def test_a_flush_sorts_every_key_shape_as_the_python_path(tmp_path: Path, order: str, shape: str) -> None:
    """The flush's radix sort (``csrc/sort.c``): keys sharing long prefixes (the index trees':
    a created-at key starts with 7 zeros, a country/status key with ``CC|status|``), past
    its depth bound (70 shared bytes: the qsort fallback), keys that are prefixes of other
    keys (a key ending at the byte sorted on), any byte value (0 and 255 too), buckets
    large and small, and memtables in key order (no sort), reversed and shuffled."""
    rng = random.Random(hash((order, shape)) & 0xFFFF)
    n = 3000
    if shape == "index keys":
        keys = {b"%s|%s|%020d" % (rng.choice([b"US", b"DE", b"JP"]), rng.choice([b"active", b"banned"]), i) for i in range(n)}
        keys |= {b"%020d|%020d" % (1_600_000_000_000 + rng.randrange(10**6), i) for i in range(n)}
    elif shape == "long shared prefix":
        keys = {b"p" * 70 + bytes(rng.randrange(256) for _ in range(rng.randrange(0, 4))) for _ in range(n)}
    elif shape == "prefixes of each other":
        keys = {bytes(rng.randrange(97, 99) for _ in range(rng.randrange(0, 12))) for _ in range(n)}
    else:
        keys = {bytes(rng.randrange(256) for _ in range(rng.randrange(0, 8))) for _ in range(n)}
    ordered = sorted(keys)
    listed = {"sorted": ordered, "reversed": ordered[::-1], "random": rng.sample(ordered, len(ordered))}[order]
    table: dict[bytes, bytes | None] = {k: (None if rng.random() < 0.1 else b"v%d" % i) for i, k in enumerate(listed)}
    values = [table[k] for k in ordered]
    assert _native_bytes(tmp_path / "n.sst", [table], 16, False) == _pure_bytes(tmp_path / "p.sst", ordered, values, 16)


@settings(max_examples=60, deadline=None)
@given(
    tables=st.lists(
        st.dictionaries(
            st.binary(min_size=0, max_size=4), st.one_of(st.none(), st.binary(max_size=8)), max_size=40
        ),
        min_size=1,
        max_size=4,
    ),
    step=st.integers(1, 5),
    drop=st.booleans(),
    as_segments=st.booleans(),
)
def test_a_merge_writes_the_python_paths_bytes(
    tmp_path_factory: pytest.TempPathFactory, tables: list[dict[bytes, bytes | None]], step: int, drop: bool, as_segments: bool
) -> None:
    """Newest first, the newest value of a key wins, tombstones dropped only when asked;
    sources as segments (blocks decoded in C) or, for the flush, dicts."""
    d = tmp_path_factory.mktemp("m")
    sources: list = []
    segs: list[SegmentReader] = []
    for i, t in enumerate(tables):
        if as_segments:
            ks = sorted(t)
            _pure_bytes(d / f"s{i}.sst", ks, [t[k] for k in ks], 2)
            seg = SegmentReader(d / f"s{i}.sst", i)
            segs.append(seg)
            sources.append(seg.native_source())
        else:
            sources.append(t)
    merged: dict[bytes, bytes | None] = {}
    for t in reversed(tables):
        merged.update(t)
    keys = sorted(merged)
    if drop:
        keys = [k for k in keys if merged[k] is not None]
    expected = _pure_bytes(d / "p.sst", keys, [merged[k] for k in keys], step)
    assert _native_bytes(d / "n.sst", sources, step, drop) == expected
    for seg in segs:
        seg.close()


def test_a_damaged_source_block_stops_the_merge_with_the_files_name(tmp_path: Path) -> None:
    """A flipped byte in a merge source's block: CorruptSegment naming that file and the
    block's offset (as the Python path's block read says), and the merge commits nothing."""
    t = LsmTree(tmp_path, TreeOptions(wal_mode="none", mutable_segment_max_item_count=100))
    for i in range(100):
        t.upsert(b"a%04d" % i, b"x" * 20)
    t.flush_all()
    for i in range(100):
        t.upsert(b"b%04d" % i, b"y" * 20)
    t.flush_all()
    assert len(t.segments) == 2 and not t.frozen
    old = t.segments[1]
    with open(old.path, "r+b") as f:  # a byte inside its third block's values
        f.seek(int(old.offsets[2]) + int(old.lengths[2]) - 1)
        b = f.read(1)
        f.seek(-1, 1)
        f.write(bytes([b[0] ^ 0xFF]))
    before = sorted(p.name for p in tmp_path.iterdir())
    with pytest.raises(CorruptSegment) as err:
        t.merge_all()
    assert err.value.path == old.path
    assert err.value.offset == int(old.offsets[2])
    assert "block 2 checksum mismatch" in str(err.value)
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # the merge's .tmp is gone
    assert len(t.segments) == 2


def test_bad_sources_are_refused(tmp_path: Path) -> None:
    w = SegmentWriter(tmp_path / "x.sst", 4)
    with pytest.raises(TypeError, match="memtable keys must be bytes"):
        w.add_merged([{"text": b"v"}], False)
    with pytest.raises(TypeError, match="a source is a dict"):
        w.add_merged([[b"k"]], False)
    w.abort()
    w = SegmentWriter(tmp_path / "y.sst", 4)
    w.add([b"a"], [b"1"])
    with pytest.raises(ValueError, match="must be empty"):
        w.add_merged([{b"b": b"2"}], False)
    w.abort()


@settings(max_examples=80, deadline=None)
@given(
    keys=st.lists(st.binary(min_size=1, max_size=6), max_size=30, unique=True),
    probes=st.lists(st.binary(max_size=7), max_size=10),
    padded=st.booleans(),
    lo=st.integers(0, 35),
)
def test_a_key_column_is_the_list_of_its_keys(
    keys: list[bytes], probes: list[bytes], padded: bool, lo: int
) -> None:
    """``KeyColumn`` (first keys read in place) against ``KeyList`` (the Python path):
    items, slices, equality and both bisects, fixed-width and zero-padded keys."""
    keys = sorted(k.rstrip(b"\0") or b"x" for k in keys) if padded else sorted({k.ljust(6, b"-") for k in keys})
    keys = sorted(set(keys))
    width = max(map(len, keys), default=1)
    data = b"head" + b"".join(k.ljust(width, b"\0") for k in keys)
    col = native.key_column(data, 4, len(keys), width, padded)
    ref = native.KeyList(keys)
    assert type(col) is not native.KeyList
    assert len(col) == len(ref) and col == ref and list(col[1:-1]) == ref[1:-1]
    assert [col[i] for i in range(-len(keys), len(keys))] == [ref[i] for i in range(-len(keys), len(keys))]
    lo = min(lo, len(keys))
    for p in [*probes, *keys]:
        assert col.bisect_right(p) == ref.bisect_right(p)
        assert col.bisect_left(p, lo) == ref.bisect_left(p, lo)
    with pytest.raises(IndexError):
        col[len(keys)]
    with pytest.raises(ValueError, match="outside"):
        native.key_column(data, 4, len(keys) + 1, width, padded)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.binary(max_size=9), max_size=40), st.integers(min_value=0, max_value=3))
def test_the_compiled_first_key_region_is_the_python_ones_bytes(firsts: list[bytes], shape: int) -> None:
    """Every layout (fixed, padded, mixed; an empty key; a key ending in a zero byte)."""
    if shape == 1:  # fixed width
        firsts = [k.ljust(6, b"x")[:6] for k in firsts]
    elif shape == 2:  # padded: no key empty or ending in a zero byte
        firsts = [k.rstrip(b"\0") or b"k" for k in firsts]
    assert native.first_keys_region is not None
    assert native.first_keys_region(firsts) == b"".join(first_keys_region_py(firsts))


def test_nothing_can_follow_a_compiled_merge_in_its_writer(tmp_path: Path) -> None:
    """``add_merged`` hands back its first keys already encoded (no bytes object per
    block): an entry added after it could not join them, so it is refused."""
    w = SegmentWriter(tmp_path / "s.sst", 16)
    w.add_merged([{b"a": b"1", b"b": b"2"}], False)
    with pytest.raises(ValueError, match="add_merged wrote the whole segment"):
        w.add([b"c"], [b"3"])
    w.finish()
    seg = SegmentReader(tmp_path / "s.sst", 1)
    assert seg.get(b"b") == b"2" and seg.entries == 2
    seg.close()
