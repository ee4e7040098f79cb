"""Where A's time goes for one phase kind: ``python -m asyncbench floor --a-only`` under py-spy.

Starts the floor command (A only, no B, no check), waits until its store is built, then attaches
``py-spy record --idle --threads --nonblocking`` (every thread, idle ones included, the
process never paused) for ``--seconds``, and prints per thread the share of wall-clock
samples by leaf frame (file:line and the source line): the engine's batch body, the
worker waiting for its next batch, the event loop waiting for the worker (leaf
``Runner.run``: the loop is in C, i.e. in epoll), the checksum fold, the batch hook.
Needs ``pip install py-spy`` and ptrace permission. Usage::

    .venv/bin/python -m benchmarks.floor_profile --engine rocksdb --kind read_by_id --profiles 200k --pin 0
"""

from __future__ import annotations

import argparse
import collections
import linecache
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
FRAME = re.compile(r"^(?P<func>.*) \((?P<file>[^()]*):(?P<line>\d+)\)$")


def source(frame: str) -> str:
    m = FRAME.match(frame)
    if not m:
        return frame
    path = m["file"]
    for base in (HERE.parent, *map(Path, sys.path)):
        candidate = base / path
        if candidate.is_file():
            text = linecache.getline(str(candidate), int(m["line"])).strip()
            return f"{frame}: {text[:70]}"
    return frame


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--engine", default="rocksdb")
    p.add_argument("--kind", default="read_by_id")
    p.add_argument("--profiles", default="200k")
    p.add_argument("--ops", default="40k")
    p.add_argument("--seconds", type=int, default=20)
    p.add_argument("--pin", type=int, default=None)
    p.add_argument("--rate", type=int, default=400, help="samples per second")
    p.add_argument("--top", type=int, default=8)
    args = p.parse_args()
    spy = shutil.which("py-spy") or str(Path(sys.executable).parent / "py-spy")
    floor = [
        sys.executable,
        "-m",
        "asyncbench",
        "floor",
        "--a-only",
        "--engine",
        args.engine,
        "--kinds",
        args.kind,
        "--profiles",
        args.profiles,
        "--point-ops",
        args.ops,
        "--query-ops",
        args.ops,
        "--repeats",
        "100000",
    ]
    if args.pin is not None:
        floor += ["--pin", str(args.pin)]
    with tempfile.TemporaryDirectory() as tmp:
        raw = Path(tmp) / "raw.txt"
        proc = subprocess.Popen(floor, stdout=subprocess.PIPE, text=True)
        try:
            assert proc.stdout is not None
            for line in proc.stdout:  # attach once the store is built: only the phase loop is sampled
                if "built through the engine" in line:
                    break
            subprocess.run(
                [
                    spy,
                    "record",
                    "--idle",
                    "--threads",
                    "--nonblocking",
                    "-r",
                    str(args.rate),
                    "-d",
                    str(args.seconds),
                    "-f",
                    "raw",
                    "-o",
                    str(raw),
                    "--pid",
                    str(proc.pid),
                ],
                check=True,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
        finally:
            proc.terminate()
            proc.wait()
        per_thread: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
        for line in raw.read_text().splitlines():
            stack, _, count = line.rpartition(" ")
            frames = stack.split(";")
            per_thread[frames[0]][frames[-1] if len(frames) > 1 else "(no Python frame)"] += int(count)
    print(f"py-spy --idle, {args.rate} Hz, {args.seconds} s of: python {' '.join(floor[1:])}")
    for thread, counts in per_thread.items():
        total = sum(counts.values())
        if total < args.rate:  # RocksDB's own threads etc.: no Python frames worth showing
            continue
        print(f"\n{thread}: {total} samples")
        for leaf, n in counts.most_common(args.top):
            print(f"  {n / total:6.1%}  {source(leaf)}")


if __name__ == "__main__":
    main()
