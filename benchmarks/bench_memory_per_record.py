"""Memory per record: an engine's peak RSS at two store sizes, and the slope between them.

Why: the estimate printed before a run gives a memory figure and refuses a run that can
never fit the machine (asyncbench/run/checks/memory_need.py). Its per-record constants come
from here: the real CLI runs ``--plan`` on one engine (isolated: a fresh child process, as
every run does) at two sizes, and the engine's sampled peak RSS (``peak_rss_bytes`` of
the result) at each gives bytes per record = (peak2 - peak1) / (n2 - n1); the fixed part
is what is left at the first size. The memory engine holds every record in the process;
an on-disk engine shows the harness's own share per record (e.g. YCSB's key names).

Usage (from the repository's root)::

    .venv/bin/python benchmarks/bench_memory_per_record.py --plan benchmarks/quick.toml --sizes 50k,100k
    .venv/bin/python benchmarks/bench_memory_per_record.py --plan benchmarks/ycsb/workloadc.toml \\
        --sizes 20k,40k -- -p fieldcount=10 -p fieldlength=1000
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

from asyncbench.fmt import parse_count

ROOT = Path(__file__).resolve().parent.parent
MIB = 1024 * 1024


def peak_rss(plan: str, engine: str, size: int, extra: list[str]) -> tuple[int, int]:
    """The engine's sampled peak RSS and peak anonymous RSS (bytes: its own memory, not
    mapped files) in one isolated run of ``plan`` at ``size``."""
    with tempfile.TemporaryDirectory(prefix="asyncbench-memory-per-record-") as tmp:
        cmd = [
            sys.executable, "-m", "asyncbench", plan, "--engine", engine, "--profiles", str(size),
            "--output", f"{tmp}/out", "--data", f"{tmp}/data", "--no-progress", "--yes", "--quiet", *extra,
        ]  # fmt: skip
        proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
        if proc.returncode != 0:
            sys.exit(f"{' '.join(cmd)} exited {proc.returncode}:\n{proc.stdout}\n{proc.stderr}")
        (result,) = Path(tmp, "out").glob("*/asyncbench-*.json")
        (e,) = json.loads(result.read_text())["engines"]
        return int(e["peak_rss_bytes"]), int(e.get("peak_rss_anon_bytes") or 0)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--plan", default="benchmarks/quick.toml")
    ap.add_argument("--engine", default="memory")
    ap.add_argument("--sizes", default="50k,100k", help="two record (profile) counts, e.g. 50k,100k")
    ap.add_argument("extra", nargs="*", help="more asyncbench flags, after --")
    args = ap.parse_args(argv)
    small, large = (parse_count(s) for s in args.sizes.split(","))
    measured = [peak_rss(args.plan, args.engine, n, args.extra) for n in (small, large)]
    print(f"plan {args.plan} {' '.join(args.extra)}, engine {args.engine}")
    for n, (peak, anon) in zip((small, large), measured, strict=True):
        print(f"  {n:>12_d} records: peak RSS {peak / MIB:8.1f} MiB, of it anonymous {anon / MIB:8.1f} MiB")
    for what, i in (("RSS", 0), ("anonymous", 1)):
        per_record = (measured[1][i] - measured[0][i]) / (large - small)
        fixed = (measured[0][i] - per_record * small) / MIB
        print(f"  {what} per record: {per_record:,.0f} bytes; fixed part: {fixed:.1f} MiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
