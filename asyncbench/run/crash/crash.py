"""A crash in a plan, runner side: a write phase's ``crash`` and the ``recover`` phase.

The crashed phase: the runner's engine closes (cleanly: everything before the phase is on
disk as the engine leaves it at a close), and a worker process
(:mod:`asyncbench.run.crash.crash_worker`) opens the same store, runs the phase's operations in
plan order and is SIGKILLed once ``crash.after`` are acknowledged. The parent reads each
acknowledged batch from the worker's pipe, so it knows exactly which operations were
acknowledged (a prefix of the phase) and when.

The recover phase: a fresh adapter opens the store (timed, as reopen times its open; a
store that does not open is a finding, not a failure of the run) and the workload reads
every record back against the plan (``CrashRecovery.check_recovery``). What it found becomes
the engine's :class:`~asyncbench.result.DurabilityRow`, beside the promise the engine
states (``Durability.synced_commits``).

A ``power`` crash runs the worker on the power-cut filesystem mounted over the store
(:mod:`asyncbench.run.crash.power_mount`), cut after the worker's kill: the store keeps exactly
what was synced.

A server engine (mysql, postgres, redis) is crashed by killing its server: only a server
proven to be a throw-away one of this project's scripts
(:func:`~asyncbench.run.crash.server_kill.prove_script_server`, checked before anything is
touched; any other server is refused, naming why). The worker runs the phase against it as
for an embedded engine; when the parent reads the last acknowledgement it SIGKILLs the
server, then starts it again on the same data directory (``scripts/<x>-server restart``)
and the recover phase checks it as it checks a file store. One point per run (a server's
data directory is not copied) and ``kill`` only (a power cut needs the data directory on
the power-cut filesystem: not built).
"""

from __future__ import annotations

import contextlib
import dataclasses
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from time import perf_counter

import anyio
import orjson

from asyncbench.config import BenchConfig, Level, PhaseSpec, to_json
from asyncbench.engine import Engine
from asyncbench.result import DurabilityRow, write_atomic
from asyncbench.run.crash.power_mount import power_cut_mount
from asyncbench.run.crash.server_kill import (
    SCRIPTS,
    ScriptServer,
    ServerRefused,
    kill_server,
    prove_script_server,
    restart_server,
)
from asyncbench.run.phase.stores import worker_store
from asyncbench.workload import DrawnPlan, Workload
from asyncbench.workload_capabilities import crash_recovery

__all__ = ["CrashRecord", "crash_phase", "recover_phase"]

#: The worker's stderr kept for an error message.
STDERR_TAIL = 2000


@dataclass
class CrashRecord:
    """What the crashed phase left for the recover phase."""

    spec: PhaseSpec
    acknowledged: int = 0
    seconds: float = 0.0  # from the worker's first operation to its last acknowledgement
    #: (operations acknowledged so far, monotonic ns) per batch, the worker's start first
    acks: list[tuple[int, int]] = field(default_factory=list)
    #: The rows of the earlier crash points (``crash.points``), each checked on its copy.
    earlier: list[DurabilityRow] = field(default_factory=list)

    def lost_seconds(self, first_lost: int | None) -> float | None:
        """From the start of the batch holding operation ``first_lost`` (0-based) to the crash."""
        if first_lost is None or not self.acks:
            return None
        began = self.acks[0][1]
        for done, ns in self.acks:  # the last batch that ended at or before that operation
            if done <= first_lost:
                began = ns
        return max(0.0, (self.acks[-1][1] - began) / 1e9)


def refusal(engine: Engine, spec: PhaseSpec | None = None) -> str | None:
    """Why this engine (for this crashed phase) cannot be crashed here, or None. A server
    engine's server is proven throw-away later, at the crash (:func:`server_refusal`)."""
    if not engine.persistent:
        return f"{engine.name} keeps nothing beyond its process: a crash has nothing to check"
    if type(engine).needs_server:
        if engine.name not in SCRIPTS:
            return f"{engine.name} runs in a server no script of this project starts: its crash is not built"
        if spec is not None and spec.crash is not None and spec.crash.how != "kill":
            return (
                f"{engine.name} runs in a server: a {spec.crash.how} crash needs its data directory on the "
                'power-cut filesystem, which is not built (docs/durability.md); use how = "kill"'
            )
        if spec is not None and spec.crash is not None and len(spec.crash.at()) > 1:
            return (
                f"{engine.name} runs in a server: several crash points need copies of its data directory, "
                "which are not built; use crash.points = 1"
            )
    return None


