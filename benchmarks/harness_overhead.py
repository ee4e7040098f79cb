"""Harness overhead per operation, per phase kind, measured with the memory engine.

For each phase kind of the reference plan this times, over the same operations:
  full  - the runner's phase loop (batching, engine call, checksum fold, batch hook);
  bare  - the same memory-engine batch calls alone, no checksum and no hook;
and reports the difference per operation: what the harness adds on top of an engine
call. The memory engine's own work is tiny, so "full" is also an upper bound of the
harness cost. Medians of --repeat runs.

    .venv/bin/python benchmarks/harness_overhead.py --profiles 100000 --repeat 5
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
from pathlib import Path
from time import perf_counter

import anyio

from asyncbench.engines.memory import MemoryEngine
from asyncbench.run.phase.dispatch import run_operations
from asyncbench.tools.store import OPERATION_PHASES, SEED, draw, load, new_engine
from asyncbench.workloads import workload
from asyncbench.workloads.profile_store.generate import create_many
from asyncbench.workloads.profile_store.phases import PHASES as KINDS
from asyncbench.workloads.profile_store.phases import PhaseContext, phase_items
from asyncbench.workloads.profile_store.profiles import update
from asyncbench.workloads.profile_store.stores import profile_store


async def bare(kind: str, engine: MemoryEngine, items, batch: int) -> float:
    t0 = perf_counter()
    for i in range(0, len(items), batch):
        chunk = items[i : i + batch]
        if kind == "insert":
            await profile_store(engine.worker(0), engine.limit).insert(create_many(chunk.start, len(chunk), SEED), [])
        elif kind == "update":
            await profile_store(engine.worker(0), engine.limit).update(chunk, lambda p: update(p, SEED), [])
        elif kind.endswith("_top_reputation"):
            await getattr(engine, kind)(len(chunk), [])
        else:
            await getattr(engine, kind)(chunk, [])
    return perf_counter() - t0


async def main(profiles: int, repeat: int, batch: int) -> None:
    plan = draw(profiles)
    engine = new_engine("memory", Path(tempfile.gettempdir()) / "harness-overhead-memory")  # writes nothing
    await engine.open(True)
    await load([profile_store(engine.worker(0), engine.limit)], profiles, batch)
    hook_calls = 0

    def hook(worker: int, index: int, ops: int, seconds: float, marks: list[int]) -> None:
        nonlocal hook_calls
        hook_calls += 1

    print(f"profiles {profiles:_d}, batch {batch:_d}, median of {repeat} runs (µs per operation)")
    print(f"{'phase kind':<24}{'ops':>10}{'full':>10}{'bare':>10}{'harness':>10}{'share':>8}")
    for kind, stream in OPERATION_PHASES:
        items = phase_items(KINDS[kind], stream or KINDS[kind].streams[0], None, plan)
        fulls, bares = [], []
        for _ in range(repeat):  # alternate so drift hits both alike
            t0 = perf_counter()
            await run_operations(KINDS[kind], items, [profile_store(engine.worker(0), engine.limit)], PhaseContext.for_seed(SEED), batch, hook, wl=workload("profile_store"))
            fulls.append(perf_counter() - t0)
            bares.append(await bare(kind, engine, items, batch))
        n = len(items)
        full, b = statistics.median(fulls) / n * 1e6, statistics.median(bares) / n * 1e6
        print(f"{kind:<24}{n:>10_d}{full:>10.3f}{b:>10.3f}{full - b:>10.3f}{(full - b) / full:>8.0%}")


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--profiles", type=int, default=100_000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--batch", type=int, default=1_000)
    a = ap.parse_args()
    anyio.run(main, a.profiles, a.repeat, a.batch)
