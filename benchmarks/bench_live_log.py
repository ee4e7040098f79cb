"""What the live JSON log costs a phase: the floor's (A) loop with and without it, interleaved.

Why: batch lines are written while a phase runs (issue 22), by a writer thread that wakes
every 0.2 s; the batch hook only queues the batch's figures. This checks that the phase
time does not see it. For each read/scan/query kind (and insert into fresh stores) it
runs :func:`floor.run_a` (the real phase loop, the runner's batch hook) ``--rounds``
times over the same items, alternating the hook's observer between a no-op and the live
log (off/on, on/off, ...), in one process on one store, and prints per kind the median
µs/op of each, the median of the per-pair ratios on/off with their min-max, in wall and
in process CPU time (which includes the writer thread's own work). The floor benchmark
itself takes ``--log FILE`` for its A/B table with the log on.

Usage::

    .venv/bin/python benchmarks/bench_live_log.py --profiles 20k --rounds 11
    .venv/bin/python benchmarks/bench_live_log.py --engine sqlite --kinds read_by_id,insert
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
from pathlib import Path

import anyio

from asyncbench.fmt import parse_count
from asyncbench.run.observe.logs import open_log
from asyncbench.run.observe.observers import JsonLogObserver, Observer, ObserverGroup
from asyncbench.run.observe.signals import backend_options
from asyncbench.tools import floor
from asyncbench.tools.floor_engines import FLOORS
from asyncbench.tools.store import draw
from asyncbench.workloads.profile_store.phases import PHASES, phase_items


async def main(args: argparse.Namespace) -> None:
    plan = draw(args.profiles)
    kinds = [(k, s) for k, s in floor.KINDS if k != "update" and (args.kinds is None or k in args.kinds)]
    with tempfile.TemporaryDirectory(prefix="asyncbench-live-log-") as tmp:
        logger, log_fh = open_log(Path(tmp) / "live.log")
        off, on = ObserverGroup(Observer()), ObserverGroup(JsonLogObserver(logger, log_fh))
        fl = FLOORS[args.engine]()
        await fl.build(Path(tmp) / "store", plan, args.batch)
        print(f"{args.engine}, {args.profiles:_d} profiles, batch {args.batch}, {args.rounds} rounds per side")
        print("| kind | ops | off µs/op | on µs/op | on/off wall (min–max) | on/off CPU (min–max) |")
        print("| --- | ---: | ---: | ---: | --- | --- |")
        try:
            for kind, stream in kinds:
                if kind == "insert":
                    items = range(1, args.insert_profiles + 1)
                else:
                    n = floor.count_for(stream, argparse.Namespace(**vars(args)), plan)
                    items = phase_items(PHASES[kind], stream, n, plan)
                samples: dict[str, list[floor.Sample]] = {"off": [], "on": []}
                for r in range(args.rounds * 2 + 1):  # the first is a warm-up
                    side = ("off", "on")[(r + r // 2) % 2]  # off on, on off, off on, ...
                    floor.OBSERVER = off if side == "off" else on
                    engine = fl.engine
                    if kind == "insert":
                        engine, _ = await fl.fresh(f"{kind}{r}")
                    s, _ = await floor.run_a(kind, engine, items, args.batch)
                    if kind == "insert":
                        await fl.drop_fresh(engine)
                    if r:
                        samples[side].append(s)
                pairs = list(zip(samples["off"], samples["on"], strict=False))
                wall = [b.wall / a.wall for a, b in pairs]
                cpu = [b.cpu / a.cpu for a, b in pairs]
                us = {k: statistics.median(s.wall for s in v) / len(items) * 1e6 for k, v in samples.items()}
                print(
                    f"| {kind} | {len(items):_d} | {us['off']:.2f} | {us['on']:.2f} | "
                    f"{statistics.median(wall):.3f} ({min(wall):.3f}–{max(wall):.3f}) | "
                    f"{statistics.median(cpu):.3f} ({min(cpu):.3f}–{max(cpu):.3f}) |",
                    flush=True,
                )
        finally:
            await fl.close()
            log_fh.close()
    print(f"log: {'ok' if log_fh.error is None else log_fh.error}")


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--engine", default="rocksdb", choices=sorted(floor.FLOORS))
    p.add_argument("--profiles", type=parse_count, default=20_000)
    p.add_argument("--batch", type=int, default=1_000)
    p.add_argument("--rounds", type=int, default=11, help="timed rounds per side (off and on)")
    p.add_argument("--point-ops", type=parse_count, default=20_000)
    p.add_argument("--update-ops", type=parse_count, default=0)
    p.add_argument("--query-ops", type=parse_count, default=2_000)
    p.add_argument("--insert-profiles", type=parse_count, default=10_000)
    p.add_argument("--kinds", type=lambda s: set(s.split(",")), default=None)
    return p.parse_args()


if __name__ == "__main__":
    anyio.run(main, parse_args(), backend_options=backend_options())
