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

from asyncbench.config import BenchConfig, to_json
from asyncbench.observers import Observer
from asyncbench.result import EngineResult, PhaseResult, write_atomic

#: Beyond the engine's own timeout (which the child enforces), how long the parent waits.
CHILD_GRACE_SECONDS = 120.0
#: After SIGTERM, how long a child may take to close its store and write its result.
CHILD_STOP_SECONDS = 60.0
RUNNING = "running: "


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
        self.result = EngineResult(engine=name, status=f"{RUNNING}start-up")

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
                    with anyio.move_on_after(self.cfg.timeout_seconds + CHILD_GRACE_SECONDS) as scope:
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
        if not self.result.ok and not self.result.phases:
            self.observer.message(f"  !! {self.name}: {self.result.status}")
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
            self.result = EngineResult.from_dict(_load(result_file))
        except FileNotFoundError:
            pass
        except ValueError as exc:
            self.result.notes.append(f"child result unreadable: {exc}")
        if returncode is None or returncode < 0:
            how = f"killed by {signal.Signals(-returncode).name}" if returncode else "did not end"
            reason = reason or f"child process {how}"
        elif returncode not in (0, 130):
            reason = reason or f"child process exited with code {returncode}"
        status = self.result.status
        if status.startswith(RUNNING):
            phase = status.removeprefix(RUNNING)
            self.result.status = f"Failed: {phase}: {reason or 'child process ended without a result'}"
        elif reason and self.result.ok:
            self.result.status = f"Failed: {reason}"


def _load(path: Path) -> dict:
    import orjson

    return orjson.loads(path.read_bytes())


class PartialResultWriter(Observer):
    """Child side: rewrites the result file at every phase boundary (atomically)."""

    def __init__(self, path: Path, result: EngineResult) -> None:
        self.path, self.result = path, result

    def _write(self, status: str | None = None) -> None:
        saved = self.result.status
        if status is not None:
            self.result.status = status
        try:
            write_atomic(self.path, self.result.to_json())
        finally:
            self.result.status = saved

    def phase_start(self, engine: str, phase: str, total_ops: int) -> None:
        self._write(f"{RUNNING}{phase}")

    def engine_start(self, engine: str, profiles: int) -> None:
        self._write(f"{RUNNING}open")

    def phase_end(self, engine: str, result: PhaseResult) -> None:
        self._write(f"{RUNNING}between phases, after {result.name}" if self.result.ok else None)

    def engine_end(self, result: EngineResult) -> None:
        self._write()
