"""The store's trees open side by side (``engines/lsm/parallel_open.py``): still every
tree checked before anything is served, the same error a one-by-one open raised, and
nothing left open when one tree is refused."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

import anyio
import pytest
from conftest import store_of

from asyncbench.engine import EngineConfig, opened
from asyncbench.engines.lsm import CorruptSegment, parallel_open
from asyncbench.engines.lsm.adapter import LsmEngine
from asyncbench.engines.lsm.meta import read_meta
from asyncbench.engines.lsm.parallel_open import open_trees
from asyncbench.engines.lsm.segment_writer import FOOTER, FOOTER_SIZE
from asyncbench.engines.lsm.tree import LsmTree, TreeOptions
from asyncbench.engines.store_dir import MARKER
from asyncbench.workloads.profile_store.generate import create_many
from asyncbench.workloads.profile_store.kv_recovery import STORE_NAMES as TREE_NAMES
from asyncbench.workloads.profile_store.kv_store import STORE_NAMES as PROFILE_STORES

OPTS = TreeOptions(mutable_segment_max_item_count=100_000, sparse_array_step=4, wal_mode="sync")


def build_trees(root: Path, n: int = 4) -> list[Path]:
    """``n`` closed trees of one segment each."""
    dirs = [root / f"t{i}" for i in range(n)]
    for d in dirs:
        t = LsmTree(d, OPTS)
        for k in range(200):
            t.upsert(b"k%05d" % k, b"v%d-%s" % (k, d.name.encode()))
        t.flush_all()
        t.close()
    return dirs


def damage_index(seg: Path) -> Path:
    """Flip one byte inside the segment's block index (its crc32 then fails at open)."""
    data = bytearray(seg.read_bytes())
    ioff, ilen, *_ = FOOTER.unpack_from(data, len(data) - FOOTER_SIZE)
    data[ioff + ilen // 2] ^= 0xFF
    seg.write_bytes(bytes(data))
    return seg


def only_segment(tree_dir: Path) -> Path:
    (seg,) = tree_dir.glob("seg-*.sst")
    return seg


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def test_the_trees_open_in_threads_of_their_own(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every tree's open is under way at once (a one-by-one open would never fill the
    barrier), and the trees come back in the order asked, each with its own data."""
    dirs = build_trees(tmp_path)
    barrier = threading.Barrier(len(dirs), timeout=10)

    def together(d: Path, options: TreeOptions, *, create_if_missing: bool) -> LsmTree:
        barrier.wait()
        return LsmTree(d, options, create_if_missing=create_if_missing)

    monkeypatch.setattr(parallel_open, "LsmTree", together)
    trees = open_trees(dirs, OPTS, create_if_missing=False)
    try:
        assert [t.dir for t in trees] == dirs
        assert [t.get(b"k00007") for t in trees] == [b"v7-t%d" % i for i in range(len(dirs))]
    finally:
        for t in trees:
            t.close()


@pytest.mark.parametrize("damaged", [[0, 2], [2, 3], [3]])
def test_a_damaged_segment_is_refused_as_the_first_in_order_and_the_rest_are_closed(
    tmp_path: Path, damaged: list[int]
) -> None:
    """Whichever thread finishes first, the error is the first damaged tree's in the
    order given (what opening them one by one raised), and the trees that did open are
    closed again: their descriptors released and their manifests marked clean."""
    dirs = build_trees(tmp_path)
    segs = [damage_index(only_segment(dirs[i])) for i in damaged]
    before = open_fds()
    for _ in range(3):  # the threads finish in any order
        with pytest.raises(CorruptSegment) as err:
            open_trees(dirs, OPTS, create_if_missing=False)
        assert err.value.path == segs[0] and "index checksum mismatch" in str(err.value)
        assert open_fds() == before
        for d in dirs:  # the damaged ones unchanged, the others opened and closed
            meta = read_meta(d)
            assert meta is not None and meta.clean_close, d


def test_the_engine_reopen_refuses_a_damaged_index_segment(tmp_path: Path) -> None:
    """Through the engine (the ``reopen`` phase): a segment index damaged in one index
    tree is refused naming that segment, and the next open of the repaired store works."""
    cfg = EngineConfig("lsm", tmp_path / "lsm", {"mutable_segment_max_item_count": 100}, 20, 1, stores=PROFILE_STORES)

    async def build() -> None:
        async with opened(LsmEngine(cfg), True) as e:
            await store_of(e).insert(create_many(1, 300, 1), [])
            await e.stabilize()

    async def count() -> int:
        async with opened(LsmEngine(cfg), False) as e:
            return await store_of(e).count()

    anyio.run(build)
    assert anyio.run(count) == 300
    marker = json.loads((cfg.data_dir / MARKER).read_text())
    del marker["contents"]  # no record of the last close: the trees' own checks decide
    (cfg.data_dir / MARKER).write_text(json.dumps(marker))
    tree = cfg.data_dir / TREE_NAMES[2]
    seg = sorted(tree.glob("seg-*.sst"))[-1]
    good = seg.read_bytes()
    damage_index(seg)
    raised: list[BaseException] = []
    try:
        anyio.run(count)
    except* CorruptSegment as group:
        raised += group.exceptions
    assert [e.path for e in raised] == [seg]  # type: ignore[attr-defined]
    seg.write_bytes(good)
    assert anyio.run(count) == 300
