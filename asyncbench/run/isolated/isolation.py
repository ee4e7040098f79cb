"""Per-engine process isolation: each engine runs in a fresh child process.

Peak memory then belongs to that engine alone, and a child that crashes or is killed
costs only its own row. The parent hands the child its exact effective config (JSON);
the child rewrites its result file after every phase, so even a SIGKILL leaves the
phases it completed.

The child inherits its data directory's lock descriptor (the lock lasts as long as the
child) and dies with its parent (:mod:`asyncbench.run.isolated.parent_watch`). Setting up a child (its
temporary directory, its config file) can fail; that fails the engine's row at ``setup``,
and the other engines still run.
"""

from __future__ import annotations

import os
import shutil
import signal
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import anyio
import orjson

from asyncbench.config import BenchConfig, Level, to_json
from asyncbench.dirs.paths import store_root
from asyncbench.result import EngineResult, ResultError, Status, write_atomic
from asyncbench.run.isolated.child_command import child_command
from asyncbench.run.isolated.parent_watch import parent_pipe
from asyncbench.run.observe.observers import Observer
from asyncbench.run.observe.signals import StopSignals

#: Beyond the engine's own timeout (which the child enforces), how long the parent waits.
CHILD_GRACE_SECONDS = 120.0
#: After SIGTERM, how long a child may take to close its store and write its result.
CHILD_STOP_SECONDS = 60.0
#: The prefix of a child's private temporary directory (config and result files).
TEMP_PREFIX = "asyncbench-child-"
#: The reason `_collect` is given when the run (the parent) was stopped by a signal.
INTERRUPTED = "interrupted"


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
    """Parent side: run one engine at one profile count in ``python -m asyncbench.run.child``."""

    def __init__(
        self, cfg: BenchConfig, level: Level, name: str, log_path: Path, observer: Observer, repeat: int = 0
    ) -> None:
        self.cfg, self.level, self.name, self.log_path, self.observer = (
            cfg,
            level,
            name,
            log_path,
            observer,
        )
        self.repeat = repeat  # which repeat this is: the child's log lines say so
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
            engine_dir = store_root(self.cfg.data, self.level.profiles, self.cfg.workload_impl.unit) / self.name
            lock_fd = CONTEXT.data_fd(engine_dir)
            watch_fd, alive_fd = parent_pipe()  # the child watches watch_fd; alive_fd stays here
            try:
                cmd = child_command(
                    [
                        str(cfg_file),
                        *("--engine", self.name, "--profiles", str(self.level.profiles)),
                        *("--parallelism", str(self.level.parallelism), "--repeat", str(self.repeat)),
                        *("--result-file", str(result_file), "--log-file", str(self.log_path)),
                        *("--parent-pipe", str(watch_fd)),
                    ]
                )
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
                self._collect(result_file, proc.returncode, INTERRUPTED)
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
            self.result = EngineResult.from_dict(orjson.loads(result_file.read_bytes()), self.cfg.workload)
        except FileNotFoundError:
            pass
        except (ValueError, ResultError) as exc:
            self.result.notes.append(f"child result unreadable: {exc}")
            reason = reason or f"the child's result is unreadable: {exc}"  # the row says why, not "no result"
        if returncode is None or returncode < 0:
            how = f"killed by {signal.Signals(-returncode).name}" if returncode else "did not end"
            reason = reason or f"child process {how}"
        elif returncode not in (0, 130):
            reason = reason or f"child process exited with code {returncode}"
        if self.result.status is Status.RUNNING:
            if reason == INTERRUPTED:  # the run was stopped, the child did not say where it got to
                self.result.set_status(Status.INTERRUPTED, self.result.phase)
            else:
                self.result.set_status(
                    Status.FAILED, self.result.phase, reason or "child process ended without a result"
                )
        elif reason and self.result.ok and reason != INTERRUPTED:
            # a complete result (every phase ended, written at the engine's end) stays ok when
            # the stop came after it: only a child that failed to end cleanly turns it into a failure
            self.result.set_status(Status.FAILED, None, reason)
