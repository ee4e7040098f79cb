"""Run observers: the JSON log and the console line per phase.

The runner calls ``batch`` once per operation batch, inside the phase's time, so observers
must stay cheap there: O(1), no I/O, no rendering.
"""

from __future__ import annotations

import sys
import textwrap
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, TextIO

import orjson

from asyncbench import fmt
from asyncbench.measure.latency import CLOCK, BatchLatency, batch_p99_max, format_us, response_p99_max
from asyncbench.measure.too_short import MIN_PHASE_SECONDS, TOO_SHORT, too_short
from asyncbench.rate import Arrivals
from asyncbench.report.capacity import capacity_line
from asyncbench.report.cost_table import console_lines
from asyncbench.report.mix import console_lines as mix_lines
from asyncbench.result import NOT_STARTED, EngineResult, PhaseResult, Status
from asyncbench.run.capacity.capacity import ProbeResult
from asyncbench.run.observe.logs import LogFile, iso_utc
from asyncbench.run.observe.paced_lines import PacedLines, group_figures
from asyncbench.slo import Slo
from asyncbench.workload import Action


@dataclass(frozen=True, slots=True)
class BatchDone:
    """One finished operation batch, as every observer sees it (one value, so an observer
    and a caller agree on its fields by construction).

    ``index`` counts the worker's batches, ``done`` the phase's operations over all
    workers; ``marks`` is the batch's latency stamps (an int64 array: the start stamp, then
    one per operation, on :data:`~asyncbench.measure.latency.CLOCK`), never modified after
    the call; ``intended`` under a rate: the batch's intended start times (int64, one per
    operation); ``process``/``host``: the client process of a scaled-out run
    (:mod:`asyncbench.run.scale_out.batch_lines`), None in a single-process run."""

    engine: str
    phase: str
    index: int
    ops: int
    seconds: float
    done: int
    worker: int
    marks: Any
    intended: Any = None
    process: int | None = None
    host: str | None = None


class Observer:
    """No-op base; subclasses override what they need."""

    def run_start(self, **info: Any) -> None: ...
    def engine_context(self, repeat: int, profiles: int, parallelism: int) -> None:
        """Before an engine's run: which repeat (0-based) and level it is, for the log's lines."""

    def engine_start(self, engine: str, profiles: int, unit: str) -> None: ...
    def phase_start(
        self, engine: str, phase: str, total_ops: int, kind: str | None = None, stream: str | None = None
    ) -> None: ...
    def batch(self, b: BatchDone) -> None:
        """After each batch: inside the phase's time in a single-process run (O(1), no I/O,
        no rendering), as the coordinator receives it in a scaled-out one."""

    def phase_end(self, engine: str, result: PhaseResult) -> None: ...
    def probe(self, engine: str, phase: str, search: int, probe: ProbeResult, slo: Slo) -> None:
        """After each probe of a capacity search (asyncbench.run.capacity.capacity), as judged: its
        batches are no batch lines, the probe is one line."""

    def engine_end(self, result: EngineResult) -> None: ...
    def run_end(self, **info: Any) -> None: ...
    def message(self, text: str) -> None: ...


class ObserverGroup(Observer):
    """Fans every event out to several observers."""

    def __init__(self, *observers: Observer) -> None:
        self.observers = list(observers)
        # per batch, only the observers that do something with it (the call is on the timed path)
        self._batch = [o.batch for o in observers if type(o).batch is not Observer.batch]

    def run_start(self, **info: Any) -> None:
        for o in self.observers:
            o.run_start(**info)

    def engine_context(self, repeat: int, profiles: int, parallelism: int) -> None:
        for o in self.observers:
            o.engine_context(repeat, profiles, parallelism)

    def engine_start(self, engine: str, profiles: int, unit: str) -> None:
        for o in self.observers:
            o.engine_start(engine, profiles, unit)

    def phase_start(
        self, engine: str, phase: str, total_ops: int, kind: str | None = None, stream: str | None = None
    ) -> None:
        for o in self.observers:
            o.phase_start(engine, phase, total_ops, kind, stream)

    def batch(self, b: BatchDone) -> None:
        for handle in self._batch:
            handle(b)

    def phase_end(self, engine: str, result: PhaseResult) -> None:
        for o in self.observers:
            o.phase_end(engine, result)

    def probe(self, engine: str, phase: str, search: int, probe: ProbeResult, slo: Slo) -> None:
        for o in self.observers:
            o.probe(engine, phase, search, probe, slo)

    def engine_end(self, result: EngineResult) -> None:
        for o in self.observers:
            o.engine_end(result)

    def run_end(self, **info: Any) -> None:
        for o in self.observers:
            o.run_end(**info)

    def message(self, text: str) -> None:
        for o in self.observers:
            o.message(text)


