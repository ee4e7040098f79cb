"""How long an engine's reopen takes on a large store (issue 24: lsm at 2M under 0.2 s).

Builds the store once in ``--data`` (the reference plan's insert through the real phase
loop, ``asyncbench.tools.store.load``, then a stabilization and a settle, as the plan has
them before its reopen), then closes and reopens it ``--rounds`` times and prints each
open's seconds (the reopen phase times the open alone) and their median. A store already
in ``--data`` (marked by ``built-N.txt``) is reused, so one 2M build serves many rounds:

    .venv/bin/python benchmarks/bench_lsm_reopen.py --profiles 2M --data /tmp/lsm-2m --rounds 7
    .venv/bin/python benchmarks/bench_lsm_reopen.py --engine rocksdb --profiles 2M --data /tmp/rocks-2m

With ``--profile``, cProfile of one more open is printed.
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import statistics
import sys
import time
from pathlib import Path

import anyio

from asyncbench.fmt import parse_count
from asyncbench.tools.store import load, new_engine
from asyncbench.workloads.profile_store.stores import profile_store


async def main_async(args: argparse.Namespace) -> None:
    n = parse_count(args.profiles)
    data = Path(args.data)
    mark = data / f"built-{n}.txt"
    engine = new_engine(args.engine, data)
    async with anyio.create_task_group() as tg:
        if not mark.exists():
            t0 = time.perf_counter()
            await engine.open(True, tg)
            await load([profile_store(engine.worker(0), engine.limit)], n)
            await engine.stabilize()
            await engine.settle()
            await engine.close()
            mark.write_text(f"{args.engine} store of {n} profiles, built in {time.perf_counter() - t0:.1f} s\n")
            print(mark.read_text().strip(), flush=True)
        opens = []
        for _ in range(args.rounds):
            t0 = time.perf_counter()
            await engine.open(False, tg)
            opens.append(time.perf_counter() - t0)
            await engine.close()
        print("opens:", " ".join(f"{s:.3f}" for s in opens), f"median {statistics.median(opens):.3f} s")
        if args.profile:
            prof = cProfile.Profile()
            prof.enable()
            await engine.open(False, tg)
            prof.disable()
            await engine.close()
            pstats.Stats(prof, stream=sys.stdout).sort_stats("cumulative").print_stats(30)
        tg.cancel_scope.cancel()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--engine", default="lsm")
    p.add_argument("--profiles", default="2M")
    p.add_argument("--data", required=True, help="the store's directory (built once, then reused)")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--profile", action="store_true")
    anyio.run(main_async, p.parse_args())


if __name__ == "__main__":
    main()
