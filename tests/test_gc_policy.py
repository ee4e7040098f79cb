"""The harness keeps its own objects out of garbage collections inside a phase (issue 51's
follow-up: full collections walking the harness's objects, 10-70 ms each, were the client's
own schedule delay at 2_000-5_000 operations a second)."""

from __future__ import annotations

import gc
from pathlib import Path

import numpy as np
import pytest
from conftest import ROOT

from asyncbench.run.observe.gc_policy import harness_frozen
from asyncbench.workloads.common.mix import Done, figures


def test_a_mixed_phase_keeps_no_tracked_object_per_batch() -> None:
    """Its (positions, marks) of every batch were a tuple and a list of ints each: 26_000 of
    each after a 50_000-operation YCSB phase at 5_000/s, walked by every full collection."""
    done = Done()
    gc.collect()
    before = len(gc.get_objects())
    for b in range(5_000):
        marks = [10 * b, 10 * b + 3]  # a batch of one: its start stamp, then its end
        done.append(np.array([b], dtype=np.int64), marks)
        del marks
    gc.collect()
    assert len(gc.get_objects()) - before < 50
    # and they still give each kind its latencies
    kind = np.zeros(5_000, dtype=np.int64)
    fig = figures(["read"], kind, np.arange(5_000, dtype=np.int64), done, np.arange(5_000), 5_000)
    assert fig.latencies_ns["read"].tolist() == [3] * 5_000


def test_the_harness_is_frozen_for_the_block_and_handed_back_after() -> None:
    before = [object()]  # a tracked object alive before the block
    with harness_frozen() as frozen:
        assert frozen > 1_000 and gc.get_freeze_count() > 1_000
        during = [object()]  # an object made inside (an engine's) is collected as usual
        tracked = {id(o) for o in gc.get_objects()}
        assert id(during) in tracked and id(before) not in tracked
    assert gc.get_freeze_count() == 0
    assert id(before) in {id(o) for o in gc.get_objects()}


def test_an_engine_run_opens_its_engine_with_the_harness_frozen(run_cli, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from asyncbench.engines.memory import MemoryEngine

    seen: list[int] = []
    opened = MemoryEngine.open

    async def open_and_look(self: MemoryEngine, *args: object, **kwargs: object) -> None:
        seen.append(gc.get_freeze_count())
        await opened(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(MemoryEngine, "open", open_and_look)
    code, _, out = run_cli(str(ROOT / "benchmarks" / "quick.toml"), "--engine", "memory", "--profiles", "1k", "--no-isolate")
    assert code == 0, out
    assert seen and all(n > 1_000 for n in seen)  # the imports alone are tens of thousands
    assert gc.get_freeze_count() == 0  # handed back after the run
