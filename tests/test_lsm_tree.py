"""LSM tree: persistence, flush, merge, recovery, and a model-based property test."""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from asyncbench.engines.lsm.errors import CorruptMeta
from asyncbench.engines.lsm.memtable import Memtable
from asyncbench.engines.lsm.merging_iterator import Cursor, merge
from asyncbench.engines.lsm.tree import LsmTree, TreeOptions, prefix_end


def opts(**kw: object) -> TreeOptions:
    base = {"mutable_segment_max_item_count": 50, "sparse_array_step": 4, "wal_mode": "sync"}
    base.update(kw)
    return TreeOptions(**base)  # type: ignore[arg-type]


def test_options_are_validated() -> None:
    with pytest.raises(ValueError):
        TreeOptions(wal_mode="fast")
    with pytest.raises(ValueError):
        TreeOptions(sparse_array_step=0)
    with pytest.raises(ValueError):
        TreeOptions(mutable_segment_max_item_count="10")  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        TreeOptions(key_cache_size=-1)


def test_prefix_end() -> None:
    assert prefix_end(b"US|active|") == b"US|active}"
    assert prefix_end(b"a\xff\xff") == b"b"
    assert prefix_end(b"\xff") is None


def test_memtable_view_merges_in_only_the_new_keys() -> None:
    mt = Memtable()
    for i in range(0, 200, 2):
        mt.data[b"%03d" % i] = b""
    first = mt.view()
    assert first == sorted(mt.data)
    for i in (1, 51, 199, 2):  # 002 is an update
        mt.data[b"%03d" % i] = None
    assert mt.view() == sorted(mt.data) and len(mt.view()) == 103
    assert mt.view() is mt.view()  # no new keys: no new list
    assert first == sorted(k for k in mt.data if k not in (b"001", b"051", b"199"))


def test_memtable_view_survives_writes() -> None:
    mt = Memtable()
    for k in (b"b", b"d"):
        mt.data[k] = b""
    view = mt.view()
    cursor = mt.cursor()
    mt.data[b"a"] = None
    mt.data[b"c"] = b"1"
    mt.data[b"d"] = b"again"  # an update is no new key
    assert view == [b"b", b"d"]
    assert mt.view() == [b"a", b"b", b"c", b"d"]
    assert cursor.head() == b"b"  # a cursor keeps the view it started with


class ListCursor(Cursor):
    def __init__(self, chunks: list[tuple[list[bytes], list[bytes | None]]]) -> None:
        super().__init__()
        self.chunks = iter(chunks)

    def next_chunk(self) -> tuple[list[bytes], list[bytes | None]] | None:
        return next(self.chunks, None)


@pytest.mark.parametrize("drop", [True, False])
def test_merge_newest_wins_and_drops_tombstones_only_when_asked(drop: bool) -> None:
    newest = ListCursor([([b"a", b"c"], [None, b"new"])])
    older = ListCursor([([b"a", b"b"], [b"old", b"x"]), ([b"c", b"d"], [b"old", None])])
    out = [(k, v) for ks, vs in merge([newest, older], drop) for k, v in zip(ks, vs, strict=True)]  # type: ignore[misc]
    if drop:
        assert out == [(b"b", b"x"), (b"c", b"new")]
    else:
        assert out == [(b"a", None), (b"b", b"x"), (b"c", b"new"), (b"d", None)]


def test_memtable_cursor_bounds() -> None:
    mt = Memtable()
    for k in (b"a", b"b", b"c", b"d"):
        mt.data[k] = None if k == b"b" else k
    got = [
        (k, v)
        for ks, vs in merge([mt.cursor(b"b", b"d", True, 1)], False)
        for k, v in zip(ks, vs, strict=True)
    ]  # type: ignore[misc]
    assert got == [(b"b", None), (b"c", b"c"), (b"d", b"d")]
    assert merge([mt.cursor(b"b", b"d", False, 2)], True).__next__() == ([b"c"], [b"c"])


