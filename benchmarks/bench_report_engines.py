"""How ``report`` scales with the number of engines, or of phases, in a result.

A result of many engines (copies of the sample result's engines, renamed), or of many
phases (``--phases``: the sample's 21 plan phases repeated, renamed, on its 3 engines), is
written to a temporary directory for each count, and ``python -m asyncbench report``
re-renders it in a child process: wall seconds, peak RSS of the child, the number of charts
and the size of the report. Rendering must grow linearly with the engines (the tables) and
stay bounded for the charts, which draw at most ``MAX_CHART_ENGINES`` engines each
(asyncbench/report/chart_limit.py), and grow linearly with the phases (a chart and table
rows per phase).

Measured on the shared 2-vCPU machine, load average 4-6 (issue 52 item 6; each figure one
run, so read the trend, not the digits): engines 16, 64, 256: 12.1, 45.3, 56.9 s in a child
process (interpreter and imports included; in process, warm: 9.2, 12.6, 13.6 s, of which
~9 s are the charts, bounded); phases 21, 80, 320, 1000 (3 engines): 2.3, 3.5, 12.5, 36.9 s,
about 35 ms a phase. cProfile found one quadratic spot, ``EngineResult.phase_at`` (a list
scan per call: 40_706 calls, 1.78 s at 1_000 phases), now a map (0.06 s).

    .venv/bin/python benchmarks/bench_report_engines.py --engines 16,64,256
    .venv/bin/python benchmarks/bench_report_engines.py --phases 21,80,320,1000
"""

from __future__ import annotations

import argparse
import copy
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from asyncbench.result import RunResult

SAMPLE = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "result-sample.json"


def many(sample: RunResult, n: int) -> RunResult:
    run = copy.deepcopy(sample)
    run.engines = []
    for i in range(n):
        e = copy.deepcopy(sample.engines[i % len(sample.engines)])
        e.engine = f"e{i:04d}"
        run.engines.append(e)
    return run


def many_phases(sample: RunResult, n: int) -> RunResult:
    """The sample with ``n`` plan phases (its own repeated, renamed) and each engine's
    phases to match; no throughput rows (they name the sample's phases)."""
    run = copy.deepcopy(sample)
    plan, run.phases, run.throughput = run.phases, [], {}
    for i in range(n):
        q = copy.deepcopy(plan[i % len(plan)])
        q.name, q.sweep = f"{q.name} {i}", None
        run.phases.append(q)
    for e in run.engines:
        base, e.phases = e.phases, []
        for i in range(n):
            p = copy.deepcopy(base[i % len(base)])
            p.name, p.index = f"{p.name} {i}", i
            e.phases.append(p)
    return run


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--engines", default="10,100,1000", help="comma list of engine counts")
    p.add_argument("--phases", help="comma list of phase counts (instead of engine counts)")
    p.add_argument("--sample", type=Path, default=SAMPLE, help="the result whose engines are copied")
    args = p.parse_args()
    sample = RunResult.from_json(args.sample.read_bytes())
    what, counts, make = (
        ("phases", args.phases, many_phases) if args.phases else ("engines", args.engines, many)
    )
    print(f"{what:>8} {'JSON MB':>8} {'seconds':>8} {'peak MB':>8} {'charts':>6} {'report KB':>9}")
    for n in (int(x) for x in counts.split(",")):
        with tempfile.TemporaryDirectory(prefix="asyncbench-bench-report-") as tmp:
            path = Path(tmp) / "asyncbench-bench.json"
            path.write_bytes(make(sample, n).to_json())
            before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
            start = time.perf_counter()
            proc = subprocess.run([sys.executable, "-m", "asyncbench", "report", str(path)], capture_output=True, text=True)
            seconds = time.perf_counter() - start
            peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss  # the largest child so far (KB)
            if proc.returncode != 0:
                print(proc.stderr, file=sys.stderr)
                return proc.returncode
            charts = len(list(Path(tmp).glob("*.svg")))
            report = path.with_suffix(".md").stat().st_size
            peak_note = "" if peak > before else " (<= an earlier count's)"
            print(
                f"{n:>8} {path.stat().st_size / 2**20:>8.1f} {seconds:>8.1f} {peak / 1024:>8.0f} {charts:>6} "
                f"{report / 1024:>9.0f}{peak_note}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
