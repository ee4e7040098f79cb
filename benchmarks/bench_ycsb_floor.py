"""YCSB at the harness's floor: the memory engine's YCSB C and load against the profile store's.

Why: issue 53 asks that on the memory engine (no store cost to hide behind) a YCSB C run
phase reach at least 0.5x the profile store's ``read_by_id`` ops/s at the same size, and a
YCSB load at least 0.7x the profile store's insert: the harness's cost per YCSB operation
(key name, record, checksum digest) at the floor the profile store's compiled kernels set.

Each measurement runs in a fresh child process (no heap carried from one to the next),
through the framework's own phase path (``asyncbench.run.phase.dispatch.run_operations``, batches
of ``--batch``, one worker), the two workloads interleaved ``--rounds`` times so the
machine's load hits both alike:

- profile store: insert profiles 1..N, then the reference plan's ``read_by_id`` phase
  (its ``reads`` stream);
- YCSB: load N records, then ``benchmarks/ycsb/workloadc-smoke.toml``'s mixed phase (100 %
  zipfian reads of every field) of ``--operations`` operations.

It prints each round, the medians and the two ratios against the targets, and the load
average before and after (quote it: on a loaded machine the ratios are what holds).

    .venv/bin/python benchmarks/bench_ycsb_floor.py [--records 200000] [--operations 500000] [--rounds 3]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path
from typing import Any

import anyio

PLAN = Path(__file__).resolve().parent / "ycsb" / "workloadc-smoke.toml"
READ_TARGET, LOAD_TARGET = 0.5, 0.7


def _hook(*_: Any) -> None:
    pass


async def profile_store(records: int, batch: int) -> dict[str, float]:
    """ops/s of the profile store's insert and read_by_id on the memory engine."""
    from asyncbench.run.phase.dispatch import run_operations
    from asyncbench.tools.store import SEED, draw, load, new_engine
    from asyncbench.workloads import workload
    from asyncbench.workloads.profile_store.phases import PHASES, PhaseContext, phase_items
    from asyncbench.workloads.profile_store.stores import profile_store as store_over

    plan = draw(records)
    with tempfile.TemporaryDirectory() as tmp:
        engine = new_engine("memory", Path(tmp))
        await engine.open(True)
        inserted = await load([store_over(engine.worker(0), engine.limit)], records, batch)
        kind = PHASES["read_by_id"]
        items = phase_items(kind, "reads", None, plan)
        read = await run_operations(
            kind, items, [store_over(engine.worker(0), engine.limit)], PhaseContext.for_seed(SEED), batch, _hook, wl=workload("profile_store")
        )
        await engine.close()
    return {"load": inserted.ops / inserted.seconds, "read": read.ops / read.seconds, "reads": read.ops}


async def ycsb(records: int, operations: int, batch: int) -> dict[str, float]:
    """ops/s of the YCSB load and workload C's mixed phase on the memory engine."""
    from asyncbench.engine import EngineConfig
    from asyncbench.engines.memory import MemoryEngine
    from asyncbench.run.phase.dispatch import run_operations
    from asyncbench.workloads import workload

    wl = workload("ycsb")
    doc = tomllib.loads(PLAN.read_text())
    settings = wl.settings({**doc["ycsb"], "recordcount": records})
    plan = wl.draw_plan(wl.counts(records, 50, {}, settings), doc["run"]["seed"])
    load, mixed = wl.phases["load"], wl.phases["mixed"]
    table = {k: v for k, v in doc["phase"][1].items() if k != "kind"}
    params = wl.phase_params(mixed, {**table, "operations": operations}, settings)
    with tempfile.TemporaryDirectory() as tmp:
        engine = MemoryEngine(EngineConfig("memory", Path(tmp)))
        await engine.open(True)
        loaded = await run_operations(load, wl.phase_items(load, None, None, plan, {}), [wl.store(engine.worker(0), engine.limit)], None, batch, _hook, wl=wl)
        items = wl.phase_items(mixed, None, None, plan, params)  # drawn before the phase, as a run does
        ran = await run_operations(mixed, items, [wl.store(engine.worker(0), engine.limit)], wl.context(0), batch, _hook, wl=wl)
        await engine.close()
    return {"load": loaded.ops / loaded.seconds, "read": ran.ops / ran.seconds, "reads": ran.ops}


def child(which: str, args: argparse.Namespace) -> dict[str, float]:
    """One measurement in a fresh interpreter (this script with ``--one``)."""
    cmd = [sys.executable, __file__, "--one", which, "--records", str(args.records),
           "--operations", str(args.operations), "--batch", str(args.batch)]  # fmt: skip
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    result: dict[str, float] = json.loads(out.strip().splitlines()[-1])
    return result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--records", type=int, default=200_000, help="profiles and YCSB records (default 200000)")
    ap.add_argument("--operations", type=int, default=500_000, help="YCSB C operations (default 500000)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--batch", type=int, default=1_000)
    ap.add_argument("--one", choices=("profile", "ycsb"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one == "profile":
        print(json.dumps(anyio.run(profile_store, args.records, args.batch)))
        return
    if args.one == "ycsb":
        print(json.dumps(anyio.run(ycsb, args.records, args.operations, args.batch)))
        return
    before = os.getloadavg()
    runs: dict[str, list[dict[str, float]]] = {"profile": [], "ycsb": []}
    print(f"memory engine, {args.records:_d} records/profiles, YCSB C {args.operations:_d} operations, "
          f"batch {args.batch}, {args.rounds} interleaved rounds")  # fmt: skip
    for r in range(args.rounds):
        for which in ("profile", "ycsb") if r % 2 == 0 else ("ycsb", "profile"):
            got = child(which, args)
            runs[which].append(got)
            print(f"  round {r + 1} {which:<8} load/insert {got['load']:>10_.0f}/s   "
                  f"read {got['read']:>10_.0f}/s ({got['reads']:_.0f} reads)")  # fmt: skip
    med = {w: {k: statistics.median(x[k] for x in runs[w]) for k in ("load", "read")} for w in runs}
    read_ratio = med["ycsb"]["read"] / med["profile"]["read"]
    load_ratio = med["ycsb"]["load"] / med["profile"]["load"]
    print(f"medians: profile store insert {med['profile']['load']:_.0f}/s, read_by_id {med['profile']['read']:_.0f}/s")
    print(f"         YCSB load {med['ycsb']['load']:_.0f}/s, C run {med['ycsb']['read']:_.0f}/s")
    print(f"YCSB C / read_by_id {read_ratio:.2f}x (target >= {READ_TARGET}x: {'met' if read_ratio >= READ_TARGET else 'NOT met'})")
    print(f"YCSB load / insert  {load_ratio:.2f}x (target >= {LOAD_TARGET}x: {'met' if load_ratio >= LOAD_TARGET else 'NOT met'})")
    after = os.getloadavg()
    print(f"load average before {before[0]:.2f} {before[1]:.2f} {before[2]:.2f}, after {after[0]:.2f} {after[1]:.2f} {after[2]:.2f} "
          f"({os.cpu_count()} CPUs)")  # fmt: skip


if __name__ == "__main__":
    main()
