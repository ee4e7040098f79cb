"""A merged-away segment's file is released off the event loop, once nothing maps it.

``held_files.py``: the commit step opens each merge source before it unlinks it, so
dropping the source's mappings on the loop never frees the file (on a file system
mounted with ``discard``, freeing waited on the device: 6-9 ms a segment, on the loop).
The descriptor is closed once every mapping is gone, and at close at the latest.
"""

from __future__ import annotations

import gc
import mmap
import os
import threading
from pathlib import Path

import anyio
import pytest
from lsm_load import load_and_stabilize

from asyncbench.engines.lsm import native
from asyncbench.engines.lsm.held_files import HeldFiles
from asyncbench.engines.lsm.maintainer import HELD_POLL_S
from asyncbench.engines.lsm.tree import LsmTree, TreeOptions


def _open_deleted(path: Path) -> int:
    """How many of this process's descriptors name ``path``, deleted."""
    n = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if target == f"{path} (deleted)":
            n += 1
    return n


def _mapped(path: Path, data: bytes) -> mmap.mmap:
    """``path`` written with ``data`` and mapped read-only."""
    path.write_bytes(data)
    with open(path, "rb") as f:
        return mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)


def test_a_held_file_stays_open_while_mapped_and_closes_after(tmp_path: Path) -> None:
    path = tmp_path / "seg-1.sst"
    mm = _mapped(path, b"x" * 8192)
    held = HeldFiles()
    held.hold(path, [mm])
    path.unlink()
    assert len(held) == 1 and not held.ready
    assert _open_deleted(path) == 2  # the mapping's own descriptor (mmap keeps one), and ours
    assert held.release() == 0  # still mapped: kept
    assert mm[:1] == b"x"
    del mm
    gc.collect()
    assert held.ready  # the weak reference's callback saw the mapping go
    assert _open_deleted(path) == 1  # the unmapping did not free the file: we hold it
    assert held.release() == 1
    assert len(held) == 0 and not held.ready and _open_deleted(path) == 0


def test_a_closed_mapping_counts_as_gone_and_release_all_closes_the_rest(tmp_path: Path) -> None:
    held = HeldFiles()
    maps = []
    for i in range(2):
        p = tmp_path / f"f{i}"
        maps.append(_mapped(p, b"y" * 4096))
        held.hold(p, [maps[-1]])
        p.unlink()
    maps[0].close()
    assert held.release() == 1 and len(held) == 1
    held.release_all()
    assert len(held) == 0 and _open_deleted(tmp_path / "f1") == 1  # the live mapping's own
    maps[1].close()
    assert _open_deleted(tmp_path / "f1") == 0
    held.hold(tmp_path / "missing", [maps[1]])  # a file that cannot be opened is not held
    assert len(held) == 0


@pytest.mark.usefixtures("lsm_compiled")  # the index mapping is the compiled path's
def test_a_segment_names_both_its_mappings(tmp_path: Path) -> None:
    tree = LsmTree(tmp_path, TreeOptions(mutable_segment_max_item_count=1_000))
    for i in range(1_000):
        tree.upsert(b"k%05d" % i, b"v")
    tree.run_job(tree.flush_job())
    seg = tree.segments[0]
    maps = seg.mappings()
    assert len(maps) == 2 and isinstance(maps[0], mmap.mmap) and type(maps[1]) is native.index_map
    tree.close()


def test_a_merge_source_is_freed_only_after_its_mappings_and_never_by_them(tmp_path: Path) -> None:
    tree = LsmTree(tmp_path, TreeOptions(mutable_segment_max_item_count=1_000))
    for i in range(2_000):
        tree.upsert(b"k%05d" % i, b"v%d" % i)
        if len(tree.frozen):
            tree.run_job(tree.flush_job())
    assert len(tree.segments) == 2
    sources = list(tree.segments)
    paths = [s.path for s in sources]
    tree.run_job(tree.merge_job())
    assert len(tree.segments) == 1 and not any(p.exists() for p in paths)
    # a reader still on a source: its mapping, and our descriptor, keep the file
    assert len(tree.held) == 2 and all(_open_deleted(p) == 2 for p in paths)  # the mapping's, ours
    assert tree.held.release() == 0
    del sources
    gc.collect()
    assert all(_open_deleted(p) == 1 for p in paths)  # unmapped; the file still held, not freed
    assert tree.held.ready and tree.held.release() == 2
    assert all(_open_deleted(p) == 0 for p in paths)
    assert tree.count() == 2_000
    tree.close()


def test_the_maintainer_releases_held_files_on_the_commit_lane(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tree = LsmTree(tmp_path, TreeOptions(mutable_segment_max_item_count=2_000))
    threads: list[str] = []
    real = HeldFiles.release

    def release(self: HeldFiles) -> int:
        threads.append(threading.current_thread().name)
        return real(self)

    monkeypatch.setattr(HeldFiles, "release", release)

    async def released() -> None:
        gc.collect()
        with anyio.fail_after(10):
            while len(tree.held):
                await anyio.sleep(HELD_POLL_S / 4)

    load_and_stabilize(tree, 20_000, then=released)
    assert threads and all(name.startswith("lsm-commit") for name in threads), set(threads)
    assert [t for t in _fd_targets() if t.startswith(str(tmp_path)) and t.endswith("(deleted)")] == []
    assert tree.count() == 20_000
    tree.close()


def _fd_targets() -> list[str]:
    out = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            out.append(os.readlink(f"/proc/self/fd/{fd}"))
        except OSError:
            continue
    return out


def test_a_link_in_the_files_place_is_not_followed(tmp_path: Path) -> None:
    """Only the tree's own file is held: a symlink where it stood is not opened."""
    target = tmp_path / "elsewhere"
    mm = _mapped(target, b"z" * 4096)
    link = tmp_path / "seg-9.sst"
    link.symlink_to(target)
    held = HeldFiles()
    held.hold(link, [mm])
    assert len(held) == 0 and target.read_bytes() == b"z" * 4096
    mm.close()
