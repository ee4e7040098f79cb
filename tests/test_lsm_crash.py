"""Crash safety: a child process inserts through a tree (background flush, merge and
log writer running) and is SIGKILLed mid-way; the reopened tree must hold a prefix of
the acknowledged inserts, and with the sync log every acknowledged one."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from asyncbench.engines.lsm.tree import LsmTree, TreeOptions

ROOT = Path(__file__).resolve().parent.parent

CHILD = r"""
import sys, anyio
from asyncbench.engines.lsm.tree import LsmTree, TreeOptions
from asyncbench.engines.lsm.maintainer import Maintainer

async def main(path, mode):
    tree = LsmTree(path, TreeOptions(wal_mode=mode, mutable_segment_max_item_count=400, sparse_array_step=8))
    maint = Maintainer([tree], 60_000)
    async with anyio.create_task_group() as tg:
        maint.start(tg)
        i = 0
        while True:
            for _ in range(50):
                tree.upsert(b"k%08d" % i, b"value-%d" % i)
                i += 1
            maint.check()
            print(i, flush=True)  # every insert below i is acknowledged
            await maint.throttle()
            await anyio.sleep(0)

anyio.run(main, sys.argv[1], sys.argv[2])
"""


@pytest.mark.parametrize(("mode", "kill_after"), [("sync", 1500), ("async-compressed", 6000)])
def test_sigkill_during_inserts_keeps_a_prefix(tmp_path: Path, mode: str, kill_after: int) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(tmp_path), mode], stdout=subprocess.PIPE, env=env, cwd=ROOT
    )
    acked = 0
    assert child.stdout is not None
    for line in child.stdout:
        acked = int(line)
        if acked >= kill_after:
            break
    child.send_signal(signal.SIGKILL)
    child.wait(timeout=30)
    assert acked >= kill_after, "child died before reaching the kill point"

    tree = LsmTree(tmp_path, TreeOptions(wal_mode=mode))
    got = list(tree.iter())
    n = len(got)
    print(mode, "acked", acked, "recovered", n)
    assert got == [(b"k%08d" % i, b"value-%d" % i) for i in range(n)]  # a prefix, values intact
    if mode == "sync":
        assert n >= acked
    assert tree.count() == n
    assert len(list(tmp_path.glob("seg-*.sst"))) >= 1  # flushes happened before the kill
    tree.upsert(b"after", b"crash")  # and the store keeps working
    tree.close()
    assert LsmTree(tmp_path, TreeOptions(wal_mode=mode)).get(b"after") == b"crash"
