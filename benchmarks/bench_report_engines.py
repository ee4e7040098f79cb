"""How ``report`` scales with the number of engines in a result.

A result of many engines (copies of the sample result's engines, renamed) is written to a
temporary directory for each count, and ``python -m asyncbench report`` re-renders it in a
child process: wall seconds, peak RSS of the child, the number of charts and the size of
the report. Rendering must grow linearly with the engines (the tables) and stay bounded
for the charts, which draw at most ``MAX_CHART_ENGINES`` engines each
(asyncbench/report/chart_limit.py).

    .venv/bin/python benchmarks/bench_report_engines.py --engines 10,100,1000
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


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--engines", default="10,100,1000", help="comma list of engine counts")
    p.add_argument("--sample", type=Path, default=SAMPLE, help="the result whose engines are copied")
    args = p.parse_args()
    sample = RunResult.from_json(args.sample.read_bytes())
    print(f"{'engines':>8} {'JSON MB':>8} {'seconds':>8} {'peak MB':>8} {'charts':>6} {'report KB':>9}")
    for n in (int(x) for x in args.engines.split(",")):
        with tempfile.TemporaryDirectory(prefix="asyncbench-bench-report-") as tmp:
            path = Path(tmp) / "asyncbench-bench.json"
            path.write_bytes(many(sample, n).to_json())
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
