"""Segments no read reaches give their mapped pages back (issue 40 item 3): the RSS holds
what the phases read, not every page a phase read before them touched."""

from __future__ import annotations

import random
from pathlib import Path

import anyio
import pytest

from asyncbench.engines.lsm import maintainer
from asyncbench.engines.lsm.codec import LZ4
from asyncbench.engines.lsm.maintainer import Maintainer
from asyncbench.engines.lsm.segment_reader import SegmentReader
from asyncbench.engines.lsm.segment_writer import SegmentWriter
from asyncbench.engines.lsm.tree import LsmTree, TreeOptions

needs_native = pytest.mark.usefixtures("lsm_compiled")  # runs, skips or fails as tests/compiled.py says


def _rss_file_kib() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("RssFile:"):
            return int(line.split()[1])
    raise AssertionError("no RssFile in /proc/self/status")


def _segment(path: Path, items: list[tuple[bytes, bytes]], codec: str | None) -> SegmentReader:
    w = SegmentWriter(path, 16, codec is not None, codec)
    w.add([k for k, _ in items], [v for _, v in items])
    w.finish()
    return SegmentReader(path, 1)


@needs_native
@pytest.mark.parametrize("codec", [None, LZ4], ids=["plain", "lz4"])
def test_an_idle_segment_releases_its_pages_and_still_reads_right(tmp_path: Path, codec: str | None) -> None:
    """Reading every key brings the file into the RSS; a segment no read reached since
    the last look says so once (``idle``), its release takes the pages out of the RSS,
    and every value still reads the same (the pages come back from the page cache). A
    read in between makes it busy again, and a second release is due only after it."""
    rng = random.Random(11)
    items = [(b"%08d" % i, rng.randbytes(200)) for i in range(60_000)]  # ~12 MB
    seg = _segment(tmp_path / "s.sst", items, codec)
    try:
        assert seg.idle() is False  # the first look: nothing to compare with
        before = _rss_file_kib()
        for k, v in items:
            assert seg.get(k) == v
        touched = _rss_file_kib() - before
        assert touched * 1024 > 0.5 * seg.size
        assert seg.idle() is False  # read since the last look
        assert seg.idle() is True  # not since
        steps = list(seg.release_pages(1 << 20))
        assert len(steps) == -(-seg.size // (1 << 20))  # a step a chunk
        assert _rss_file_kib() - before < 0.2 * touched
        assert seg.idle() is False  # released: not due again until it is read and idle
        for k, v in items:
            assert seg.get(k) == v
        assert seg.idle() is False
        assert seg.idle() is True
    finally:
        seg.close()
    assert seg.idle() is False  # closed: nothing to release
    assert list(seg.release_pages(1 << 20)) == []


@needs_native
def test_scans_count_as_reads(tmp_path: Path) -> None:
    """A tree's scans (the compiled key-range read, a foreground cursor) keep a segment
    busy as its gets do; a compaction's cursor does not."""
    items = [(b"%08d" % i, b"v") for i in range(5_000)]
    seg = _segment(tmp_path / "s.sst", items, None)
    try:
        seg.idle()
        assert seg.scan_keys is not None and seg.scan_keys(b"00000100", None, False, 10)
        assert seg.idle() is False
        assert seg.idle() is True
        seg.cursor(b"00000100", b"00000200")
        assert seg.idle() is False
        assert seg.idle() is True
        seg.cursor(cached=False)
        assert seg.idle() is True
    finally:
        seg.close()


def test_without_a_count_nothing_is_released(tmp_path: Path) -> None:
    """Where the lookup keeps no count (the Python closure: the pure-Python build, mixed
    keys), a segment is never called idle: a release needs proof that nothing read it."""
    items = [(b"%08d" % i, b"v") for i in range(1_000)]
    seg = _segment(tmp_path / "s.sst", items, None)
    try:
        seg.get = lambda key: None  # a closure, as the pure-Python build's
        assert seg.reads() is None
        assert seg.idle() is False and seg.idle() is False
    finally:
        seg.close()


@needs_native
def test_the_maintainer_releases_a_tree_no_one_reads_and_keeps_the_one_being_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two trees read, then only one: after a few idle periods the other's segment is out
    of the RSS while the one still read keeps its pages, and both read right."""
    monkeypatch.setattr(maintainer, "IDLE_RELEASE_S", 0.05)
    rng = random.Random(5)
    trees = []
    for name in ("read", "idle"):
        t = LsmTree(tmp_path / name, TreeOptions(mutable_segment_max_item_count=1_000_000, wal_mode="none"))
        for i in range(40_000):
            t.upsert(b"%08d" % i, rng.randbytes(200))
        t.flush_all()
        trees.append(t)
    busy, idle = trees
    keys = [b"%08d" % i for i in range(40_000)]

    def resident(seg: SegmentReader) -> int:
        """Pages of the segment's file mapped in this process (its lines in smaps)."""
        kib, inside = 0, False
        for line in Path("/proc/self/smaps").read_text().splitlines():
            if line[:1].isdigit() or line[:1] in "abcdef":
                inside = line.endswith(str(seg.path))
            elif inside and line.startswith("Rss:"):
                kib += int(line.split()[1])
        return kib

    released: list[Path] = []
    release = SegmentReader.release_pages

    def recorded(seg: SegmentReader, chunk: int):  # noqa: ANN202 - the method's own generator
        released.append(seg.path)
        return release(seg, chunk)

    monkeypatch.setattr(SegmentReader, "release_pages", recorded)

    async def run() -> None:
        maint = Maintainer(trees, 60_000)
        async with anyio.create_task_group() as tg:
            maint.start(tg)
            for k in keys:
                busy.get(k)
                idle.get(k)
            assert resident(idle.segments[0]) * 1024 > 0.5 * idle.segments[0].size
            for step in range(100):  # ten idle periods of the one; reads of the other in each
                for k in keys[step * 400 : step * 400 + 400]:
                    busy.get(k)
                await anyio.sleep(0.005)
            maint.check()
            assert released == [idle.segments[0].path]  # once, and only the idle tree's
            assert resident(idle.segments[0]) * 1024 < 0.1 * idle.segments[0].size
            assert resident(busy.segments[0]) * 1024 > 0.5 * busy.segments[0].size
            maint.stop()
            tg.cancel_scope.cancel()

    anyio.run(run)
    for t in trees:
        assert all(t.get(k) is not None for k in keys[:1000])
        t.close()