def server_refusal(engine: Engine) -> tuple[ScriptServer | None, str | None]:
    """The proven server to kill for ``engine`` (None for an embedded engine), or why not."""
    if not type(engine).needs_server:
        return None, None
    try:
        return prove_script_server(engine), None
    except ServerRefused as exc:
        return None, str(exc)


async def crash_phase(cfg: BenchConfig, level: Level, index: int, engine: Engine, plan: DrawnPlan) -> CrashRecord:
    """Close ``engine``, run phase ``index`` in a worker process until its crash, return
    what was acknowledged. Raises RuntimeError when the worker did not die by the kill.

    Several points (``crash.points``): every point but the last runs on a copy of the store
    as the phase found it, is checked there (its row in ``CrashRecord.earlier``) and the copy
    deleted; the last runs on the store itself, for the recover phase."""
    spec = cfg.phases[index]
    assert spec.crash is not None
    why = refusal(engine, spec)
    if why is not None:
        raise RuntimeError(why)
    server, why = server_refusal(engine)  # before anything is touched
    if why is not None:
        raise RuntimeError(why)
    await engine.close()
    points = spec.crash.at()
    earlier: list[DurabilityRow] = []
    for point in points[:-1]:
        earlier.append(await _point_on_a_copy(cfg, level, index, engine, plan, point))
    record = await _crash_once(cfg, level, index, engine, engine.data_dir, points[-1], server)
    record.earlier = earlier
    return record


async def _point_on_a_copy(
    cfg: BenchConfig, level: Level, index: int, engine: Engine, plan: DrawnPlan, point: int
) -> DurabilityRow:
    """One earlier crash point, on a copy of the store beside it, checked, then deleted."""
    copy = engine.data_dir.with_name(f"{engine.data_dir.name}.crash-point-{point}")
    if copy.exists() or copy.is_symlink():  # never over anything: an earlier run's copy is the user's to look at
        raise RuntimeError(f"{copy} exists (left by a stopped run?); a crash point's copy of the store goes there")
    await anyio.to_thread.run_sync(partial(shutil.copytree, engine.data_dir, copy, symlinks=True))
    try:
        record = await _crash_once(cfg, level, index, engine, copy, point)
        fresh = type(engine)(dataclasses.replace(engine.config, data_dir=copy))
        async with anyio.create_task_group() as background:
            try:
                row, _ = await recover_phase(record, plan, engine, fresh, background, cfg.workload_impl)
            finally:
                with anyio.CancelScope(shield=True):
                    await fresh.close()
                background.cancel_scope.cancel()
        return row
    finally:
        with anyio.CancelScope(shield=True):
            await anyio.to_thread.run_sync(partial(shutil.rmtree, copy, ignore_errors=True))


async def _crash_once(
    cfg: BenchConfig,
    level: Level,
    index: int,
    engine: Engine,
    store: Path,
    point: int,
    server: ScriptServer | None = None,
) -> CrashRecord:
    """The worker on ``store`` until ``point`` operations are acknowledged, then its kill
    (and, for a power crash, the cut); with a ``server``, the server's kill at the last
    acknowledgement and its restart."""
    spec = cfg.phases[index]
    assert spec.crash is not None
    record = CrashRecord(dataclasses.replace(spec, crash=dataclasses.replace(spec.crash, after=point)))
    with tempfile.TemporaryDirectory(prefix="asyncbench-crash-") as tmp:
        config, spec_file = Path(tmp) / "config.json", Path(tmp) / "crash.json"
        write_atomic(config, to_json(cfg))
        async with contextlib.AsyncExitStack() as stack:
            # a power crash: the worker's store on the power-cut layer, cut when this block ends
            mount = await stack.enter_async_context(power_cut_mount(store)) if spec.crash.how == "power" else None
            job = {"config": str(config), "engine": engine.name, "phase": index, "profiles": level.profiles,
                   "parallelism": level.parallelism, "data_dir": str(mount or store), "after": point,
                   "lock_key": engine.lock_key()}  # fmt: skip
            write_atomic(spec_file, orjson.dumps(job))
            killed: list[bool] = []

            def at_point() -> None:  # the server's kill, as soon as the last acknowledgement is read
                if server is not None and not killed:
                    kill_server(server)
                    killed.append(True)

            try:
                proc, err = await _run_worker(spec_file, record, point, at_point)
            finally:
                if killed:  # the killed server comes back on its data directory, whatever happened
                    assert server is not None
                    with anyio.CancelScope(shield=True):
                        await anyio.to_thread.run_sync(restart_server, server)
    if proc.returncode != -signal.SIGKILL:
        tail = err.decode(errors="replace").strip().splitlines()[-1:] or ["no error output"]
        raise RuntimeError(f"the crash worker ended with status {proc.returncode} before its kill: {tail[0]}")
    if record.acknowledged != point:
        raise RuntimeError(f"the crash worker acknowledged {record.acknowledged:_d} of {point:_d} operations")
    if record.acks:
        record.seconds = (record.acks[-1][1] - record.acks[0][1]) / 1e9
    return record


