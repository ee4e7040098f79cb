"""The status line's observer holds a bounded number of latency marks (issue 24's harness
share): it kept every batch's marks for its whole 10 s interval, 8 bytes per operation
of a fast engine, all counted as the engine's memory."""

from __future__ import annotations

import io

import numpy as np
import pytest

from asyncbench.measure.latency import LatencyHistogram
from asyncbench.run.observe import status
from asyncbench.run.observe.observers import BatchDone
from asyncbench.run.observe.status import StatusLineObserver


def test_the_marks_held_between_status_lines_are_bounded_and_every_one_is_counted(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # no line and no fold by the thread within the test: only the caller's fold bounds them
    monkeypatch.setattr(status, "FOLD_SECONDS", 3_600.0)
    out = io.StringIO()
    observer = StatusLineObserver(out, interval=3_600)
    rng = np.random.default_rng(5)
    observer.phase_start("noop", "reads", 2_000_000)
    everything = []
    try:
        for i in range(2_000):  # 2M operations' marks within one interval
            marks = np.cumsum(rng.integers(100, 10_000, size=1_001)).astype(np.int64)
            everything.append(np.diff(marks))
            observer.batch(BatchDone("noop", "reads", i, 1_000, 0.001, (i + 1) * 1_000, 0, marks))
            assert sum(len(m) - 1 for m in observer._new) <= status.MAX_HELD_OPS + 1_000
        line = observer.line()
    finally:
        observer.close()
    want = LatencyHistogram.from_values(np.concatenate(everything)).values_at_percentiles([99.0])[0]
    assert line is not None and "2_000_000/2_000_000 ops" in line
    assert observer._hist.count == 2_000_000
    assert observer._hist.values_at_percentiles([99.0])[0] == want
