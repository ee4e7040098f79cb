"""A compiled merge releases the mapped pages of its sources behind its read position
(issue 40 item 3): a full merge no longer holds its sources resident, and it writes the
same bytes as without the release."""

from __future__ import annotations

import mmap
from pathlib import Path

import pytest

from asyncbench.engines.lsm.segment_reader import SegmentReader
from asyncbench.engines.lsm.segment_writer import SegmentWriter
from asyncbench.measure.memory_sampler import rss_split

pytestmark = [
    pytest.mark.usefixtures("lsm_compiled"),  # runs, skips or fails as tests/compiled.py says
    pytest.mark.skipif(rss_split() is None, reason="no RssFile in /proc/self/status"),
]

MIB = 1 << 20


def _segment(path: Path, first: int, n: int) -> SegmentReader:
    w = SegmentWriter(path, 16)
    w.add_merged([{b"%012d" % i: b"%0240d" % i for i in range(first, first + n)}], False)
    w.finish()
    return SegmentReader(path, 0)


def _touch(segs: list[SegmentReader]) -> None:
    for s in segs:
        mm = s.native_source()[0]
        assert sum(mm[i] for i in range(0, s.size, 4096)) > 0


def _file_rss() -> int:
    split = rss_split()
    assert split is not None
    return split[1]


def _merge(out: Path, sources: list) -> int:
    """The merge of ``sources`` into ``out``; the file-backed RSS right after it, while
    the sources are still open (as in a tree, until the merge commits)."""
    w = SegmentWriter(out, 16)
    w.add_merged(sources, False)
    rss = _file_rss()
    w.finish()
    return rss


def test_a_merge_releases_its_sources_pages_and_writes_the_same_bytes(tmp_path: Path) -> None:
    segs = [_segment(tmp_path / "a.sst", 0, 100_000), _segment(tmp_path / "b.sst", 50_000, 100_000)]
    try:
        total = sum(s.size for s in segs)
        assert total > 40 * MIB
        _touch(segs)
        kept = _merge(tmp_path / "kept.sst", [s.native_source()[:4] for s in segs])  # no flag: as before
        _touch(segs)
        resident = _file_rss()
        released = _merge(tmp_path / "released.sst", [s.native_source() for s in segs])
        # all but the last chunk (8 MiB) of each source left the RSS; without the flag none did
        assert resident - released > total - 2 * 8 * MIB - 4 * MIB, (resident, released, total)
        assert kept > resident - 4 * MIB
        # the released pages come back from the file, unchanged
        assert (tmp_path / "released.sst").read_bytes() == (tmp_path / "kept.sst").read_bytes()
        assert segs[0].get(b"%012d" % 7) == b"%0240d" % 7
    finally:
        for s in segs:
            s.close()


def test_a_page_aligned_anonymous_buffer_is_never_released(tmp_path: Path) -> None:
    """A page-aligned start does not prove a file mapping: private anonymous memory (a
    large bytes object's data is page-aligned now and then: CI met one) holding a
    segment's bytes, marked as a file mapping, merges without being released; releasing
    it would zero it. The alignment was the only guard before: this test failed then."""
    seg = _segment(tmp_path / "a.sst", 0, 60_000)
    try:
        mm, offs, lens, crcs, _ = seg.native_source()
        anon = mmap.mmap(-1, len(mm), flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
        anon[:] = mm
        w = SegmentWriter(tmp_path / "copy.sst", 16)
        w.add_merged([(anon, offs, lens, crcs, True)], False)
        w.finish()
        assert anon[:] == bytes(mm), "the anonymous buffer was released (zeroed)"
        assert (tmp_path / "copy.sst").read_bytes() == (tmp_path / "a.sst").read_bytes()
        anon.close()
    finally:
        seg.close()


def test_a_buffer_that_is_not_a_mapping_is_never_released(tmp_path: Path) -> None:
    """The flag is honoured only for a shared mapping of a file; a bytes copy of a
    segment (not a mapping: releasing it would zero it) merges as before."""
    seg = _segment(tmp_path / "a.sst", 0, 60_000)
    try:
        mm, offs, lens, crcs, _ = seg.native_source()
        data = bytes(mm)
        w = SegmentWriter(tmp_path / "copy.sst", 16)
        w.add_merged([(data, offs, lens, crcs, True)], False)
        w.finish()
        assert data == bytes(mm)
        assert (tmp_path / "copy.sst").read_bytes() == (tmp_path / "a.sst").read_bytes()
    finally:
        seg.close()
