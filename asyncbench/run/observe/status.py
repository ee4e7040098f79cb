"""Without a terminal, a status line on stderr every :data:`INTERVAL_SECONDS` while a phase runs.

YCSB's ``-s`` and db_bench's ``--stats_interval`` do the same: a run in CI or under
``nohup`` still shows, every so often, where it is. The line names the engine and phase,
the operations done (of the phase's total), the phase's ops/s so far and its p99 latency
so far::

    asyncbench: status: sqlite · read by user id: 12_000/20_000 ops, 45_123/s, p99 23.4 µs

Nothing of it runs on the timed path beyond ``batch`` keeping a reference to the batch's
marks array (one list append): a daemon thread folds the batches into the phase's
histogram every :data:`FOLD_SECONDS` and prints every interval. The marks it holds are
bounded (:data:`MAX_HELD_OPS`): held for the whole interval, a fast engine's took 8 bytes
per operation of ten seconds (24 MB at 300_000 reads/s, 80 MB for a no-op engine's
10M-operation phase), all counted in the engine's peak memory. ``--quiet`` (the environment
variable :data:`QUIET_ENV`, which engine child processes inherit) turns it off.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from typing import Any, TextIO

import numpy as np

from asyncbench import fmt
from asyncbench.measure.latency import LatencyHistogram, format_us
from asyncbench.result import EngineResult
from asyncbench.run.observe.observers import BatchDone, Observer

__all__ = ["INTERVAL_ENV", "INTERVAL_SECONDS", "QUIET_ENV", "StatusLineObserver", "status_wanted"]

INTERVAL_SECONDS = 10.0
#: How often the status thread folds the new batches' marks into the phase's histogram.
FOLD_SECONDS = 0.25
#: Operations whose marks ``batch`` may leave for the thread; past this (an engine of
#: millions of operations a second) the caller folds them itself (~15 ns per operation).
MAX_HELD_OPS = 500_000
#: Set by ``--quiet``; child processes inherit it.
QUIET_ENV = "ASYNCBENCH_QUIET"
#: Another interval (seconds), for tests.
INTERVAL_ENV = "ASYNCBENCH_STATUS_SECONDS"


def status_wanted(stream: TextIO | None = None) -> bool:
    """Status lines when there is no terminal to draw bars on, unless ``--quiet``."""
    if os.environ.get(QUIET_ENV, "") not in ("", "0"):
        return False
    stream = stream or sys.stdout
    isatty = getattr(stream, "isatty", None)
    return not (isatty and isatty())


class StatusLineObserver(Observer):
    """Tracks the running phase (from the batch hook) and prints its status line periodically."""

    def __init__(self, stream: TextIO | None = None, interval: float | None = None) -> None:
        self.out = stream or sys.stderr
        self.interval = interval or float(os.environ.get(INTERVAL_ENV) or INTERVAL_SECONDS)
        self._phase: tuple[str, str, int, float] | None = None  # engine, phase, total ops, start
        self._done = 0
        self._new: list[tuple[Any, Any]] = []  # (marks, intended times or None) not folded yet
        self._paced = False  # the phase runs at a rate: its figure is the response time
        self._held = 0  # their operations
        self._hist = LatencyHistogram()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    # --- the runner's side ----------------------------------------------------------------

    def phase_start(
        self, engine: str, phase: str, total_ops: int, kind: str | None = None, stream: str | None = None
    ) -> None:
        with self._lock:
            self._phase = (engine, phase, total_ops, time.monotonic())
            self._done, self._new, self._held, self._hist = 0, [], 0, LatencyHistogram()
            self._paced = False
        if self._thread is None:
            self._stop.clear()
            self._thread = threading.Thread(target=self._run, name="asyncbench-status", daemon=True)
            self._thread.start()

    def batch(self, b: BatchDone) -> None:
        self._done = b.done
        if b.intended is not None:
            # under a rate the line shows response time (end minus intended start), as the
            # verdicts judge it: service time alone read as "under the bound" (issue 51)
            self._paced = True
            self._new.append((b.marks, b.intended))
        else:
            self._new.append((b.marks, None))
        self._held += b.ops
        if self._held > MAX_HELD_OPS:  # the thread is far behind: fold here, memory stays bounded
            self._fold()

    def phase_end(self, engine: str, result: Any) -> None:
        with self._lock:
            self._phase = None
            self._new, self._held = [], 0

    def engine_end(self, result: EngineResult) -> None:
        self.close()

    def run_end(self, **info: Any) -> None:
        self.close()

    def close(self) -> None:
        with self._lock:
            self._phase = None
            self._new, self._held = [], 0
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    # --- the status thread ---------------------------------------------------------------

    def _run(self) -> None:
        due = time.monotonic() + self.interval
        while not self._stop.wait(min(FOLD_SECONDS, max(due - time.monotonic(), 0.0))):
            if time.monotonic() < due:
                self._fold()
                continue
            due += self.interval
            line = self.line()
            if line:
                print(line, file=self.out, flush=True)

    def _fold(self) -> None:
        """Fold the marks not folded yet into the phase's histogram (the lock held: the
        thread and a far-behind caller may both fold)."""
        with self._lock:
            new, self._new, self._held = self._new, [], 0
            hist = self._hist
            for marks, intended in new:
                if len(marks) < 2:
                    continue
                if intended is None:
                    hist.record(np.diff(marks))
                else:
                    hist.record(np.asarray(marks[1:], dtype=np.int64) - np.asarray(intended, dtype=np.int64))

    def line(self) -> str | None:
        """The status line now, or None between phases."""
        self._fold()
        with self._lock:
            if self._phase is None:
                return None
            engine, phase, total, started = self._phase
            done = self._done
            hist = self._hist
        elapsed = time.monotonic() - started
        text = f"asyncbench: status: {engine} · {phase}: "
        if total <= 0:  # stabilize, settle, reopen, verify: no operations to count
            return text + f"running for {elapsed:.0f} s"
        text += f"{fmt.count(done)}/{fmt.count(total)} ops, {fmt.rate(done, elapsed)}"
        if hist.count:
            what = "response p99" if self._paced else "p99"
            text += f", {what} {format_us(hist.values_at_percentiles([99.0])[0])} µs"
        return text
