"""Under a target rate, the live log writes at most one batch line per worker per
:data:`PACED_LINE_NS`, each line covering every batch of that worker since its last one.

Why: at a target rate a worker issues the operations due now, so most batches hold one
operation, and a line per batch is a line per operation: ``quick.toml --rate 2k,8k,32k``
wrote 147 MB, 386_022 lines (issue 51, finding 8), and every line is rendered on the log's
writer thread, whose GIL time delays the phase's event loop. Closed loop, a batch is
``batch_size`` operations and keeps its own line.

Nothing is lost: a line's ``ops`` and ``elapsed_ms`` are its batches' sums, ``done`` the
phase's operations after its last batch, its p99 and max (service and response) are
exact over all its operations, and ``batches`` says how many batches it covers, so the
lines' ``ops`` still add up to the phase's operations. A worker's held batches are
written when its next batch ends :data:`PACED_LINE_NS` or more after its last line ended
(so a line is at most about that late), and what is held when the phase ends goes out
before the phase's ``phase_end`` line. Holding is O(1) per batch (a list append and one
comparison): it runs on the timed path; the figures are taken on the writer thread.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Generic, Protocol, TypeVar

import numpy as np

from asyncbench.measure.latency import CLOCK, BatchLatency, nearest_rank

__all__ = ["PACED_LINE_NS", "Batch", "PacedLines", "group_figures"]

#: Under a rate, a worker's batch lines are at least this far apart (by their batches'
#: end stamps, ns): at most ten lines per second per worker, plus one at the phase's end.
PACED_LINE_NS = 100_000_000

Worker = tuple[int | None, int]  # (client process, worker): a scaled-out run's workers are per process


class Batch(Protocol):
    """What holding needs of a batch (:class:`asyncbench.run.observe.observers.BatchDone`, which
    imports this module)."""

    @property
    def process(self) -> int | None: ...
    @property
    def worker(self) -> int: ...
    @property
    def marks(self) -> Any: ...
    @property
    def intended(self) -> Any: ...


B = TypeVar("B", bound=Batch)


class PacedLines(Generic[B]):
    """Per worker, the batches of the current phase not written yet."""

    def __init__(self) -> None:
        self._held: dict[Worker, list[B]] = {}
        self._last: dict[Worker, int] = {}  # the end stamp of each worker's last line
        self._start = CLOCK()

    def begin(self) -> None:
        """A new phase: nothing held, every worker's first line 100 ms after now."""
        self._held.clear()
        self._last.clear()
        self._start = CLOCK()

    def add(self, b: B) -> list[B] | None:
        """Hold ``b``; the worker's batches for one line when their time has come, else None."""
        key = (b.process, b.worker)
        held = self._held.get(key)
        if held is None:
            held = self._held[key] = []
        held.append(b)
        marks = b.marks
        end = int(marks[-1]) if marks is not None and len(marks) else CLOCK()
        if end - self._last.get(key, self._start) < PACED_LINE_NS:
            return None
        self._last[key] = end
        del self._held[key]
        return held

    def drain(self) -> list[list[B]]:
        """Every worker's held batches (the phase ended), one group per worker."""
        out = list(self._held.values())
        self._held.clear()
        return out


def _p99_max(values: np.ndarray) -> BatchLatency:
    n = int(values.size)
    if n == 0:
        return BatchLatency(0, 0, 0)
    k = nearest_rank(n, 99.0) - 1
    return BatchLatency(n, int(np.partition(values, k)[k]), int(values.max()))


def group_figures(group: Sequence[Batch]) -> tuple[BatchLatency, BatchLatency | None, int | None]:
    """Exact service and response p99/max over every operation of ``group``'s batches
    (response: None unless they ran at a rate), and the last batch's end stamp."""
    service: list[np.ndarray] = []
    response: list[np.ndarray] = []
    last: int | None = None
    for b in group:
        marks: Any = b.marks
        if marks is None or len(marks) < 2:
            continue
        stamps = np.asarray(marks, dtype=np.int64)
        service.append(stamps[1:] - stamps[:-1])
        if b.intended is not None:
            response.append(stamps[1:] - np.asarray(b.intended, dtype=np.int64))
        last = int(stamps[-1])
    svc = _p99_max(np.concatenate(service)) if service else BatchLatency(0, 0, 0)
    resp = _p99_max(np.concatenate(response)) if response else None
    return svc, resp, last
