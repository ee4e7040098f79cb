"""Throughput of P workers across K client processes against a client/server engine, and the
overhead of the scaled path at K=1 against the single-process runner (docs/scaling.md).

Phases: insert (to fill the table), point reads, the 50-row top-reputation query, updates.
Runs are interleaved (single, K=1, K=2, K=4, then again) so the shared machine's drift
touches every variant alike; each prints one JSON line per run (ops/s, client CPU µs per
operation, release skew). Needs a server (``eval "$(scripts/postgres-server start)"``).

    python benchmarks/scale_out.py --engine postgres --parallelism 8 --profiles 20000 --rounds 2

``--overhead``: the K=1 path against the single-process runner only, ``--rounds`` (at
least 7) rounds of the pair, the order alternating (single then K=1, then K=1 then
single) so drift touches both alike; at the end, per phase, the median of the per-round
ratios (K=1 / single) of ops/s and of client CPU per operation, the same over blocks of
two rounds (the geometric mean of one round of each order: on a shared machine the run
second in a round fared worse, whichever it was), and each variant's median CPU per
operation. On a shared machine the paired ratios and the CPU per operation are
the figures to read, not a single run's ops/s.

    python benchmarks/scale_out.py --overhead --engine postgres --parallelism 8 --profiles 20000 --rounds 7

Each ``--overhead`` run is a fresh process (``--one single|1``), the single-process
runner's too. Why: a process's CPU cost per operation on this machine is set, in part,
when the process starts (measured: the same 200_000-profile insert in 8 fresh processes
took 2.0-2.5 s, 3.5-4.0 s of CPU; the K=1 path's rounds were bimodal), so a
single-process runner reused across rounds drew that once while each K=1 round drew it
anew, and their ratio measured the draw, not the path.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import statistics
import subprocess
import sys
import time
from pathlib import Path
from time import process_time

import anyio

from asyncbench.config import load, to_json
from asyncbench.engines import engine_class
from asyncbench.measure.memory_sampler import MemorySampler
from asyncbench.run.observe.observers import Observer
from asyncbench.run.observe.signals import backend_options  # uvloop, as the CLI and the client processes run
from asyncbench.run.runner import EngineRun
from asyncbench.run.scale_out.client_process import ClientProcessActor
from asyncbench.run.scale_out.distributed import DistributedEngineRun, Placement, _probe_config
from asyncbench.workloads.profile_store.plan import draw_plan

ROOT = Path(__file__).resolve().parents[1]
KINDS = ("insert", "read_by_id", "query_top_reputation", "update")


class CpuPerPhase(Observer):
    """The single-process runner's client CPU per phase (this process's CPU time)."""

    def __init__(self) -> None:
        self.cpu: dict[str, float] = {}
        self._t0 = 0.0

    def phase_start(self, engine, phase, total_ops, kind=None, stream=None) -> None:
        self._t0 = process_time()

    def phase_end(self, engine, result) -> None:
        self.cpu[result.name] = process_time() - self._t0


def config(engine: str, parallelism: int, profiles: int, data: Path):
    cfg = load(ROOT / "benchmarks" / "quick.toml")
    phases, seen = [], set()
    for p in cfg.phases:  # the first of each kind, in plan order (pre-update reads and queries)
        if p.kind in KINDS and p.kind not in seen:
            phases.append(p)
            seen.add(p.kind)
    return dataclasses.replace(
        cfg, engines=[engine], parallelism=[parallelism], profiles=[profiles],
        phases=phases, data=data, engine_settings={engine: {"database": "asyncbench_scale_out"}} if engine == "postgres" else {},
    )


async def in_process(cfg, engine: str, profiles: int) -> dict:
    """The client process's own code (the ClientProcessActor hosting all P workers) in
    this process, without Dask: what the K=1 path costs apart from Dask's process."""
    level = cfg.levels()[0]
    out: dict = {"k": "inproc", "status": "ok"}
    async with engine_class(engine).exclusive(_probe_config(cfg, level, engine)):
        actor = ClientProcessActor()
        await actor.start(to_json(cfg), engine, profiles, level.parallelism, 0, 1)
        try:
            await actor.open(True)
            for index, spec in enumerate(cfg.phases):
                await actor.prepare(index)
                part = await actor.go(time.time() + 0.05)
                ops = sum(w.items for w in part.workers)
                seconds = max(w.end for w in part.workers) - part.release
                out[spec.kind] = {"ops_s": round(ops / seconds), "cpu_us_op": round(part.cpu_seconds / ops * 1e6, 1)}
            await actor.close()
            await actor.delete_store()
        finally:
            await actor.stop()
    return out