@pytest.mark.parametrize("mode", ["none", "sync", "async-compressed"])
def test_reopen_keeps_data_across_flushes_and_merges(tmp_path: Path, mode: str) -> None:
    t = LsmTree(tmp_path, opts(wal_mode=mode))
    for i in range(500):
        t.upsert(b"k%04d" % i, b"v%d" % i)
        if i % 3 == 0:
            t.delete(b"k%04d" % (i // 2))
        if i % 120 == 0:
            t.run_job(t.flush_job())
    t.run_job(t.merge_job())
    expected = dict(t.iter())
    t.close()
    t2 = LsmTree(tmp_path, opts(wal_mode=mode))
    assert dict(t2.iter()) == expected
    assert t2.count() == len(expected)
    t2.flush_all()
    t2.merge_all()
    assert len(t2.segments) == 1 and t2.count() == len(expected) == t2.segments[0].live
    t2.close()
    assert dict(LsmTree(tmp_path, opts(wal_mode=mode)).iter()) == expected


def test_flush_retires_wal_and_orphans_are_removed(tmp_path: Path) -> None:
    t = LsmTree(tmp_path, opts())
    for i in range(120):
        t.upsert(b"%03d" % i, b"x")
    t.flush_all()
    assert sorted(p.name for p in tmp_path.glob("wal-*.log")) == [f"wal-{t.wal.seq:08d}.log"]
    t.close()
    (tmp_path / "seg-00000100.sst.tmp").write_bytes(b"junk")  # a crashed flush's output
    t = LsmTree(tmp_path, opts())
    assert not list(tmp_path.glob("*.tmp"))
    assert t.count() == 120
    t.close()
    # An unlisted ``seg-*.sst`` is no crash's leftover (segments are renamed into place
    # only once listed): refused and kept, whatever its id.
    (tmp_path / "seg-00000099.sst").write_bytes(b"junk")
    with pytest.raises(CorruptMeta, match="seg-00000099.sst"):
        LsmTree(tmp_path, opts())
    assert (tmp_path / "seg-00000099.sst").read_bytes() == b"junk"


@pytest.mark.parametrize("mode", ["async-compressed", "sync"])
def test_persisting_again_without_new_writes_flushes_nothing_to_disk(
    tmp_path: Path, mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A settle right after another (or after a stabilization) has nothing new to make
    durable: no fsync, no manifest rewrite. A write in between makes both happen again."""
    import os

    t = LsmTree(tmp_path, opts(wal_mode=mode, mutable_segment_max_item_count=1000))
    t.upsert(b"a", b"1")
    t.wal.write_now()
    t.wal.sync()
    t.save_meta()
    fsyncs: list[int] = []
    real_fsync = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (fsyncs.append(fd), real_fsync(fd))[1])
    meta_before = (tmp_path / "meta.json").stat().st_mtime_ns, (tmp_path / "meta.json").stat().st_ino
    t.wal.write_now()
    t.wal.sync()
    t.save_meta()
    assert fsyncs == []
    assert ((tmp_path / "meta.json").stat().st_mtime_ns, (tmp_path / "meta.json").stat().st_ino) == meta_before
    t.upsert(b"b", b"2")
    t.wal.write_now()
    t.wal.sync()
    assert fsyncs  # the new record reached the disk
    monkeypatch.undo()
    t.close()
    t = LsmTree(tmp_path, opts(wal_mode=mode))
    assert t.get(b"a") == b"1" and t.get(b"b") == b"2"
    t.close()


def test_get_follows_every_change_of_the_segment_list(tmp_path: Path) -> None:
    """``get`` calls the only segment directly; every flush, merge and reopen that
    changes the segments must change what it calls (a stale one would return old values)."""
    t = LsmTree(tmp_path, opts(mutable_segment_max_item_count=1000))
    t.upsert(b"k", b"1")
    t.upsert(b"gone", b"x")
    t.flush_all()
    assert len(t.segments) == 1 and t.get(b"k") == b"1"
    t.upsert(b"k", b"2")
    t.delete(b"gone")
    t.flush_all()  # two segments: the general path
    assert len(t.segments) == 2 and t.get(b"k") == b"2" and t.get(b"gone") is None
    t.merge_all()  # one segment again: the merged one
    assert len(t.segments) == 1 and t.get(b"k") == b"2" and t.get(b"gone") is None
    t.upsert(b"k", b"3")
    t.freeze()  # a frozen memtable in front of the one segment
    assert t.frozen and t.get(b"k") == b"3"
    t.flush_all()
    t.merge_all()
    assert t.get(b"k") == b"3"
    t.close()
    t = LsmTree(tmp_path, opts())
    assert t.get(b"k") == b"3" and t.get(b"gone") is None
    t.close()


def test_unclosed_sync_tree_recovers_from_wal(tmp_path: Path) -> None:
    t = LsmTree(tmp_path, opts(mutable_segment_max_item_count=1000))
    for i in range(100):
        t.upsert(b"%03d" % i, b"v")
    t.delete(b"050")
    # no close: as after a crash; the sync log has every acknowledged write
    t2 = LsmTree(tmp_path, opts(mutable_segment_max_item_count=1000))
    assert t2.count() == 99 and t2.get(b"050") is None and t2.get(b"051") == b"v"


def test_scan_keys_sees_through_tombstones_in_newer_sources(tmp_path: Path) -> None:
    t = LsmTree(tmp_path, opts(mutable_segment_max_item_count=10_000))
    for i in range(200):
        t.upsert(b"i%03d" % i, b"")
    t.flush_all()
    for i in range(0, 150):
        t.delete(b"i%03d" % i)
    assert t.scan_keys(b"i", None, False, 5) == [b"i150", b"i151", b"i152", b"i153", b"i154"]
    assert t.scan_prefix(b"i19", 50) == [b"i%03d" % i for i in range(190, 200)]
    assert t.scan_keys(b"i100", b"i160", True, 100) == [b"i%03d" % i for i in range(150, 161)]


KEYS = st.binary(min_size=0, max_size=3).map(lambda b: bytes(c % 4 for c in b).replace(b"\x03", b"\xff"))
VALUES = st.binary(max_size=6)


class TreeModel(RuleBasedStateMachine):
    """Random upserts/deletes/gets/scans against a dict + sorted-list model, across
    automatic freezes, interleaved partial flush and merge jobs, and reopens."""

    def __init__(self) -> None:
        super().__init__()
        import tempfile

        self.dir = Path(tempfile.mkdtemp(prefix="lsm-model-"))
        self.model: dict[bytes, bytes] = {}
        self.jobs: list = []

    @initialize(mode=st.sampled_from(["none", "sync", "async-compressed"]), cap=st.integers(2, 12))
    def start(self, mode: str, cap: int) -> None:
        self.options = opts(wal_mode=mode, mutable_segment_max_item_count=cap, sparse_array_step=2)
        self.tree = LsmTree(self.dir, self.options)

    @rule(k=KEYS, v=VALUES)
    def upsert(self, k: bytes, v: bytes) -> None:
        self.tree.upsert(k, v)
        self.model[k] = v

    @rule(k=KEYS)
    def delete(self, k: bytes) -> None:
        self.tree.delete(k)
        self.model.pop(k, None)

    @rule(k=KEYS)
    def get(self, k: bytes) -> None:
        assert self.tree.get(k) == self.model.get(k)

    @rule()
    def stabilize(self) -> None:
        """What a stabilization leaves, unless jobs are under way: one segment, empty
        memtables (the state in which ``scan_keys`` is the segment's compiled scan)."""
        if not self.jobs:
            self.tree.flush_all()
            self.tree.compact_all()

    @rule(start=KEYS, end=st.none() | KEYS, inclusive=st.booleans(), limit=st.integers(1, 8))
    def scan(self, start: bytes, end: bytes | None, inclusive: bool, limit: int) -> None:
        keys = sorted(self.model)
        i = bisect_left(keys, start)
        j = len(keys) if end is None else bisect_right(keys, end) if inclusive else bisect_left(keys, end)
        assert self.tree.scan_keys(start, end, inclusive, limit) == keys[i:j][:limit]

    @rule(start=st.none() | KEYS)
    def iterate(self, start: bytes | None) -> None:
        expected = sorted((k, v) for k, v in self.model.items() if start is None or k >= start)
        assert list(self.tree.iter(start)) == expected

    @rule()
    def freeze(self) -> None:
        self.tree.freeze()

    @rule(kind=st.sampled_from(["flush", "merge"]))
    def start_job(self, kind: str) -> None:
        busy = {k for k, _ in self.jobs}
        if kind in busy:
            return
        job = self.tree.flush_job() if kind == "flush" else self.tree.merge_job()
        if job is not None:
            self.jobs.append((kind, job))

    @precondition(lambda self: bool(self.jobs))
    @rule(steps=st.integers(1, 4), which=st.integers(0, 1))
    def advance_job(self, steps: int, which: int) -> None:
        kind, job = self.jobs[which % len(self.jobs)]
        for _ in range(steps):
            step = next(job, StopIteration)
            if step is StopIteration:
                self.jobs.remove((kind, job))
                return
            if step is not None:
                step()

    @rule()
    def reopen(self) -> None:
        for _, job in self.jobs:
            job.close()
        self.jobs = []
        self.tree.close()
        self.tree = LsmTree(self.dir, self.options)

    @rule()
    def crash(self) -> None:
        """Reopen a copy of the files as they are now, mid-job perhaps: what a kill
        leaves (after the log writer drained; ``none`` mode loses memtables by design)."""
        if self.options.wal_mode == "none":
            return
        import shutil
        import tempfile

        self.tree.wal.write_now()
        copy = Path(tempfile.mkdtemp(prefix="lsm-model-"))
        shutil.copytree(self.dir, copy, dirs_exist_ok=True)
        self.reopen()
        self.tree.close()
        shutil.rmtree(self.dir, ignore_errors=True)
        self.dir = copy
        self.tree = LsmTree(self.dir, self.options)

    @invariant()
    def count_matches(self) -> None:
        if hasattr(self, "tree"):
            assert self.tree.count() == len(self.model)

    def teardown(self) -> None:
        import shutil

        for _, job in self.jobs:
            job.close()
        if hasattr(self, "tree"):
            self.tree.close()
        shutil.rmtree(self.dir, ignore_errors=True)


TreeModel.TestCase.settings = settings(
    max_examples=60, stateful_step_count=60, deadline=None, suppress_health_check=list(HealthCheck)
)
test_tree_matches_model = TreeModel.TestCase


def _pinned_tree_bytes(path: Path, monkeypatch: pytest.MonkeyPatch) -> bytes:
    import random

    from asyncbench.engines.lsm import tree as tree_mod

    monkeypatch.setattr(tree_mod, "MAX_SEGMENTS", 1)
    t = LsmTree(path, TreeOptions(wal_mode="none", mutable_segment_max_item_count=700, sparse_array_step=8))
    rng = random.Random(7)
    for i in range(5000):
        k = b"k%05d" % rng.randrange(4000) if i % 3 else b"x" * rng.randrange(1, 9) + b"%d" % i
        if rng.random() < 0.1:
            t.delete(k)
        else:
            t.upsert(k, b"v" * rng.randrange(0, 40))
        if i % 1500 == 0:
            t.merge_all()
    for i in range(800):
        t.upsert(b"z%05d" % i, b"w")
    t.flush_all()
    t.merge_all()
    (seg,) = path.glob("seg-*.sst")
    t.close()
    return seg.read_bytes()


def test_flushes_and_merges_write_the_bytes_the_format_always_had(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Pinned: the data blocks' hash is of what the engine wrote before its modules were
    split (flushes, decoded merges with tombstones, and block-copying merges), the whole
    file's of segment format 2 (the columnar index), so a change of the on-disk format or
    of the merge's block layout cannot go unnoticed. Merged into one segment as the full
    bottom merge did (MAX_SEGMENTS = 1), so the bytes are the same as then. This is the
    pure-Python path (``native.ACCELERATED`` off); the compiled one is pinned below."""
    import hashlib
    import struct

    from asyncbench.engines.lsm import native

    monkeypatch.setattr(native, "ACCELERATED", False)
    data = _pinned_tree_bytes(tmp_path, monkeypatch)
    (index_offset,) = struct.unpack_from("<Q", data, len(data) - 52)
    blocks = hashlib.sha256(data[16:index_offset]).hexdigest()
    assert blocks == "c841af993ae8338ce45b83e2b02e4cc311291c9b6a6e4e40df533d87b531add8"  # as in format 1
    digest = hashlib.sha256(data).hexdigest()
    assert digest == "0d0098e9ce367751b322143bb190b9b878f6673e7e0b5951962ad385200c0023"


def test_the_compiled_merge_writes_full_blocks_of_the_same_entries(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Pinned, compiled path: the same tree as above. Its merges re-encode every entry
    (the Python path copies untouched blocks verbatim, so its blocks may end short in
    the middle of a file): the entries are the same, the blocks are all full but the
    last, and exactly what ``SegmentWriter.add`` writes for those entries."""
    import hashlib

    from compiled import require_lsm

    from asyncbench.engines.lsm import native
    from asyncbench.engines.lsm.segment_reader import SegmentReader
    from asyncbench.engines.lsm.segment_writer import SegmentWriter

    require_lsm()
    data = _pinned_tree_bytes(tmp_path / "c", monkeypatch)
    monkeypatch.setattr(native, "ACCELERATED", False)
    pure = _pinned_tree_bytes(tmp_path / "p", monkeypatch)
    (tmp_path / "c.sst").write_bytes(data)
    (tmp_path / "p.sst").write_bytes(pure)
    c, p = SegmentReader(tmp_path / "c.sst", 0), SegmentReader(tmp_path / "p.sst", 1)
    def entries(seg: SegmentReader) -> tuple[list[bytes], list[bytes | None]]:
        keys: list[bytes] = []
        values: list[bytes | None] = []
        for ks, vs in merge([seg.cursor(blocks=64, max_blocks=64)], False):
            keys += ks
            values += vs
        return keys, values

    keys, values = entries(c)
    assert (keys, values) == entries(p)
    w = SegmentWriter(tmp_path / "again.sst", 8)
    w.add(keys, values)
    w.finish()
    assert (tmp_path / "again.sst").read_bytes() == data
    c.close()
    p.close()
    assert hashlib.sha256(data).hexdigest() == "2dcae8d7e91d48c2e5118d8498c1d84cd16ac0a34dab481aaefb8a34659307c8"


@pytest.mark.parametrize("crash", [False, True])
def test_reopening_a_flushed_tree_does_not_pile_up_logs(tmp_path: Path, crash: bool) -> None:
    """Each open starts a new log; one that replayed no record (nothing was written after
    the last flush) is retired once the manifest says so, after a clean close or not.
    Before, every reopen of a stabilized store kept one more empty log to replay."""
    t = LsmTree(tmp_path, TreeOptions(wal_mode="sync"))
    for i in range(50):
        t.upsert(b"k%03d" % i, b"v")
    t.flush_all()
    t.close()
    for _ in range(4):
        t = LsmTree(tmp_path, TreeOptions(wal_mode="sync"))
        assert [k for k, _ in t.iter()] == [b"k%03d" % i for i in range(50)]
        if crash:  # no close: the next open sees an unclean stop
            t.wal.close()
            for seg in t.segments:
                seg.close()
        else:
            t.close()
    assert len(list(tmp_path.glob("wal-*.log"))) == 1
    t = LsmTree(tmp_path, TreeOptions(wal_mode="sync"))
    t.upsert(b"new", b"1")  # a log with a record is kept and replayed
    t.close()
    t = LsmTree(tmp_path, TreeOptions(wal_mode="sync"))
    assert t.get(b"new") == b"1" and len(list(tmp_path.glob("wal-*.log"))) == 2
    t.close()


def test_persisted_says_whether_a_sync_and_save_would_write(tmp_path: Path) -> None:
    """What lets a settle after a stabilization skip its worker thread: False while a
    log holds unsynced bytes or the manifest differs from the saved one, True after."""
    t = LsmTree(tmp_path, TreeOptions(wal_mode="async-compressed"))
    t.upsert(b"k", b"v")
    assert not t.persisted()  # a queued record
    t.wal.write_now()
    assert not t.persisted()  # written, not fsynced
    t.wal.sync()
    t.save_meta()
    assert t.persisted()
    t.flush_all()  # a new segment: the manifest changed and was saved by the flush
    t.wal.sync()
    assert t.persisted()
    t.close()