#: Latency stamps the live log may hold for batch lines it has not rendered yet: past
#: this, a batch's figures are taken on the caller's thread and its stamps let go. A writer
#: keeps up with every real engine (a line takes it 50-170 µs); one that falls behind (a
#: no-op engine at millions of operations per second: 17M operations queued, 110 MiB at
#: 2M profiles) must not turn the log into memory the harness counts as the engine's.
MAX_HELD_MARKS = 500_000  # 4 MiB of int64 stamps (8 MiB under a rate)


@dataclass(frozen=True, slots=True)
class _Figures:
    """A batch line's latency figures: service p99/max, response p99/max under a rate,
    and the batch's last stamp (its end)."""

    service: BatchLatency
    response: BatchLatency | None
    last_mark: int | None


def _figures(b: BatchDone) -> _Figures:
    marks, intended = b.marks, b.intended
    response = response_p99_max(marks, intended) if intended is not None and len(marks) >= 2 else None
    return _Figures(batch_p99_max(marks), response, int(marks[-1]) if len(marks) else None)


def _group_figures(group: Sequence[BatchDone]) -> _Figures:
    return _Figures(*group_figures(group))


def _render_group(item: tuple[Any, ...]) -> bytes:
    """The line of a worker's batches under a rate (:mod:`asyncbench.run.observe.paced_lines`): one
    batch's line as ever; several's their sums, the last's index and ``done``, the figures
    over all their operations, and ``batches``."""
    group, kind, stream, offset_ns, figures, context = item
    if len(group) == 1:
        return _render_batch((group[0], kind, stream, offset_ns, figures, context))
    last = group[-1]
    merged = replace(
        last, ops=sum(b.ops for b in group), seconds=sum(b.seconds for b in group), marks=None, intended=None
    )
    f = _group_figures(group) if figures is None else figures
    return _render_batch((merged, kind, stream, offset_ns, f, context, len(group)))


def _render_batch(item: tuple[Any, ...]) -> bytes:
    """A batch's log line, on the log's writer thread: its p99 and max come from its marks
    here, outside the phase's time (unless the writer was far behind and the caller took
    them, :data:`MAX_HELD_MARKS`); its timestamp is when its last operation ended. A
    seventh item: the line covers that many batches (under a rate, :func:`_render_group`)."""
    b, kind, stream, offset_ns, figures, context = item[:6]
    covered = {"batches": item[6]} if len(item) > 6 else {}
    f = _figures(b) if figures is None else figures
    stats, seconds = f.service, b.seconds
    ended_ns = f.last_mark + offset_ns if f.last_mark is not None else time.time_ns()
    response = {}
    if f.response is not None:  # under a rate: from each intended start
        r = f.response
        response = {"response_p99_us": round(r.p99_ns / 1000, 3), "response_max_us": round(r.max_ns / 1000, 3)}
    return orjson.dumps(
        {
            "engine": b.engine,
            "phase": b.phase,
            "kind": kind,
            "stream": stream,
            **context,  # repeat, profiles, parallelism: what jq groups by
            "worker": b.worker,
            # a scaled-out run's client process: its index and host
            **({} if b.process is None else {"process": b.process, "host": b.host}),
            "batch": b.index,
            **covered,
            "ops": b.ops,
            "elapsed_ms": round(seconds * 1000, 3),
            "ops_per_s": round(b.ops / seconds) if seconds > 0 else None,  # this worker's rate
            "done": b.done,  # operations completed in the phase, all workers
            "p99_us": round(stats.p99_ns / 1000, 3) if stats.ops else None,
            "max_us": round(stats.max_ns / 1000, 3) if stats.ops else None,
            **response,
            "event": "batch",
            "level": "info",
            "timestamp": iso_utc(ended_ns),
        }
    )


