"""``python -m asyncbench PLAN.toml``: run a validated plan and write its results.

Before anything runs, the run's directories are created and locked (a second run on the
same data or output directory stops here, exit 2, naming the holder's pid). Results are
saved after every engine; a save that fails (a full disk, a file that is not the run's
own) is reported on the console and the run goes on, exit 1 if the final save failed.
The final reports are written with the stop signals still caught: a signal then is
absorbed and the reports complete (exit 130), never left half-written.
"""

from __future__ import annotations

import dataclasses
import os
import sys
import textwrap
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TextIO

import anyio

from asyncbench.cli.repeat_summary import repeat_summary
from asyncbench.config import BenchConfig
from asyncbench.dirs.run_dirs import lock_run
from asyncbench.fs.locks import Locked
from asyncbench.measure.aggregate import throughput_stats, unstable_phases
from asyncbench.measure.correctness import judge
from asyncbench.measure.provenance import mark_end
from asyncbench.measure.stats import noise_advice, snapshot
from asyncbench.measure.verdicts import exit_status, judge_run, records
from asyncbench.report import headline, tracebacks, verdict_table
from asyncbench.report.capacity import gate_failures, gate_inconclusive, scorecard_lines
from asyncbench.report.csv_export import write_csv, write_series_csv
from asyncbench.report.outputs import html_path, result_dir, write_run
from asyncbench.result import (
    EXIT_BAD_INPUT,
    EXIT_FAILED,
    EXIT_INCONCLUSIVE,
    EXIT_INTERRUPTED,
    EXIT_OK,
    RunResult,
    exit_code,
)
from asyncbench.run.capacity.saturation import loaded_machine_warning
from asyncbench.run.isolated import isolation
from asyncbench.run.observe.logs import LogFile, open_log
from asyncbench.run.observe.observers import ConsoleObserver, JsonLogObserver, ObserverGroup
from asyncbench.run.observe.progress import NO_PROGRESS_ENV, terminal_observers
from asyncbench.run.observe.signals import StopSignals, backend_options
from asyncbench.run.runner import Benchmark
from asyncbench.run.scale_out.distributed import scale_out
from asyncbench.workload_capabilities import accelerated, kernels_status

__all__ = ["RunOutcome", "confirm_start", "run", "utc_stamp"]


def confirm_start(cfg: BenchConfig, yes: bool, stdin: TextIO | None = None, stdout: TextIO | None = None) -> bool:
    """Print the plan's estimate; on a terminal, ask before a run estimated over 10 minutes,
    or whose capacity searches may take over 10 minutes (their bound, every capacity at the
    range's bottom: a search cannot know ahead where it will end, issue 51)."""
    import sys

    from asyncbench.run.checks.memory_need import memory_lines
    from asyncbench.run.checks.scale import notes
    from asyncbench.run.estimate import ask_to_start, duration, estimate

    stdin, stdout = stdin or sys.stdin, stdout or sys.stdout
    est = estimate(cfg)
    print("\n".join([*est.lines(cfg), *memory_lines(cfg), *notes(cfg)]), file=stdout, flush=True)
    what = f"this run of {est.time()}" if est.seconds is not None else "this run"
    longest = est.seconds
    if est.searches_at_most is not None and est.searches_at_most > (est.seconds or 0.0):
        what += f" (its capacity searches up to {duration(est.searches_at_most)})"
        longest = est.searches_at_most
    return ask_to_start(what, longest, yes, stdin, stdout)


def utc_stamp() -> str:
    """UTC to the millisecond, so two runs started in one second do not share files."""
    now = datetime.now(UTC)
    return now.strftime("%Y%m%dT%H%M%S") + f".{now.microsecond // 1000:03d}Z"


def run(
    cfg: BenchConfig,
    log_file: str | None,
    no_progress: bool = False,
    update_latest: bool = False,
    stop: StopSignals | None = None,
    csv: bool = False,
    check_reference: bool = False,
    check_rate: bool = False,
    summary_format: str | None = None,
) -> int:
    """``summary_format``: ``"ycsb"`` prints YCSB's text summary of each result at the end
    (:mod:`asyncbench.report.ycsb_text`)."""
    if stop is None:
        stop = StopSignals()
    if stop.interrupted:
        print(f"asyncbench: {stop.interrupted} before the run started; nothing was run", file=sys.stderr)
        return EXIT_INTERRUPTED
    try:
        locks = lock_run(cfg, update_latest)
    except (Locked, OSError) as exc:
        print(f"asyncbench: {exc}; nothing was run", file=sys.stderr)
        return EXIT_BAD_INPUT
    isolation.CONTEXT.data_fd, isolation.CONTEXT.stop = locks.data_fd, stop
    try:
        code = _run_locked(
            cfg, log_file, no_progress, update_latest, stop, csv, check_reference, check_rate, summary_format
        )
        # every engine process has ended: a run not stopped removes the lock files it created
        locks.release(remove_created=not stop.interrupted)
        return code
    finally:
        isolation.CONTEXT.reset()
        locks.release()


