"""Per-engine process isolation: each engine runs in a fresh child process.

Peak memory then belongs to that engine alone, and a child that crashes or is killed
costs only its own row. The parent hands the child its exact effective config (JSON);
the child rewrites its result file after every phase, so even a SIGKILL leaves the
phases it completed.

The child inherits its data directory's lock descriptor (the lock lasts as long as the
child) and dies with its parent (:mod:`asyncbench.parent_watch`). Setting up a child (its
temporary directory, its config file) can fail; that fails the engine's row at ``setup``,
and the other engines still run.
"""

from __future__ import annotations

import os
import shutil
import signal
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import anyio
import orjson

from asyncbench.config import BenchConfig, to_json
from asyncbench.observers import Observer
from asyncbench.parent_watch import ParentWatch, parent_pipe
from asyncbench.result import EngineResult, PhaseResult, ResultError, Status, write_atomic
from asyncbench.signals import StopSignals

#: Beyond the engine's own timeout (which the child enforces), how long the parent waits.
CHILD_GRACE_SECONDS = 120.0
#: After SIGTERM, how long a child may take to close its store and write its result.
CHILD_STOP_SECONDS = 60.0
#: The prefix of a child's private temporary directory (config and result files).
TEMP_PREFIX = "asyncbench-child-"


@dataclass
class ChildContext:
    """What the running command shares with the engine children it starts: the data
    directory lock a child inherits (by engine directory) and the stop policy, which
    kills children and removes their temporary directories on a forced exit."""

    data_fd: Callable[[Path], int | None] = lambda engine_dir: None
    stop: StopSignals | None = None

    def reset(self) -> None:
        self.data_fd, self.stop = ChildContext.data_fd, None


#: Set by ``commands.run`` for the duration of a run.
CONTEXT = ChildContext()


class ChildEngineRun:
    """Parent side: run one engine at one profile count in ``python -m asyncbench --child-run``."""

    def __init__(
        self, cfg: BenchConfig, name: str, profiles: int, log_path: Path, observer: Observer
    ) -> None:
        self.cfg, self.name, self.profiles, self.log_path, self.observer = (
            cfg,
            name,
            profiles,
            log_path,
            observer,
        )
        self.result = EngineResult(engine=name, status=Status.RUNNING)

    async def run(self) -> EngineResult:
        try:
            tmp = Path(tempfile.mkdtemp(prefix=TEMP_PREFIX))
        except OSError as exc:
            return self._setup_failed(f"no temporary directory for the engine's process: {exc}")
        proc: anyio.abc.Process | None = None

        def force_cleanup() -> None:  # a forced exit: the child goes first, then its files
            if proc is not None and proc.returncode is None:
                proc.kill()
            shutil.rmtree(tmp, ignore_errors=True)

        stop = CONTEXT.stop
        if stop is not None:
            stop.on_force.append(force_cleanup)
        try:
            cfg_file, result_file = tmp / "config.json", tmp / "result.json"
            try:
                write_atomic(cfg_file, to_json(self.cfg))
            except OSError as exc:
                return self._setup_failed(f"cannot write the engine process's config: {exc}")
            engine_dir = self.cfg.data / f"profiles-{self.profiles}" / self.name
            lock_fd = CONTEXT.data_fd(engine_dir)
            watch_fd, alive_fd = parent_pipe()  # the child watches watch_fd; alive_fd stays here
            try:
                cmd = [
                    *(sys.executable, "-m", "asyncbench", "--child-run", str(cfg_file)),
                    *("--child-engine", self.name, "--child-profiles", str(self.profiles)),
                    *("--result-file", str(result_file), "--log-file", str(self.log_path)),
                    *("--parent-pipe", str(watch_fd)),
                ]
                inherit = [watch_fd] + ([lock_fd] if lock_fd is not None else [])
                try:
                    proc = await anyio.open_process(cmd, stdin=None, stdout=None, stderr=None, pass_fds=inherit)
                finally:
                    os.close(watch_fd)  # only the child holds the read end now
                async with proc:
                    await self._wait(proc, result_file)
            finally:
                os.close(alive_fd)
        finally:
            if stop is not None:
                stop.on_force.remove(force_cleanup)
            shutil.rmtree(tmp, ignore_errors=True)
        # the child's console said why it stopped; the parent speaks only when the child could not
        if not self.result.ok and not self.result.phases and self.result.status is not Status.SKIPPED:
            self.observer.message(f"  !! {self.name}: {self.result.status_text()}")
        return self.result

    async def _wait(self, proc: anyio.abc.Process, result_file: Path) -> None:
        reason = None
        try:
            limit = self.cfg.timeout_seconds  # None: no timeout
            with anyio.move_on_after(None if limit is None else limit + CHILD_GRACE_SECONDS) as scope:
                await proc.wait()
            if scope.cancelled_caught:
                proc.kill()
                reason = "child process did not end after its timeout and was killed"
                await proc.wait()
        except anyio.get_cancelled_exc_class():
            with anyio.CancelScope(shield=True):
                await self._stop(proc)
                self._collect(result_file, proc.returncode, "interrupted")
            raise
        self._collect(result_file, proc.returncode, reason)

    def _setup_failed(self, detail: str) -> EngineResult:
        self.result.set_status(Status.FAILED, "setup", detail)
        self.observer.message(f"  !! {self.name}: {self.result.status_text()}")
        return self.result

    async def _stop(self, proc: anyio.abc.Process) -> None:
        if proc.returncode is None:
            proc.send_signal(signal.SIGTERM)
            with anyio.move_on_after(CHILD_STOP_SECONDS):
                await proc.wait()
        if proc.returncode is None:
            proc.kill()
            await proc.wait()

    def _collect(self, result_file: Path, returncode: int | None, reason: str | None) -> None:
        try:
            self.result = EngineResult.from_dict(orjson.loads(result_file.read_bytes()))
        except FileNotFoundError:
            pass
        except (ValueError, ResultError) as exc:
            self.result.notes.append(f"child result unreadable: {exc}")
        if returncode is None or returncode < 0:
            how = f"killed by {signal.Signals(-returncode).name}" if returncode else "did not end"
            reason = reason or f"child process {how}"
        elif returncode not in (0, 130):
            reason = reason or f"child process exited with code {returncode}"
        if self.result.status is Status.RUNNING:
            self.result.set_status(
                Status.FAILED, self.result.phase, reason or "child process ended without a result"
            )
        elif reason and self.result.ok:
            self.result.set_status(Status.FAILED, None, reason)


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

    def engine_start(self, engine: str, profiles: int) -> None:
        self._write("open", running=True)

    def phase_start(
        self, engine: str, phase: str, total_ops: int, kind: str | None = None, stream: str | None = None
    ) -> None:
        self._write(phase, running=True)

    def phase_end(self, engine: str, result: PhaseResult) -> None:
        self._write(f"between phases, after {result.name}", running=True)

    def engine_end(self, result: EngineResult) -> None:
        self._write()


