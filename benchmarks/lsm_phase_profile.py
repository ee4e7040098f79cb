"""The reference plan's phases on one engine in this process: seconds per phase, and
cProfile of chosen phases.

Why: the CLI runs an engine in a child process with the harness around it, which is
right for figures a user sees but hides where an engine's own time goes. This drives
the same workload calls (``workloads.profile_store.phases``: the plan's streams, batches
of ``--batch`` items, one store call per batch, the engine's stabilize / settle / reopen)
without scheduling, latency marks or checksums, so that a phase can be profiled alone.
Timings here are not the benchmark's (no harness work in them); use
``bench_scaling.py`` for those.

    .venv/bin/python benchmarks/lsm_phase_profile.py --profiles 200k --profile post-update-stabilization
    .venv/bin/python benchmarks/lsm_phase_profile.py --engine rocksdb --profiles 200k
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import shutil
import sys
import tempfile
import time
import tomllib
from pathlib import Path

import anyio

from asyncbench.engine import EngineConfig, opened
from asyncbench.engines import engine_class
from asyncbench.fmt import parse_count
from asyncbench.workloads.profile_store.kv_store import STORE_NAMES
from asyncbench.workloads.profile_store.phases import PHASES, Action, PhaseContext, phase_items
from asyncbench.workloads.profile_store.plan import Counts, draw_plan
from asyncbench.workloads.profile_store.stores import profile_store

ROOT = Path(__file__).resolve().parent.parent


def slug(name: str) -> str:
    return name.replace(" ", "-").replace("/", "-")


async def run(args: argparse.Namespace) -> None:
    spec = tomllib.loads((ROOT / "benchmarks.toml").read_text())
    seed = spec["run"]["seed"]
    profiles = parse_count(args.profiles)
    plan = draw_plan(Counts.for_profiles(profiles), seed)
    ctx = PhaseContext.for_seed(seed)
    cls = engine_class(args.engine)
    data = Path(args.data or tempfile.mkdtemp(prefix=f"phase-profile-{args.engine}-"))
    config = EngineConfig(args.engine, data, spec["engines"].get(args.engine, {}), seed=seed, stores=STORE_NAMES)
    engine = cls(config)
    after_update = False
    total = 0.0
    async with opened(engine, reset=True):
        for ph in spec["phase"]:
            kind = PHASES[ph["kind"]]
            use = kind.use(ph.get("stream"), after_update)
            name = ph.get("name", use.name)
            prof = cProfile.Profile() if slug(name) in args.profile else None
            t0 = time.perf_counter()
            if prof is not None:
                prof.enable()
            if kind.action is Action.OPERATIONS:
                items = phase_items(kind, use.stream, None, plan)
                store = profile_store(engine.worker(0), engine.limit)
                assert kind.call is not None
                for a in range(0, len(items), args.batch):
                    await kind.call(store, items[a : a + args.batch], ctx, [])
            elif kind.action is Action.STABILIZE:
                await engine.stabilize()
            elif kind.action is Action.SETTLE:
                await engine.settle()
            elif kind.action is Action.REOPEN:
                await engine.close()
                t0 = time.perf_counter()
                await engine.open(False, args.tg)
            else:
                await profile_store(engine.worker(0), engine.limit).count()
            dt = time.perf_counter() - t0
            if prof is not None:
                prof.disable()
                st = pstats.Stats(prof, stream=sys.stdout)
                st.sort_stats("cumulative").print_stats(args.lines)
                st.sort_stats("tottime").print_stats(args.lines)
            total += dt
            print(f"{name:45s} {dt:9.3f} s", flush=True)
            if kind.rewrites:
                after_update = True
    print(f"{'total':45s} {total:9.3f} s")
    if not args.data:
        shutil.rmtree(data, ignore_errors=True)


async def main_async(args: argparse.Namespace) -> None:
    async with anyio.create_task_group() as tg:
        args.tg = tg
        await run(args)
        tg.cancel_scope.cancel()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--engine", default="lsm")
    p.add_argument("--profiles", default="200k")
    p.add_argument("--batch", type=int, default=1000)
    p.add_argument("--data", help="data directory (default: a temporary one, removed after)")
    p.add_argument("--profile", action="append", default=[], help="phase name, dashes for spaces and '/'")
    p.add_argument("--lines", type=int, default=25)
    anyio.run(main_async, p.parse_args())


if __name__ == "__main__":
    main()