class JsonLogObserver(Observer):
    """One structlog event per phase start/end, per batch and per run start/end.

    A batch line is live: ``batch`` only queues the batch's figures and its marks (O(1), no
    I/O), and the log's writer thread renders and writes the line well within a second, so
    ``tail -f`` follows a phase while it runs and an interrupted phase keeps its batches.
    Under a rate a worker gets at most one line per 100 ms, covering its batches since its
    last line (:mod:`asyncbench.run.observe.paced_lines`): one line per operation was 147 MB."""

    def __init__(self, logger: Any, log_file: LogFile) -> None:
        self.log = logger
        self._later = log_file.later
        self._backlog = log_file.backlog
        self._phase: tuple[str | None, str | None, int] = (None, None, 0)  # kind, stream, wall - CLOCK
        #: ``repeat``, ``profiles``, ``parallelism`` of the engine run now, on every batch and phase line
        self._context: dict[str, int] = {}
        self._paced: PacedLines[BatchDone] = PacedLines()  # batches under a rate not written yet

    def engine_context(self, repeat: int, profiles: int, parallelism: int) -> None:
        self._context = {"repeat": repeat, "profiles": profiles, "parallelism": parallelism}

    def run_start(self, **info: Any) -> None:
        self.log.info("run_start", **info)

    def engine_start(self, engine: str, profiles: int, unit: str) -> None:
        self.log.info("engine_start", engine=engine, profiles=profiles)

    def phase_start(
        self, engine: str, phase: str, total_ops: int, kind: str | None = None, stream: str | None = None
    ) -> None:
        self._flush_paced()
        self._phase = (kind, stream, time.time_ns() - CLOCK())
        self._paced.begin()
        self.log.info(
            "phase_start", engine=engine, phase=phase, kind=kind, stream=stream, total_ops=total_ops, **self._context
        )

    def batch(self, b: BatchDone) -> None:
        if b.intended is not None:  # under a rate: a line per worker per 100 ms at most
            group = self._paced.add(b)
            if group is not None:
                self._write_group(group)
            return
        kind, stream, offset_ns = self._phase
        figures = None
        if self._backlog() * max(b.ops, 1) > MAX_HELD_MARKS:  # the writer is far behind
            figures = _figures(b)
            b = replace(b, marks=None, intended=None)
        self._later(_render_batch, (b, kind, stream, offset_ns, figures, self._context))

    def _write_group(self, group: list[BatchDone]) -> None:
        kind, stream, offset_ns = self._phase
        figures = None
        if self._backlog() * max(sum(b.ops for b in group), 1) > MAX_HELD_MARKS:  # the writer is far behind
            figures = _group_figures(group)
            group = [replace(b, marks=None, intended=None) for b in group]
        self._later(_render_group, (group, kind, stream, offset_ns, figures, self._context))

    def _flush_paced(self) -> None:
        """Write every worker's held batches (the phase ended, or the run did without its
        ``phase_end``): before any later line, so a phase's batch lines precede its end."""
        for group in self._paced.drain():
            self._write_group(group)

    def phase_end(self, engine: str, result: PhaseResult) -> None:
        self._flush_paced()
        self.log.info(
            "phase_end",
            engine=engine,
            phase=result.name,
            kind=result.kind.kind,
            stream=result.stream,
            **self._context,
            p99_us=round(result.latency.p99 / 1000, 3) if result.latency else None,
            max_us=round(result.latency.max / 1000, 3) if result.latency else None,
            ops=result.ops,
            seconds=round(result.seconds, 6),
            ops_per_s=round(result.ops_per_s),
            checksum=result.checksum,
            skipped=result.skipped,
            **_open_loop_fields(result),
        )

    def probe(self, engine: str, phase: str, search: int, probe: ProbeResult, slo: Slo) -> None:
        """One line per capacity probe: its target and achieved rate, the percentiles judged
        against their bounds, the backlog and the verdict (``pass``, or what failed it)."""
        kind, stream, _ = self._phase
        self.log.info(
            "probe",
            engine=engine,
            phase=phase,
            kind=kind,
            stream=stream,
            **self._context,
            search=search,
            probe=probe.number,
            target_ops_per_s=round(probe.rate, 3),
            achieved_ops_per_s=round(probe.achieved, 3),
            percentiles_us={k: round(v / 1000, 3) for k, v in probe.percentiles_ns.items()},
            bounds_us={b.name: round(b.ns / 1000, 3) for b in slo.bounds},
            backlog_us=round(probe.backlog_ns / 1000, 3),
            service_percentiles_us={k: round(v / 1000, 3) for k, v in probe.service_ns.items()},
            delay_percentiles_us={k: round(v / 1000, 3) for k, v in probe.delay_ns.items()},
            engine_percentiles_us={k: round(v / 1000, 3) for k, v in probe.engine_ns.items()},
            schedule_delay_p99_us=None if probe.delay_p99_ns is None else round(probe.delay_p99_ns / 1000, 3),
            schedule_delay_max_us=None if probe.delay_max_ns is None else round(probe.delay_max_ns / 1000, 3),
            wait_share=None if probe.wait_share is None else round(probe.wait_share, 4),
            verdict=probe.verdict,
            inconclusive=probe.inconclusive,
            limit=probe.limit,
            checksum=probe.checksum,
            confirms=probe.confirms,
            slices=probe.slices,
            next_checksums=list(probe.next_checksums),
        )

    def engine_end(self, result: EngineResult) -> None:
        self._flush_paced()
        self.log.info(
            "engine_end",
            engine=result.engine,
            status=result.status.value,
            phase=result.phase,
            detail=result.detail,
            traceback=result.traceback,  # the whole of a raised failure (detail is its last line)
            run_seconds=round(result.run_seconds, 3),
            storage_bytes=result.storage_bytes,
            peak_rss_bytes=result.peak_rss_bytes,
        )

    def run_end(self, **info: Any) -> None:
        self._flush_paced()
        self.log.info("run_end", **info)

    def message(self, text: str) -> None:
        self.log.info("message", text=text)


