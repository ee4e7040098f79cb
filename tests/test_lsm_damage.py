"""Damaged or missing stores are refused with an error naming the file (and offset),
never silently repaired away; only what provably was never committed is dropped."""

from __future__ import annotations

import json
import pickle
import shutil
import struct
import zlib
from pathlib import Path

import anyio
import pytest
from conftest import store_of

from asyncbench.engine import EngineConfig, opened
from asyncbench.engines.clean_shutdown import CleanShutdownMarker
from asyncbench.engines.lsm import (
    CorruptLog,
    CorruptMeta,
    CorruptSegment,
    CorruptStore,
    MissingStore,
    native,
    segment_writer,
)
from asyncbench.engines.lsm.adapter import LAYOUT, LsmEngine
from asyncbench.engines.lsm.meta import encode_meta, read_meta
from asyncbench.engines.lsm.segment_reader import SegmentReader
from asyncbench.engines.lsm.segment_writer import FOOTER, FOOTER_SIZE, SegmentWriter
from asyncbench.engines.lsm.tree import LsmTree, TreeOptions
from asyncbench.engines.store_dir import MARKER, StoreDamaged, StoreDir
from asyncbench.workloads.profile_store.generate import create_many
from asyncbench.workloads.profile_store.kv_recovery import STORE_NAMES as TREE_NAMES
from asyncbench.workloads.profile_store.kv_store import STORE_NAMES as PROFILE_STORES

FRAME = struct.Struct("<IIB")


def opts(**kw: object) -> TreeOptions:
    base = {"mutable_segment_max_item_count": 100_000, "sparse_array_step": 4, "wal_mode": "sync"}
    base.update(kw)
    return TreeOptions(**base)  # type: ignore[arg-type]


def snapshot(directory: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(directory.iterdir()) if p.is_file()}


def frame_offsets(path: Path) -> list[int]:
    """Start offsets of the frames of a log (format in ``engines/lsm/wal.py``)."""
    data = path.read_bytes()
    out, pos = [], 8
    while pos + FRAME.size <= len(data):
        out.append(pos)
        pos += FRAME.size + FRAME.unpack_from(data, pos)[0]
    assert pos == len(data)
    return out


def logs(directory: Path) -> list[Path]:
    return sorted(directory.glob("wal-*.log"))


def tree_with_segments(path: Path) -> dict[bytes, bytes]:
    """A closed tree with two segments (no merge ran) and some keys only in its log."""
    t = LsmTree(path, opts())
    for i in range(40):
        t.upsert(b"a%03d" % i, b"v%d" % i)
    t.flush_all()
    for i in range(40):
        t.upsert(b"b%03d" % i, b"w%d" % i)
    t.flush_all()
    t.upsert(b"c", b"in the log")
    expected = dict(t.iter())
    assert len(t.segments) == 2
    t.close()
    return expected


def logged_tree(path: Path, n: int = 30, close: bool = True, **kw: object) -> list[tuple[bytes, bytes]]:
    """A tree whose records are all in its write-ahead log (one frame per write in sync
    mode); closed cleanly, or abandoned as after a kill."""
    t = LsmTree(path, opts(**kw))
    items = [(b"k%04d" % i, b"value-%d" % i) for i in range(n)]
    for k, v in items:
        t.upsert(k, v)
    if close:
        t.close()
    else:
        t.wal.write_now()  # what the background writer had written before the kill
        for log in t.wal.files.values():
            log.close()
    return items


# --- item 7: a missing meta.json never deletes segments --------------------------------------


def test_missing_meta_with_segments_is_refused_and_nothing_is_deleted(tmp_path: Path) -> None:
    tree_with_segments(tmp_path)
    (tmp_path / "meta.json").unlink()
    before = snapshot(tmp_path)
    with pytest.raises(CorruptMeta) as err:
        LsmTree(tmp_path, opts())
    assert err.value.path == tmp_path / "meta.json"
    assert "meta.json" in str(err.value) and "seg-" in str(err.value)
    assert snapshot(tmp_path) == before


def rewrite_meta(directory: Path, **changes: object) -> None:
    """Replace the manifest by a *valid* one (checksum right) with ``changes``: what a
    forger, or a manifest from another moment of the tree's life, looks like."""
    meta = read_meta(directory)
    assert meta is not None
    for k, v in changes.items():
        setattr(meta, k, v)
    (directory / "meta.json").write_text(encode_meta(meta))


