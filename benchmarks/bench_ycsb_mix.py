"""A YCSB mixed phase against the same operations run as separate phases, on the memory engine.

Why: issue 36 asks that a mixed phase cost within 1.2x of the same operations run kind by
kind (the harness stays at the floor: drawing, splitting by key owner and the per-batch
bookkeeping of a mix must not show). On the memory engine (no store cost to hide behind)
this loads ``--records`` records, then times, through the framework's own phase path
(``asyncbench.run.phase.dispatch.run_operations``, the YCSB phase table's batch calls), either
the mixed phase of ``--operations`` operations (workload A's 50/50 read/update mix by
default, ``--workload`` for another shipped one) or the same operations as one phase per
kind (each kind's operations in sequence order, one after the other). Each way runs on a
freshly loaded store, ``--repeat`` times interleaved; it prints the best seconds of each
and their ratio. Not a test: its figures belong on a quiet machine.

    .venv/bin/python benchmarks/bench_ycsb_mix.py [--records 100000] [--operations 500000] [--workload a] [--repeat 5]
"""

from __future__ import annotations

import argparse
import tempfile
import tomllib
from pathlib import Path
from typing import Any

import anyio

from asyncbench.engine import EngineConfig
from asyncbench.engines.memory import MemoryEngine
from asyncbench.run.phase.dispatch import run_operations
from asyncbench.workloads import workload
from asyncbench.workloads.ycsb.operations import KINDS
from asyncbench.workloads.ycsb.phases import MixedOps

PLANS = Path(__file__).resolve().parent / "ycsb"
BATCH = 1000


def _hook(*_: Any) -> None:
    pass


async def _loaded(records: int, doc: dict[str, Any], tmp: Path) -> tuple[MemoryEngine, Any, Any]:
    ycsb = workload("ycsb")
    settings = ycsb.settings({**doc["ycsb"], "recordcount": records})
    plan = ycsb.draw_plan(ycsb.counts(records, 50, {}, settings), doc["run"]["seed"])
    engine = MemoryEngine(EngineConfig("memory", tmp))
    await engine.open(True)
    load = ycsb.phases["load"]
    await run_operations(load, ycsb.phase_items(load, None, None, plan, {}), [ycsb.store(engine.worker(0), engine.limit)], None, BATCH, _hook, wl=ycsb)
    return engine, plan, ycsb


async def one(records: int, ops: int, doc: dict[str, Any], separate: bool, tmp: Path) -> float:
    """Seconds of the mixed phase, or of its operations as one phase per kind."""
    engine, plan, ycsb = await _loaded(records, doc, tmp)
    mixed = ycsb.phases["mixed"]
    params = ycsb.phase_params(mixed, {**{k: v for k, v in doc["phase"][1].items() if k != "kind"}, "operations": ops},
                               {**doc["ycsb"], "recordcount": records})
    items = ycsb.phase_items(mixed, None, None, plan, params)
    assert isinstance(items, MixedOps)
    parts = [items]
    if separate:  # each kind's operations, in sequence order, as a phase of its own
        kinds = items.phase.kind[items.positions]
        parts = [MixedOps(items.phase, items.positions[kinds == code]) for code in range(len(KINDS))]
        parts = [p for p in parts if len(p)]
    seconds = 0.0
    for part in parts:
        outcome = await run_operations(mixed, part, [ycsb.store(engine.worker(0), engine.limit)], ycsb.context(0), BATCH, _hook, wl=ycsb)
        seconds += outcome.seconds
    await engine.close()
    return seconds


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--records", type=int, default=100_000)
    ap.add_argument("--operations", type=int, default=500_000)
    ap.add_argument("--workload", default="a", choices=list("abcdef"))
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    doc = tomllib.loads((PLANS / f"workload{args.workload}-smoke.toml").read_text())
    best = {False: float("inf"), True: float("inf")}
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(args.repeat):
            for separate in (False, True):  # interleaved: the machine's load hits both alike
                seconds = anyio.run(one, args.records, args.operations, doc, separate, Path(tmp))
                best[separate] = min(best[separate], seconds)
    ops = args.operations
    print(f"workload {args.workload}: {args.records:_d} records, {ops:_d} operations, best of {args.repeat}")
    print(f"  mixed phase        {best[False]:8.3f} s  {best[False] / ops * 1e9:8.0f} ns/op")
    print(f"  separate phases    {best[True]:8.3f} s  {best[True] / ops * 1e9:8.0f} ns/op")
    ratio = best[False] / best[True]
    print(f"  mixed / separate   {ratio:8.3f}x  ({'within' if ratio <= 1.2 else 'OVER'} the 1.2x bound)")


if __name__ == "__main__":
    main()
