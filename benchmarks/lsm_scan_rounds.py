"""The LSM's key-range scan on a stabilized index tree: the compiled scan
(``FixedLookup.scan``) against the Python cursor and merging iterator it replaced, in
interleaved rounds in this process, CPU time per scan.

Why: on a shared machine a benchmark run's seconds move by 1.5-2x with the load; CPU time
of the two paths over the same scans, taken in turns in one process, moves far less, and
is the figure docs/lsm.md quotes. The tree is built in a temporary directory (removed
after): ``--entries`` keys like the created-at index's (a 19-digit time and a 20-digit id),
flushed and merged into one segment, as a stabilization leaves it.

    .venv/bin/python benchmarks/lsm_scan_rounds.py --entries 200k --scans 20000 --rounds 5
"""

from __future__ import annotations

import argparse
import random
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from asyncbench.engines.lsm.tree import LsmTree, TreeOptions
from asyncbench.fmt import parse_count


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--entries", default="200k", help="keys in the tree (default 200k)")
    p.add_argument("--scans", type=int, default=20_000, help="scans per round and path")
    p.add_argument("--limit", type=int, default=50, help="keys per scan (the plan's limit)")
    p.add_argument("--rounds", type=int, default=5)
    args = p.parse_args()
    entries = parse_count(args.entries)
    rng = random.Random(1)
    tmp = Path(tempfile.mkdtemp(prefix="lsm-scan-rounds-"))
    try:
        tree = LsmTree(tmp / "index", TreeOptions(wal_mode="none", mutable_segment_max_item_count=entries + 1))
        for i in range(entries):
            tree.upsert(b"%019d%020d" % (rng.randrange(10**12), i), b"")
        tree.flush_all()
        tree.compact_all()
        compiled = tree._one_scan
        if compiled is None:
            raise SystemExit("no compiled scan here (the pure-Python build, or ASYNCBENCH_LSM_PURE set)")
        starts = [b"%019d" % rng.randrange(10**12) for _ in range(args.scans)]

        def per_scan(on: bool) -> float:
            tree._one_scan = compiled if on else None  # None: the cursor path, as before it
            t0 = time.process_time()
            for s in starts:
                tree.scan_keys(s, None, False, args.limit)
            return (time.process_time() - t0) / len(starts) * 1e6

        cursor: list[float] = []
        native: list[float] = []
        for _ in range(args.rounds):
            cursor.append(per_scan(False))
            native.append(per_scan(True))
        tree._one_scan = compiled
        tree.close()
        for name, got in (("cursor", cursor), ("compiled", native)):
            print(
                f"{name:9s} {statistics.median(got):7.2f} us CPU per scan "
                f"(median of {args.rounds}; min {min(got):.2f}, max {max(got):.2f})"
            )
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
