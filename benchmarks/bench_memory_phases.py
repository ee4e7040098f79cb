"""Where an engine's memory goes: RSS split into anonymous and file-backed pages, and the
high-water mark, after the insert, the stabilization, the point reads and the queries.

Why: a run reports one number, the peak RSS of the engine's child process. To say why
one engine peaks higher than another, this script takes the same store through the same
first phases in one fresh process per engine and reads ``/proc/self/status`` after each
(``VmHWM`` the peak so far, ``RssAnon`` heap and memtables, ``RssFile`` mapped files such
as the LSM's segments). Linux only. It times nothing.

Usage::

    .venv/bin/python benchmarks/bench_memory_phases.py --profiles 200k --engine lsm,rocksdb
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

import anyio

from asyncbench.engine import opened  # noqa: E402
from asyncbench.fmt import parse_count  # noqa: E402
from asyncbench.run.observe.signals import backend_options  # noqa: E402
from asyncbench.tools.store import draw, load, new_engine  # noqa: E402
from asyncbench.workloads.profile_store.stores import profile_store  # noqa: E402

FIELDS = ("VmHWM", "VmRSS", "RssAnon", "RssFile")


def status() -> dict[str, int]:
    """The fields of ``/proc/self/status`` in MiB."""
    out = {}
    with open("/proc/self/status") as f:
        for line in f:
            key, _, value = line.partition(":")
            if key in FIELDS:
                out[key] = int(value.split()[0]) // 1024
    return out


def show(engine: str, step: str) -> None:
    s = status()
    print(f"| {engine} | {step} | " + " | ".join(str(s[k]) for k in FIELDS) + " |", flush=True)


async def one(engine: str, profiles: int, batch: int) -> None:
    """The insert, stabilize, point-read and query phases of one engine, in this process."""
    plan = draw(profiles)
    show(engine, "plan drawn")
    with tempfile.TemporaryDirectory(prefix="asyncbench-memory-") as tmp:
        e = new_engine(engine, Path(tmp) / engine)
        async with opened(e, reset=True):
            await load([profile_store(e.worker(0), e.limit)], profiles, batch)
            show(engine, "after insert")
            await e.stabilize()
            show(engine, "after stabilization")
            reads = plan.stream("reads")
            for i in range(0, len(reads), batch):
                await profile_store(e.worker(0), e.limit).read_by_id(reads[i : i + batch], [])
            show(engine, "after read by user id")
            queries = plan.stream("queries")
            for i in range(0, len(queries), batch):
                await profile_store(e.worker(0), e.limit).query_country_status(queries[i : i + batch], [])
            show(engine, "after query country/status")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--engine", default="lsm,rocksdb")
    ap.add_argument("--profiles", type=parse_count, default=200_000, help="e.g. 200k, 2M")
    ap.add_argument("--batch", type=int, default=1_000)
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    profiles = args.profiles
    if args.child:  # one engine, in this fresh process
        anyio.run(
            one, args.engine, profiles, args.batch, backend="asyncio", backend_options=backend_options()
        )
        return 0
    print(f"{profiles:_} profiles, MiB from /proc/self/status, one fresh process per engine\n")
    print("| engine | after | " + " | ".join(FIELDS) + " |")
    print("| --- | --- |" + " ---: |" * len(FIELDS))
    for engine in args.engine.split(","):
        cmd = [sys.executable, __file__, "--child", "--engine", engine, "--profiles", str(profiles)]
        subprocess.run([*cmd, "--batch", str(args.batch)], check=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
