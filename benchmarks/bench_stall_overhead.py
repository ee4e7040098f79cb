"""What the stall record costs: the same phase with and without it (asyncbench.run.phase.loop_stalls).

Why: the record (each batch call's steps timed, a 1 ms lag timer on the loop) must not
move the figures it sits beside. The phase most sensitive to a per-batch or per-turn cost
is the one with the least engine work per operation: YCSB C (reads only, so the store is
the same for every run) on the memory engine, then on the loop-placed LSM and on RocksDB.

Per engine, one fresh child process loads ``--records`` records once, then runs workload
C's mixed phase (``--operations`` zipfian reads) ``2 * --rounds`` times through the
framework's phase path, with the record and without it interleaved (on, off, off, on,
...) after one uncounted warm-up run, and prints the medians and their ratio, in wall time
and in operations per CPU second of the process (steadier on a loaded machine, where the
wall time is mostly the wait for a core).

    .venv/bin/python benchmarks/bench_stall_overhead.py [--engines memory,lsm,rocksdb] [--records 100000] [--operations 200000] [--rounds 3]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import tomllib
from pathlib import Path
from typing import Any

import anyio

PLAN = Path(__file__).resolve().parent / "ycsb" / "workloadc.toml"


def _hook(*_: Any) -> None:
    pass


async def measure(engine_name: str, records: int, operations: int, rounds: int, batch: int) -> dict[str, list[float]]:
    """ops/s of YCSB C's run phase with (``on``) and without (``off``) the stall record."""
    from asyncbench.engine import opened
    from asyncbench.run.phase.dispatch import run_operations
    from asyncbench.tools.store import new_engine
    from asyncbench.workloads import workload

    wl = workload("ycsb")
    doc = tomllib.loads(PLAN.read_text())
    settings = wl.settings({**doc["ycsb"], "recordcount": records})
    plan = wl.draw_plan(wl.counts(records, 50, {}, settings), doc["run"]["seed"])
    load, mixed = wl.phases["load"], wl.phases["mixed"]
    table = {k: v for k, v in doc["phase"][1].items() if k != "kind"}
    params = wl.phase_params(mixed, {**table, "operations": operations}, settings)
    out: dict[str, list[float]] = {"on": [], "off": [], "on_cpu": [], "off_cpu": []}
    with tempfile.TemporaryDirectory(prefix="asyncbench-stall-overhead-") as tmp:
        engine = new_engine(engine_name, Path(tmp), workload_name="ycsb")
        async with opened(engine):
            await run_operations(load, wl.phase_items(load, None, None, plan, {}), [wl.store(engine.worker(0), engine.limit)], None, batch, _hook, wl=wl)
            await engine.stabilize()
            items = wl.phase_items(mixed, None, None, plan, params)
            await run_operations(mixed, items, [wl.store(engine.worker(0), engine.limit)], wl.context(0), batch, _hook, wl=wl)  # warm-up, not counted
            for r in range(2 * rounds):
                stalls = (r % 4) in (0, 3)  # on, off, off, on, on, off, ...
                cpu = time.process_time()
                ran = await run_operations(mixed, items, [wl.store(engine.worker(0), engine.limit)], wl.context(0), batch, _hook, stalls=stalls, wl=wl)
                cpu = time.process_time() - cpu
                out["on" if stalls else "off"].append(ran.ops / ran.seconds)
                out["on_cpu" if stalls else "off_cpu"].append(ran.ops / cpu)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--engines", default="memory,lsm,rocksdb")
    ap.add_argument("--records", type=int, default=100_000)
    ap.add_argument("--operations", type=int, default=200_000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--batch", type=int, default=1_000)
    ap.add_argument("--one", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one:
        from asyncbench.run.observe.signals import (
            backend_options,  # the run's event loop: uvloop where installed
        )

        got = anyio.run(measure, args.one, args.records, args.operations, args.rounds, args.batch, backend_options=backend_options())
        print(json.dumps(got))
        return
    before = os.getloadavg()
    print(f"YCSB C run phase, {args.records:_d} records, {args.operations:_d} operations, batch {args.batch}, "
          f"{args.rounds} rounds with and without the stall record, interleaved")  # fmt: skip
    for name in args.engines.split(","):
        cmd = [sys.executable, __file__, "--one", name, "--records", str(args.records),
               "--operations", str(args.operations), "--rounds", str(args.rounds), "--batch", str(args.batch)]  # fmt: skip
        got = json.loads(subprocess.run(cmd, capture_output=True, text=True, check=True).stdout.strip().splitlines()[-1])
        on, off = statistics.median(got["on"]), statistics.median(got["off"])
        con, coff = statistics.median(got["on_cpu"]), statistics.median(got["off_cpu"])
        runs = " ".join(f"{a:_.0f}/{b:_.0f}" for a, b in zip(got["on"], got["off"], strict=True))
        print(f"  {name:<8} wall: with {on:>10_.0f}/s  without {off:>10_.0f}/s  ratio {on / off:.3f}   (on/off each round: {runs})")
        print(f"  {'':<8} CPU:  with {con:>10_.0f}/s  without {coff:>10_.0f}/s  ratio {con / coff:.3f}   (ops per CPU second)")
    after = os.getloadavg()
    print(f"load average before {before[0]:.2f}, after {after[0]:.2f} ({os.cpu_count()} CPUs)")


if __name__ == "__main__":
    main()
