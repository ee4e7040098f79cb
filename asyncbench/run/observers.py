"""Run observers: the JSON log and the console line per phase.

The runner calls ``batch`` once per operation batch, so observers must stay cheap there.
"""

from __future__ import annotations

import sys
from typing import Any, TextIO

from asyncbench import fmt
from asyncbench.result import EngineResult, PhaseResult, Status
from asyncbench.workloads.profile_store.phases import Action


class Observer:
    """No-op base; subclasses override what they need."""

    def run_start(self, **info: Any) -> None: ...
    def engine_start(self, engine: str, profiles: int) -> None: ...
    def phase_start(
        self, engine: str, phase: str, total_ops: int, kind: str | None = None, stream: str | None = None
    ) -> None: ...
    def batch(self, engine: str, phase: str, index: int, ops: int, seconds: float, done: int) -> None: ...
    def batches(self, engine: str, phase: PhaseResult, rows: list[dict[str, Any]]) -> None:
        """After an operation phase, outside its time: one row per batch (worker, ops,
        seconds, p99 and max latency)."""

    def phase_end(self, engine: str, result: PhaseResult) -> None: ...
    def engine_end(self, result: EngineResult) -> None: ...
    def run_end(self, **info: Any) -> None: ...
    def message(self, text: str) -> None: ...


class ObserverGroup(Observer):
    """Fans every event out to several observers."""

    def __init__(self, *observers: Observer) -> None:
        self.observers = list(observers)

    def run_start(self, **info: Any) -> None:
        for o in self.observers:
            o.run_start(**info)

    def engine_start(self, engine: str, profiles: int) -> None:
        for o in self.observers:
            o.engine_start(engine, profiles)

    def phase_start(
        self, engine: str, phase: str, total_ops: int, kind: str | None = None, stream: str | None = None
    ) -> None:
        for o in self.observers:
            o.phase_start(engine, phase, total_ops, kind, stream)

    def batch(self, engine: str, phase: str, index: int, ops: int, seconds: float, done: int) -> None:
        for o in self.observers:
            o.batch(engine, phase, index, ops, seconds, done)

    def batches(self, engine: str, phase: PhaseResult, rows: list[dict[str, Any]]) -> None:
        for o in self.observers:
            o.batches(engine, phase, rows)

    def phase_end(self, engine: str, result: PhaseResult) -> None:
        for o in self.observers:
            o.phase_end(engine, result)

    def engine_end(self, result: EngineResult) -> None:
        for o in self.observers:
            o.engine_end(result)

    def run_end(self, **info: Any) -> None:
        for o in self.observers:
            o.run_end(**info)

    def message(self, text: str) -> None:
        for o in self.observers:
            o.message(text)


class JsonLogObserver(Observer):
    """One structlog event per phase start/end, per batch and per run start/end.

    Batch lines are written after their phase (from the rows the runner collects), so no
    log write happens inside a timed loop, whatever the batch size."""

    def __init__(self, logger: Any) -> None:
        self.log = logger

    def run_start(self, **info: Any) -> None:
        self.log.info("run_start", **info)

    def engine_start(self, engine: str, profiles: int) -> None:
        self.log.info("engine_start", engine=engine, profiles=profiles)

    def phase_start(
        self, engine: str, phase: str, total_ops: int, kind: str | None = None, stream: str | None = None
    ) -> None:
        self.log.info("phase_start", engine=engine, phase=phase, kind=kind, stream=stream, total_ops=total_ops)

    def batches(self, engine: str, phase: PhaseResult, rows: list[dict[str, Any]]) -> None:
        info = self.log.info
        for row in rows:
            info("batch", engine=engine, phase=phase.name, kind=phase.kind.kind, stream=phase.stream, **row)

    def phase_end(self, engine: str, result: PhaseResult) -> None:
        self.log.info(
            "phase_end",
            engine=engine,
            phase=result.name,
            kind=result.kind.kind,
            stream=result.stream,
            p99_us=round(result.latency.p99 / 1000, 3) if result.latency else None,
            max_us=round(result.latency.max / 1000, 3) if result.latency else None,
            ops=result.ops,
            seconds=round(result.seconds, 6),
            ops_per_s=round(result.ops_per_s),
            checksum=result.checksum,
            skipped=result.skipped,
        )

    def engine_end(self, result: EngineResult) -> None:
        self.log.info(
            "engine_end",
            engine=result.engine,
            status=result.status.value,
            phase=result.phase,
            detail=result.detail,
            run_seconds=round(result.run_seconds, 3),
            storage_bytes=result.storage_bytes,
            peak_rss_bytes=result.peak_rss_bytes,
        )

    def run_end(self, **info: Any) -> None:
        self.log.info("run_end", **info)

    def message(self, text: str) -> None:
        self.log.info("message", text=text)


#: Console lines fit an 80-column terminal: a phase line never wraps or splits its checksum.
CONSOLE_WIDTH = 80


def phase_line(name: str, seconds: str, throughput: str, checksum: str, width: int = CONSOLE_WIDTH) -> str:
    """``  <name>  <seconds> <rate> <checksum>`` in ``width`` columns; a long name is cut
    with an ellipsis so the figures and the whole checksum stay on the line."""
    tail = f"{seconds:>11} {throughput:>11} {checksum:<16}".rstrip()
    room = max(width - 3 - len(f"{seconds:>11} {throughput:>11} {'':<16}"), 8)
    if len(name) > room:
        name = name[: room - 1] + "…"
    return f"  {name:<{room}} {tail}"


class ConsoleObserver(Observer):
    """Human output: one line per phase, a header per engine, a status per engine."""

    def __init__(self, stream: TextIO | None = None) -> None:
        self.out = stream or sys.stdout

    def _print(self, text: str) -> None:
        print(text, file=self.out, flush=True)

    def engine_start(self, engine: str, profiles: int) -> None:
        self._print(f"\n== {engine} · {fmt.count(profiles)} profiles")

    def phase_end(self, engine: str, result: PhaseResult) -> None:
        if result.skipped:
            self._print(phase_line(result.name, "skipped", "", "(not needed)"))
            return
        throughput = fmt.rate(result.ops, result.seconds) if result.action is Action.OPERATIONS else ""
        if result.close_seconds is not None:
            throughput = f"close {result.close_seconds:.2f} s"
        self._print(phase_line(result.name, f"{result.seconds:.3f} s", throughput, result.checksum or ""))

    def engine_end(self, result: EngineResult) -> None:
        if result.status is Status.SKIPPED:  # one line, nothing measured to show
            self._print(f"  {result.status_text()}")
            return
        if not result.ok:
            self._print(f"  !! {result.status_text()}")
        self._print(
            f"  run {result.run_seconds:.2f} s · storage {fmt.size(result.storage_bytes)}"
            f" · peak RSS {fmt.size(result.peak_rss_bytes)}"
        )

    def message(self, text: str) -> None:
        self._print(text)