@dataclass
class RunOutcome:
    """How a run ended, for its one exit code: the engines' results and whether their
    checksums agree, whether a stop signal came, and whether a result file or the log could
    not be written (an output the run promised is missing)."""

    results: list[RunResult] = field(default_factory=list)
    checksums_agree: bool = True
    interrupted: bool = False
    save_failed: bool = False
    log_failed: bool = False

    def exit_code(self) -> int:
        """130 interrupted; 1 a failure, a timeout, disagreeing checksums, a result or the
        log not written, or a gated verdict that FAILs (``--slo``, ``--check-rate``,
        ``--require-rate``: asyncbench.measure.verdicts); 3 when no verdict fails and one
        is INCONCLUSIVE (the client late, the machine loaded); else 0. (2, bad input, is
        decided before anything runs.)"""
        code = exit_code(self.results, self.checksums_agree, self.interrupted)
        if code != EXIT_OK:
            return code
        if self.save_failed or self.log_failed:
            return EXIT_FAILED
        return max((exit_status(judge_run(r)) for r in self.results), default=EXIT_OK, key=_severity)


def _severity(code: int) -> int:
    """A FAIL (1) outranks an INCONCLUSIVE (3), which outranks a PASS (0)."""
    return {EXIT_OK: 0, EXIT_INCONCLUSIVE: 1, EXIT_FAILED: 2}[code]


class ResultSaver:
    """Saves each level's result as the run goes (and finally with charts, CSV, latest);
    a failed save is reported once per distinct error and the run goes on."""

    def __init__(self, cfg: BenchConfig, stamp: str, console: ConsoleObserver, csv: bool, update_latest: bool) -> None:
        self.cfg, self.stamp, self.console, self.csv, self.update_latest = cfg, stamp, console, csv, update_latest
        self.written: dict[tuple[int, int], tuple[Path, Path]] = {}
        self.save_errors: dict[tuple[int, int], str] = {}  # level -> the last save's error (gone once one succeeds)
        self.traced: dict[tuple[int, int], int] = {}  # level -> failed engines whose traceback file was named

    def save(self, result: RunResult, final: bool = False) -> None:
        cfg, stamp, console, written, save_errors = self.cfg, self.stamp, self.console, self.written, self.save_errors
        result.throughput = throughput_stats(result)
        result.verdicts = records(judge_run(result))
        if final and cfg.repeat - cfg.warmup > 1:
            result.environment["noise_advice"] = noise_advice(snapshot(0.1))
        elif final:  # a single run: only a loaded machine is worth a word (run/capacity/saturation.py)
            start = result.environment.get("load_avg_start")
            warning = loaded_machine_warning(snapshot(0.1), start[0] if start else None)
            if warning:
                result.environment["noise_advice"] = [warning]
        directory = result_dir(cfg.output, result.profiles, result.parallelism, cfg.workload_impl.unit)
        level = result.profiles, result.parallelism
        try:
            written[level] = write_run(result, directory, stamp, charts=final and cfg.charts, undrawn=final and not cfg.charts)
            if final and self.csv:
                write_csv(result, directory / f"asyncbench-{stamp}.csv")
                write_series_csv(result, directory / f"asyncbench-{stamp}-series.csv")
            if final and self.update_latest:
                from asyncbench.report.outputs import update_latest as write_latest

                write_latest(result, directory, stamp, cfg.output)
        except Exception as exc:  # a full disk or a foreign file costs this save, not the run
            text = f"{type(exc).__name__}: {exc}" if not isinstance(exc, OSError) else str(exc)
            if save_errors.get(level) != text:
                console.message(f"asyncbench: could not save the results in {directory}: {text}")
            save_errors[level] = text
            return
        save_errors.pop(level, None)
        self._name_tracebacks(result, level)

    def _name_tracebacks(self, result: RunResult, level: tuple[int, int]) -> None:
        """Under each engine's failure line, once its ``.traceback`` file is written: where the
        whole traceback is (the failure line gives only its last line). A failure without
        one (a child process killed) has nothing more there to point at."""
        failed = tracebacks.failed_engines(result)
        path = tracebacks.traceback_path(self.written[level][1])
        for e in failed[self.traced.get(level, 0) :]:
            if e.traceback:
                self.console.message(f"  !! {e.engine}: traceback in {path}")
        self.traced[level] = len(failed)

    def partial_files(self, log_path: Path) -> list[str]:
        return [str(log_path)] + [str(p) for pair in self.written.values() for p in pair]


