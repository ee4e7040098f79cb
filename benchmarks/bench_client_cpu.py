"""Client CPU per operation of an engine through the real phase loop, and the throughput at
which one client process would saturate.

Why: a client/server engine's benchmark process spends CPU per operation on the driver
(encode, decode, awaits), the engine adapter (rows to tuples, marks) and the harness
(batching, checksum fold). Whatever the server could do, one Python process on one core
cannot drive more than ``1e6 / cpu_us`` operations per second; past that, more workers in
the same process only queue on its event loop. ``docs/scaling.md`` uses these figures.

For each operation phase kind of the reference plan this runs the runner's own phase
loop (``asyncbench.phase_loop.run_operations``: batches, engine calls, checksum folds)
with ``--parallelism`` workers against a registry engine (server settings from the usual
environment, e.g. ``eval "$(scripts/postgres-server start)"``), and prints wall time and
this process's CPU time (``time.process_time``: every thread of it) per operation, the
CPU share of the wall time, and the ceiling ``1e6 / cpu_us``::

    .venv/bin/python benchmarks/bench_client_cpu.py --engine postgres [--profiles 20000] [--parallelism 1]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio

from asyncbench.engine import opened
from asyncbench.run.observe.signals import backend_options
from asyncbench.run.phase.dispatch import run_operations
from asyncbench.tools.store import OPERATION_PHASES, SEED, draw, new_engine
from asyncbench.workloads import workload
from asyncbench.workloads.profile_store.phases import PHASES as KINDS
from asyncbench.workloads.profile_store.phases import PhaseContext, phase_items
from asyncbench.workloads.profile_store.stores import profile_store


async def main(name: str, profiles: int, parallelism: int, batch: int) -> None:
    plan = draw(profiles)
    ctx = PhaseContext.for_seed(SEED)
    with tempfile.TemporaryDirectory(prefix="bench-client-cpu-") as tmp:  # removed afterwards
        await measure(
            new_engine(name, Path(tmp) / name, workers=parallelism),
            plan,
            ctx,
            name,
            profiles,
            parallelism,
            batch,
        )


async def measure(
    engine: Any, plan: Any, ctx: PhaseContext, name: str, profiles: int, parallelism: int, batch: int
) -> None:

    def hook(worker: int, index: int, ops: int, seconds: float, marks: list[int]) -> None:
        pass

    print(f"engine {name}, profiles {profiles:_d}, P{parallelism}, batch {batch:_d}")
    print(f"{'phase kind':<24}{'ops':>8}{'wall µs':>10}{'CPU µs':>9}{'CPU/wall':>10}{'ceiling ops/s':>15}")
    async with opened(engine, reset=True):
        handles = [profile_store(engine.worker(w), engine.limit) for w in range(parallelism)]
        for kind, stream in OPERATION_PHASES:  # insert first: it loads the store, timed
            items = phase_items(KINDS[kind], stream, None, plan)
            t, cpu = time.perf_counter(), time.process_time()
            outcome = await run_operations(KINDS[kind], items, handles, ctx, batch, hook, wl=workload("profile_store"))
            wall_us = (time.perf_counter() - t) / outcome.ops * 1e6
            cpu_us = (time.process_time() - cpu) / outcome.ops * 1e6
            print(
                f"{kind:<24}{outcome.ops:>8_d}{wall_us:>10.1f}{cpu_us:>9.1f}{cpu_us / wall_us:>10.0%}"
                f"{1e6 / cpu_us:>15_.0f}"
            )


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--engine", required=True)
    ap.add_argument("--profiles", type=int, default=20_000)
    ap.add_argument("--parallelism", type=int, default=1)
    ap.add_argument("--batch", type=int, default=1_000)
    a = ap.parse_args()
    anyio.run(main, a.engine, a.profiles, a.parallelism, a.batch, backend_options=backend_options())
