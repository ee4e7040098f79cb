"""The JSON log is live: a batch's line reaches ``--log-file`` while its phase runs,
stamped with the batch's own end, and a failing or stalled log never stops the run.

The end-to-end tests tail the log of a real run in a subprocess (the ``paced`` test
engine takes 0.3 s per read batch, so its read phase lasts 3 s) and note when each line
first appears."""

from __future__ import annotations

import errno
import signal
import threading
import time
from datetime import datetime
from pathlib import Path

import numpy as np
import orjson
import pytest
from cli_process import BackgroundRun, kill_quietly, wait_for

from asyncbench.run.observe import logs, observers
from asyncbench.run.observe.logs import LogFile, iso_utc
from asyncbench.run.observe.observers import BatchDone, JsonLogObserver
from asyncbench.run.observe.paced_lines import PACED_LINE_NS

PLAN = """
[run]
name = "live-log"
profiles = 2_000
seed = 570123434
limit = 50
batch_size = 100
engines = ["paced"]

[[phase]]
kind = "insert"

[[phase]]
kind = "read_by_id"
stream = "reads"
count = 1_000
"""
READS = "read by user id"
PACE = 0.3  # the paced engine's seconds per read batch


class Tail:
    """Reads the log's complete lines as they appear; each with the (wall) time first seen."""

    def __init__(self, path: Path) -> None:
        self.path, self.offset, self.pending = path, 0, b""
        self.lines: list[tuple[float, dict]] = []

    def poll(self) -> None:
        if not self.path.exists():
            return
        with self.path.open("rb") as fh:
            fh.seek(self.offset)
            data = fh.read()
        seen = time.time()
        self.offset += len(data)
        *complete, self.pending = (self.pending + data).split(b"\n")
        self.lines += [(seen, orjson.loads(line)) for line in complete]

    def follow(self, run: BackgroundRun, until=lambda tail: False, timeout: float = 90.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self.poll()
            if run.proc.poll() is not None or until(self):
                self.poll()
                return
            time.sleep(0.05)
        raise AssertionError(f"the run did not finish in {timeout:g} s\n{run.output}")

    def batches(self, phase: str) -> list[tuple[float, dict]]:
        return [(t, e) for t, e in self.lines if e["event"] == "batch" and e["phase"] == phase]

    def phase_end(self, phase: str) -> list[tuple[float, dict]]:
        return [(t, e) for t, e in self.lines if e["event"] == "phase_end" and e["phase"] == phase]


def _start(tmp_path: Path, *args: str) -> tuple[BackgroundRun, Tail]:
    plan = tmp_path / "live.toml"
    plan.write_text(PLAN)
    log = tmp_path / "run.log"
    run = BackgroundRun(
        [str(plan), "--output", str(tmp_path / "out"), "--data", str(tmp_path / "data"), *args], log
    )
    return run, Tail(log)


def _wall(timestamp: str) -> float:
    return datetime.fromisoformat(timestamp.replace("Z", "+00:00")).timestamp()


@pytest.mark.parametrize("isolate", ["--isolate", "--no-isolate"])
def test_batch_lines_reach_the_log_while_the_phase_runs(tmp_path: Path, isolate: str) -> None:
    run, tail = _start(tmp_path, isolate)
    try:
        tail.follow(run)
        assert run.finish() == 0, run.output
    finally:
        kill_quietly(run)
    batches = tail.batches(READS)
    assert len(batches) == 10, run.output  # 1_000 reads in batches of 100
    ((end_seen, end),) = tail.phase_end(READS)
    # batch lines were in the file before the phase's end line (the last ones may share
    # its write), and they came over time
    assert all(seen <= end_seen for seen, _ in batches)
    assert sum(seen < end_seen for seen, _ in batches) >= 7
    seen_times = sorted({round(seen, 2) for seen, _ in batches})
    assert len(seen_times) >= 4 and seen_times[-1] - seen_times[0] >= 4 * PACE, seen_times
    # each line stamped with its batch's own end: increasing, a pace apart, before the end line
    stamps = [_wall(e["timestamp"]) for _, e in batches]
    gaps = [b - a for a, b in zip(stamps, stamps[1:], strict=False)]
    assert all(gap >= PACE * 0.8 for gap in gaps), gaps
    assert stamps[-1] <= _wall(end["timestamp"])
    # written soon after the batch ended (about a second at most; slack for a loaded machine)
    lags = sorted(seen - stamp for (seen, _), stamp in zip(batches, stamps, strict=True))
    assert lags[len(lags) // 2] < 1.0 and lags[-1] < 2.5, lags
    # the figures of a line are the batch's own
    first = batches[0][1]
    assert (first["worker"], first["batch"], first["ops"], first["done"]) == (0, 0, 100, 100)
    assert first["kind"] == "read_by_id" and first["stream"] == "reads"
    assert first["elapsed_ms"] >= PACE * 1000 * 0.9 and first["p99_us"] > 0 and first["max_us"] >= first["p99_us"]


def test_an_interrupted_phase_keeps_its_batch_lines(tmp_path: Path) -> None:
    run, tail = _start(tmp_path)
    try:
        tail.follow(run, until=lambda t: len(t.batches(READS)) >= 3)
        run.send(signal.SIGINT)
        code = run.finish()
        tail.poll()
    finally:
        kill_quietly(run)
    assert code == 130, run.output
    assert len(tail.batches(READS)) >= 3
    assert not tail.phase_end(READS)  # the phase never ended, its batches are still there
    (engine_end,) = [e for _, e in tail.lines if e["event"] == "engine_end"]
    assert engine_end["status"] == "interrupted" and engine_end["phase"] == READS


# --- failures of the log itself: reported, never stalling the caller ------------------


class _FullDisk(LogFile):
    def _write(self, data: bytes) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")


class _HungDisk(LogFile):
    release = threading.Event()

    def _write(self, data: bytes) -> None:
        self.release.wait(30)
        super()._write(data)


def test_a_failing_write_is_kept_and_the_callers_go_on(tmp_path: Path) -> None:
    log = _FullDisk(tmp_path / "full.log")
    for i in range(1_000):
        log.msg(b'{"event":"x","i":%d}' % i)
    assert log.flush(timeout=5)
    log.msg(b'{"event":"after"}')  # after the failure: dropped quietly, no exception
    t0 = time.monotonic()
    log.close()
    assert time.monotonic() - t0 < 2
    assert isinstance(log.error, OSError) and log.error.errno == errno.ENOSPC


def test_a_stalled_write_never_blocks_the_callers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(logs, "MAX_PENDING", 500)
    log = _HungDisk(tmp_path / "hung.log")
    try:
        log.msg(b'{"event":"first"}')
        wait_for(lambda: not log._queue, "the writer took the first line")  # and is now stuck writing it
        t0 = time.perf_counter()
        for i in range(2_000):
            log.later(lambda item: b'{"event":"x","i":%d}' % item, i)
        assert time.perf_counter() - t0 < 0.5  # queueing never waits for the file
        assert log.dropped == 1_500  # beyond MAX_PENDING lines behind: dropped and counted
        t0 = time.monotonic()
        log.close(timeout=0.3)
        assert time.monotonic() - t0 < 2
        assert isinstance(log.error, TimeoutError) and "still writing" in str(log.error)
    finally:
        _HungDisk.release.set()


class _StuckDisk(LogFile):
    """A log whose writer is stuck in its first write until ``release`` is set."""

    def __init__(self, path: Path) -> None:
        self.release = threading.Event()
        super().__init__(path)

    def _write(self, data: bytes) -> None:
        self.release.wait(30)
        super()._write(data)


def test_a_log_far_behind_holds_a_bounded_number_of_latency_stamps(tmp_path: Path) -> None:
    """Issue 24's harness share: the no-op engine runs millions of operations a second, the
    writer fell behind, and the log's queue held every batch's stamps until the run's end
    (110 MiB above the engine's start at 2M profiles). Past MAX_HELD_MARKS the batch's
    figures are taken at once and its stamps let go; every line is still written, with the
    same figures the writer would have rendered. (The batches under a rate end 100 ms
    apart, so each gets a line of its own: :mod:`asyncbench.run.observe.paced_lines`.)"""
    log = _StuckDisk(tmp_path / "behind.log")
    observer = JsonLogObserver(None, log)
    rng = np.random.default_rng(7)
    batches = []
    start = observers.CLOCK()
    try:
        log.msg(b'{"event":"first"}')
        wait_for(lambda: not log._queue, "the writer took the first line")  # and is now stuck
        for i in range(2_000):  # 2M operations' stamps: 16 MiB unbounded
            marks = start + (i + 1) * PACED_LINE_NS + np.cumsum(rng.integers(100, 50_000, size=1_001)).astype(np.int64)
            intended = marks[:-1] - rng.integers(0, 1_000, size=1_000) if i % 2 else None
            b = BatchDone("noop", "reads", i, 1_000, 0.001, (i + 1) * 1_000, 0, marks, intended)
            batches.append(b)
            observer.batch(b)
        queued = [b for _, item in log._queue for b in (item[0] if isinstance(item[0], list) else [item[0]])]
        held = sum(b.ops for b in queued if b.marks is not None)
        assert held <= observers.MAX_HELD_MARKS + 1_000  # operations whose stamps are held
    finally:
        log.release.set()
    log.close()
    assert log.error is None and log.dropped == 0
    lines = [orjson.loads(line) for line in (tmp_path / "behind.log").read_bytes().splitlines()[2:]]
    assert len(lines) == 2_000
    for b, line in zip(batches, lines, strict=True):  # as the writer renders an unbounded queue
        assert line == orjson.loads(observers._render_batch((b, None, None, 0, None, {})))


def test_lines_stay_in_order_and_render_on_the_writer(tmp_path: Path) -> None:
    path = tmp_path / "order.log"
    log = LogFile(path)
    threads: set[str] = set()

    def render(i: int) -> bytes:
        threads.add(threading.current_thread().name)
        return b'{"i":%d}' % i

    for i in range(300):
        if i % 2:
            log.later(render, i)
        else:
            log.msg(b'{"i":%d}' % i)
    log.close()
    assert log.error is None
    first, *lines = path.read_bytes().splitlines()
    assert orjson.loads(first)["event"] == "log_start"  # the record that proves the log is ours
    assert [orjson.loads(line)["i"] for line in lines] == list(range(300))
    assert threads == {"asyncbench-log-writer"}


def test_the_writer_lets_go_of_the_gil_while_it_renders(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Rendering is Python code that holds the GIL; a drain of hundreds of lines (one per
    operation under a target rate) kept the event loop from its GIL for the interpreter's
    whole 5 ms switch interval, a stall in every open-loop response time. The writer now
    sleeps (GIL released) at least every HOLD_NS of rendering, so no stretch of holding is
    longer than that plus one line."""
    sleeps: list[tuple[int, float]] = []  # (when, how long) on the writer thread
    real_sleep = time.sleep

    def sleep(seconds: float) -> None:
        if threading.current_thread().name == "asyncbench-log-writer" and seconds < logs.POLL_SECONDS:
            sleeps.append((time.perf_counter_ns(), seconds))
        real_sleep(seconds)

    monkeypatch.setattr(logs.time, "sleep", sleep)
    rendered: list[tuple[int, int]] = []  # (start, end) of each render

    def render(i: int) -> bytes:
        start = time.perf_counter_ns()
        while time.perf_counter_ns() - start < 50_000:  # 50 µs of Python per line
            pass
        rendered.append((start, time.perf_counter_ns()))
        return b'{"i":%d}' % i

    log = LogFile(tmp_path / "gil.log")
    for i in range(200):  # 10 ms of rendering, queued before the writer's next wake-up
        log.later(render, i)
    log.close()
    assert log.error is None and len(rendered) == 200
    assert len(sleeps) >= 10 and all(s == logs.YIELD_SECONDS for _, s in sleeps)
    # each line takes at least 50 µs, so between two yields at most HOLD_NS / 50 µs + 1 lines
    most = logs.HOLD_NS // 50_000 + 1
    marks = [t for t, _ in sleeps]
    for a, b in zip(marks, marks[1:], strict=False):
        assert sum(1 for s, _ in rendered if a < s < b) <= most


def test_iso_utc_matches_structlog(tmp_path: Path) -> None:
    ns = 1_764_780_000_123_456_000
    assert iso_utc(ns) == "2025-12-03T16:40:00.123456Z"


def test_a_broken_line_stops_the_log_not_the_writer(tmp_path: Path) -> None:
    log = LogFile(tmp_path / "broken.log")
    log.later(lambda item: item, 42)  # not bytes: fails outside the per-line guard
    assert log.flush(timeout=5)  # the writer is alive and took it
    log.msg(b'{"event":"after"}')
    log.close()
    assert isinstance(log.error, TypeError)


@pytest.mark.parametrize("isolate", ["--isolate", "--no-isolate"])
def test_every_batch_and_phase_line_says_its_repeat_profiles_and_parallelism(tmp_path: Path, isolate: str) -> None:
    """Issue 39: batch lines carried no repeat index, profile count or P, so ``jq`` could not
    group by them; in the isolated child too."""
    from conftest import ROOT

    from asyncbench.cli.main import main

    log = tmp_path / "run.log"
    code = main(
        [
            str(ROOT / "benchmarks" / "quick.toml"), "--engine", "memory", "--profiles", "2k",
            "--parallelism", "1,2", "--repeat", "2", isolate, "--no-progress", "--quiet",
            "--output", str(tmp_path / "out"), "--data", str(tmp_path / "data"), "--log-file", str(log),
        ]
    )  # fmt: skip
    assert code == 0
    lines = [orjson.loads(line) for line in log.read_bytes().splitlines()]
    tagged = [e for e in lines if e["event"] in ("batch", "phase_start", "phase_end")]
    assert tagged and all({"repeat", "profiles", "parallelism"} <= e.keys() for e in tagged), tagged[0]
    seen = {(e["repeat"], e["profiles"], e["parallelism"]) for e in tagged if e["event"] == "batch"}
    assert seen == {(r, 2000, p) for r in (0, 1) for p in (1, 2)}
