"""What measuring a phase's cost costs: ops/s with the cost measurement on and off.

Why: the cost of a phase (asyncbench/measure/cost.py) is read from counters the kernel
and the engine keep anyway, in snapshots outside each phase's time and a sampler thread
that wakes once a second; nothing is added per operation. The claim to check is that
throughput moves by at most 2 %. The sampler thread still takes the GIL for a few hundred
microseconds a second, and RocksDB's statistics (enabled for its counters) count in its
own code, so it is measured, not assumed.

Runs the real CLI (``python -m asyncbench PLAN --engine E --profiles N``) alternately with
the measurement on and off (``ASYNCBENCH_NO_COST=1``: phases get no cost), ``--pairs``
times, interleaved ON OFF ON OFF ... so drift in the machine's load hits both alike; then
per operation phase the median ops/s of each mode and their ratio, and the geometric mean
of the ratios; then each pair's own geometric mean over the phases, and the 95 % Student t
interval of their mean, the figure to hold against the 2 % bound. The pairs are an even
count, each side first in half of them, so a run's position cannot lean the ratio. On a
quiet machine an A/A test (``--null``) of 5 pairs at 100_000 profiles gave 0.956x with
pairs from 0.888x to 1.011x: one pair of these short phases moves by several per cent
with nothing changed between its sides. Beside them, the CPU seconds each run's processes used (user + system,
``getrusage(RUSAGE_CHILDREN)`` around the run: the CLI and its isolated child, every
thread), whose on/off ratio is what the measurement adds in work. Ops/s need a quiet
machine: on a loaded one, the noise between two runs is larger than the effect; the CPU
ratio is far less sensitive to the load (other processes take turns on the cores but do
not add to this run's CPU seconds), so it is the verdict a loaded machine can give::

    .venv/bin/python benchmarks/bench_cost_overhead.py --engine lsm --profiles 100000 --pairs 5

``--null`` runs the same pairs with the measurement off on both sides (an A/A test): the
ratios it gives are the method's own noise on this machine, the yardstick an on/off ratio
must be read against. Beside the median ratio, each pair's geometric mean over the phases
is printed: their spread says how far one pair can be trusted::

    .venv/bin/python benchmarks/bench_cost_overhead.py --engine lsm --profiles 100000 --pairs 5 --null

``--snapshot-cost`` measures instead, on an open engine of each kind, what the sampler does
inside a phase once a second: one ``take_snapshot`` (CPU seconds of this thread, and wall
time, the GIL held for at most that), so its share of a second is the most it can take
from the operations; that figure does not depend on the machine's load::

    .venv/bin/python benchmarks/bench_cost_overhead.py --snapshot-cost --engine lsm,rocksdb,sqlite

Note: RocksDB's statistics are enabled in both modes (they are the engine's setting), so
for rocksdb this measures the harness's sampling only; their own cost is RocksDB's
documented few percent at the default level.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NO_COST_ENV = "ASYNCBENCH_NO_COST"  # asyncbench.measure.cost.NO_COST_ENV


#: Student's t, two-sided 95 %, by degrees of freedom (pairs - 1).
T95 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262, 10: 2.228,
       11: 2.201, 13: 2.160, 15: 2.131, 19: 2.093, 29: 2.045}  # fmt: skip


def children_cpu() -> float:
    """CPU seconds (user + system) of every waited-for descendant of this process so far."""
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def one_run(
    plan: Path, engine: str, profiles: int, cost: bool, work: Path, expect_cost: bool | None = None
) -> tuple[dict[str, float], float]:
    """ops/s by phase name of one run of ``engine`` (in its own process, as a user runs it),
    and the CPU seconds its processes used."""
    expect = cost if expect_cost is None else expect_cost
    out = Path(tempfile.mkdtemp(dir=work))
    env = {**os.environ, NO_COST_ENV: "0" if cost else "1"}
    cmd = [
        sys.executable, "-m", "asyncbench", str(plan),
        "--engine", engine, "--profiles", str(profiles),
        "--output", str(out / "out"), "--data", str(out / "data"),
        "--no-progress", "--quiet", "--yes",
    ]  # fmt: skip
    before = children_cpu()
    subprocess.run(cmd, env=env, check=True, stdout=subprocess.DEVNULL, cwd=ROOT)
    cpu = children_cpu() - before
    (result,) = (out / "out").glob("profiles-*/asyncbench-*.json")
    doc = json.loads(result.read_text())
    (e,) = doc["engines"]
    rates = {}
    for p in e["phases"]:
        if p["action"] == "ops" and p["seconds"] > 0:
            rates[p["name"]] = p["ops"] / p["seconds"]
            if expect != (p.get("cost") is not None):
                raise SystemExit(f"phase {p['name']!r}: cost {'missing' if expect else 'present'} in the {'on' if expect else 'off'} run")
    return rates, cpu


def snapshot_cost(engines: list[str], n: int) -> None:
    """µs of CPU and of wall time per sampler snapshot, on each engine opened in a temp dir
    (empty; its background threads and, for a server, its processes found as a phase finds
    them: the snapshot's work is per thread and per process, not per stored byte)."""
    import anyio

    from asyncbench.engine import EngineConfig, opened
    from asyncbench.engines import engine_class
    from asyncbench.measure.cost import SERIES_INTERVAL_S, CostMeter, take_snapshot
    from asyncbench.workloads.profile_store.kv_store import STORE_NAMES

    async def one(name: str, where: Path) -> tuple[float, float]:
        async with opened(engine_class(name)(EngineConfig(name, where / name, stores=STORE_NAMES))) as engine:
            _, pids, partial = await CostMeter._server(engine)  # the server's pids, as a phase finds them
            threads = engine.background_threads()
            take_snapshot(threads, pids, partial)  # warm: imports, first /proc opens
            cpu0, wall0 = time.thread_time(), time.perf_counter()
            for _ in range(n):
                take_snapshot(engine.background_threads(), pids, partial)
            return (time.thread_time() - cpu0) / n, (time.perf_counter() - wall0) / n

    print(f"one sampler snapshot (the sampler takes one each {SERIES_INTERVAL_S:g} s of a phase), {n} taken")
    print(f"{'engine':<10} {'CPU µs':>8} {'wall µs':>8} {'share of a second':>18}")
    with tempfile.TemporaryDirectory(prefix="bench-snapshot-cost-") as tmp:
        for name in engines:
            cpu, wall = anyio.run(one, name, Path(tmp))
            print(f"{name:<10} {cpu * 1e6:>8.0f} {wall * 1e6:>8.0f} {wall / SERIES_INTERVAL_S:>17.3%}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--engine", default="lsm")
    ap.add_argument("--profiles", type=int, default=100_000)
    ap.add_argument("--pairs", type=int, default=6, help="ON/OFF pairs, interleaved (even: each side first as often)")
    ap.add_argument("--plan", type=Path, default=ROOT / "benchmarks" / "quick.toml")
    ap.add_argument("--null", action="store_true", help="an A/A test: both sides of each pair with the measurement off")
    ap.add_argument("--snapshot-cost", action="store_true", help="measure one sampler snapshot per engine instead")
    ap.add_argument("--snapshots", type=int, default=2_000, help="snapshots taken per engine (--snapshot-cost)")
    args = ap.parse_args()
    if args.pairs < 2 or args.pairs % 2:
        ap.error(
            f"--pairs {args.pairs}: give an even number of at least 2, so each side runs first in as many pairs "
            "(a run's position in its pair must not lean the ratio one way)"
        )
    if args.snapshot_cost:
        snapshot_cost(args.engine.split(","), args.snapshots)
        return
    on: dict[str, list[float]] = {}
    off: dict[str, list[float]] = {}
    cpu: dict[bool, list[float]] = {True: [], False: []}
    with tempfile.TemporaryDirectory(prefix="bench-cost-overhead-") as tmp:
        for i in range(args.pairs):
            for cost, into in ((True, on), (False, off)) if i % 2 == 0 else ((False, off), (True, on)):
                rates, seconds = one_run(args.plan, args.engine, args.profiles, cost and not args.null, Path(tmp))
                cpu[cost].append(seconds)
                for name, rate in rates.items():
                    into.setdefault(name, []).append(rate)
                print(f"pair {i + 1}/{args.pairs}: cost {'on' if cost else 'off'} done", file=sys.stderr)
    what = "A/A: the measurement off on both sides (on = A, off = B)" if args.null else "median ops/s"
    print(f"engine {args.engine}, {args.profiles:_d} profiles, {args.pairs} interleaved pairs; {what}")
    print(f"{'phase':<34} {'cost on':>10} {'cost off':>10} {'on/off':>8}")
    logs = []
    for name in on:
        a, b = statistics.median(on[name]), statistics.median(off.get(name, [math.nan]))
        ratio = a / b if b > 0 else math.nan
        logs.append(math.log(ratio))
        print(f"{name[:34]:<34} {a:>10.0f} {b:>10.0f} {ratio:>7.3f}x")
    geo = math.exp(statistics.fmean(logs)) if logs else math.nan
    verdict = "within" if abs(geo - 1) <= 0.02 else "OUTSIDE"
    print(f"geometric mean on/off: {geo:.4f}x ({verdict} the 2 % bound)")
    per_pair = []  # each pair's own geometric mean over the phases both sides ran
    for i in range(args.pairs):
        pair_logs = [math.log(on[n][i] / off[n][i]) for n in on if n in off and len(on[n]) > i and len(off[n]) > i and off[n][i] > 0]
        if pair_logs:
            per_pair.append(math.exp(statistics.fmean(pair_logs)))
    if len(per_pair) >= 2:
        logs_pp = [math.log(r) for r in per_pair]
        mean, sd = statistics.fmean(logs_pp), statistics.stdev(logs_pp)
        half = T95.get(len(logs_pp) - 1, 1.96) * sd / math.sqrt(len(logs_pp))
        low, high = math.exp(mean - half), math.exp(mean + half)
        print(
            f"per pair's geometric mean: {', '.join(f'{r:.3f}' for r in per_pair)}; their mean "
            f"{math.exp(mean):.4f}x, 95 % interval {low:.4f}-{high:.4f}x: "
            + ("within the 2 % bound" if low >= 0.98 and high <= 1.02 else
               "the bound is inside the interval: the effect is below what these pairs resolve"
               if low < 0.98 and high > 1.02 else
               "the interval reaches past the 2 % bound")
        )
    c_on, c_off = statistics.median(cpu[True]), statistics.median(cpu[False])
    pair_ratios = [a / b for a, b in zip(cpu[True], cpu[False], strict=True) if b > 0]
    c_ratio = c_on / c_off if c_off > 0 else math.nan
    c_verdict = "within" if c_ratio <= 1.02 else "OUTSIDE"
    print(
        f"CPU seconds of a whole run, median: on {c_on:.2f}, off {c_off:.2f}, on/off {c_ratio:.4f}x "
        f"({c_verdict} the 2 % bound); per pair: {', '.join(f'{r:.3f}' for r in pair_ratios)}"
    )


if __name__ == "__main__":
    main()
