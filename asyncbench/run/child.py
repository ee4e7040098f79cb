"""Child side of per-engine isolation: ``python -m asyncbench.run.child CONFIG ...`` runs one
engine at one (profiles, parallelism) level, writing its partial result after every phase.
Not a command of the CLI: only :class:`~asyncbench.run.isolated.isolation.ChildEngineRun` starts it.

Kept apart from :mod:`asyncbench.run.isolated.isolation` (the parent side) because the child runs
the whole :class:`~asyncbench.run.runner.EngineRun`, while the runner starts children:
one module for each direction keeps the import graph acyclic.
"""

from __future__ import annotations

import signal

#: Stop signals that arrive while the imports below run (half a second or more on a loaded
#: machine), before :func:`main` installs the run's handlers: recorded here, then handled
#: by :class:`StopSignals` as if they came after (issue 52: three SIGINTs to the process
#: group during a child's start printed a ``KeyboardInterrupt`` traceback from its
#: imports). The interpreter's own start, before this line, runs with SIGINT ignored: the
#: parent starts this process so (:mod:`asyncbench.run.isolated.child_command`), and this line takes it back.
EARLY_SIGNALS: list[int] = []
if __name__ == "__main__":
    for _sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(_sig, lambda signum, _frame: EARLY_SIGNALS.append(signum))

import os  # noqa: E402  (after the signal recorder: see EARLY_SIGNALS)
import shutil  # noqa: E402
import sys  # noqa: E402
from pathlib import Path  # noqa: E402

import anyio  # noqa: E402
import orjson  # noqa: E402

from asyncbench.result import EngineResult, PhaseResult, Status, write_atomic  # noqa: E402
from asyncbench.run.isolated.isolation import TEMP_PREFIX  # noqa: E402
from asyncbench.run.isolated.parent_watch import ParentWatch  # noqa: E402
from asyncbench.run.observe.observers import Observer  # noqa: E402
from asyncbench.run.observe.signals import StopRequested, StopSignals  # noqa: E402


class PartialResultWriter(Observer):
    """Child side: rewrites the result file at every phase boundary (atomically), with
    status ``running`` and the phase under way, so a killed child still tells where."""

    def __init__(self, path: Path, result: EngineResult) -> None:
        self.path, self.result = path, result

    def _write(self, running_phase: str | None = None, running: bool = False) -> None:
        doc = self.result.to_dict()
        if running and self.result.status is Status.OK:
            doc["status"], doc["phase"], doc["detail"] = Status.RUNNING, running_phase, None
        write_atomic(self.path, orjson.dumps(doc))

    def engine_start(self, engine: str, profiles: int, unit: str) -> None:
        self._write("open", running=True)

    def phase_start(
        self, engine: str, phase: str, total_ops: int, kind: str | None = None, stream: str | None = None
    ) -> None:
        self._write(phase, running=True)

    def phase_end(self, engine: str, result: PhaseResult) -> None:
        self._write(f"between phases, after {result.name}", running=True)

    def engine_end(self, result: EngineResult) -> None:
        self._write()


#: How long a child stopped by a signal waits to learn whether its parent died.
PARENT_GONE_WAIT_SECONDS = 1.0


def child_main(
    config_file: Path,
    engine: str,
    profiles: int,
    parallelism: int,
    result_file: Path,
    log_file: Path,
    stop: StopSignals | None = None,
    parent_pipe_fd: int | None = None,
    repeat: int = 0,
) -> int:
    """One engine at one profile count, in a child process started by :class:`ChildEngineRun`.

    The child stops like the parent (first signal: graceful; later ones absorbed) and
    also when the parent dies; then nobody will read its result, so it removes its
    temporary directory itself.
    """
    watch = ParentWatch(parent_pipe_fd)
    parent = os.getppid()
    watch.start()
    if stop is None:
        stop = StopSignals()
        stop.install()
    stop.quiet = True  # one Ctrl-C, one line: the parent's
    try:
        return _child_run(config_file, engine, profiles, parallelism, result_file, log_file, stop, repeat)
    finally:
        # The kernel's SIGTERM comes when the parent's *thread* that started this child
        # dies: with SIGKILL that is before the parent's other threads (its log writer)
        # are gone, so the pipe closes a little later. A stop by a signal therefore waits
        # briefly for the pipe before deciding nobody will read the result.
        if stop.interrupted and not watch.parent_gone.is_set() and parent_pipe_fd is not None:
            watch.parent_gone.wait(PARENT_GONE_WAIT_SECONDS)
        gone = watch.parent_gone.is_set() or os.getppid() != parent
        if gone and result_file.parent.name.startswith(TEMP_PREFIX):
            shutil.rmtree(result_file.parent, ignore_errors=True)