async def _run_worker(
    spec_file: Path, record: CrashRecord, point: int, at_point: Callable[[], None]
) -> tuple[anyio.abc.Process, bytearray]:
    """The worker, to its end: each acknowledgement into ``record``, ``at_point`` called when
    the ``point``-th is read; its stderr's tail."""
    cmd = [sys.executable, "-P", "-m", "asyncbench.run.crash.crash_worker", str(spec_file)]
    err = bytearray()
    async with await anyio.open_process(cmd, stdin=subprocess.DEVNULL) as proc:
        assert proc.stdout is not None and proc.stderr is not None
        stderr = proc.stderr

        async def drain() -> None:
            async for chunk in stderr:
                err.extend(chunk)
                del err[:-STDERR_TAIL]

        async with anyio.create_task_group() as tg:
            tg.start_soon(drain)
            pending = b""
            async for chunk in proc.stdout:
                pending += chunk
                *lines, pending = pending.split(b"\n")
                for line in lines:
                    _read_line(record, line)
                    if record.acknowledged == point:
                        at_point()
            await proc.wait()
    return proc, err


def _read_line(record: CrashRecord, line: bytes) -> None:
    word, *rest = line.decode().split()
    if word == "start":
        record.acks.append((0, int(rest[0])))
    elif word == "ack":
        record.acknowledged = int(rest[0])
        record.acks.append((record.acknowledged, int(rest[1])))


async def recover_phase(
    record: CrashRecord,
    plan: DrawnPlan,
    engine: Engine,
    open_store: Engine,
    background: anyio.abc.TaskGroup,
    wl: Workload,
) -> tuple[DurabilityRow, float]:
    """Open ``open_store`` (a fresh adapter on the crashed store) and check it against the
    plan: the durability row and the open's seconds. ``engine``: the crashed one (its facts)."""
    spec = record.spec
    assert spec.crash is not None
    promise = engine.facts().durability
    row = DurabilityRow(
        phase=spec.name, how=spec.crash.how, after=spec.crash.after, acknowledged=record.acknowledged,
        crash_seconds=record.seconds, opened=False, promise=promise.sync, synced_commits=promise.synced_commits,
    )  # fmt: skip
    t0 = perf_counter()
    try:
        await open_store.open(False, background)
    except Exception as exc:  # the store did not open: the finding, not a failure of the run
        row.open_error = f"{type(exc).__name__}: {exc}"
        return row, perf_counter() - t0
    seconds = perf_counter() - t0
    row.opened = True
    kind = wl.phases[spec.kind]
    found = await crash_recovery(wl).check_recovery(
        worker_store(wl, open_store, 0), plan, kind, spec.stream, spec.count, record.acknowledged, dict(spec.params)
    )
    row.checked, row.torn, row.torn_examples = found.checked, found.torn, found.torn_examples
    row.acknowledged_present, row.acknowledged_lost = found.acknowledged_present, found.acknowledged_lost
    row.unacknowledged_present = found.unacknowledged_present
    row.lost_seconds = record.lost_seconds(found.first_lost)
    return row, seconds
