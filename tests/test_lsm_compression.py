"""Compressed data blocks (segment formats 4, LZ4, and 3, zlib; issue 40 item 2): a
compressed segment reads what a plain one reads on every path (the compiled lookup's
pread included), both merges write it in either codec with the same bytes, a tree
compresses only its merges past ``compression_threshold_mb``, a damaged compressed
payload whose checksum is right is caught where the codec can tell, and the reference
plan's checksums hold on a compressed store."""

from __future__ import annotations

import random
import struct
from collections.abc import Callable
from pathlib import Path

import pytest
from compiled import require_lsm
from conftest import REFERENCE_PLAN, status_line

from asyncbench.engines.lsm import native, segment_writer
from asyncbench.engines.lsm.codec import LZ4, ZLIB, lz4_missing, pack
from asyncbench.engines.lsm.errors import CorruptSegment
from asyncbench.engines.lsm.merging_iterator import NOT_READ, compact, merge
from asyncbench.engines.lsm.segment_reader import TOMBSTONE, SegmentReader
from asyncbench.engines.lsm.segment_writer import (
    COMPRESSED_VERSION,
    HEADER,
    LZ4_VERSION,
    PLAIN_VERSION,
    SegmentWriter,
    default_codec,
)
from asyncbench.engines.lsm.tree import LsmTree, TreeOptions
from asyncbench.workloads.profile_store.reference import REFERENCE_CHECKSUMS

Items = list[tuple[bytes, bytes | None]]
needs_native = pytest.mark.usefixtures("lsm_compiled")  # runs, skips or fails as tests/compiled.py says
CODECS = [LZ4, ZLIB]
VERSION_OF = {LZ4: LZ4_VERSION, ZLIB: COMPRESSED_VERSION}


def test_lz4_is_what_a_compressing_merge_writes_here() -> None:
    """This machine (and CI's) has liblz4.so.1: a tree past its threshold writes LZ4, in
    Python and in the compiled writer; without it the codec would quietly be zlib."""
    assert lz4_missing() is None
    assert native.LZ4 or not native.ACCELERATED
    assert default_codec() == LZ4


