"""The native LSM engine against RocksDB, phase by phase, from one interleaved CLI run.

Why: issue 17's targets for the LSM are relative to the RocksDB adapter in the same run:
faster on every timed phase (stabilizations, settle, reopen and verify included), the whole run at most 0.6x
RocksDB's, and peak memory no higher. The numbers must be the ones a user sees, so this
script does not time anything itself: it runs (or reads) the CLI's own result, where
``--repeat N`` runs the engines interleaved (lsm rocksdb lsm rocksdb ...), each in a fresh
child process (``isolate = true`` in the plan, so peak memory is the engine's own), and
prints per phase the median seconds of each engine, the median and min-max of the
per-repeat ratios lsm/rocksdb (repeat k of one against repeat k of the other: neighbours
in time, so a load change hits both), and whether the target holds. Phase checksums must
be equal between the engines, or the script exits 1.

Usage::

    .venv/bin/python benchmarks/bench_lsm_vs_rocksdb.py --profiles 200k --repeat 3
    .venv/bin/python benchmarks/bench_lsm_vs_rocksdb.py RESULT.json   # an earlier run
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

from asyncbench.result import EngineResult, RunResult  # noqa: E402

#: Whole run of the LSM at most this fraction of RocksDB's (issue 17).
WHOLE_RUN_TARGET = 0.6


def run_cli(profiles: str, repeat: int, out: Path, extra: Sequence[str]) -> Path:
    """The reference plan for lsm and rocksdb through the CLI; the result JSON's path."""
    cmd = [
        sys.executable,
        "-m",
        "asyncbench",
        str(ROOT / "benchmarks.toml"),
        "--engine",
        "lsm,rocksdb",
        "--profiles",
        profiles,
        "--repeat",
        str(repeat),
        "--yes",
        "--no-progress",
        "--output",
        str(out / "results"),
        "--data",
        str(out / "data"),
        *extra,
    ]
    print("$ " + " ".join(cmd[1:]), flush=True)
    subprocess.run(cmd, check=True, cwd=ROOT)
    found = sorted((out / "results").glob("profiles-*/asyncbench-*.json"))
    if not found:
        raise SystemExit(f"no result JSON under {out / 'results'}")
    return found[-1]


def by_repeat(run: RunResult, engine: str) -> list[EngineResult]:
    rows = [e for e in run.engines if e.engine == engine and not e.warmup]
    if not rows:
        raise SystemExit(f"{engine}: not in the result")
    bad = [e for e in rows if not e.ok]
    if bad:
        raise SystemExit(f"{engine}: repeat {bad[0].repeat} {bad[0].status_text()}")
    return sorted(rows, key=lambda e: e.repeat)


def spread(values: Sequence[float]) -> str:
    med = statistics.median(values)
    if len(values) == 1:
        return f"{med:.2f}"
    return f"{med:.2f} ({min(values):.2f}-{max(values):.2f})"


def table(run: RunResult) -> int:
    """Print the comparison; 1 when checksums differ, else 0."""
    lsm, rocks = by_repeat(run, "lsm"), by_repeat(run, "rocksdb")
    pairs = list(zip(lsm, rocks, strict=False))
    print(f"\n{run.profiles:_} profiles, P{run.parallelism}, {len(pairs)} interleaved repeat(s)\n")
    print("| phase | lsm s | rocksdb s | lsm/rocksdb time (min-max) | target | |")
    print("| --- | ---: | ---: | --- | --- | --- |")
    mismatch = misses = 0
    for i, phase in enumerate(lsm[0].phases):
        ratios, a, b = [], [], []
        for x, y in pairs:
            pa, pb = x.phase_at(i), y.phase_at(i)
            if pa is None or pb is None or pa.skipped or pb.skipped or pa.name != pb.name:
                break
            if pa.checksum != pb.checksum:
                mismatch += 1
            a.append(pa.seconds)
            b.append(pb.seconds)
            ratios.append(pa.seconds / pb.seconds if pb.seconds > 0 else float("inf"))
        if not ratios:
            continue
        ok = statistics.median(ratios) < 1.0
        verdict = "ok" if ok else "MISS"
        misses += not ok
        print(
            f"| {phase.name} | {statistics.median(a):.3f} | {statistics.median(b):.3f} "
            f"| {spread(ratios)} | lsm faster | {verdict} |"
        )
    whole = [x.run_seconds / y.run_seconds for x, y in pairs]
    mem = [x.peak_rss_bytes / y.peak_rss_bytes for x, y in pairs if x.peak_rss_bytes and y.peak_rss_bytes]
    la = statistics.median(x.run_seconds for x in lsm)
    rb = statistics.median(y.run_seconds for y in rocks)
    print(
        f"| whole run | {la:.2f} | {rb:.2f} | {spread(whole)} | <= {WHOLE_RUN_TARGET} "
        f"| {'ok' if statistics.median(whole) <= WHOLE_RUN_TARGET else 'MISS'} |"
    )
    if mem:
        pa = statistics.median(x.peak_rss_bytes for x in lsm) / 2**20
        pb = statistics.median(y.peak_rss_bytes for y in rocks) / 2**20
        print(
            f"| peak RSS (MiB) | {pa:.0f} | {pb:.0f} | {spread(mem)} | <= 1 "
            f"| {'ok' if statistics.median(mem) <= 1 else 'MISS'} |"
        )
    print(f"\nphases missing 'lsm faster': {misses}")
    if mismatch:
        print(f"CHECKSUMS DIFFER between lsm and rocksdb in {mismatch} phase run(s)")
        return 1
    print("checksums: lsm and rocksdb agree on every phase of every repeat")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("result", nargs="?", type=Path, help="a result JSON of a run with lsm and rocksdb")
    ap.add_argument("--profiles", default="200k", help="profiles of a new run (default 200k)")
    ap.add_argument("--repeat", type=int, default=3, help="interleaved repeats of a new run (default 3)")
    ap.add_argument("--keep", type=Path, help="directory for the new run's results and data (default: temp)")
    args, extra = ap.parse_known_args(argv)
    if args.result is not None:
        path = args.result
    elif args.keep is not None:
        path = run_cli(args.profiles, args.repeat, args.keep, extra)
    else:
        with tempfile.TemporaryDirectory(prefix="asyncbench-lsm-vs-rocksdb-") as tmp:
            path = run_cli(args.profiles, args.repeat, Path(tmp), extra)
            return table(RunResult.from_json(path.read_bytes()))
    return table(RunResult.from_json(path.read_bytes()))


if __name__ == "__main__":
    raise SystemExit(main())
