"""A scaled-out run's batch lines (asyncbench.run.scale_out.batch_lines): what a client process packs
is what the coordinator's observers get, moved onto its clock, with the process's index and
host; the status line and the progress bar advance with them."""

from __future__ import annotations

import io

import numpy as np
import pytest
from rich.console import Console

from asyncbench.run.observe.observers import BatchDone, Observer, ObserverGroup
from asyncbench.run.observe.progress import ProgressObserver
from asyncbench.run.observe.status import StatusLineObserver
from asyncbench.run.scale_out.batch_lines import BatchLineReceiver, Outbox, pack, unpack


def _outbox() -> Outbox:
    box = Outbox()
    box.begin()
    box.add(0, 0, 3, 0.25, np.array([100, 110, 130, 160], dtype=np.int64))
    box.add(1, 0, 2, 0.5, np.array([200, 205, 215], dtype=np.int64), np.array([190, 200], dtype=np.int64), 7)
    box.add(0, 1, 0, 0.0, np.array([300], dtype=np.int64))  # a batch without operations
    return box


def test_pack_then_unpack_gives_the_batches_moved_by_the_shift() -> None:
    box = _outbox()
    assert box.count == 3
    batches = box.take()
    assert box.take() == [] and box.count == 3  # taken once; the phase's count stays
    msg = pack(batches, phase=4, process=1)
    assert msg["phase"] == 4 and msg["process"] == 1 and isinstance(msg["meta"], bytes)
    got = unpack(msg, shift_ns=1000)
    assert [(w, i, n, s) for w, i, n, s, _, _, _ in got] == [(0, 0, 3, 0.25), (1, 0, 2, 0.5), (0, 1, 0, 0.0)]
    assert [b[6] for b in got] == [0, 7, 0]  # the loop's blocked ns, carried to the coordinator's recorder
    assert got[0][4].tolist() == [1100, 1110, 1130, 1160] and got[0][5] is None
    assert got[1][4].tolist() == [1200, 1205, 1215] and got[1][5].tolist() == [1190, 1200]
    assert got[2][4].tolist() == [1300]


class Seen(Observer):
    def __init__(self) -> None:
        self.batches: list[tuple] = []

    def batch(self, b: BatchDone) -> None:
        self.batches.append((b.engine, b.phase, b.index, b.ops, b.done, b.worker, b.process, b.host, b.marks.tolist()))


def test_receiver_hands_the_current_phase_to_the_observers_and_counts_every_phase() -> None:
    seen = Seen()
    status = StatusLineObserver(io.StringIO(), interval=3600)
    progress = ProgressObserver(Console(file=io.StringIO(), force_terminal=False))
    receiver = BatchLineReceiver("postgres", ["insert", "reads"], ObserverGroup(seen, status, progress), ["h0", "h1"].__getitem__)
    status.phase_start("postgres", "reads", 5)
    progress.phase_start("postgres", "reads", 5)
    receiver.begin(1)
    msg = pack(_outbox().take(), phase=1, process=1)
    receiver((0.0, msg))
    receiver((0.0, pack(_outbox().take()[:1], phase=0, process=0)))  # a phase that ended: counted, not shown
    assert receiver.count(1, 1) == 3 and receiver.count(0, 0) == 1 and receiver.count(1, 0) == 0
    assert [b[:8] for b in seen.batches] == [
        ("postgres", "reads", 0, 3, 3, 0, 1, "h1"),
        ("postgres", "reads", 0, 2, 5, 1, 1, "h1"),
        ("postgres", "reads", 1, 0, 5, 0, 1, "h1"),
    ]
    shift = seen.batches[0][8][0] - 100  # the coordinator's clock minus the process's (~0 here)
    assert abs(shift) < 50_000_000 and seen.batches[1][8] == [200 + shift, 205 + shift, 215 + shift]
    line = status.line()
    assert line is not None and "5/5 ops" in line and "p99" in line
    task = progress.tasks[("postgres", "reads")]
    assert progress.progress.tasks[task].completed == 5
    assert len(receiver.delays) == 3 and receiver.error is None
    status.close()
    progress.stop()


def test_an_observer_fault_is_kept_not_raised() -> None:
    class Broken(Observer):
        def batch(self, *args, **kwargs) -> None:
            raise OSError("disk full")

    receiver = BatchLineReceiver("postgres", ["reads"], Broken(), lambda k: "h")
    receiver.begin(0)
    receiver((0.0, pack(_outbox().take(), phase=0, process=0)))
    assert isinstance(receiver.error, OSError)
    assert receiver.count(0, 0) == 3


@pytest.mark.parametrize("process", [0, 3])
def test_json_log_line_of_a_client_batch_names_its_process_and_host(process: int) -> None:
    import orjson

    from asyncbench.run.observe.observers import _render_batch

    marks = np.array([10, 20, 40], dtype=np.int64)
    line = orjson.loads(
        _render_batch((BatchDone("pg", "reads", 7, 2, 0.001, 9, 2, marks, None, process, "b"), "read_by_id", "reads", 0, None, {}))
    )
    assert line["process"] == process and line["host"] == "b" and line["worker"] == 2 and line["ops"] == 2
    plain = orjson.loads(_render_batch((BatchDone("pg", "reads", 7, 2, 0.001, 9, 2, marks), "read_by_id", "reads", 0, None, {})))
    assert "process" not in plain and "host" not in plain