def test_unlisted_segment_that_is_no_crash_leftover_is_refused_not_deleted(tmp_path: Path) -> None:
    tree_with_segments(tmp_path)
    meta = read_meta(tmp_path)
    assert meta is not None
    dropped = meta.segments[-1]  # as if meta.json lost an entry
    rewrite_meta(tmp_path, segments=meta.segments[:-1])
    before = snapshot(tmp_path)
    with pytest.raises(CorruptMeta) as err:
        LsmTree(tmp_path, opts())
    assert f"seg-{dropped:08d}.sst" in str(err.value)
    assert snapshot(tmp_path) == before


# --- issue 23 item 1: a replaced manifest is refused, never "repaired" by deleting segments ---


@pytest.mark.parametrize(
    "text",
    [
        "{}",
        '{"version": 1}',
        '{"version": 2}',
        '{"segments": [], "next_id": 0}',
        '{"version": 1, "segments": [], "next_id": 0, "min_wal": 0}',
    ],
)
def test_meta_replaced_by_other_json_is_refused_and_nothing_is_deleted(tmp_path: Path, text: str) -> None:
    """Before the manifest had a checksum, ``{}`` made open delete every segment as a
    crashed flush's leftover (ids >= next_id 0) and the tree opened empty."""
    expected = tree_with_segments(tmp_path)
    original = (tmp_path / "meta.json").read_bytes()
    (tmp_path / "meta.json").write_text(text)
    before = snapshot(tmp_path)
    with pytest.raises(CorruptMeta) as err:
        LsmTree(tmp_path, opts())
    assert err.value.path == tmp_path / "meta.json" and "meta.json" in str(err.value)
    assert snapshot(tmp_path) == before
    (tmp_path / "meta.json").write_bytes(original)  # the tree's own manifest again
    t = LsmTree(tmp_path, opts())
    assert dict(t.iter()) == expected  # every entry is still there
    t.close()


def test_meta_edited_without_its_checksum_is_refused(tmp_path: Path) -> None:
    tree_with_segments(tmp_path)
    meta = json.loads((tmp_path / "meta.json").read_text())
    meta["segments"] = meta["segments"][:1]
    (tmp_path / "meta.json").write_text(json.dumps(meta))
    before = snapshot(tmp_path)
    with pytest.raises(CorruptMeta, match="checksum"):
        LsmTree(tmp_path, opts())
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize("next_id", [0, 1])
def test_valid_meta_listing_fewer_segments_deletes_nothing(tmp_path: Path, next_id: int) -> None:
    """A checksummed manifest that lists fewer segments and a lower ``next_id`` (an older
    manifest of the same tree, or a forged one): the unlisted segments used to count as
    "uncommitted" (id >= next_id) and were deleted. Now an unlisted ``seg-*.sst`` is only
    ever deleted if the manifest names it as a committed merge's source."""
    tree_with_segments(tmp_path)
    rewrite_meta(tmp_path, segments=[], next_id=next_id, logs={}, min_wal=0)
    before = snapshot(tmp_path)
    with pytest.raises(CorruptMeta) as err:
        LsmTree(tmp_path, opts())
    assert err.value.path == tmp_path / "meta.json" and "seg-00000000.sst" in str(err.value)
    assert snapshot(tmp_path) == before


def test_engine_reopen_refuses_a_replaced_meta(tmp_path: Path) -> None:
    """Through the engine (what the ``reopen`` phase does): ``{}`` in one tree's
    manifest is refused naming that file, and every segment is still there."""
    cfg = EngineConfig("lsm", tmp_path / "lsm", {"mutable_segment_max_item_count": 100}, 20, 1, stores=PROFILE_STORES)

    async def build() -> None:
        async with opened(LsmEngine(cfg), True) as e:
            await store_of(e).insert(create_many(1, 300, 1), [])
            await e.stabilize()

    async def reopen() -> None:
        async with opened(LsmEngine(cfg), False) as e:
            await e.count()

    anyio.run(build)
    tree = cfg.data_dir / TREE_NAMES[0]
    (tree / "meta.json").write_text("{}")
    before = snapshot(tree)
    assert any(name.startswith("seg-") for name in before)
    raised: list[BaseException] = []
    try:
        anyio.run(reopen)
    except* StoreDamaged as group:  # the record of the last clean close: before the tree opens
        raised += group.exceptions
    assert len(raised) == 1 and f"{tree / 'meta.json'} is 2 bytes" in str(raised[0])
    assert snapshot(tree) == before
    # without that record (a store that was not closed cleanly), the tree's own check
    marker = json.loads((cfg.data_dir / MARKER).read_text())
    del marker["contents"]
    (cfg.data_dir / MARKER).write_text(json.dumps(marker))
    try:
        anyio.run(reopen)
    except* CorruptMeta as group:
        raised = list(group.exceptions)
    assert [e.path for e in raised] == [tree / "meta.json"]  # type: ignore[attr-defined]
    assert snapshot(tree) == before