def random_items(seed: int, n: int = 600, mixed: bool = False) -> Items:
    rng = random.Random(seed)
    keys = {b"k%06d" % rng.randrange(10 * n) for _ in range(n)}
    if mixed:
        keys |= {b"m%d" % rng.randrange(10 * n) for _ in range(n // 4)}
    return [
        (k, None if rng.random() < 0.1 else b"" if rng.random() < 0.1 else b"v%d-" % i * rng.randint(1, 30))
        for i, k in enumerate(sorted(keys))
    ]


def write(path: Path, items: Items, compress: bool, step: int = 4, codec: str | None = None) -> SegmentReader:
    w = SegmentWriter(path, step, compress=compress, codec=codec)
    for i in range(0, len(items), 7):  # odd slices: blocks span add() calls
        chunk = items[i : i + 7]
        w.add([k for k, _ in chunk], [v for _, v in chunk])
    w.finish()
    return SegmentReader(path, 1, key_cache=8, value_cache=8, block_cache=8)


def everything(seg: SegmentReader, start: bytes | None = None, **kw: object) -> Items:
    return [(k, v) for ks, vs in merge([seg.cursor(start, **kw)], False) for k, v in zip(ks, vs, strict=True)]  # type: ignore[arg-type, misc]


def header_version(path: Path) -> int:
    return HEADER.unpack_from(path.read_bytes(), 0)[1]


@pytest.mark.parametrize("codec", CODECS)
@pytest.mark.parametrize("mixed", [False, True], ids=["fixed-width", "mixed-width"])
@pytest.mark.parametrize("step", [1, 4, 16])
def test_a_compressed_segment_reads_what_a_plain_one_reads(tmp_path: Path, mixed: bool, step: int, codec: str) -> None:
    items = random_items(step, mixed=mixed)
    plain = write(tmp_path / "p.sst", items, False, step)
    packed = write(tmp_path / "c.sst", items, True, step, codec)
    assert header_version(plain.path) == PLAIN_VERSION and not plain.compressed
    assert header_version(packed.path) == VERSION_OF[codec] and packed.compressed and packed.codec == codec
    if native.ACCELERATED:  # the compiled lookup (pread, test, decompress, search), not the closure
        assert type(packed.get) is native.fixed_lookup
    assert packed.size < plain.size  # it is compressed
    assert packed.plain_size >= plain.size  # measured as if plain (its index has one more column)
    assert (packed.entries, packed.live, packed.last_key) == (plain.entries, plain.live, plain.last_key)
    rng = random.Random(step)
    probes = [k for k, _ in items] + [b"k%06d" % rng.randrange(10_000) for _ in range(200)] + [b"", b"zz", b"k"]
    for _ in range(2):  # the second round from the caches
        for key in probes:
            want, got = plain.get(key), packed.get(key)
            assert (got is TOMBSTONE) if want is TOMBSTONE else got == want, key
    assert everything(packed) == everything(plain) == items
    for start in (None, b"k000500", items[len(items) // 2][0], b"m"):
        for kw in ({}, {"keys_only": True, "min_entries": 5}, {"cached": False, "blocks": 3}):
            assert everything(packed, start, **kw) == everything(plain, start, **kw)
        end = items[-3][0]
        assert everything(packed, start, end=end, inclusive=True, keys_only=True) == everything(
            plain, start, end=end, inclusive=True, keys_only=True
        )
    assert any(v is NOT_READ for _, v in everything(packed, keys_only=True))


def test_an_empty_compressed_segment(tmp_path: Path) -> None:
    w = SegmentWriter(tmp_path / "e.sst", 4, compress=True)
    w.finish()
    seg = SegmentReader(tmp_path / "e.sst", 1)
    assert seg.compressed and seg.entries == 0 and seg.get(b"a") is None and everything(seg) == []


@pytest.mark.parametrize("version", [1, 5, 99])
def test_a_segment_of_another_format_is_refused_naming_the_formats_read(tmp_path: Path, version: int) -> None:
    path = write(tmp_path / "s.sst", random_items(1, 40), True).path
    data = bytearray(path.read_bytes())
    struct.pack_into("<I", data, 8, version)
    path.write_bytes(bytes(data))
    with pytest.raises(CorruptSegment, match=f"segment format {version}, this engine reads formats 2, 3, 4") as err:
        SegmentReader(path, 1)
    assert err.value.path == path


@needs_native
@pytest.mark.parametrize("codec", CODECS)
@pytest.mark.parametrize("seed", range(3))
def test_the_compiled_writer_compresses_exactly_as_the_python_writer(tmp_path: Path, seed: int, codec: str) -> None:
    items = random_items(seed, 2_000, mixed=seed == 2)
    python = write(tmp_path / "py.sst", items, True, 16, codec)
    w = SegmentWriter(tmp_path / "c.sst", 16, compress=True, codec=codec)
    w.add_merged([dict(items)], False)  # a memtable's dict
    w.finish()
    assert (tmp_path / "c.sst").read_bytes() == python.path.read_bytes()


def merged(
    sources: list[SegmentReader], out: Path, compress: bool, drop: bool, compiled: bool, codec: str | None = None
) -> SegmentReader:
    w = SegmentWriter(out, 4, compress=compress, codec=codec)
    if compiled:
        w.add_merged([s.native_source() for s in sources], drop)
    else:
        for step in compact([s.cursor(blocks=3, cached=False) for s in sources], w, drop, slice_entries=7):
            if step is not None:
                step()
    w.finish()
    return SegmentReader(out, 9)


@pytest.mark.parametrize("compiled", [True, False], ids=["compiled", "python"])
@pytest.mark.parametrize("drop", [False, True])
@pytest.mark.parametrize("codecs", ["plain", "compressed", "mixed"])
@pytest.mark.parametrize("out", [None, LZ4, ZLIB], ids=["to-plain", "to-lz4", "to-zlib"])
def test_merges_across_codecs_match_a_dict_fold(
    tmp_path: Path, compiled: bool, drop: bool, codecs: str, out: str | None
) -> None:
    if compiled:
        require_lsm()  # runs, skips or fails as tests/compiled.py says
    rng = random.Random(hash((compiled, drop, codecs, out)) & 0xFFFF)
    layers = [random_items(rng.randrange(1000), rng.randint(50, 400), mixed=rng.random() < 0.5) for _ in range(3)]
    model: dict[bytes, bytes | None] = {}
    for layer in layers:  # oldest first
        model.update(layer)
    kinds = {"plain": [None] * 3, "compressed": [LZ4, ZLIB, LZ4], "mixed": [LZ4, None, ZLIB]}[codecs]
    sources = [
        write(tmp_path / f"s{n}.sst", layer, kind is not None, codec=kind)
        for n, (layer, kind) in enumerate(zip(reversed(layers), kinds, strict=True))  # newest first
    ]
    result = merged(sources, tmp_path / "out.sst", out is not None, drop, compiled, out)
    expected = sorted((k, v) for k, v in model.items() if not (drop and v is None))
    assert result.codec == out
    assert everything(result) == expected
    assert result.live == sum(v is not None for _, v in expected)


# --- damage: a compressed payload whose checksum is right ------------------------------------


def damaged_pack(how: str, victim: int = 3) -> Callable[[str, bytes], bytes]:
    """A ``pack`` for ``segment_writer`` that damages block ``victim``'s payload before
    the writer checksums it: the stored crc32 is right for the damaged bytes, as after
    damage that a checksum does not see."""
    count = [0]

    def damaged(codec: str, raw: bytes) -> bytes:
        good = pack(codec, raw)
        count[0] += 1
        if count[0] - 1 != victim:
            return good
        if how == "flip":  # inside the deflate stream
            return good[:5] + bytes([good[5] ^ 0x55]) + good[6:]
        if how == "adler":  # the stream intact, its adler32 of the content wrong
            return good[:-1] + bytes([good[-1] ^ 1])
        if how == "truncated":
            return good[: len(good) // 2]
        if how == "shorter":  # a valid stream of other content (one byte short)
            return pack(codec, raw[:-1])
        if how == "garbage":
            return b"\x00" * len(good)
        raise AssertionError(how)

    return damaged


#: What each codec can tell from its stream alone. LZ4 blocks carry no checksum of their
#: content: a byte changed inside one under a right crc32 decompresses to the right
#: length (as in RocksDB, whose block checksum is likewise of the stored bytes); the
#: crc32 tested on every read is what catches such a change, and it did not see these.
HOWS = [(ZLIB, how) for how in ("flip", "adler", "truncated", "shorter", "garbage")] + [
    (LZ4, how) for how in ("truncated", "shorter", "garbage")
]


def damaged_segment(tmp_path: Path, how: str, monkeypatch: pytest.MonkeyPatch, codec: str) -> tuple[Path, int]:
    """64 entries k000..k063, 4 per block, compressed, block 3 (k012..k015) damaged; the
    path and block 3's offset."""
    items: Items = [(b"k%03d" % i, b"value%d" % i * 5) for i in range(64)]
    with monkeypatch.context() as m:
        m.setattr(segment_writer, "pack", damaged_pack(how))
        w = SegmentWriter(tmp_path / "s.sst", 4, compress=True, codec=codec)
        w.add([k for k, _ in items], [v for _, v in items])
        w.finish()
    seg = SegmentReader(tmp_path / "s.sst", 1)
    off = seg.offsets[3]
    seg.close()
    return tmp_path / "s.sst", off


@pytest.mark.parametrize(("codec", "how"), HOWS)
@pytest.mark.parametrize("read", ["get", "scan", "iterate", "compact"])
def test_a_damaged_compressed_payload_with_a_right_checksum_is_caught_on_every_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, codec: str, how: str, read: str
) -> None:
    path, off = damaged_segment(tmp_path, how, monkeypatch, codec)
    seg = SegmentReader(path, 1)
    assert seg.get(b"k000") == b"value0" * 5 and seg.get(b"k063") == b"value63" * 5  # other blocks read
    with pytest.raises(CorruptSegment) as err:
        if read == "get":
            seg.get(b"k013")
        elif read == "scan":
            everything(seg, b"k010", keys_only=True, min_entries=50)
        elif read == "iterate":
            everything(seg, blocks=64)
        else:
            merged([seg], tmp_path / "o.sst", True, True, compiled=False)
    assert err.value.path == path and err.value.offset == off and "block 3" in str(err.value)
    assert "decompress" in str(err.value)


@needs_native
@pytest.mark.parametrize(("codec", "how"), HOWS)
@pytest.mark.parametrize("out", [False, True], ids=["to-plain", "to-compressed"])
def test_the_compiled_merge_catches_a_damaged_compressed_payload(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, codec: str, how: str, out: bool
) -> None:
    path, off = damaged_segment(tmp_path, how, monkeypatch, codec)
    seg = SegmentReader(path, 1)
    w = SegmentWriter(tmp_path / "o.sst", 4, compress=out)
    with pytest.raises(native.BlockCorrupt) as err:
        w.add_merged([seg.native_source()], False)
    w.abort()
    source, blk, reason = err.value.args
    assert (source, blk) == (0, 3) and "decompress" in reason


def test_a_recorded_length_no_payload_can_have_is_refused_before_allocating(tmp_path: Path) -> None:
    """The decompressed-length column is covered by the index's checksum; one that says
    more than zlib or LZ4 can inflate from the block is damage, not a 4 GB allocation
    (also in the compiled lookup, which hands the block to the Python path to say so)."""
    seg = write(tmp_path / "s.sst", random_items(3, 100), True)
    assert seg.raw_lengths is not None
    seg.raw_lengths[2] = 0xFFFF_FFFF
    with pytest.raises(CorruptSegment, match="block 2 .*length"):
        seg.read_block(2)
    with pytest.raises(CorruptSegment, match="block 2 .*length"):
        seg.get(seg.first_keys[2])
    if native.ACCELERATED:
        w = SegmentWriter(tmp_path / "o.sst", 4)
        with pytest.raises(native.BlockCorrupt, match="impossible"):
            w.add_merged([seg.native_source()], False)
        w.abort()


# --- the tree's threshold -------------------------------------------------------------------


def tree_options(**kw: object) -> TreeOptions:
    base: dict[str, object] = {"mutable_segment_max_item_count": 300, "sparse_array_step": 8, "wal_mode": "none"}
    base.update(kw)
    return TreeOptions(**base)  # type: ignore[arg-type]


@pytest.mark.parametrize("threshold_mb", [0, 1, 1024])
def test_a_tree_compresses_its_merges_only_past_its_threshold(tmp_path: Path, threshold_mb: int) -> None:
    """Flushes stay plain; merges compress once the tree's segments, measured stored
    plain, reach the threshold (here about 1.4 MiB of 2_000 values of 700 bytes)."""
    t = LsmTree(tmp_path, tree_options(compression_threshold_mb=threshold_mb))
    model = {}
    for i in range(2_000):
        key, value = b"key%05d" % i, (b"%d " % i) * 140
        t.upsert(key, value)
        model[key] = value
        if i % 300 == 299:  # as the maintainer does: each flush, then the merges it makes due
            t.flush_all()
            t.merge_all()
    t.flush_all()
    t.merge_all()
    formats = {header_version(s.path) for s in t.segments}
    assert all(not s.compressed for s in t.segments if s.entries <= 300)  # flushes
    plain = sum(s.plain_size for s in t.segments)
    if threshold_mb == 0:
        assert any(s.compressed for s in t.segments)
        assert all(s.compressed for s in t.segments if s.entries > 300)  # every merge's output
    elif threshold_mb == 1024:
        assert formats == {PLAIN_VERSION}
    else:  # 1 MiB: the tree passed it part way, and stays past it once compressed
        assert plain >= 1 << 20 and t.compresses()
    t.compact_all()
    (seg,) = t.segments
    assert seg.compressed == (threshold_mb <= 1)
    assert sum(s.size for s in t.segments) < plain / 3 if seg.compressed else True
    for key, value in model.items():
        assert t.get(key) == value
    assert [k for k, _ in t.iter()] == sorted(model)
    t.close()
    t = LsmTree(tmp_path, tree_options(compression_threshold_mb=threshold_mb))  # reopened
    assert t.segments[0].compressed == (threshold_mb <= 1)
    assert all(t.get(k) == v for k, v in model.items())
    t.close()


@pytest.mark.parametrize("value", [-1, 1 << 20 | 1, True, 1.5, "1024"])
def test_a_threshold_out_of_range_is_refused(value: object) -> None:
    with pytest.raises(ValueError, match="compression_threshold_mb"):
        tree_options(compression_threshold_mb=value)


def test_the_reference_checksums_hold_on_a_compressed_store(tmp_path: Path, run_cli) -> None:
    """The spec's 17 checksums with every merge compressed (threshold 0) and memtables
    small enough that merges run during the inserts, the updates and both
    stabilizations; the kept store is compressed."""
    plan = tmp_path / "reference-compressed.toml"
    text = REFERENCE_PLAN.read_text()
    assert "[engines.lsm]" not in text
    plan.write_text(text + "\n[engines.lsm]\ncompression_threshold_mb = 0\nmutable_segment_max_item_count = 1500\n")
    code, (run,), output = run_cli(str(plan), "--engine", "lsm", "--keep-data", "--no-isolate")
    assert code == 0, output
    (er,) = run["engines"]
    assert status_line(er) == "ok"
    assert {p["name"]: p["checksum"] for p in er["phases"] if p["checksum"]} == REFERENCE_CHECKSUMS
    segments = sorted((tmp_path / "data").glob("profiles-*/lsm/*/seg-*.sst"))
    assert len(segments) == 5 and {header_version(p) for p in segments} == {LZ4_VERSION}


@needs_native
@pytest.mark.parametrize("codec", CODECS)
@pytest.mark.parametrize("drop", [False, True])
def test_a_key_in_two_compressed_sources_is_written_once_when_its_block_ends_both_blocks(
    tmp_path: Path, codec: str, drop: bool
) -> None:
    """The compiled merge advanced the winning source first; when its entry ended its
    block, the block's decompressed buffer was freed (nothing pending pointed into it:
    the entry had just completed an output block) while the other sources' heads were
    still compared with that entry's key, read from the freed buffer, where the next
    block's bytes now lay. An older source holding the same key then kept it, and the
    merge wrote the key twice and refused its output ("keys out of order"): seen in the
    reference plan's post-update stabilization with compressed blocks of 32 entries."""
    # One entry a block: a block's key starts at byte 9 of its buffer, inside the 16 bytes
    # glibc's free writes its own pointers into, so the stale read is seen every time.
    items: Items = [(b"k%03d" % i, b"new%d" % i) for i in range(64)]
    older: Items = [(b"k%03d" % i, b"old%d" % i) for i in range(64)]
    newest = write(tmp_path / "a.sst", items, True, 1, codec)
    oldest = write(tmp_path / "b.sst", older, True, 1, codec)
    w = SegmentWriter(tmp_path / "o.sst", 1, compress=True, codec=codec)
    w.add_merged([newest.native_source(), oldest.native_source()], drop)
    w.finish()
    assert everything(SegmentReader(tmp_path / "o.sst", 3)) == items


def _rss_file_kib() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("RssFile:"):
            return int(line.split()[1])
    raise AssertionError("no RssFile in /proc/self/status")


@needs_native
def test_point_reads_of_a_compressed_segment_decompress_from_its_mapping(tmp_path: Path) -> None:
    """Issue 40 item 1: the compiled lookup of a compressed segment decompresses its
    blocks straight from the mapping (a pread of each block cost about 0.5 us more a get
    at 8M keys), so reading every key brings the file into this process's RSS as
    file-backed pages, as reading a plain segment does. Before, it preaded each block and
    the file stayed out of the RSS (grown about 0): this is the trade the peak RSS
    figures report as mapped file pages."""
    rng = random.Random(7)
    items: Items = [(b"%08d" % i, rng.randbytes(200)) for i in range(60_000)]  # ~12 MB
    grown = {}
    for codec in (None, LZ4):
        seg = write(tmp_path / f"{codec}.sst", items, codec is not None, 32, codec)
        before = _rss_file_kib()
        for k, v in items:
            assert seg.get(k) == v
        grown[codec] = (_rss_file_kib() - before) * 1024 / seg.size
        seg.close()
    assert grown[None] > 0.5  # the plain file came into the RSS through the mapping
    assert grown[LZ4] > 0.5  # and so did the compressed one


@needs_native
def test_a_closed_compressed_segment_releases_its_descriptor_and_refuses_lookups(tmp_path: Path) -> None:
    """A compressed segment holds one descriptor, its mapping's (the compiled lookup
    reads through the mapping and owns none since it stopped preading): closing the
    segment releases it (no descriptor per retired segment left to the collector), and
    a lookup after close raises instead of reading unmapped memory."""
    items = random_items(5, 400)
    fds = len(list(Path("/proc/self/fd").iterdir()))
    seg = write(tmp_path / "c.sst", items, True, 4, LZ4)
    assert type(seg.get).__name__ == "FixedLookup"  # the compiled lookup, not the closure
    assert len(list(Path("/proc/self/fd").iterdir())) == fds + 1  # the mapping's own
    live = next(k for k, v in items if v)
    assert seg.get(live) == dict(items)[live]
    seg.close()
    assert len(list(Path("/proc/self/fd").iterdir())) == fds
    with pytest.raises(ValueError, match="closed"):
        seg.get(items[-1][0])


def test_the_threshold_counts_live_data_not_moved_entries_and_their_tombstones(tmp_path: Path) -> None:
    """An index whose entries all move (an update phase: each key deleted and another
    inserted) holds its live data about twice over plus tombstones until a full merge:
    the threshold is judged on the live data, so a tree whose live data stays below it
    is not compressed by that merge (the reference plan's 10M email index was), while
    one whose live data passes it is. About 1.3 MiB of live entries either way."""
    for threshold_mb, compressed in ((2, False), (1, True)):
        t = LsmTree(tmp_path / f"t{threshold_mb}", tree_options(compression_threshold_mb=threshold_mb))
        for i in range(1_500):
            t.upsert(b"old%05d" % i, b"v" * 900)
        t.flush_all()
        t.compact_all()
        for i in range(1_500):  # every entry moves to another key
            t.delete(b"old%05d" % i)
            t.upsert(b"new%05d" % i, b"v" * 900)
        t.flush_all()
        assert sum(s.plain_size for s in t.segments) >= 2 << 20  # the sum alone would compress
        assert t.compresses() == compressed
        t.compact_all()
        (seg,) = t.segments
        assert seg.compressed == compressed and seg.live == 1_500
        t.close()
