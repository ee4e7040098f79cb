"""Write amplification and insert cost of the LSM's merge policy, measured on one tree.

Why: issue 24 asks for a merge policy whose write cost grows logarithmically with the
store, chosen by measurement. This inserts ``--entries`` keys of the email index's shape
(random, fixed width, empty values; ``--values`` gives each a 100-byte value, like the
profiles tree) into one ``LsmTree`` whose memtable holds ``--memtable`` entries, running
every flush and merge synchronously as soon as it is due (what the background maintainer
does on an idle loop), and prints per policy: seconds, entries written by flushes and
merges over entries inserted (write amplification), and the segments left.

Policies: ``full`` (MAX_SEGMENTS = 1: every flush merges everything, the policy before
issue 24) and ``ratio=R`` (``MERGE_RATIO`` = R: a segment joins the merge of the newer
ones when it holds at most R times their entries)::

    .venv/bin/python benchmarks/bench_lsm_merge_policy.py --entries 2M --memtable 250k
"""

from __future__ import annotations

import argparse
import random
import tempfile
import time
from pathlib import Path

from asyncbench.engines.lsm import tree as tree_mod
from asyncbench.engines.lsm.tree import LsmTree, TreeOptions
from asyncbench.fmt import parse_count


def run(policy: str, entries: int, memtable: int, values: bool, seed: int) -> tuple[float, float, int]:
    if policy == "full":
        tree_mod.MAX_SEGMENTS, tree_mod.MERGE_RATIO = 1, 1.0
    else:
        tree_mod.MAX_SEGMENTS, tree_mod.MERGE_RATIO = 8, float(policy.split("=", 1)[1])
    written = 0
    real_merge = LsmTree._merge

    def counting_merge(self: LsmTree, srcs: list, drop_tombstones: bool):  # type: ignore[no-untyped-def]
        nonlocal written
        written += sum(s.entries for s in srcs)  # a merge writes (at most) what it reads
        return real_merge(self, srcs, drop_tombstones)

    LsmTree._merge = counting_merge  # type: ignore[method-assign]
    rng = random.Random(seed)
    value = b"v" * 100 if values else b""
    try:
        with tempfile.TemporaryDirectory() as d:
            t = LsmTree(Path(d), TreeOptions(mutable_segment_max_item_count=memtable, wal_mode="none"))
            start = time.perf_counter()
            for _ in range(entries):
                t.upsert(b"%032x" % rng.getrandbits(128), value)
                if t.frozen:
                    while t.frozen:
                        written += len(t.frozen[-1])
                        t.run_job(t.flush_job())
                    t.merge_all()
            t.flush_all()
            t.merge_all()
            seconds = time.perf_counter() - start
            segments = len(t.segments)
            t.close()
    finally:
        LsmTree._merge = real_merge  # type: ignore[method-assign]
    return seconds, written / entries, segments


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--entries", default="2M", help="keys to insert (default 2M)")
    ap.add_argument("--memtable", default="250k", help="memtable entries (default 250k, the reference's)")
    ap.add_argument(
        "--policies", default="full,ratio=1,ratio=2", help="comma list (default full,ratio=1,ratio=2)"
    )
    ap.add_argument("--values", action="store_true", help="100-byte values instead of empty ones")
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    entries, memtable = parse_count(a.entries), parse_count(a.memtable)
    print(
        f"{entries:_} random 32-byte keys, memtable {memtable:_}, values {'100 B' if a.values else 'empty'}"
    )
    print("| policy | seconds | entries/s | write amplification | segments left |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for policy in a.policies.split(","):
        seconds, wa, segs = run(policy, entries, memtable, a.values, a.seed)
        print(f"| {policy} | {seconds:.1f} | {entries / seconds:,.0f} | {wa:.2f} | {segs} |")


if __name__ == "__main__":
    main()
