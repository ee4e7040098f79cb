"""Log-frame encoding (issue 40 item 4): the compiled encoder writes the Python twin's
bytes, refuses what the twin refuses, and the log writer encodes off the event loop."""

from __future__ import annotations

import random
import threading
from pathlib import Path
from typing import Any

import anyio
import pytest

import asyncbench.engines.lsm.wal as wal_module
from asyncbench.engines.lsm import native
from asyncbench.engines.lsm.maintainer import Maintainer
from asyncbench.engines.lsm.tree import LsmTree, TreeOptions
from asyncbench.engines.lsm.wal import (
    Records,
    decode_records,
    encode_records_py,
    pairs,
    replay_file,
    wal_path,
)

compiled = pytest.mark.usefixtures("lsm_compiled")  # runs, skips or fails as tests/compiled.py says


def _records(seed: int, n: int) -> Records:
    rnd = random.Random(seed)
    out: Records = []
    for _ in range(n):
        k = rnd.randbytes(rnd.choice((0, 1, 20, 40, 300)))
        v = None if rnd.random() < 0.2 else rnd.randbytes(rnd.choice((0, 1, 250, 5000)))
        out += (k, v)
    return out


@compiled
@pytest.mark.parametrize("seed", range(5))
def test_the_compiled_encoder_writes_the_python_twins_bytes(seed: int) -> None:
    assert native.encode_records is not None
    for n in (0, 1, 17, 2_000):
        records = _records(seed, n)
        payload = native.encode_records(records)
        assert payload == encode_records_py(records)
        assert list(decode_records(payload)) == pairs(records)


@compiled
@pytest.mark.parametrize(
    "bad",
    [
        (b"k", b"v"),  # a tuple, not a list
        [(b"k", b"v"), (b"k2", b"v2")],  # a list of records, not a flat one
        ["k", b"v"],
        [b"k", "v"],
        [b"k", 1],
        [None, b"v"],
    ],
)
def test_the_compiled_encoder_refuses_what_is_not_records(bad: Any) -> None:
    assert native.encode_records is not None
    with pytest.raises(TypeError):
        native.encode_records(bad)


@pytest.mark.parametrize("encode", [native.encode_records, encode_records_py], ids=["compiled", "python"])
def test_an_odd_flat_list_is_refused(encode: Any) -> None:
    if encode is None:
        pytest.skip("the C extension is not built")
    with pytest.raises(ValueError, match="even length"):
        encode([b"k", b"v", b"k2"])


def test_the_log_writer_encodes_in_a_worker_thread(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Before issue 40 the maintainer encoded each 16_384-record frame on the event loop.
    (The frame is made whole by ``compressed_frame``: encoded, then compressed.)"""
    threads: list[int] = []
    real = wal_module.compressed_frame

    def recording(records: Records, lz4: bool = True) -> bytes:
        threads.append(threading.get_ident())
        return real(records, lz4)

    monkeypatch.setattr(wal_module, "compressed_frame", recording)
    tree = LsmTree(tmp_path, TreeOptions(wal_mode="async-compressed"))
    records = [(b"%08d" % i, b"v%d" % i) for i in range(3_000)]

    async def run() -> int:
        maint = Maintainer([tree], 60_000)
        async with anyio.create_task_group() as tg:
            await tg.start(maint.run)
            for k, v in records:
                tree.upsert(k, v)
            while tree.wal.has_work() or maint.busy:
                await anyio.sleep(0.01)
            await maint.shutdown()
        return threading.get_ident()

    loop_thread = anyio.run(run)
    seq = tree.wal.seq
    tree.close()
    assert threads and loop_thread not in threads
    assert list(replay_file(wal_path(tmp_path, seq)))[: len(records)] == records


def test_appending_records_leaves_no_object_for_the_garbage_collector(tmp_path: Path) -> None:
    """The log kept a (key, value) tuple per record: five tracked objects per inserted
    profile, which set off about 930 young collections in a 200k insert; flat, none."""
    import gc

    wal = wal_module.WriteAheadLog(tmp_path, "async-compressed", 0)
    keys = [b"%020d" % i for i in range(10_000)]
    value = b"v" * 100
    gc.disable()
    try:
        before = gc.get_count()[0]
        for k in keys:
            wal.append(k, value)
        grown = gc.get_count()[0] - before
    finally:
        gc.enable()
    wal.write_now()
    wal.close()
    assert grown < 100, grown
    assert list(replay_file(wal_path(tmp_path, 0))) == [(k, value) for k in keys]
