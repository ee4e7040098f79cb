"""What drawing a YCSB mixed phase's operations costs, per operation, per request distribution.

Why: a mixed phase draws every operation's kind, key, fields, scan length and value tag
before running it; issue 36 allows at most 1 us per operation amortised, so the drawing
never shows next to an engine call. Draws ``--operations`` operations of workload A's
mix (50 % reads, 50 % updates; workload D's read/insert mix for ``latest``, E's
scan/insert mix shown separately) over ``--records`` records, for each distribution,
``--repeat`` times, and prints the best wall and CPU ns per operation (CPU is the steadier
on a shared machine) against the 1 us bound.

    .venv/bin/python benchmarks/bench_ycsb_draw.py [--records 1000000] [--operations 2000000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import time

from asyncbench.workloads.common.distributions import NAMES, Params
from asyncbench.workloads.ycsb.operations import MixSpec, OperationStream

BOUND_NS = 1000.0
MIXES = {
    "A (read/update)": (0.5, 0.5, 0.0, 0.0, 0.0),
    "D (read/insert)": (0.95, 0.0, 0.05, 0.0, 0.0),
    "E (scan/insert)": (0.0, 0.0, 0.05, 0.95, 0.0),
}


def measure(spec: MixSpec, repeat: int) -> tuple[float, float]:
    """Best wall and CPU seconds to draw the whole phase."""
    best_wall = best_cpu = float("inf")
    for _ in range(repeat):
        wall, cpu = time.perf_counter(), time.process_time()
        for _batch in OperationStream(spec, 570123434):
            pass
        best_wall = min(best_wall, time.perf_counter() - wall)
        best_cpu = min(best_cpu, time.process_time() - cpu)
    return best_wall, best_cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--operations", type=int, default=2_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    print(f"{'distribution':<18} {'mix':<16} {'wall ns/op':>10} {'CPU ns/op':>10}  bound {BOUND_NS:.0f} ns")
    for name in NAMES:
        for mix, proportions in MIXES.items():
            if name == "sequential" and proportions[2]:
                continue
            expected = int(args.operations * proportions[2] * 2)
            params = Params(name, args.records, expectednewkeys=expected)
            spec = MixSpec(args.operations, proportions, params, maxscanlength=100)
            wall, cpu = measure(spec, args.repeat)
            per_wall, per_cpu = wall / args.operations * 1e9, cpu / args.operations * 1e9
            verdict = "ok" if per_cpu <= BOUND_NS else "OVER"
            print(f"{name:<18} {mix:<16} {per_wall:>10.0f} {per_cpu:>10.0f}  {verdict}")


if __name__ == "__main__":
    main()
