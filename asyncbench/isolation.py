"""Per-engine process isolation: each engine runs in a fresh child process.

Peak memory then belongs to that engine alone, and a child that crashes or is killed
costs only its own row. The parent hands the child its exact effective config (JSON);
the child rewrites its result file after every phase, so even a SIGKILL leaves the
phases it completed.
"""

from __future__ import annotations

import signal
import sys
import tempfile
from pathlib import Path

import anyio
import orjson

from asyncbench.config import BenchConfig, to_json
from asyncbench.observers import Observer
from asyncbench.result import EngineResult, PhaseResult, ResultError, Status, write_atomic

#: Beyond the engine's own timeout (which the child enforces), how long the parent waits.
CHILD_GRACE_SECONDS = 120.0
#: After SIGTERM, how long a child may take to close its store and write its result.
CHILD_STOP_SECONDS = 60.0


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
        with tempfile.TemporaryDirectory(prefix="asyncbench-child-") as tmp:
            cfg_file, result_file = Path(tmp) / "config.json", Path(tmp) / "result.json"
            cfg_file.write_bytes(to_json(self.cfg))
            cmd = [
                sys.executable,
                "-m",
                "asyncbench",
                "--child-run",
                str(cfg_file),
                "--child-engine",
                self.name,
                "--child-profiles",
                str(self.profiles),
                "--result-file",
                str(result_file),
                "--log-file",
                str(self.log_path),
            ]
            reason = None
            async with await anyio.open_process(cmd, stdin=None, stdout=None, stderr=None) as proc:
                try:
                    limit = self.cfg.timeout_seconds
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
        # the child's console said why it stopped; the parent speaks only when the child could not
        if not self.result.ok and not self.result.phases and self.result.status is not Status.SKIPPED:
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


def child_main(config_file: Path, engine: str, profiles: int, result_file: Path, log_file: Path) -> int:
    """One engine at one profile count, in a child process started by :class:`ChildEngineRun`."""
    from asyncbench.config import from_json
    from asyncbench.logs import open_log
    from asyncbench.memory_sampler import MemorySampler
    from asyncbench.observers import JsonLogObserver, ObserverGroup
    from asyncbench.progress import terminal_observers
    from asyncbench.runner import EngineRun
    from asyncbench.signals import backend_options, watch_signals
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
    state: dict = {"interrupted": None}

    async def main() -> None:
        async with anyio.create_task_group() as tg:
            tg.start_soon(watch_signals, state, tg.cancel_scope)
            tg.start_soon(sampler.run)
            await engine_run.run()
            tg.cancel_scope.cancel()

    try:
        anyio.run(main, backend_options=backend_options())
    except KeyboardInterrupt:
        state["interrupted"] = "interrupted by SIGINT"
    writer.engine_end(engine_run.result)
    log_fh.close()
    return 130 if state["interrupted"] else 0
