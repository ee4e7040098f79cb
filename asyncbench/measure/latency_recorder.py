"""The runner's side of per-operation latency: one phase's batches, by worker.

Per batch (inside the phase, O(1) apart from one C-level copy): the engine's marks list
is copied into an int64 array (``np.fromiter``, ~15 ns per operation measured; it keeps
a 2_000_000-operation phase at 16 MB of marks instead of ~80 MB of Python ints, which
would count in the engine's peak memory), and the batch's ops and seconds are kept for
its log line. After the phase, outside its time, :class:`~asyncbench.measure.latency.PhaseLatency`
builds the HdrHistogram, the summary, the over-time slices and each batch's p99/max.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from asyncbench.measure.latency import PhaseLatency

__all__ = ["PhaseRecorder"]


class PhaseRecorder:
    """Collects the marks of the P workers of one operation phase."""

    __slots__ = ("_workers", "_batches")

    def __init__(self, workers: int) -> None:
        self._workers = [PhaseLatency() for _ in range(workers)]
        self._batches: list[tuple[int, int, float]] = []  # (worker, ops, seconds)

    def add(self, worker: int, ops: int, seconds: float, marks: list[int]) -> np.ndarray:
        """Keep one batch; returns its marks as the int64 array kept (for the live log line)."""
        if len(marks) != ops + 1 and ops:
            raise RuntimeError(
                f"engine returned {len(marks)} latency marks for a batch of {ops} operations; "
                "it must append one start stamp and one stamp per operation"
            )
        stamps = np.fromiter(marks, np.int64, len(marks))
        self._workers[worker].add(stamps)
        self._batches.append((worker, ops, seconds))
        return stamps

    def _merged(self) -> PhaseLatency:
        return PhaseLatency.merge(self._workers)

    def summary(self) -> dict[str, Any] | None:
        merged = self._merged()
        return merged.to_dict() if merged.ops else None

    def over_time(self, buckets: int = 100) -> list[list[float]]:
        return [list(b) for b in self._merged().over_time(buckets)]

    def batch_rows(self) -> list[dict[str, Any]]:
        """One log row per batch in completion order: worker, its batch index, ops, time,
        the worker's own ops/s for that batch, and the batch's p99 and max latency."""
        stats = [iter(w.batch_stats()) for w in self._workers]
        counters = [0] * len(self._workers)
        rows = []
        done = 0
        for worker, ops, seconds in self._batches:
            done += ops
            st = next(stats[worker], None)
            index = counters[worker]
            counters[worker] += 1
            rows.append(
                {
                    "worker": worker,
                    "batch": index,
                    "ops": ops,
                    "elapsed_ms": round(seconds * 1000, 3),
                    "ops_per_s": round(ops / seconds) if seconds > 0 else None,  # this worker's rate
                    "done": done,  # operations completed in the phase, all workers
                    "p99_us": round(st.p99_ns / 1000, 3) if st and st.ops else None,
                    "max_us": round(st.max_ns / 1000, 3) if st and st.ops else None,
                }
            )
        return rows
