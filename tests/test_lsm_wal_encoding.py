"""Log-frame encoding (issue 40 item 4): the compiled encoder writes the Python twin's
bytes, refuses what the twin refuses, and the log writer encodes off the event loop."""

from __future__ import annotations

import random
import threading
from pathlib import Path
from typing import Any

import anyio
import asyncbench.engines.lsm.wal as wal_module
import pytest
from asyncbench.engines.lsm import native
from asyncbench.engines.lsm.maintainer import Maintainer
from asyncbench.engines.lsm.tree import LsmTree, TreeOptions
from asyncbench.engines.lsm.wal import decode_records, encode_records_py, replay_file, wal_path

compiled = pytest.mark.skipif(native.encode_records is None, reason="the C extension is not built")


def _records(seed: int, n: int) -> list[tuple[bytes, bytes | None]]:
    rnd = random.Random(seed)
    out: list[tuple[bytes, bytes | None]] = []
    for _ in range(n):
        k = rnd.randbytes(rnd.choice((0, 1, 20, 40, 300)))
        v = None if rnd.random() < 0.2 else rnd.randbytes(rnd.choice((0, 1, 250, 5000)))
        out.append((k, v))
    return out


@compiled
@pytest.mark.parametrize("seed", range(5))
def test_the_compiled_encoder_writes_the_python_twins_bytes(seed: int) -> None:
    assert native.encode_records is not None
    for n in (0, 1, 17, 2_000):
        records = _records(seed, n)
        payload = native.encode_records(records)
        assert payload == encode_records_py(records)
        assert list(decode_records(payload)) == records


@compiled
@pytest.mark.parametrize(
    "bad",
    [
        ((b"k", b"v"),),  # a tuple, not a list
        [[b"k", b"v"]],  # a record that is a list
        [(b"k",)],
        [(b"k", b"v", b"x")],
        [("k", b"v")],
        [(b"k", "v")],
        [(b"k", 1)],
        [(None, b"v")],
    ],
)
def test_the_compiled_encoder_refuses_what_is_not_records(bad: Any) -> None:
    assert native.encode_records is not None
    with pytest.raises(TypeError):
        native.encode_records(bad)


def test_the_log_writer_encodes_in_a_worker_thread(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Before issue 40 the maintainer encoded each 16_384-record frame on the event loop."""
    threads: list[int] = []
    real = wal_module.encode_records

    def recording(records: list[tuple[bytes, bytes | None]]) -> bytes:
        threads.append(threading.get_ident())
        return real(records)

    monkeypatch.setattr(wal_module, "encode_records", recording)
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