def test_listed_segment_that_is_gone_is_refused(tmp_path: Path) -> None:
    tree_with_segments(tmp_path)
    seg = sorted(tmp_path.glob("seg-*.sst"))[0]
    seg.unlink()
    with pytest.raises(MissingStore) as err:
        LsmTree(tmp_path, opts())
    assert err.value.path == seg


def test_orphan_of_a_crashed_flush_is_deleted(tmp_path: Path) -> None:
    """A crashed flush or merge leaves its output as ``seg-N.sst.tmp`` (never renamed
    before the manifest lists it): unlisted, it is deleted."""
    expected = tree_with_segments(tmp_path)
    meta = read_meta(tmp_path)
    assert meta is not None
    orphan = tmp_path / f"seg-{meta.next_id:08d}.sst.tmp"
    shutil.copy(sorted(tmp_path.glob("seg-*.sst"))[0], orphan)  # complete, never listed
    (tmp_path / "seg-00000099.sst.tmp").write_bytes(b"half a segment")
    t = LsmTree(tmp_path, opts())
    assert not orphan.exists() and not list(tmp_path.glob("*.tmp"))
    assert dict(t.iter()) == expected
    t.close()


def test_crash_between_the_commit_and_the_rename_keeps_the_segment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The manifest lists the new segment, the process dies before ``seg-N.sst.tmp`` is
    renamed: open completes the rename (the manifest proves it committed)."""
    t = LsmTree(tmp_path, opts())
    for i in range(50):
        t.upsert(b"k%03d" % i, b"v%d" % i)
    monkeypatch.setattr(SegmentWriter, "publish", lambda self: None)
    t.flush_all()
    monkeypatch.undo()
    listed = read_meta(tmp_path).segments  # type: ignore[union-attr]
    assert len(listed) == 1 and (tmp_path / f"seg-{listed[0]:08d}.sst.tmp").exists()
    for log in t.wal.files.values():  # killed
        log.close()
    t2 = LsmTree(tmp_path, opts())
    assert (tmp_path / f"seg-{listed[0]:08d}.sst").exists() and not list(tmp_path.glob("*.tmp"))
    assert dict(t2.iter()) == {b"k%03d" % i: b"v%d" % i for i in range(50)}
    t2.close()


def test_crash_while_a_merge_is_writing_and_a_flush_commits(tmp_path: Path) -> None:
    """The merge's output is still a ``.tmp`` when a flush commits and the process dies:
    it is a provable orphan by its name."""
    t = LsmTree(tmp_path, opts())
    for layer in range(2):
        for i in range(layer, 60, 2):
            t.upsert(b"%03d" % i, b"v%d" % layer)
        t.flush_all()
    merge = t.merge_job()
    assert merge is not None
    for step in merge:  # write the merged segment ...
        if step is not None:
            step()
            break
    merged = sorted(tmp_path.glob("seg-*.sst.tmp"))
    assert merged
    t.upsert(b"late", b"x")
    t.flush_all()  # ... a flush commits meanwhile, then the process dies
    expected = {**{b"%03d" % i: b"v%d" % (i % 2) for i in range(60)}, b"late": b"x"}
    t2 = LsmTree(tmp_path, opts())
    assert not any(p.exists() for p in merged)
    assert dict(t2.iter()) == expected
    t2.close()


def test_crash_after_a_merge_commits_before_its_sources_are_deleted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    t = LsmTree(tmp_path, opts())
    for layer in range(2):
        for i in range(layer, 60, 2):
            t.upsert(b"%03d" % i, b"v%d" % layer)
        t.flush_all()
    sources = sorted(tmp_path.glob("seg-*.sst"))
    expected = dict(t.iter())

    def die(self: Path, missing_ok: bool = False) -> None:
        raise KeyboardInterrupt("killed before the merged sources were deleted")

    monkeypatch.setattr(Path, "unlink", die)
    with pytest.raises(KeyboardInterrupt):
        t.merge_all()
    monkeypatch.undo()
    assert all(p.exists() for p in sources)
    t2 = LsmTree(tmp_path, opts())
    assert not any(p.exists() for p in sources)
    assert len(t2.segments) == 1 and dict(t2.iter()) == expected
    t2.close()


# --- item 8: write-ahead log damage ----------------------------------------------------------


def damage(path: Path, how: str) -> int:
    """Damage a log; returns the offset of the first frame that is no longer intact."""
    data = bytearray(path.read_bytes())
    starts = frame_offsets(path)
    if how == "flip-middle":
        hit = starts[len(starts) // 2]
        data[hit + 12 : hit + 16] = bytes(b ^ 0xFF for b in data[hit + 12 : hit + 16])
    elif how == "flip-length":
        hit = starts[len(starts) // 2]
        data[hit : hit + 4] = bytes(b ^ 0xFF for b in data[hit : hit + 4])
    elif how == "cut-half":
        cut = len(data) // 2
        hit = max(s for s in starts if s < cut)
        del data[cut:]
    elif how == "cut-tail":
        hit = starts[-1]
        del data[-3:]
    else:  # flip-last
        hit = starts[-1]
        data[-1] ^= 0x01
    path.write_bytes(bytes(data))
    return hit


@pytest.mark.parametrize("how", ["flip-middle", "flip-length", "cut-half", "cut-tail", "flip-last"])
@pytest.mark.parametrize("mode", ["sync", "async-compressed"])
def test_log_damage_after_a_clean_close_is_refused(tmp_path: Path, how: str, mode: str) -> None:
    t = LsmTree(tmp_path, opts(wal_mode=mode))
    for i in range(200):
        t.upsert(b"k%04d" % i, b"value-%d" % i)
        if mode != "sync" and i % 20 == 19:
            t.wal.write_now()  # one compressed frame per 20 records
    t.close()
    (log,) = logs(tmp_path)
    hit = damage(log, how)
    before = snapshot(tmp_path)
    with pytest.raises(CorruptLog) as err:
        LsmTree(tmp_path, opts(wal_mode=mode))
    assert err.value.path == log and err.value.offset == hit
    assert log.name in str(err.value) and f"offset {hit}" in str(err.value)
    assert snapshot(tmp_path) == before  # nothing truncated


def test_log_cut_at_a_frame_boundary_after_a_clean_close_is_refused(tmp_path: Path) -> None:
    logged_tree(tmp_path)
    (log,) = logs(tmp_path)
    cut = frame_offsets(log)[20]
    log.write_bytes(log.read_bytes()[:cut])  # every remaining frame is intact
    with pytest.raises(CorruptLog) as err:
        LsmTree(tmp_path, opts())
    assert err.value.path == log and err.value.offset == cut
    assert "closed cleanly" in str(err.value) and log.stat().st_size == cut


@pytest.mark.parametrize("how", ["flip-middle", "flip-length"])
def test_log_damage_before_the_tail_after_a_crash_is_refused(tmp_path: Path, how: str) -> None:
    logged_tree(tmp_path, close=False)
    (log,) = logs(tmp_path)
    hit = damage(log, how)
    before = snapshot(tmp_path)
    with pytest.raises(CorruptLog) as err:
        LsmTree(tmp_path, opts())
    assert err.value.path == log and err.value.offset == hit
    assert snapshot(tmp_path) == before


def test_torn_tail_of_an_older_log_is_damage_when_a_newer_log_has_frames(tmp_path: Path) -> None:
    t = LsmTree(tmp_path, opts())
    for i in range(20):
        t.upsert(b"a%02d" % i, b"x")
    t.freeze()  # later writes go to the next log
    for i in range(20):
        t.upsert(b"b%02d" % i, b"y")
    # killed: no close
    older, newer = logs(tmp_path)
    assert frame_offsets(newer)
    hit = damage(older, "cut-tail")
    before = snapshot(tmp_path)
    with pytest.raises(CorruptLog) as err:
        LsmTree(tmp_path, opts())
    assert err.value.path == older and err.value.offset == hit
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize("how", ["cut-tail", "cut-half", "flip-last"])
@pytest.mark.parametrize("mode", ["sync", "async-compressed"])
def test_torn_tail_after_a_crash_opens_with_every_complete_frame(tmp_path: Path, how: str, mode: str) -> None:
    t = LsmTree(tmp_path, opts(wal_mode=mode))
    written: list[tuple[bytes, bytes]] = []
    for i in range(200):
        t.upsert(b"k%04d" % i, b"value-%d" % i)
        written.append((b"k%04d" % i, b"value-%d" % i))
        if mode != "sync" and i % 20 == 19:
            t.wal.write_now()
    # killed: no close (the last 0..19 async records were never written)
    (log,) = logs(tmp_path)
    hit = damage(log, how)
    kept = len(frame_offsets_prefix(log, hit))
    t2 = LsmTree(tmp_path, opts(wal_mode=mode))
    got = list(t2.iter())
    per_frame = 1 if mode == "sync" else 20
    assert got == written[: kept * per_frame]  # every complete frame before the torn one
    assert log.stat().st_size == hit  # the torn frame is cut off, the rest kept
    t2.upsert(b"z", b"after")  # and after another crash it still opens
    t3 = LsmTree(tmp_path, opts(wal_mode=mode))
    assert list(t3.iter()) == ([*got, (b"z", b"after")] if mode == "sync" else got)
    t3.close()


def frame_offsets_prefix(path: Path, end: int) -> list[int]:
    data = path.read_bytes()[:end]
    out, pos = [], 8
    while pos + FRAME.size <= len(data):
        out.append(pos)
        pos += FRAME.size + FRAME.unpack_from(data, pos)[0]
    return out


def test_damaged_log_after_clean_close_fails_the_engine_open(tmp_path: Path) -> None:
    """Before: the profile frames after the damage vanished, the clean-shutdown marker
    skipped the index repair, and scans returned ids whose profile was gone. (The store
    is written through the trees and the markers, so only ``opened`` and the adapter's
    open are relied on.)"""
    StoreDir(tmp_path, LAYOUT.for_stores(TREE_NAMES)).reset()  # the directory is the lsm engine's, as after a run
    for name in TREE_NAMES:
        t = LsmTree(tmp_path / name, opts())
        for p in create_many(1, 200, 1):
            t.upsert(b"%020d" % p[0] if name == "profiles" else p[1].encode() + name.encode(), b"x" * 50)
        t.close()
    CleanShutdownMarker(tmp_path).set()
    (log,) = logs(tmp_path / "profiles")
    damage(log, "flip-middle")

    async def run() -> None:
        async with opened(LsmEngine(EngineConfig("lsm", tmp_path, {"wal_mode": "sync"}, 50, 1, stores=PROFILE_STORES)), False) as e:
            await store_of(e).count()

    raised: list[BaseException] = []
    try:
        anyio.run(run)
    except* CorruptLog as group:  # (opened's task group may wrap it)
        raised += group.exceptions
    assert [e.path for e in raised] == [log]  # type: ignore[attr-defined]


# --- item 9: a tree that must exist ----------------------------------------------------------


def test_tree_that_must_exist_but_is_gone_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "index"
    logged_tree(path)
    assert LsmTree(path, opts(), create_if_missing=False).count() == 30
    shutil.rmtree(path)
    with pytest.raises(MissingStore) as err:
        LsmTree(path, opts(), create_if_missing=False)
    assert err.value.path == path and str(path) in str(err.value)
    assert not path.exists()  # not created either
    path.mkdir()
    with pytest.raises(MissingStore):
        LsmTree(path, opts(), create_if_missing=False)
    assert not list(path.iterdir())


def test_log_listed_in_meta_that_is_gone_is_refused(tmp_path: Path) -> None:
    logged_tree(tmp_path)
    (log,) = logs(tmp_path)
    log.unlink()
    with pytest.raises(MissingStore) as err:
        LsmTree(tmp_path, opts())
    assert err.value.path == log


# --- item 10: meta.json that does not parse ---------------------------------------------------


@pytest.mark.parametrize("text", ['{"segments": [1, 2', "[]", '{"segments": "x", "next_id": 0}', ""])
def test_unreadable_meta_names_the_file(tmp_path: Path, text: str) -> None:
    tree_with_segments(tmp_path)
    (tmp_path / "meta.json").write_text(text)
    before = snapshot(tmp_path)
    with pytest.raises(CorruptMeta) as err:
        LsmTree(tmp_path, opts())
    assert err.value.path == tmp_path / "meta.json" and "meta.json" in str(err.value)
    assert snapshot(tmp_path) == before


# --- the errors themselves --------------------------------------------------------------------


def test_corrupt_segment_names_file_and_offset(tmp_path: Path) -> None:
    t = LsmTree(tmp_path, opts())
    for i in range(64):
        t.upsert(b"k%03d" % i, b"value%d" % i)
    t.flush_all()
    seg = t.segments[0]
    path, off = seg.path, seg.offsets[5]
    t.close()
    data = bytearray(path.read_bytes())
    data[off + 6] ^= 0xFF
    path.write_bytes(bytes(data))
    t = LsmTree(tmp_path, opts())
    with pytest.raises(CorruptSegment) as err:
        t.get(b"k021")
    assert err.value.path == path and err.value.offset == off
    assert f"offset {off}" in str(err.value) and path.name in str(err.value)


def test_errors_share_a_base_and_survive_pickling() -> None:
    for cls in (CorruptLog, CorruptMeta, CorruptSegment, MissingStore):
        e = cls(Path("/x/wal-00000001.log"), 17, "checksum mismatch")
        assert isinstance(e, CorruptStore)
        again = pickle.loads(pickle.dumps(e))
        assert type(again) is cls and (again.path, again.offset, again.reason) == (e.path, 17, e.reason)
        assert str(again) == "/x/wal-00000001.log at offset 17: checksum mismatch"


# --- the clean-close record and older stores ---------------------------------------------------


def test_a_tree_knows_whether_its_last_session_closed_cleanly(tmp_path: Path) -> None:
    t = LsmTree(tmp_path, opts())
    assert not t.last_close_was_clean  # a new tree
    t.upsert(b"k", b"v")
    t.close()
    t = LsmTree(tmp_path, opts())
    assert t.last_close_was_clean
    assert json.loads((tmp_path / "meta.json").read_text())["clean_close"] is False  # cleared at open
    t.upsert(b"k2", b"v")
    t.save_meta()  # (settle) is no close
    # killed
    assert not LsmTree(tmp_path, opts()).last_close_was_clean


def test_a_store_with_the_older_meta_format_is_refused(tmp_path: Path) -> None:
    """Format 1 manifests had no checksum: nothing in them can be trusted to delete by,
    so they are refused with a message that says why, and nothing is changed."""
    tree_with_segments(tmp_path)
    meta = json.loads((tmp_path / "meta.json").read_text())
    old = {"version": 1, "segments": meta["segments"], "min_wal": meta["min_wal"], "next_id": meta["next_id"]}
    (tmp_path / "meta.json").write_text(json.dumps(old))
    before = snapshot(tmp_path)
    with pytest.raises(CorruptMeta, match="format version 1"):
        LsmTree(tmp_path, opts())
    assert snapshot(tmp_path) == before


def test_engine_reopen_refuses_a_tree_whose_files_are_gone(tmp_path: Path) -> None:
    """The adapter opens an existing store with ``create_if_missing=False``: a tree
    directory emptied behind its back is refused, not reopened as an empty index (which
    would make scans silently return nothing for every profile)."""
    cfg = EngineConfig("lsm", tmp_path / "lsm", {"wal_mode": "sync"}, 50, 1, stores=PROFILE_STORES)

    async def build() -> None:
        async with opened(LsmEngine(cfg), True) as e:
            await store_of(e).insert(create_many(1, 50, 1), [])

    async def reopen() -> None:
        async with opened(LsmEngine(cfg), False) as e:
            await store_of(e).count()

    anyio.run(build)
    tree = cfg.data_dir / TREE_NAMES[1]  # an index tree
    for f in tree.iterdir():
        f.unlink()
    raised: list[BaseException] = []
    try:
        anyio.run(reopen)
    except* StoreDamaged as group:  # the record of the last clean close names a missing file
        raised += group.exceptions
    assert len(raised) == 1 and f"{tree}/" in str(raised[0]) and "is missing" in str(raised[0])
    assert not list(tree.iterdir())  # nothing was created in its place
    marker = json.loads((cfg.data_dir / MARKER).read_text())
    del marker["contents"]  # without the record, the tree's own check
    (cfg.data_dir / MARKER).write_text(json.dumps(marker))
    try:
        anyio.run(reopen)
    except* MissingStore as group:
        raised = list(group.exceptions)
    assert [e.path for e in raised] == [tree]  # type: ignore[attr-defined]
    assert not list(tree.iterdir())  # nothing was created in its place


def rechecksum_block(path: Path, block: int, payload: bytes) -> int:
    """Replace block ``block``'s stored bytes by ``payload`` (same length) and recompute
    every checksum over them (the block's crc32 in the index, the index's, the footer's),
    as damage that a checksum cannot see would leave the file; the block's offset."""
    seg = SegmentReader(path, 0)
    off, length, fixed = seg.offsets[block], seg.lengths[block], type(seg.first_keys) is not list
    seg.close()
    assert len(payload) == length and fixed
    data = bytearray(path.read_bytes())
    data[off : off + length] = payload
    fo = len(data) - FOOTER_SIZE
    ioff, ilen, entries, live, n, _icrc = FOOTER.unpack_from(data, fo)
    width, _kind = struct.unpack_from("<II", data, ioff)
    crcs_at = ioff + 8 + n * width + 12 * n  # first keys, then u64 offsets and u32 lengths
    struct.pack_into("<I", data, crcs_at + 4 * block, zlib.crc32(payload))
    footer = FOOTER.pack(ioff, ilen, entries, live, n, zlib.crc32(bytes(data[ioff : ioff + ilen])))
    data[fo : fo + FOOTER.size] = footer
    struct.pack_into("<I", data, fo + FOOTER.size, zlib.crc32(footer))
    path.write_bytes(bytes(data))
    return off


@pytest.mark.parametrize("codec", ["zlib", "lz4"])
@pytest.mark.parametrize("pure", [False, True], ids=["compiled", "python"])
def test_a_compressed_block_damaged_under_right_checksums_is_refused_naming_file_and_offset(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, pure: bool, codec: str
) -> None:
    """Issue 40 item 2: a compressed segment's block checksum covers its stored bytes, so
    a payload changed with every checksum recomputed passes it; decompression (zlib's
    adler32, the recorded length, LZ4's stream bounds) still refuses it, on a read and in
    a merge. zlib gets one flipped byte (its adler32 sees any); LZ4, which has no content
    checksum, a payload that is no LZ4 stream (zeros): a flipped literal inside an LZ4
    block is for the crc32 to catch, and here it was recomputed."""
    monkeypatch.setattr(segment_writer, "default_codec", lambda: codec)
    t = LsmTree(tmp_path, opts(compression_threshold_mb=0))
    for i in range(64):
        t.upsert(b"k%03d" % i, b"value%d " % i * 20)
    t.flush_all()
    for i in range(64, 80):
        t.upsert(b"k%03d" % i, b"value%d " % i * 20)
    t.flush_all()
    t.compact_all()
    (seg,) = t.segments
    assert seg.compressed
    path = seg.path
    t.close()
    stored = SegmentReader(path, 0)
    good = stored.read_block(5), stored._mm[stored.offsets[5] : stored.offsets[5] + stored.lengths[5]]
    victim = stored.first_keys[5]
    stored.close()
    payload = bytearray(good[1])
    if codec == "zlib":
        payload[len(payload) // 2] ^= 0x20
    else:
        payload[:] = bytes(len(payload))
    off = rechecksum_block(path, 5, bytes(payload))
    if pure:
        monkeypatch.setattr(native, "ACCELERATED", False)
    t = LsmTree(tmp_path, opts(compression_threshold_mb=0))  # opens: the index checks out
    assert t.get(b"k000") == b"value0 " * 20
    with pytest.raises(CorruptSegment) as err:
        t.get(victim)
    assert err.value.path == path and err.value.offset == off and "decompress" in str(err.value)
    t.upsert(b"k999", b"x")  # a merge through the damaged block refuses and commits nothing
    t.flush_all()
    before = snapshot(tmp_path)
    with pytest.raises(CorruptSegment) as err:
        t.compact_all()
    assert err.value.path == path and err.value.offset == off
    assert snapshot(tmp_path) == before
    t.close()
