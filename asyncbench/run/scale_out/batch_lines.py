"""The batch lines of a scaled-out run's client processes, carried to the coordinator live.

A client process queues each operation batch's figures and latency marks as its phase
runs (O(1) on the timed path: a deque append) and ships what has queued every
:data:`SHIP_SECONDS`, a few batches at a time, as one Dask event (``Worker.log_event``,
the coordinator subscribes with ``Client.subscribe_topic``): Dask's own facility, chosen
by measurement over ``distributed.Queue`` and polling the actor (docs/scaling.md, "Batch
lines from the client processes"; docs/results/distributed-engine.md). An event holds a
few numpy buffers, not one Python object per batch, so packing it costs little.

The coordinator (:class:`BatchLineReceiver`) keeps each batch in the phase's recorder and
hands it to the observers as the single-process runner's batch hook does (the JSON log's
line, the progress bar, the status line), with the client process's index and host; its
marks are moved onto the coordinator's clock first (by one shift per process, from the
wall-minus-monotonic offsets of its first event and of the coordinator: a process's
stamps keep their order), so a line's timestamp is when its batch ended, across hosts as
good as their clock sync. The recorder gives the phase's per-second series, latency over
time and open-loop figures exactly as one process's (:mod:`asyncbench.run.phase.phase_rows`). Each
process reports how many batches it shipped with its phase result, and the coordinator
waits for them before the phase ends, so every batch line precedes its ``phase_end``.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any, cast

import numpy as np

from asyncbench.measure.latency import CLOCK
from asyncbench.measure.latency_recorder import PhaseRecorder
from asyncbench.run.observe.observers import BatchDone, Observer

__all__ = ["SHIP_SECONDS", "BatchLineReceiver", "Outbox", "clock_offset_ns", "pack", "unpack"]

#: How often a client process ships its queued batches during a phase (a batch line is at
#: most about this late, plus the trip through the scheduler: docs/scaling.md).
SHIP_SECONDS = 0.1
_FIELDS = 7  # per batch: worker, index, ops, seconds (ns), marks, intended times, loop blocked (ns)

Batch = tuple[int, int, int, float, np.ndarray, "np.ndarray | None", int]


def clock_offset_ns() -> int:
    """This process's wall clock minus :data:`~asyncbench.measure.latency.CLOCK` (ns)."""
    return time.time_ns() - CLOCK()


class Outbox:
    """A client process's batches not shipped yet (appended by the benchmark's thread,
    taken by the shipper on the Dask worker's loop: a deque is safe between the two)."""

    def __init__(self) -> None:
        self._queue: deque[Batch] = deque()
        self.count = 0  # batches queued in the current phase

    def begin(self) -> None:
        self._queue.clear()
        self.count = 0

    def add(
        self, worker: int, index: int, ops: int, seconds: float, marks: np.ndarray, intended: Any = None, blocked: int = 0
    ) -> None:
        self._queue.append((worker, index, ops, seconds, marks, intended, blocked))
        self.count += 1

    def take(self) -> list[Batch]:
        out: list[Batch] = []
        pop = self._queue.popleft
        try:
            while True:
                out.append(pop())
        except IndexError:
            return out


def pack(batches: Sequence[Batch], phase: int, process: int) -> dict[str, Any]:
    """A shipment: msgpack-able (what ``log_event`` carries), three buffers for any number
    of batches."""
    meta = np.empty((len(batches), _FIELDS), dtype=np.int64)
    marks: list[np.ndarray] = []
    intended: list[np.ndarray] = []
    for row, (worker, index, ops, seconds, stamps, due, blocked) in zip(meta, batches, strict=True):
        row[:] = (worker, index, ops, round(seconds * 1e9), len(stamps), -1 if due is None else len(due), blocked)
        marks.append(stamps)
        if due is not None:
            intended.append(due)
    return {
        "phase": phase,
        "process": process,
        "offset_ns": clock_offset_ns(),
        "meta": meta.tobytes(),
        "marks": np.concatenate(marks).astype(np.int64, copy=False).tobytes() if marks else b"",
        "intended": np.concatenate(intended).astype(np.int64, copy=False).tobytes() if intended else b"",
    }


def unpack(msg: dict[str, Any], shift_ns: int = 0) -> list[Batch]:
    """A shipment's batches, their marks and intended times moved by ``shift_ns``."""
    meta = np.frombuffer(msg["meta"], dtype=np.int64).reshape(-1, _FIELDS)
    marks = np.frombuffer(msg["marks"], dtype=np.int64) + shift_ns
    intended = np.frombuffer(msg["intended"], dtype=np.int64) + shift_ns
    out: list[Batch] = []
    m = i = 0
    for worker, index, ops, seconds_ns, n_marks, n_intended, blocked in meta.tolist():
        due = None
        if n_intended >= 0:
            due = intended[i : i + n_intended]
            i += n_intended
        out.append((worker, index, ops, seconds_ns / 1e9, marks[m : m + n_marks], due, blocked))
        m += n_marks
    return out


class BatchLineReceiver:
    """The coordinator's end: an event handler (``Client.subscribe_topic``) that hands the
    current phase's batches to the observer and counts every process's batches."""

    def __init__(self, engine: str, phase_names: Sequence[str], observer: Observer, hosts: Callable[[int], str]) -> None:
        self.engine, self.phase_names, self.observer, self.hosts = engine, phase_names, observer, hosts
        self.received: dict[tuple[int, int], int] = {}  # (phase, process) -> batches received
        self.phase: int | None = None
        self.recorder: PhaseRecorder | None = None
        self._shift: dict[int, int] = {}  # per process: its clock to the coordinator's (ns)
        self.done = 0  # the current phase's operations so far, every process
        self.error: BaseException | None = None
        #: seconds from a batch's end to its arrival here, every batch (docs/scaling.md)
        self.delays: list[float] = []

    def begin(self, phase: int, recorder: PhaseRecorder | None = None) -> None:
        self.phase, self.done, self.recorder = phase, 0, recorder

    def end(self) -> None:
        self.phase, self.recorder = None, None

    def count(self, phase: int, process: int) -> int:
        return self.received.get((phase, process), 0)

    def __call__(self, event: tuple[float, dict[str, Any]]) -> None:
        _, msg = event
        try:
            self._take(msg)
        except Exception as exc:  # an observer fault must not stop the run (nor the Dask client)
            if self.error is None:
                self.error = exc

    def _take(self, msg: dict[str, Any]) -> None:
        phase, process = msg["phase"], msg["process"]
        shift = self._shift.get(process)
        if shift is None:
            shift = self._shift[process] = msg["offset_ns"] - clock_offset_ns()
        batches = unpack(msg, shift)
        key = (phase, process)
        self.received[key] = self.received.get(key, 0) + len(batches)
        if phase != self.phase:  # a phase already ended (its lines were given up): drop
            return
        name, host, now = self.phase_names[phase], self.hosts(process), CLOCK()
        handle, recorder = self.observer.batch, self.recorder
        for worker, index, ops, seconds, marks, intended, blocked in batches:
            self.done += ops
            if recorder is not None:
                # (the recorder takes an int64 array as it takes the engine's list of stamps)
                marks = recorder.add(worker, ops, seconds, cast("list[int]", marks), intended, blocked)
            if len(marks):
                self.delays.append((now - int(marks[-1])) / 1e9)
            handle(BatchDone(self.engine, name, index, ops, seconds, self.done, worker, marks, intended, process, host))
