"""What one point get of an LSM segment costs, by segment size (issue 40 item 1).

Why: a reference query is an index scan and 50 profile gets, and at 10M profiles the
query phases are over half of the LSM's run; each get there costs about 2.7x what it
costs at 200k, because its bisects and its block read miss the CPU's caches. This
writes one segment of ``--entries`` keys shaped like the profiles tree's (20-digit ids,
values of 120-298 bytes of random hex: LZ4 shrinks them only 1.06x, profiles 2.3x, so
an LZ4 read here decompresses about as much but reads more), through the engine's
writer, plain or LZ4 (``--codec``), reads every block once (a block's first read tests
its checksum, as in a run, so that is left out), then times ``--gets`` random gets
``--rounds`` times and prints each round's nanoseconds per get and their median. The
loop is Python, as the workload's is: about 60 ns of each get is the loop.

    .venv/bin/python benchmarks/bench_lsm_point_get.py --entries 8M --dir /tmp/pg
    .venv/bin/python benchmarks/bench_lsm_point_get.py --entries 8M --codec lz4 --dir /tmp/pg

A segment already in ``--dir`` for the same entries and codec is reused (8M plain is
2 GB, a minute to write), so builds of the engine can be compared on one file,
alternating runs. Without ``--dir`` the segment is written to a temp dir and deleted.
"""

from __future__ import annotations

import argparse
import random
import statistics
import tempfile
import time
from pathlib import Path

from asyncbench.engines.lsm import native
from asyncbench.engines.lsm.codec import LZ4
from asyncbench.engines.lsm.segment_reader import SegmentReader
from asyncbench.engines.lsm.segment_writer import SegmentWriter
from asyncbench.fmt import parse_count

STEP = 16  # entries per block, the engine's default


def key(i: int) -> bytes:
    return b"%020d" % i


def write_segment(path: Path, n: int, codec: str | None) -> None:
    rng = random.Random(5)
    w = SegmentWriter(path, STEP, compress=codec is not None, codec=codec)  # writes a .tmp, renames at finish
    w.add_merged([{key(i): rng.randbytes(60 + i % 90).hex().encode() for i in range(n)}], False)
    w.finish()


def measure(path: Path, n: int, gets: int, rounds: int) -> list[float]:
    seg = SegmentReader(path, 0)
    try:
        get = seg.get
        for i in range(0, n, STEP):  # every block's first read: its checksum tested
            get(key(i))
        rng = random.Random(1)
        keys = [key(rng.randrange(n)) for _ in range(gets)]
        out = []
        for _ in range(rounds):
            t0 = time.perf_counter()
            for k in keys:
                get(k)
            out.append((time.perf_counter() - t0) / gets * 1e9)
        return out
    finally:
        seg.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--entries", default="2M", help="keys in the segment (default 2M)")
    ap.add_argument("--codec", choices=["plain", "lz4"], default="plain")
    ap.add_argument("--gets", type=int, default=500_000, help="random gets a round (default 500_000)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--dir", help="keep (and reuse) the segment here")
    args = ap.parse_args()
    try:
        n = parse_count(args.entries)
    except ValueError as exc:
        ap.error(f"--entries: {exc}")  # exit 2, nothing written
    for flag, value in (("--entries", n), ("--gets", args.gets), ("--rounds", args.rounds)):
        if value < 1:
            ap.error(f"{flag} {value}: must be at least 1")
    codec = LZ4 if args.codec == "lz4" else None
    with tempfile.TemporaryDirectory() as tmp:
        where = Path(args.dir) if args.dir else Path(tmp)
        where.mkdir(parents=True, exist_ok=True)
        path = where / f"point-get-{n}-{args.codec}.sst"
        if not path.exists():
            write_segment(path, n, codec)
        ns = measure(path, n, args.gets, args.rounds)
    build = "compiled" if native.fixed_lookup is not None else f"pure Python ({native.FALLBACK_REASON})"
    print(
        f"{n} entries, {args.codec}, {build}: "
        + " ".join(f"{x:.0f}" for x in ns)
        + f" ns/get, median {statistics.median(ns):.0f}"
    )


if __name__ == "__main__":
    main()
