"""A flush's or merge's commit runs off the event loop, in the crash-safe order.

``commit.py`` moved the manifest's write and fsyncs, the segment's rename and the
deletions of logs and merged sources from the event loop to the maintainer's commit
lane. These tests pin what that must not change: each file step happens only after the
manifest that allows it is on disk, an older manifest snapshot never replaces a newer
one, and a job stopped before its commit step still commits.
"""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from lsm_load import load_and_stabilize

from asyncbench.engines.lsm import tree as tree_mod
from asyncbench.engines.lsm.commit import Commit
from asyncbench.engines.lsm.meta import read_meta
from asyncbench.engines.lsm.segment_writer import SegmentWriter
from asyncbench.engines.lsm.tree import LsmTree, TreeOptions
from asyncbench.engines.lsm.wal import WriteAheadLog, wal_path


def test_commits_run_on_the_commit_lane_and_each_file_step_follows_its_manifest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tree = LsmTree(tmp_path, TreeOptions(mutable_segment_max_item_count=2_000))
    writers: list[str] = []
    real_write = tree_mod.write_meta

    def write_meta(directory: Path, meta: tree_mod.Meta) -> None:
        writers.append(threading.current_thread().name)
        real_write(directory, meta)

    published: list[int] = []
    real_publish = SegmentWriter.publish

    def publish(self: SegmentWriter) -> None:  # the manifest on disk lists it already
        seg_id = int(self.path.name[4:-4])
        assert seg_id in read_meta(tmp_path).segments  # type: ignore[union-attr]
        published.append(seg_id)
        real_publish(self)

    retired: list[int] = []
    real_retire = WriteAheadLog.retire

    def retire(self: WriteAheadLog, seqs: list[int]) -> None:  # the manifest says they are in segments
        on_disk = read_meta(tmp_path)
        assert on_disk is not None and all(seq < on_disk.min_wal for seq in seqs)
        retired.extend(seqs)
        real_retire(self, seqs)

    monkeypatch.setattr(tree_mod, "write_meta", write_meta)
    monkeypatch.setattr(SegmentWriter, "publish", publish)
    monkeypatch.setattr(WriteAheadLog, "retire", retire)

    load_and_stabilize(tree, 20_000)
    assert len(published) >= 10 and len(retired) >= 10  # the flushes and the merges
    assert writers and all(name.startswith("lsm-commit") for name in writers), set(writers)
    assert len(tree.segments) == 1 and tree.count() == 20_000
    assert not any(wal_path(tmp_path, seq).exists() for seq in retired)
    tree.close()
    again = LsmTree(tmp_path)
    assert again.count() == 20_000 and again.get(b"k0012345") == b"v12345"
    again.close()


def test_an_older_manifest_snapshot_never_replaces_a_newer_one(tmp_path: Path) -> None:
    tree = LsmTree(tmp_path, TreeOptions(wal_mode="none"))
    older = tree._snapshot(clean_close=False)
    tree._new_id()  # the tree moves on: the next snapshot says so
    newer = tree._snapshot(clean_close=False)
    assert newer[0].next_id == older[0].next_id + 1
    tree._write_meta(*newer)  # (a settle's save, first)
    tree._write_meta(*older)  # (a commit step taken before it, late)
    assert read_meta(tmp_path).next_id == newer[0].next_id  # type: ignore[union-attr]
    tree.close()


def test_a_flush_stopped_before_its_commit_step_still_commits(tmp_path: Path) -> None:
    tree = LsmTree(tmp_path, TreeOptions(mutable_segment_max_item_count=100))
    for i in range(100):  # the 100th write freezes the memtable
        tree.upsert(b"k%03d" % i, b"v")
    (mt,) = tree.frozen
    logs = list(mt.wal_seqs)
    job = tree.flush_job()
    assert job is not None
    for step in job:  # the thread steps, inline, up to the commit
        if isinstance(step, Commit):
            break
        if step is not None:
            step()
    assert read_meta(tmp_path).segments == []  # type: ignore[union-attr]
    job.close()  # the engine stopping: the commit runs now, in the job's finally
    (seg,) = tree.segments
    assert read_meta(tmp_path).segments == [seg.id]  # type: ignore[union-attr]
    assert seg.path.name.endswith(".sst") and seg.path.exists()
    assert not any(wal_path(tmp_path, seq).exists() for seq in logs)
    tree.close()
    again = LsmTree(tmp_path)
    assert again.count() == 100
    again.close()