def _open_loop_fields(result: PhaseResult) -> dict[str, Any]:
    """A phase_end log event's open-loop figures (none in the closed loop)."""
    ol = result.open_loop
    if ol is None:
        return {}
    return {
        "rate": ol.rate,
        "arrivals": ol.arrivals.value,
        "rate_missed": result.rate_missed,
        "response_p99_us": round(ol.response.p99 / 1000, 3) if ol.response else None,
        "response_max_us": round(ol.response.max / 1000, 3) if ol.response else None,
        "schedule_delay_p99_us": round(ol.delay_p99_ns / 1000, 3),
        "schedule_lag_p99_us": round(ol.lag_p99_ns / 1000, 3),
    }


def open_loop_line(result: PhaseResult) -> str:
    """The console's second line of a phase run at a rate: target, whether it was met, the
    response and service p99 and the harness's scheduling delay p99."""
    ol = result.open_loop
    assert ol is not None
    poisson = " poisson" if ol.arrivals is Arrivals.POISSON else ""
    missed = " MISSED" if result.rate_missed else ""  # achieved more than 5 % below the target
    resp = format_us(ol.response.p99) if ol.response else "-"
    service = format_us(result.latency.p99) if result.latency else "-"
    return (
        f"    rate {fmt.count(round(ol.rate))}/s{poisson}{missed} · p99 µs: response {resp}"
        f" (service {service}, client delay {format_us(ol.delay_p99_ns)})"
    )


def probe_line(probe: ProbeResult, slo: Slo) -> str:
    """A capacity probe on the console, at most 80 columns: its number, target rate, the
    response, service and schedule-delay figures at the tightest bounded percentile and its
    verdict (``pass``, ``FAIL`` with what failed it, ``inconclusive`` with the client's reason)::

        probe 3 · 11_180/s · p99 µs: resp 7_412 svc 43 sched 7_311 · inconclusive (client late)
    """
    name = slo.bounds[-1].name
    figures = [("resp", probe.percentiles_ns.get(name)), ("svc", probe.service_ns.get(name)), ("sched", probe.delay_ns.get(name))]
    shown = " ".join(f"{label} {format_us(v)}" for label, v in figures if v is not None)
    again = " again" if probe.confirms is not None else ""
    if probe.verdict == "pass":
        verdict = "pass"
    elif probe.verdict == "fail":
        verdict = "FAIL " + (probe.limit or "").split(":", 1)[0]
    else:
        verdict = "inconclusive (" + (probe.inconclusive or "").split(":", 1)[0] + ")"
    return f"    probe {probe.number}{again} · {fmt.count(round(probe.rate))}/s · {name} µs: {shown} · {verdict}"


