"""What the garbage collector costs an engine's insert, with and without ``gc.freeze``.

Why: issue 40 measured the collector at 0.4 s of a 200k LSM insert and 2.9 s of a 2M one.
A full collection walks every tracked object of the process, including the tens of
thousands the imports made, which never die; ``gc.freeze()`` (after a ``gc.collect()``)
moves those into a generation no collection walks. Each variant runs in a fresh process
(the same imports, the same plan drawn), interleaved round by round; each reports its
insert's wall and CPU seconds, the collector's own CPU seconds (``gc.callbacks``, the
collecting thread's CPU time from start to stop of every collection), and the collections per generation. The collection counts
and the collector's share of CPU time are the load-independent part; seconds on a
shared machine are not.

Measured on 2026-12-04 (a loaded machine, nice 19; lsm, 200k profiles, 2 rounds): while
the log kept a (key, value) tuple per record, the insert made 905-961 young and 82-87
middle collections, 0.27-0.35 s of the collector's CPU time (about 10 % of the insert's
CPU), with or without the freeze (which froze 26_194 objects: the plan is drawn lazily,
so little is alive before the run). With the log's records in one flat list
(``wal.Records``): 1-2 collections, 0.000-0.004 s. So ``gc.freeze`` is not done by the
harness: it bought nothing measurable, before or after.

    .venv/bin/python benchmarks/gc_freeze.py --engine lsm --profiles 200k --rounds 3
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio

from asyncbench.fmt import parse_count
from asyncbench.tools.store import draw, load, new_engine
from asyncbench.workloads.profile_store.stores import profile_store


def freeze_heap() -> int:
    """Collect, then freeze what survived (the imports, the plan); the objects frozen."""
    gc.collect()
    gc.freeze()
    return gc.get_freeze_count()


def measure(engine_name: str, profiles: int, freeze: bool) -> dict[str, Any]:
    """One insert of ``profiles`` profiles into a fresh store, in this process."""
    draw(profiles)
    frozen = freeze_heap() if freeze else 0
    gc_seconds = [0.0, 0.0, 0.0]
    started = [0.0]

    def on_gc(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            started[0] = time.thread_time()
        else:  # CPU time of the collecting thread: a preempted collection is not inflated
            gc_seconds[info["generation"]] += time.thread_time() - started[0]

    async def run() -> tuple[float, float]:
        with tempfile.TemporaryDirectory(prefix="asyncbench-gc-") as tmp:
            engine = new_engine(engine_name, Path(tmp) / "data")
            async with anyio.create_task_group() as tg:
                await engine.open(True, tg)
                before = gc.get_stats()
                gc.callbacks.append(on_gc)
                w0, c0 = time.perf_counter(), time.process_time()
                await load([profile_store(engine.worker(0), engine.limit)], profiles)
                w1, c1 = time.perf_counter(), time.process_time()
                gc.callbacks.remove(on_gc)
                after = gc.get_stats()
                await engine.close()
        measure.collections = [
            a["collections"] - b["collections"] for a, b in zip(after, before, strict=True)
        ]  # type: ignore[attr-defined]
        return w1 - w0, c1 - c0

    wall, cpu = anyio.run(run)
    return {
        "freeze": freeze,
        "frozen_objects": frozen,
        "insert_wall_s": wall,
        "insert_cpu_s": cpu,
        "gc_s": sum(gc_seconds),
        "gc_s_by_generation": gc_seconds,
        "collections": measure.collections,  # type: ignore[attr-defined]
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--engine", default="lsm")
    ap.add_argument("--profiles", default="200k")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--one", choices=("freeze", "plain"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    n = parse_count(args.profiles)
    if args.one:
        print(json.dumps(measure(args.engine, n, args.one == "freeze")))
        return 0
    rows: dict[str, list[dict[str, Any]]] = {"plain": [], "freeze": []}
    for r in range(args.rounds):
        for variant in ("plain", "freeze"):
            cmd = [
                sys.executable,
                __file__,
                "--engine",
                args.engine,
                "--profiles",
                args.profiles,
                "--one",
                variant,
            ]
            out = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)
            rows[variant].append(out)
            print(
                f"round {r + 1} {variant:6}: insert {out['insert_wall_s']:.2f} s wall, {out['insert_cpu_s']:.2f} s CPU; "
                f"gc {out['gc_s']:.3f} s ({100 * out['gc_s'] / out['insert_cpu_s']:.1f} % of CPU), collections "
                f"{out['collections']}, frozen {out['frozen_objects']:_}",
                flush=True,
            )
    for variant, rs in rows.items():
        med = statistics.median
        print(
            f"median {variant:6}: insert {med(r['insert_wall_s'] for r in rs):.2f} s wall, "
            f"{med(r['insert_cpu_s'] for r in rs):.2f} s CPU, gc {med(r['gc_s'] for r in rs):.3f} s"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
