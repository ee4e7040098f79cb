"""The harness's own memory: a plan run through a no-op engine, peak RSS above the baseline.

Why: every engine's "peak memory" includes the harness's (the plan's streams, the latency
marks, the checksum folds). Issue 24 bounds the harness's share at 64 MiB at any profile
count. This runs the real CLI (isolated: one child process, as every engine runs) on
``--plan`` (default: the reference plan, ``benchmarks.toml``) with a no-op engine that
keeps nothing, so the child's peak RSS above its RSS at the engine's start (after every
import, the plan drawn) is the harness's share; the interpreter's bare RSS is printed too.

The no-op engine answers no query (the checksums differ from the spec's; that is not
what is measured) but stamps one latency mark per operation, as every engine must.

Usage (from the repository's root)::

    .venv/bin/python benchmarks/harness_memory.py --profiles 2M,10M
    .venv/bin/python benchmarks/harness_memory.py --profiles 200k --plan benchmarks/quick.toml --parallelism 16
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from time import perf_counter, perf_counter_ns
from typing import Any

from asyncbench.engine import Engine
from asyncbench.fmt import parse_count

ROOT = Path(__file__).resolve().parent.parent

MIB = 1024 * 1024
LIMIT_MIB = 64


class NoopEngine(Engine):
    """Keeps nothing and answers nothing: only the per-operation latency marks."""

    name = "noop"
    persistent = False

    async def open(self, reset: bool, background: Any = None) -> None:
        pass

    async def close(self) -> None:
        pass

    def storage_bytes(self) -> int:
        return 0

    @staticmethod
    def _stamp(items: Sequence[Any] | int, marks: list[int]) -> None:
        mark, clock = marks.append, perf_counter_ns
        mark(clock())
        for _ in range(items) if isinstance(items, int) else items:
            mark(clock())

    async def insert(self, profiles: Sequence[Any], marks: list[int]) -> None:
        self._stamp(profiles, marks)

    async def update(self, uids: Sequence[int], transform: Any, marks: list[int]) -> list[Any]:
        self._stamp(uids, marks)
        return []

    async def count(self) -> int:
        return 0

    async def _each(self, items: Sequence[Any] | int, marks: list[int]) -> list[Any]:
        self._stamp(items, marks)
        return []

    read_by_id = lookup_by_email = _each
    scan_country_status = query_country_status = _each
    scan_created_at = query_created_at = _each
    scan_top_reputation = query_top_reputation = _each


def bare_interpreter_rss() -> int:
    out = subprocess.run(
        [sys.executable, "-c", "import psutil; print(psutil.Process().memory_info().rss)"],
        capture_output=True,
        text=True,
        check=True,
    )
    return int(out.stdout)


def run_once(plan: str, profiles: int, parallelism: int, extra: list[str]) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="asyncbench-harness-memory-") as tmp:
        env = {
            **os.environ,
            "ASYNCBENCH_ENGINES": "noop=harness_memory:NoopEngine",
            "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT / "benchmarks"), os.environ.get("PYTHONPATH")])),
        }
        cmd = [
            sys.executable,
            "-m",
            "asyncbench",
            plan,
            "--engine",
            "noop",
            "--profiles",
            str(profiles),
            "--parallelism",
            str(parallelism),
            "--output",
            f"{tmp}/out",
            "--data",
            f"{tmp}/data",
            "--no-progress",
            "--yes",
            *extra,
        ]
        t0 = perf_counter()
        proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True)
        wall = perf_counter() - t0
        if proc.returncode != 0:
            sys.exit(f"{' '.join(cmd)} exited {proc.returncode}:\n{proc.stdout}\n{proc.stderr}")
        (result,) = Path(tmp, "out").glob("profiles-*/asyncbench-*.json")
        doc = json.loads(result.read_text())
    (engine,) = doc["engines"]
    return {"engine": engine, "wall": wall, "counts": doc["counts"]}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--profiles", default="2M,10M", help="comma list, e.g. 200k,2M,10M")
    ap.add_argument("--plan", default="benchmarks.toml")
    ap.add_argument("--parallelism", type=int, default=1)
    ap.add_argument("extra", nargs="*", help="more asyncbench flags, after --")
    args = ap.parse_args(argv)
    sizes = [parse_count(p) for p in args.profiles.split(",")]
    bare = bare_interpreter_rss()
    print(f"command: {' '.join([Path(sys.executable).name, *sys.argv])}")
    print(f"bare interpreter RSS: {bare / MIB:.1f} MiB; limit for the harness's growth: {LIMIT_MIB} MiB\n")
    print("| profiles | P | ops | run s | RSS at engine start MiB | peak RSS MiB | harness growth MiB | ok |")
    print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |")
    worst = 0.0
    for n in sizes:
        got = run_once(args.plan, n, args.parallelism, args.extra)
        e = got["engine"]
        if e["status"] != "ok":
            sys.exit(f"the no-op engine did not finish at {n:_d} profiles: {e['status']} {e.get('error')}")
        ops = sum(p["ops"] for p in e["phases"])
        start, peak = e["initial_rss_bytes"] / MIB, e["peak_rss_bytes"] / MIB
        growth = peak - start
        worst = max(worst, growth)
        print(
            f"| {n:_d} | {args.parallelism} | {ops:_d} | {e['run_seconds']:.1f} | {start:.1f} | {peak:.1f} "
            f"| {growth:.1f} | {'yes' if growth < LIMIT_MIB else 'NO'} |",
            flush=True,
        )
    return 0 if worst < LIMIT_MIB else 1


if __name__ == "__main__":
    sys.exit(main())
