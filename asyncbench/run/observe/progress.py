"""Live progress on a terminal: one rich progress bar per running phase.

The bar shows engine and phase, operations done of the total, ops/s and ETA. The runner's
``batch`` callback only advances a counter (rich redraws on its own timer thread), so it costs
about as much as a dict update per batch. Console lines (one per phase) are printed through
the same rich console, above the bars, so the two never tear each other.

Shown only when stdout is a terminal and neither ``--no-progress`` nor the environment
variable ``ASYNCBENCH_NO_PROGRESS=1`` (which the CLI sets, so child processes inherit it)
turns it off. The JSON log is written by another observer and is unaffected.
"""

from __future__ import annotations

import atexit
import os
import sys
from typing import Any, TextIO

from rich.console import Console
from rich.progress import (
    BarColumn,
    Progress,
    ProgressColumn,
    Task,
    TaskID,
)
from rich.table import Column
from rich.text import Text

from asyncbench import fmt
from asyncbench.result import EngineResult, PhaseResult
from asyncbench.run.observe.observers import BatchDone, ConsoleObserver, Observer, shorten

NO_PROGRESS_ENV = "ASYNCBENCH_NO_PROGRESS"


#: What the figures beside the description take at most: the bar, ``ETA 0:00:00``, a rate
#: of ``1_000_000/s`` and the columns' separators (the ops figure is measured per task).
_BAR, _ETA, _RATE, _GAPS = 10, len("ETA 0:00:00"), len("123_456/s"), 4


def fit_phase(name: str, room: int) -> str:
    """``name`` in ``room`` characters for a bar: :func:`shorten`, except that a sweep's
    ``@ rate`` suffix is kept whenever a few characters of the name fit beside it (the bars
    of one sweep differ only there, and a bar has less room than a phase line)."""
    base, at, rate = name.rpartition(" @ ")
    suffix = at + rate
    if at and len(name) > room and len(suffix) + 4 <= room:
        return shorten(base, room - len(suffix)) + suffix
    return shorten(name, room)


class DescriptionColumn(ProgressColumn):
    """``engine · phase``, the phase name shortened in its middle (:func:`shorten`, as the
    phase lines do) to what the figures leave of the console's width, so a long name keeps
    its end and a sweep's ``@ rate`` suffix instead of being cut at its end (issue 39)."""

    def __init__(self, console: Console) -> None:
        super().__init__(table_column=Column(no_wrap=True))
        self.console = console

    def render(self, task: Task) -> Text:
        engine, phase = task.fields.get("engine", ""), task.fields.get("phase", task.description)
        total = fmt.count(int(task.total)) if task.total is not None else ""
        ops = len(f"{total}/{total} ops") if total else 0
        room = self.console.width - _BAR - ops - _RATE - _ETA - _GAPS - len(f"{engine} · ")
        return Text(f"{engine} · {fit_phase(phase, max(room, 8))}")


class OpsColumn(ProgressColumn):
    """``12_000/20_000 ops`` in the report's number style; just the count for untimed phases."""

    def render(self, task: Task) -> Text:
        done = fmt.count(int(task.completed))
        if task.total is None:
            return Text("")
        return Text(f"{done}/{fmt.count(int(task.total))} ops", style="progress.download")


class RateColumn(ProgressColumn):
    """Operations per second over rich's recent-sample window, ``12_345/s`` as on phase lines."""

    def render(self, task: Task) -> Text:
        speed = task.finished_speed or task.speed
        if task.total is None or speed is None:
            return Text("")
        return Text(f"{fmt.count(round(speed))}/s", style="progress.data.speed")


class EtaColumn(ProgressColumn):
    """``ETA 0:01:05`` from rich's speed estimate; blank (never a ``-:--:--`` placeholder) for
    untimed phases and until the first batches give a rate."""

    def render(self, task: Task) -> Text:
        if task.total is None or task.finished:
            return Text("")
        remaining = task.time_remaining
        if remaining is None:
            return Text("")
        minutes, seconds = divmod(int(remaining + 0.999), 60)
        hours, minutes = divmod(minutes, 60)
        return Text(f"ETA {hours}:{minutes:02d}:{seconds:02d}", style="progress.remaining")