def _run_locked(
    cfg: BenchConfig,
    log_file: str | None,
    no_progress: bool,
    update_latest: bool,
    stop: StopSignals,
    csv: bool,
    check_reference: bool,
    check_rate: bool = False,
    summary_format: str | None = None,
) -> int:
    """The run, in its steps: open the log, set up the observers and the saver, announce,
    run every engine, judge and save the results, close the log; one outcome, one code."""
    stamp = utc_stamp()
    started = datetime.now(UTC).isoformat(timespec="seconds")
    log_path = Path(log_file) if log_file else cfg.output / f"asyncbench-{stamp}.log"
    try:
        logger, log_fh = open_log(log_path)
    except OSError as exc:
        print(f"asyncbench: cannot open the log {log_path}: {exc}; nothing was run", file=sys.stderr)
        return RunOutcome(log_failed=True).exit_code()
    console, observer = _observers(logger, log_fh, no_progress)
    saver = ResultSaver(cfg, stamp, console, csv, update_latest)
    stop.partial_files = lambda: saver.partial_files(log_path)
    bench = Benchmark(cfg, observer, started, saver.save, log_path, scale_out(cfg))
    _announce(cfg, stamp, log_path, console, observer)
    _run_engines(bench, stop)
    interrupted = stop.interrupted  # from here on a signal is absorbed: the reports complete
    outcome = RunOutcome(bench.results)
    outcome.checksums_agree = _finish_results(bench.results, saver, console, interrupted, check_reference)
    outcome.interrupted = stop.interrupted is not None
    outcome.save_failed = bool(saver.save_errors)
    if check_rate:
        _report_missed_rates(bench.results, console)
    _report_capacity(bench.results, cfg.require_rate, console)
    code = outcome.exit_code()
    observer.run_end(
        exit_code=code,
        interrupted=interrupted,
        results=[str(j) for j, _ in saver.written.values()],
        reports=[str(m) for _, m in saver.written.values()],
        # the verdicts a reader of the log decides from, as the result JSON holds them
        verdicts=[dataclasses.asdict(v) for r in bench.results for v in r.verdicts],
    )
    log_fh.close()
    console.message(f"log:    {log_path}")
    if log_fh.error is not None:
        console.message(f"asyncbench: the log {log_path} is incomplete: writing it failed ({log_fh.error})")
        outcome.log_failed = True
    if saver.save_errors:
        console.message("asyncbench: some results could not be saved (see above)")
    if interrupted:
        console.message(f"asyncbench: {interrupted}; partial report written")
    elif stop.interrupted:
        console.message(f"asyncbench: {stop.interrupted} while the reports were written; they are complete")
    for result in bench.results:  # last, the verdict a reader came for (the report's first paragraph)
        level = f" · {result.profiles:_d} {result.workload_impl.unit}, P{result.parallelism}" if len(bench.results) > 1 else ""
        lines = headline.console_lines(result)
        console.message("\n".join([lines[0], lines[1] + level, *lines[2:]]))
    if summary_format == "ycsb":  # --format ycsb: YCSB's text summary, for YCSB users' scripts
        from asyncbench.report.ycsb_text import ycsb_lines

        for result in bench.results:
            console.message("\n".join(ycsb_lines(result)))
    for result in bench.results:  # the one answer to "does it hold my bound at my rate", last
        table = verdict_table.console_lines(result)
        if table:
            console.message("\n".join(table))
    return outcome.exit_code()


def _observers(logger: Any, log_fh: LogFile, no_progress: bool) -> tuple[ConsoleObserver, ObserverGroup]:
    """The console and every observer of the run: the JSON log, the progress bars, the console."""
    if no_progress:  # engine child processes inherit the environment
        os.environ[NO_PROGRESS_ENV] = "1"
    console, progress = terminal_observers(no_progress)  # console lines print above the bars
    # bars first, so a finished phase's bar is gone before its console line is printed
    observer = ObserverGroup(JsonLogObserver(logger, log_fh), *([progress] if progress else []), console)
    return console, observer


