"""Under a target rate the live log writes at most one batch line per worker per 100 ms,
and the lines' totals stay exact (issue 51, finding 8: ``quick.toml --rate 2k,8k,32k``
wrote 147 MB, 386_022 lines, one per operation)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import orjson

from asyncbench.measure.latency import nearest_rank
from asyncbench.run.observe import observers
from asyncbench.run.observe.logs import LogFile
from asyncbench.run.observe.observers import BatchDone, JsonLogObserver
from asyncbench.run.observe.paced_lines import PACED_LINE_NS

MS = 1_000_000


def _lines(path: Path, event: str = "batch") -> list[dict]:
    return [e for e in map(orjson.loads, path.read_bytes().splitlines()) if e.get("event") == event]


def test_a_paced_run_logs_at_most_a_line_per_worker_per_100_ms_with_exact_totals(run_cli, tmp_path: Path) -> None:
    """A 1.5 s phase at 2_000 reads/s on two workers (about one operation a batch): its
    batch lines are bounded by its duration / 0.1 s per worker (+1 each at its end), add
    up to its operations, and the last says all were done."""
    plan = tmp_path / "paced.toml"
    plan.write_text(
        '[run]\nprofiles = 3000\nengines = ["memory"]\nparallelism = 2\nisolate = false\n'
        '[[phase]]\nkind = "insert"\n[[phase]]\nkind = "read_by_id"\nrate = 2000\n'
    )
    log = tmp_path / "run.log"
    code, results, output = run_cli(str(plan), "--log-file", str(log), "--no-progress", "--yes")
    assert code == 0, output
    (end,) = [e for e in _lines(log, "phase_end") if e["kind"] == "read_by_id"]
    lines = [b for b in _lines(log) if b["kind"] == "read_by_id"]
    workers = 2
    bound = workers * (math.ceil(end["seconds"] / 0.1) + 1)
    assert end["ops"] == 3000 and 0 < len(lines) <= bound, (len(lines), bound, end["seconds"])
    assert sum(b["ops"] for b in lines) == end["ops"]
    assert max(b["done"] for b in lines) == end["ops"]
    assert sum(b.get("batches", 1) for b in lines) > len(lines)  # lines cover several batches
    closed = [b for b in _lines(log) if b["kind"] == "insert"]
    assert sum(b["ops"] for b in closed) == 3000 and "batches" not in closed[0]  # closed loop: a line per batch


def test_a_lines_figures_are_exact_over_every_batch_it_covers(tmp_path: Path) -> None:
    """The batches one line covers: ops and elapsed summed, p99/max (service and response)
    over all their operations, stamped with the last one's end; per worker at most one line
    per 100 ms of the batches' ends."""
    path = tmp_path / "paced.log"
    log = LogFile(path)
    observer = JsonLogObserver(None, log)
    observer._phase = ("read_by_id", "reads", 0)
    observer._paced.begin()
    rng = np.random.default_rng(3)
    start = observers.CLOCK()
    sent: dict[int, list[BatchDone]] = {0: [], 1: []}
    done = 0
    for i in range(1_000):  # a batch of 1-3 operations every ms per worker: 1 s
        for worker in (0, 1):
            n = int(rng.integers(1, 4))
            t0 = start + i * MS + worker * 300_000
            marks = np.cumsum(np.concatenate([[t0], rng.integers(1_000, 90_000, size=n)])).astype(np.int64)
            intended = marks[:-1] - rng.integers(0, 500_000, size=n)
            done += n
            b = BatchDone("memory", "reads", i, n, float(marks[-1] - marks[0]) / 1e9, done, worker, marks, intended)
            sent[worker].append(b)
            observer.batch(b)
    observer._flush_paced()  # what phase_end does first
    log.close()
    assert log.error is None
    lines = _lines(path)
    for worker in (0, 1):
        own = [ln for ln in lines if ln["worker"] == worker]
        assert len(own) <= 1 + (1_000 * MS) // PACED_LINE_NS + 1, len(own)
        assert sum(ln["ops"] for ln in own) == sum(b.ops for b in sent[worker])
        assert sum(ln["batches"] for ln in own) == 1_000
        # the first line's figures, against the operations of the batches it covers
        first, covered = own[0], sent[worker][: own[0]["batches"]]
        service = np.concatenate([np.diff(b.marks) for b in covered])
        response = np.concatenate([b.marks[1:] - b.intended for b in covered])
        for values, p99, mx in ((service, "p99_us", "max_us"), (response, "response_p99_us", "response_max_us")):
            k = nearest_rank(values.size, 99.0) - 1
            assert first[p99] == round(int(np.sort(values)[k]) / 1000, 3)
            assert first[mx] == round(int(values.max()) / 1000, 3)
        assert first["ops"] == sum(b.ops for b in covered) and first["batch"] == covered[-1].index
        assert first["elapsed_ms"] == round(sum(b.seconds for b in covered) * 1000, 3)
    assert max(ln["done"] for ln in lines) == done