def _child_run(
    config_file: Path,
    engine: str,
    profiles: int,
    parallelism: int,
    result_file: Path,
    log_file: Path,
    stop: StopSignals,
    repeat: int = 0,
) -> int:
    from asyncbench.config import from_json
    from asyncbench.measure.memory_sampler import MemorySampler
    from asyncbench.run.observe.logs import open_log
    from asyncbench.run.observe.observers import JsonLogObserver, ObserverGroup
    from asyncbench.run.observe.progress import terminal_observers
    from asyncbench.run.observe.signals import backend_options
    from asyncbench.run.runner import EngineRun

    cfg = from_json(config_file.read_bytes())
    level = cfg.level(profiles, parallelism)
    logger, log_fh = open_log(log_file, joining=True)  # the parent has it open for this run
    try:
        with stop.raising():  # the skip pass takes minutes at billions of draws: a stop ends it
            plan = cfg.workload_impl.draw_plan(level.counts, cfg.seed)
    except StopRequested:  # nothing started: the parent records the engine stopped at start-up
        log_fh.close()
        return 130
    sampler = MemorySampler()
    engine_run = EngineRun(cfg, level, engine, plan, ObserverGroup(), sampler)
    writer = PartialResultWriter(result_file, engine_run.result)
    console, progress = terminal_observers()  # off unless a terminal; --no-progress via the environment
    extra = [progress] if progress else []
    console.fit_names([p.name for p in cfg.phases])  # the name column as the parent's
    engine_run.observer = ObserverGroup(JsonLogObserver(logger, log_fh), writer, *extra, console)
    engine_run.observer.engine_context(repeat, profiles, parallelism)  # the log's lines say which run this is

    async def main() -> None:
        async with anyio.create_task_group() as tg:
            tg.start_soon(stop.watch, tg.cancel_scope)
            tg.start_soon(sampler.run)
            await engine_run.run()
            tg.cancel_scope.cancel()

    anyio.run(main, backend_options=backend_options())
    log_fh.close()
    if log_fh.error is not None:  # the parent reports its own log's state; this is the child's part
        print(f"asyncbench: {engine}: the log {log_file} is incomplete: writing it failed ({log_fh.error})", file=sys.stderr)
    try:
        writer.engine_end(engine_run.result)
    except OSError as exc:
        print(f"asyncbench: {engine}: cannot write the result for the parent: {exc}", file=sys.stderr)
        return 1
    return 130 if stop.interrupted else 0


def main(argv: list[str] | None = None) -> int:
    """The isolated engine's process entry (arguments from :class:`ChildEngineRun`)."""
    import argparse

    stop = StopSignals()
    stop.quiet = True  # one Ctrl-C, one line: the parent's
    stop.install()  # first: no signal may take its default action from here on
    for signum in EARLY_SIGNALS:  # those that came during the imports (a third SIGINT exits here)
        stop.handle(signum)
    EARLY_SIGNALS.clear()
    from asyncbench.config import ConfigError
    from asyncbench.run.isolated.child_args import child_args

    p = argparse.ArgumentParser(prog="python -m asyncbench.run.child")
    p.add_argument("config")
    for flag in ("--engine", "--profiles", "--parallelism", "--result-file", "--log-file"):
        p.add_argument(flag, required=True)
    p.add_argument("--parent-pipe")
    p.add_argument("--repeat")
    try:  # every value checked (run/isolated/child_args.py): exit 2 naming it, never a traceback
        a = child_args(p.parse_args(argv))
    except ConfigError as exc:
        stop.restore()
        print(f"asyncbench: {exc}", file=sys.stderr)
        return 2
    return child_main(
        a.config, a.engine, a.profiles, a.parallelism, a.result_file, a.log_file, stop, a.parent_pipe, a.repeat
    )


if __name__ == "__main__":
    sys.exit(main())