def _announce(cfg: BenchConfig, stamp: str, log_path: Path, console: ConsoleObserver, observer: ObserverGroup) -> None:
    """The run's first console lines and its run_start event (the files it will write)."""
    console.message(f"asyncbench: engines {', '.join(cfg.engines)}\n  log: {log_path}")
    if not accelerated(cfg.workload_impl):
        console.message(f"asyncbench: WARNING: {kernels_status(cfg.workload_impl)}")
    planned = [result_dir(cfg.output, lv.profiles, lv.parallelism, cfg.workload_impl.unit) / f"asyncbench-{stamp}" for lv in cfg.levels()]
    observer.run_start(
        plan=cfg.source,
        engines=cfg.engines,
        profiles=cfg.profiles,
        parallelism=cfg.parallelism,
        seed=cfg.seed,
        phases=[p.name for p in cfg.phases],  # the console fits its name column to them
        log=str(log_path),
        results=[f"{base}.json" for base in planned],
        reports=[f"{base}.md" for base in planned],
    )


def _run_engines(bench: Benchmark, stop: StopSignals) -> None:
    """Every level and engine on one event loop, which the first stop signal cancels."""

    async def main() -> None:
        async with anyio.create_task_group() as tg:
            tg.start_soon(stop.watch, tg.cancel_scope)
            await bench.run()
            tg.cancel_scope.cancel()

    anyio.run(main, backend_options=backend_options())


def _report_capacity(results: list[RunResult], required: dict[str, float], console: ConsoleObserver) -> bool:
    """The capacity scorecard of every level with a searched phase, then the gates
    (``--require-rate``): each engine whose capacity is below the rate required is named;
    True when there is one."""
    short = False
    for result in results:
        for line in scorecard_lines(result):
            console.message(line)
        for line in gate_failures(result, required):
            console.message(textwrap.fill(line, 80, subsequent_indent="  "))
            short = True
        for line in gate_inconclusive(result, required):  # the client's, not the engine's: no exit 1
            console.message(textwrap.fill(line, 80, subsequent_indent="  "))
    return short


def _report_missed_rates(results: list[RunResult], console: ConsoleObserver) -> bool:
    """``--check-rate``: name each phase whose achieved rate fell more than 5 % below its
    target; True when there is one."""
    missed = [
        (e.engine, p)
        for r in results
        for e in r.engines
        for p in e.phases
        if p.rate_missed and p.open_loop is not None
    ]
    for engine, p in missed:
        assert p.open_loop is not None
        console.message(
            f"RATE MISSED: engine {engine}, phase {p.name!r}: {round(p.ops_per_s):_d}/s achieved of "
            f"{round(p.open_loop.rate):_d}/s (--check-rate)"
        )
    return bool(missed)


def _finish_results(
    results: list[RunResult], saver: ResultSaver, console: ConsoleObserver, interrupted: str | None, check_reference: bool
) -> bool:
    """Save each level's final result and print its verdict; True when every checksum agrees."""
    agree = True
    for result in results:
        result.interrupted = interrupted
        mark_end(result.environment)
        saver.save(result, final=True)
        verdict = judge(result)
        for line in verdict.failures:
            console.message(line)
        for line in verdict.lines:  # the correctness verdict: engines agree, published reference
            console.message(textwrap.fill(line, 80, subsequent_indent="  "))
        agree = agree and verdict.ok
        if check_reference and verdict.published_mismatch:
            agree = False
        for line in repeat_summary(result):  # --repeat: per engine, median and spread per phase
            console.message(line)
        if unstable_phases(result):
            for advice in result.environment.get("noise_advice", []):
                console.message(textwrap.fill(advice, 80, initial_indent="  ", subsequent_indent="  "))
        elif result.repeat - result.warmup <= 1:  # a single run's loaded-machine warning
            for advice in result.environment.get("noise_advice", []):
                console.message(textwrap.fill(advice, 80, subsequent_indent="  "))
        level = result.profiles, result.parallelism
        if level in saver.written and level not in saver.save_errors:
            json_path, md_path = saver.written[level]
            csv_line = f"\ncsv:    {json_path.with_suffix('.csv')}" if saver.csv else ""
            traced = tracebacks.traceback_path(md_path)
            trace_line = f"\ntraceback: {traced}" if tracebacks.failed_engines(result) else ""
            console.message(
                f"\nreport: {md_path}\nhtml:   {html_path(md_path)}\nresult: {json_path}{csv_line}{trace_line}"
            )
    return agree