#: Console lines fit an 80-column terminal: a phase line never wraps or splits its checksum.
CONSOLE_WIDTH = 80
#: The figures after the phase name: time, rate, p50, p99 (or one note across the last
#: three), checksum.
_FIGURES = "{seconds:>7} {middle:>25} {checksum:<16}"


def console_width() -> int:
    """The terminal's width (``COLUMNS`` honoured), never under 80: a pipe gets 80."""
    import shutil

    return max(CONSOLE_WIDTH, shutil.get_terminal_size((CONSOLE_WIDTH, 24)).columns)


#: The widest the name column gets on a wide terminal: past this, a table of phase lines is
#: hard to follow across (issue 39: at 200 columns it took ~150).
NAME_CAP = 48


def _name_room(width: int, names: Sequence[str] | None = None) -> int:
    """The name column: as wide as the longest of ``names`` (when known) within what the
    figures leave of ``width`` and :data:`NAME_CAP`, never under the word ``phase``."""
    room = min(max(width - 3 - len(_FIGURES.format(seconds="", middle="", checksum="")), 8), NAME_CAP)
    if names:
        room = min(room, max(len("phase"), *(len(n) for n in names)))
    return room


def shorten(name: str, room: int) -> str:
    """``name`` in ``room`` characters: its middle cut with an ellipsis, so the end that tells
    phases apart stays (``read by user id`` from ``lookup by email``) and so does a sweep's
    whole ``@ 8_000/s`` suffix."""
    if len(name) <= room:
        return name
    base, at, rate = name.rpartition(" @ ")
    suffix = at + rate if at and len(at + rate) <= room // 2 else ""
    if not suffix:
        base = name
    keep = room - len(suffix) - 1  # characters of the base beside the ellipsis
    head = (keep + 1) // 2
    return base[:head] + "…" + base[len(base) - (keep - head) :] + suffix if keep - head else base[:head] + "…" + suffix


def phase_line(
    name: str,
    seconds: str,
    throughput: str,
    checksum: str,
    width: int = CONSOLE_WIDTH,
    p50: str = "",
    p99: str = "",
    names: Sequence[str] | None = None,
) -> str:
    """``  <name> <seconds> <rate> <p50> <p99> <checksum>`` in ``width`` columns, the name
    column fitted to ``names`` (the plan's phase names); a long name is shortened in the
    middle (:func:`shorten`) so the figures and the whole checksum stay on the line. Without
    latency, ``throughput`` is a note that may take the latency columns too (``close 0.05 s``)."""
    middle = f"{throughput:>11} {p50:>6} {p99:>6}" if p50 or p99 else throughput
    tail = _FIGURES.format(seconds=seconds, middle=middle, checksum=checksum).rstrip()
    room = _name_room(width, names)
    return f"  {shorten(name, room):<{room}} {tail}"


def phase_header(width: int = CONSOLE_WIDTH, names: Sequence[str] | None = None) -> str:
    """The column heads over an engine's phase lines."""
    middle = f"{'ops/s':>11} {'p50':>6} {'p99':>6}"
    return (
        f"  {'phase':<{_name_room(width, names)}} " + _FIGURES.format(seconds="time s", middle=middle, checksum="checksum")
    ).rstrip()


def _seconds(seconds: float) -> str:
    """A phase's time in at most 7 characters: ``0.137``, ``123.456``, ``1234.5``, ``12345``."""
    return f"{seconds:.3f}" if seconds < 1000 else f"{seconds:.1f}" if seconds < 10_000 else f"{seconds:.0f}"


