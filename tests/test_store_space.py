"""benchmarks/store_space.py: where a kept store's bytes are, read without changing it."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

from conftest import ROOT

from asyncbench.engines.lsm.tree import LsmTree, TreeOptions
from asyncbench.workloads.profile_store.kv_store import STORE_NAMES


def _tool() -> ModuleType:
    spec = importlib.util.spec_from_file_location("store_space", ROOT / "benchmarks" / "store_space.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def _snapshot(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_an_lsm_tree_reports_its_shadowed_and_deleted_entries(tmp_path: Path) -> None:
    tree = LsmTree(tmp_path / "t", TreeOptions(wal_mode="none"))
    for i in range(100):
        tree.upsert(b"%04d" % i, b"old")
    tree.flush_all()
    for i in range(30):  # 30 newer versions shadow old ones
        tree.upsert(b"%04d" % i, b"new")
    for i in range(90, 100):  # 10 deleted
        tree.delete(b"%04d" % i)
    tree.flush_all()
    tree.close()
    before = _snapshot(tmp_path)
    rep = _tool().lsm_tree(tmp_path / "t")
    assert _snapshot(tmp_path) == before  # read-only
    assert len(rep["segments"]) == 2
    assert rep["entries"] == 140 and rep["live"] == 90 and rep["dead"] == 50
    assert sum(s["tombstones"] for s in rep["segments"]) == 10
    assert rep["segment_bytes"] == sum(s["bytes"] for s in rep["segments"])


def test_a_whole_lsm_store_and_a_missing_directory(tmp_path: Path) -> None:
    for name in STORE_NAMES:
        tree = LsmTree(tmp_path / name, TreeOptions(wal_mode="none"))
        tree.upsert(b"k", b"v")
        tree.flush_all()
        tree.close()
    tool = _tool()
    rep = tool.report("lsm", tmp_path)
    assert set(rep["stores"]) == set(STORE_NAMES)
    assert all(s["live"] == 1 and s["dead"] == 0 for s in rep["stores"].values())
    assert "lsm store" in tool.render(rep)
    assert tool.main(["--engine", "lsm", str(tmp_path / "nothing")]) == 2
    assert not (tmp_path / "nothing").exists()


def test_a_compressed_tree_reports_its_bytes_stored_and_plain(tmp_path: Path) -> None:
    tree = LsmTree(tmp_path / "t", TreeOptions(wal_mode="none", compression_threshold_mb=0))
    for i in range(500):
        tree.upsert(b"%04d" % i, b"profile %d " % i * 20)
    tree.flush_all()
    tree.upsert(b"9999", b"last")
    tree.flush_all()
    tree.compact_all()  # a merge: compressed
    tree.close()
    tool = _tool()
    rep = tool.lsm_tree(tmp_path / "t", codec_estimate=True)
    (seg,) = rep["segments"]
    assert seg["compressed"] and seg["bytes"] < seg["plain_bytes"] / 3
    assert rep["live"] == 501
    # the estimate of a compressed store is the store itself (the same codec, block by block)
    assert rep["segment_bytes_blocks_lz4"] == seg["bytes"]
    assert rep["segment_bytes_blocks_zlib1"] < seg["bytes"]  # zlib packs tighter, decompresses slower
    line = tool.render({"engine": "lsm", "data": str(tmp_path), "bytes": seg["bytes"], "stores": {"t": rep}})
    assert " compressed (" in line and " plain)" in line