async def one(cfg, engine: str, profiles: int, k: int | str | None) -> dict:
    if k == "inproc":
        return await in_process(cfg, engine, profiles)
    t0 = time.perf_counter()
    cpu = CpuPerPhase()  # this process: the single-process runner, or the coordinator of K processes
    sampler = MemorySampler()
    if k is None:
        run = EngineRun(cfg, cfg.levels()[0], engine, draw_plan(cfg.counts_for(profiles), cfg.seed), cpu, sampler)
    else:
        run = DistributedEngineRun(cfg, cfg.levels()[0], engine, cpu, Placement(processes=k))
    async with anyio.create_task_group() as tg:
        if k is None:  # as the CLI runs it (a client process samples its own memory)
            tg.start_soon(sampler.run)
        res = await run.run()
        tg.cancel_scope.cancel()
    out: dict = {"k": k if k is not None else "single", "status": res.status_text(), "wall_s": round(time.perf_counter() - t0, 1),
                 "peak_rss_mib": [round((p.peak_rss_bytes or 0) / 2**20) for p in res.client_processes]}
    for p in res.phases:
        cpu_s = cpu.cpu.get(p.name) if k is None else p.client_cpu_seconds
        coordinator = cpu.cpu.get(p.name) if k is not None else None
        out[p.kind.kind] = {
            "ops_s": round(p.ops_per_s),
            "cpu_us_op": round(cpu_s / p.ops * 1e6, 1) if cpu_s is not None and p.ops else None,
            # K processes: the coordinator's own CPU over the phase (receiving the batch lines)
            "coordinator_cpu_us_op": round(coordinator / p.ops * 1e6, 1) if coordinator is not None and p.ops else None,
            "skew_ms": None if p.release_skew_seconds is None else round(p.release_skew_seconds * 1e3, 2),
            "checksum": p.checksum,
        }
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--engine", default="postgres")
    ap.add_argument("--parallelism", type=int, default=8)
    ap.add_argument("--profiles", type=int, default=20_000)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--processes", default="single,1,2,4", help="variants: single, inproc, or K")
    ap.add_argument("--data", type=Path, default=Path("data"))
    ap.add_argument("--overhead", action="store_true", help="single-process against K=1 only, paired per round")
    ap.add_argument("--one", choices=["single", "1"], help=argparse.SUPPRESS)  # one run; its JSON line on stdout
    args = ap.parse_args()
    cfg = config(args.engine, args.parallelism, args.profiles, args.data)
    if args.one is not None:
        k = None if args.one == "single" else 1
        out = anyio.run(one, cfg, args.engine, args.profiles, k, backend_options=backend_options())
        print(json.dumps(out), flush=True)
        return
    if args.overhead:
        overhead(cfg, args)
        return
    # "inproc": the client process's code without Dask (in_process)
    variants = [None if v == "single" else v if v == "inproc" else int(v) for v in args.processes.split(",")]
    for r in range(args.rounds):
        for k in variants:
            out = anyio.run(one, cfg, args.engine, args.profiles, k, backend_options=backend_options())
            print(json.dumps({"round": r, **out}), flush=True)


def fresh_process_run(args, k: int | None) -> dict:
    """One ``one(...)`` in a new Python process (see the module doc: why fresh)."""
    cmd = [sys.executable, __file__, "--one", "single" if k is None else str(k), "--engine", args.engine,
           "--parallelism", str(args.parallelism), "--profiles", str(args.profiles), "--data", str(args.data)]
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, text=True, check=False)
    lines = proc.stdout.strip().splitlines()
    if proc.returncode != 0 or not lines:
        raise SystemExit(f"{' '.join(cmd)}: exit {proc.returncode}")
    return json.loads(lines[-1])


def overhead(cfg, args) -> None:
    """Rounds of (single, K=1) pairs, alternating order; the paired ratios' medians."""
    if args.rounds < 7:
        raise SystemExit("--overhead needs --rounds 7 or more (paired medians of a noisy machine)")
    pairs: list[dict] = []
    for r in range(args.rounds):
        got: dict = {}
        for k in ((None, 1) if r % 2 == 0 else (1, None)):
            out = fresh_process_run(args, k)
            print(json.dumps({"round": r, **out}), flush=True)
            if out["status"] != "ok":
                raise SystemExit(f"round {r}: {out['status']}")
            got[k] = out
        pairs.append(got)
    print("| phase | K=1/single ops/s: per round, per block | K=1/single CPU per op: per round, per block "
          "| client CPU µs/op: single, K=1 | K=1 coordinator CPU µs/op |")
    print("| --- | ---: | ---: | ---: | ---: |")

    def ratios(kind: str, key: str) -> tuple[list[float], list[float]]:
        rounds = [p[1][kind][key] / p[None][kind][key] for p in pairs]
        blocks = [math.sqrt(rounds[i] * rounds[i + 1]) for i in range(0, len(rounds) - 1, 2)]
        return rounds, blocks

    def cell(values: tuple[list[float], list[float]]) -> str:
        rounds, blocks = values
        return (f"{statistics.median(rounds):.3f} ({min(rounds):.2f}-{max(rounds):.2f}), "
                f"{statistics.median(blocks):.3f} ({min(blocks):.2f}-{max(blocks):.2f})")

    for kind in KINDS[1:]:
        single = statistics.median(p[None][kind]["cpu_us_op"] for p in pairs)
        one_k = statistics.median(p[1][kind]["cpu_us_op"] for p in pairs)
        print(f"| {kind} | {cell(ratios(kind, 'ops_s'))} | {cell(ratios(kind, 'cpu_us_op'))} | {single:.1f}, {one_k:.1f} "
              f"| {statistics.median(p[1][kind]['coordinator_cpu_us_op'] for p in pairs):.1f} |", flush=True)


if __name__ == "__main__":
    main()
