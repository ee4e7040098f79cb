"""A segment's block index mapped at open (``_native.IndexMap``) instead of copied:
the same bytes, the same checks before anything is used, no descriptor kept, and the
mapping gone with the last holder (a retired segment's file is not kept on disk)."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

import pytest

from asyncbench.engines.lsm import CorruptSegment, native
from asyncbench.engines.lsm.segment_reader import SegmentReader
from asyncbench.engines.lsm.segment_writer import FOOTER, FOOTER_SIZE, SegmentWriter
from asyncbench.engines.lsm.tree import LsmTree, TreeOptions

compiled = pytest.mark.usefixtures("lsm_compiled")  # runs, skips or fails as tests/compiled.py says


def mapped_paths() -> list[str]:
    """The files this process has mapped (``/proc/self/maps``), as the kernel names them."""
    with open("/proc/self/maps") as f:
        return [line.split(None, 5)[5].strip() for line in f if len(line.split(None, 5)) == 6]


def open_files() -> list[str]:
    """What this process's descriptors name."""
    out = []
    for fd in os.listdir("/proc/self/fd"):
        with contextlib.suppress(OSError):  # the listing's own descriptor is gone by now
            out.append(os.readlink(f"/proc/self/fd/{fd}"))
    return out


def segment(path: Path, n: int = 3000) -> Path:
    """A plain segment of ``n`` 12-digit keys, 4 a block."""
    w = SegmentWriter(path, 4)
    w.add([b"%012d" % i for i in range(n)], [b"value-%d" % i for i in range(n)])
    w.finish()
    return path


def index_span(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    ioff, ilen, *_ = FOOTER.unpack_from(data, len(data) - FOOTER_SIZE)
    return ioff, ilen


@compiled
@pytest.mark.parametrize("offset", [0, 1, 4095, 4096, 4097, 10_000])
@pytest.mark.parametrize("length", [0, 1, 5000])
def test_an_index_map_holds_the_files_bytes_and_no_descriptor(tmp_path: Path, offset: int, length: int) -> None:
    assert native.index_map is not None
    path = tmp_path / "f"
    content = os.urandom(20_000)
    path.write_bytes(content)
    fd = os.open(path, os.O_RDONLY)
    try:
        m = native.index_map(fd, offset, length)
    finally:
        os.close(fd)
    assert bytes(memoryview(m)) == content[offset : offset + length] and len(m) == length
    assert str(path) not in open_files()  # no descriptor kept (mmap.mmap keeps a dup)
    if length:
        col = native.key_column(m, 0, length, 1, False)
        assert col[length - 1] == content[offset + length - 1 : offset + length]
        del m  # the column holds the mapping
        assert str(path) in mapped_paths()
        del col
    else:
        del m
    assert str(path) not in mapped_paths()


@compiled
def test_an_index_map_refuses_negative_spans(tmp_path: Path) -> None:
    assert native.index_map is not None
    path = tmp_path / "f"
    path.write_bytes(b"x" * 10)
    fd = os.open(path, os.O_RDONLY)
    try:
        with pytest.raises(ValueError):
            native.index_map(fd, -1, 5)
        with pytest.raises(ValueError):
            native.index_map(fd, 0, -5)
        with pytest.raises(OSError):
            native.index_map(-1, 0, 5)
    finally:
        os.close(fd)


@pytest.mark.parametrize("pure", [False, True], ids=["compiled", "python"])
@pytest.mark.parametrize("where", [0.0, 0.3, 0.75, 0.9, 0.999])
def test_a_flipped_byte_anywhere_in_the_index_is_refused_at_open(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, pure: bool, where: float
) -> None:
    """The first keys, the offsets, lengths and crc32 columns, the last key: a change in
    any is refused when the segment opens (over the mapping as over the copy), naming the
    file and the index's offset."""
    if pure:
        monkeypatch.setattr(native, "index_map", None)
    path = segment(tmp_path / "seg-00000001.sst")
    ok = SegmentReader(path, 1)
    assert ok.get(b"%012d" % 1234) == b"value-1234"
    ok.close()
    ioff, ilen = index_span(path)
    data = bytearray(path.read_bytes())
    data[ioff + min(ilen - 1, int(ilen * where))] ^= 0x01
    path.write_bytes(bytes(data))
    with pytest.raises(CorruptSegment) as err:
        SegmentReader(path, 1)
    assert err.value.path == path and err.value.offset == ioff and "index checksum mismatch" in str(err.value)


@compiled
def test_the_first_keys_read_in_place_are_the_ones_the_python_path_reads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = segment(tmp_path / "seg-00000001.sst")
    mapped = SegmentReader(path, 1)
    monkeypatch.setattr(native, "index_map", None)
    copied = SegmentReader(path, 1)
    assert list(mapped.first_keys) == list(copied.first_keys) and mapped.last_key == copied.last_key
    assert (mapped.offsets, mapped.lengths, mapped.crcs) == (copied.offsets, copied.lengths, copied.crcs)
    for i in range(0, 3000, 7):
        assert mapped.get(b"%012d" % i) == copied.get(b"%012d" % i) == b"value-%d" % i
    mapped.close()
    copied.close()


@compiled
def test_a_merged_away_segment_is_unmapped_once_its_file_is_deleted(tmp_path: Path) -> None:
    """The first keys hold their index's mapping: once a merge retired a segment and its
    readers let go, no mapping keeps the deleted file (and its disk space)."""
    t = LsmTree(tmp_path, TreeOptions(mutable_segment_max_item_count=100_000, sparse_array_step=4, wal_mode="none"))
    for part in range(3):
        for i in range(500):
            t.upsert(b"k%02d%05d" % (part, i), b"v%d" % i)
        t.flush_all()
    olds = [str(s.path) for s in t.segments]
    assert len(olds) == 3 and all(p in mapped_paths() for p in olds)
    t.compact_all()
    assert t.get(b"k0100007") == b"v7"
    assert not [p for p in mapped_paths() if any(p.startswith(o) for o in olds)]  # refcounting freed them
    t.close()  # and the live one's with the close, no collection needed
    assert not [p for p in mapped_paths() if p.startswith(str(tmp_path))]