class ConsoleObserver(Observer):
    """Human output: one line per phase, a header per engine, a status per engine."""

    def __init__(self, stream: TextIO | None = None, width: int | None = None) -> None:
        self.out = stream or sys.stdout
        self.width = width or console_width()
        self.names: list[str] | None = None  # the plan's phase names, once known: the name column fits them

    def fit_names(self, names: Sequence[str]) -> None:
        """Fit the name column to these phase names (within the terminal and a cap)."""
        self.names = list(names)

    def run_start(self, **info: Any) -> None:
        if info.get("phases"):
            self.fit_names(info["phases"])

    def _print(self, text: str) -> None:
        print(text, file=self.out, flush=True)

    def engine_start(self, engine: str, profiles: int, unit: str) -> None:
        self._print(f"\n== {engine} · {fmt.count(profiles)} {unit}")
        self._print(phase_header(self.width, self.names))

    def phase_end(self, engine: str, result: PhaseResult) -> None:
        if result.skipped:
            if result.open_loop is not None:  # a sweep's level above the one whose rate dipped
                why = "(rate dipped)"
            else:
                why = "(not needed)" if result.action is Action.STABILIZE else "(reused store)"  # run.reuse
            self._print(phase_line(result.name, "skipped", why, "", self.width, names=self.names))
            return
        p50 = p99 = ""
        throughput = ""
        if result.action is Action.OPERATIONS:
            throughput = fmt.rate(result.ops, result.seconds)
            if result.latency is not None and result.latency.count:
                p50, p99 = fmt.latency(result.latency.p50), fmt.latency(result.latency.p99)
        if result.close_seconds is not None:
            throughput = f"close {result.close_seconds:.2f} s"
        if result.capacity is not None:  # probes at many rates: their throughput is no figure
            throughput, p50, p99 = "capacity search", "", ""
        self._print(
            phase_line(
                result.name, _seconds(result.seconds), throughput, result.checksum or "", self.width, p50, p99, self.names
            )
        )
        if result.open_loop is not None:
            self._print(open_loop_line(result))
        if result.capacity is not None:
            self._print(capacity_line(result))
            notes = [("NOT MONOTONIC: ", result.capacity.not_monotonic), ("INCONCLUSIVE: ", result.capacity.inconclusive)]
            for label, note in notes:
                for line in textwrap.wrap(label + note, max(40, self.width - 4)) if note else ():
                    self._print("    " + line)
        for line in mix_lines(result):  # a mixed phase: its kinds and skew
            self._print(line)

    def probe(self, engine: str, phase: str, search: int, probe: ProbeResult, slo: Slo) -> None:
        """One line per capacity probe as it is judged (a terminal or not): a search of
        minutes otherwise showed nothing but a pulsing bar (issue 51)."""
        self._print(probe_line(probe, slo))

    def engine_end(self, result: EngineResult) -> None:
        if result.detail == NOT_STARTED and result.status is Status.INTERRUPTED:  # a stopped run never got to it
            self._print(f"\n== {result.engine} · {result.status_text()[0].lower()}{result.status_text()[1:]}")
            return
        if result.status is Status.SKIPPED:  # one line, nothing measured to show
            self._print(f"  {result.status_text()}")
            return
        if not result.ok:
            self._print(f"  !! {result.status_text()}")
        short = [p.name for p in result.phases if p.action is Action.OPERATIONS and too_short(p)]
        if short:  # their throughput is no figure to compare: said once, not under every phase
            ops = sum(p.action is Action.OPERATIONS and not p.skipped for p in result.phases)
            which = ", ".join(short) if len(short) <= 3 else f"{len(short)} of {ops} operation phases"
            text = f"{TOO_SHORT} (under {MIN_PHASE_SECONDS:g} s, not compared): {which}"
            for line in textwrap.wrap(text, max(40, self.width - 4), initial_indent="  ", subsequent_indent="    "):
                self._print(line)
        self._print(
            f"  run {result.run_seconds:.2f} s · storage {fmt.size(result.storage_bytes)}"
            + (" (not on disk yet)" if result.storage_off_disk else "")
            + f" · peak RSS {fmt.size(result.peak_rss_bytes)}"
        )
        for line in console_lines(result, self.width):
            self._print(line)

    def message(self, text: str) -> None:
        self._print(text)