def child_main(
    config_file: Path,
    engine: str,
    profiles: int,
    result_file: Path,
    log_file: Path,
    stop: StopSignals | None = None,
    parent_pipe_fd: int | None = None,
) -> int:
    """One engine at one profile count, in a child process started by :class:`ChildEngineRun`.

    The child stops like the parent (first signal: graceful; later ones absorbed) and
    also when the parent dies; then nobody will read its result, so it removes its
    temporary directory itself.
    """
    watch = ParentWatch(parent_pipe_fd)
    watch.start()
    if stop is None:
        stop = StopSignals()
        stop.install()
    try:
        return _child_run(config_file, engine, profiles, result_file, log_file, stop)
    finally:
        if watch.parent_gone.is_set() and result_file.parent.name.startswith(TEMP_PREFIX):
            shutil.rmtree(result_file.parent, ignore_errors=True)


def _child_run(
    config_file: Path, engine: str, profiles: int, result_file: Path, log_file: Path, stop: StopSignals
) -> int:
    from asyncbench.config import from_json
    from asyncbench.logs import open_log
    from asyncbench.memory_sampler import MemorySampler
    from asyncbench.observers import JsonLogObserver, ObserverGroup
    from asyncbench.progress import terminal_observers
    from asyncbench.runner import EngineRun
    from asyncbench.signals import backend_options
    from workloads.profile_store.plan import draw_plan

    cfg = from_json(config_file.read_bytes())
    logger, log_fh = open_log(log_file)
    plan = draw_plan(cfg.counts_for(profiles), cfg.seed)
    sampler = MemorySampler()
    engine_run = EngineRun(cfg, engine, plan, ObserverGroup(), sampler)
    writer = PartialResultWriter(result_file, engine_run.result)
    console, progress = terminal_observers()  # off unless a terminal; --no-progress via the environment
    extra = [progress] if progress else []
    engine_run.observer = ObserverGroup(JsonLogObserver(logger), writer, *extra, console)

    async def main() -> None:
        async with anyio.create_task_group() as tg:
            tg.start_soon(stop.watch, tg.cancel_scope)
            tg.start_soon(sampler.run)
            await engine_run.run()
            tg.cancel_scope.cancel()

    anyio.run(main, backend_options=backend_options())
    log_fh.close()
    try:
        writer.engine_end(engine_run.result)
    except OSError as exc:
        print(f"asyncbench: {engine}: cannot write the result for the parent: {exc}", file=sys.stderr)
        return 1
    return 130 if stop.interrupted else 0
