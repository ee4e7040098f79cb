"""The process a crash kills: ``python -m asyncbench.run.crash.crash_worker SPEC`` opens the
engine's store, runs the crashed phase's operations in plan order and SIGKILLs itself
once ``after`` of them are acknowledged. Only :mod:`asyncbench.run.crash.crash` starts it.

Acknowledged, exactly: an operation whose engine call returned, and whose batch's line
``ack <operations> <monotonic ns>`` was written to the pipe on stdout, before the kill.
The line is written (one ``write`` of a whole line, never buffered in the process) right
after the batch's call returns and before the next is issued, so the parent reads every
acknowledgement the process made; the last batch ends at ``after`` exactly, and the kill
follows its line at once, with no operation in flight. What the kill tests is therefore
the engine's own buffering: a write that reached the operating system (a ``write`` to a
file, even unsynced) survives a process kill; a power cut, which drops unsynced pages, is
another crash (docs/durability.md).

One worker, one handle: the operations go in the plan's order, so which ones were
acknowledged is a prefix of the phase, and a seed and a point repeat exactly.
"""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path

import anyio
import orjson

from asyncbench.config import from_json
from asyncbench.dirs.paths import store_root
from asyncbench.engine import EngineConfig
from asyncbench.engines import engine_class, server_lock
from asyncbench.fs.power_cut import die_with_parent
from asyncbench.run.phase.stores import worker_store
from asyncbench.workload_capabilities import batch_context

__all__ = ["main"]


def _say(line: str) -> None:
    """One whole line to the parent, unbuffered (the kill may come right after)."""
    data = line.encode() + b"\n"
    while data:
        data = data[os.write(1, data) :]


async def _run(spec: dict[str, object]) -> None:
    cfg = from_json(Path(str(spec["config"])).read_bytes())
    name, index = str(spec["engine"]), int(str(spec["phase"]))
    level = cfg.level(int(str(spec["profiles"])), int(str(spec["parallelism"])))
    plan = cfg.workload_impl.draw_plan(level.counts, cfg.seed)
    phase = cfg.phases[index]
    assert phase.crash is not None, f"phase {index} has no crash"
    kind = cfg.workload_impl.phases[phase.kind]
    call = kind.call
    assert call is not None, f"{phase.kind} runs no operations"
    items = cfg.workload_impl.phase_items(kind, phase.stream, phase.count, plan, dict(phase.params))
    ctx = batch_context(cfg.workload_impl, cfg.seed)
    econf = EngineConfig(
        name=name,
        # the store (or a crash point's copy), or its mount by the power-cut filesystem
        data_dir=Path(str(spec["data_dir"])) if spec.get("data_dir") else store_root(cfg.data, level.profiles, cfg.workload_impl.unit) / name,
        settings=cfg.engine_settings.get(name, {}),
        limit=cfg.limit,
        seed=cfg.seed,
        workers=1,
        stores=cfg.workload_impl.kv_stores,
    )
    engine = engine_class(name)(econf)
    after, batch = int(str(spec.get("after") or phase.crash.after)), cfg.batch_size  # this crash point
    key = spec.get("lock_key")
    if key:  # a server engine: the runner holds the run's lock, this process is part of that run
        server_lock.adopt(str(key))
    async with anyio.create_task_group() as background:
        await engine.open(False, background)
        store = worker_store(cfg.workload_impl, engine, 0)
        _say(f"start {time.monotonic_ns()}")
        for start in range(0, after, batch):
            chunk = items[start : min(after, start + batch)]
            await call(store, chunk, ctx, [])
            _say(f"ack {start + len(chunk)} {time.monotonic_ns()}")
        os.kill(os.getpid(), signal.SIGKILL)  # nothing runs after this line: no close, no flush


def main(argv: list[str] | None = None) -> int:
    die_with_parent()  # a runner killed outright: no orphan writing on to its point
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m asyncbench.run.crash.crash_worker SPEC.json", file=sys.stderr)
        return 2
    spec = orjson.loads(Path(args[0]).read_bytes())
    anyio.run(_run, spec)
    return 1  # not reached: the process kills itself at the crash point


if __name__ == "__main__":
    sys.exit(main())