class _ConsoleStream:
    """A text stream that prints whole lines through a rich console (above any live bars)."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self._pending = ""

    def write(self, text: str) -> int:
        self._pending += text
        *lines, self._pending = self._pending.split("\n")
        for line in lines:
            self.console.out(line, highlight=False)
        return len(text)

    def flush(self) -> None:
        if self._pending:
            self.console.out(self._pending, highlight=False)
            self._pending = ""

    def isatty(self) -> bool:
        return self.console.is_terminal


class ProgressObserver(Observer):
    """One progress bar per phase while it runs; the display is live only during an engine's run."""

    def __init__(self, console: Console | None = None) -> None:
        # Fits 80 columns: the description takes what the labelled figures leave, its phase
        # name shortened in the middle; every figure carries its unit (ops, /s, ETA).
        console = console or Console()
        self.progress = Progress(
            DescriptionColumn(console),
            BarColumn(bar_width=10),
            OpsColumn(table_column=Column(no_wrap=True)),
            RateColumn(table_column=Column(no_wrap=True)),
            EtaColumn(table_column=Column(no_wrap=True)),
            console=console,
            transient=True,  # a finished phase leaves its console line, not a stale bar
            speed_estimate_period=10.0,
            expand=True,
        )
        self.tasks: dict[tuple[str, str], TaskID] = {}
        self.stream: TextIO = _ConsoleStream(self.progress.console)  # type: ignore[assignment]
        self._live = False
        self._atexit = False

    @property
    def console(self) -> Console:
        return self.progress.console

    def start(self) -> None:
        if not self._live:
            self.progress.start()
            self._live = True
            if not self._atexit:  # never leave the terminal with a hidden cursor
                atexit.register(self.stop)
                self._atexit = True

    def stop(self) -> None:
        if self._live:
            self.progress.stop()
            self._live = False
        for task in list(self.tasks.values()):
            self.progress.remove_task(task)
        self.tasks.clear()

    def engine_start(self, engine: str, profiles: int, unit: str) -> None:
        self.start()

    def phase_start(
        self, engine: str, phase: str, total_ops: int, kind: str | None = None, stream: str | None = None
    ) -> None:
        self.start()
        # phases without operations (stabilize, settle, reopen, verify) get a pulsing bar
        total = total_ops if total_ops > 0 else None
        self.tasks[(engine, phase)] = self.progress.add_task(
            f"{engine} · {phase}", total=total, engine=engine, phase=phase
        )

    def batch(self, b: BatchDone) -> None:
        task = self.tasks.get((b.engine, b.phase))
        if task is not None:
            self.progress.advance(task, b.ops)

    def phase_end(self, engine: str, result: PhaseResult) -> None:
        task = self.tasks.pop((engine, result.name), None)
        if task is not None:
            self.progress.remove_task(task)

    def engine_end(self, result: EngineResult) -> None:
        self.stop()

    def run_end(self, **info: Any) -> None:
        self.stop()


def progress_wanted(disabled: bool = False, stream: TextIO | None = None) -> bool:
    """Live bars only on a terminal, and not when turned off by flag or environment."""
    stream = stream or sys.stdout
    if disabled or os.environ.get(NO_PROGRESS_ENV, "") not in ("", "0"):
        return False
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


def terminal_observers(disabled: bool = False) -> tuple[ConsoleObserver, Observer | None]:
    """The console observer and, on a terminal, the progress bars it prints above; without
    a terminal, the status line every 10 s on stderr (:mod:`asyncbench.run.observe.status`)."""
    if not progress_wanted(disabled):
        from asyncbench.run.observe.status import StatusLineObserver, status_wanted

        return ConsoleObserver(), StatusLineObserver() if status_wanted() else None
    progress = ProgressObserver()
    return ConsoleObserver(progress.stream), progress
