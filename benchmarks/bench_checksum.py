"""Cost of the harness's own hot code: C accelerator against its pure-Python definitions.

Why: every query phase folds millions of returned profiles into its checksum and every
run draws its whole plan up front, so this harness time must stay small next to the
engine time it measures. Reports:

* ``fold_profiles`` in ns per profile, on profile tuples and on their stored encoding
  (bytes), C vs Python (Python on a ``--python-n`` slice: it is ~50x slower);
* ``create_many`` and ``encode_many`` in ns per profile, C vs Python;
* ``email_many`` / ``created_at_many`` (the per-uid parts of plan drawing) vs the Python
  ``email_of`` / ``created_at_of`` loops;
* drawing the reference plan for ``--profiles`` (default 2_000_000) profiles with the C
  ``NetRandom`` vs ``PyNetRandom`` (the plan's emails and created-at bounds are Python in
  both), and checks the two plans are equal. Wall and CPU time are both printed: on a
  shared machine CPU time is the steadier of the two.

    .venv/bin/python benchmarks/bench_checksum.py [--n 200000] [--python-n 20000]
        [--profiles 2000000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from workloads.profile_store import _kernels as sp  # noqa: E402
from workloads.profile_store import plan as plan_module  # noqa: E402
from workloads.profile_store import profiles  # noqa: E402
from workloads.profile_store.checksum import OFFSET_BASIS, py_fold_profiles  # noqa: E402
from workloads.profile_store.dotnet_random import PyNetRandom  # noqa: E402
from workloads.profile_store.reference import REFERENCE_SEED as SEED  # noqa: E402


def best_seconds(fn: Callable[[], object], repeat: int) -> float:
    """Fastest of ``repeat`` runs: the least disturbed by the other processes on the box."""
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


def row(label: str, c_ns: float, py_ns: float) -> None:
    print(f"{label:34} C {c_ns:9.1f} ns   Python {py_ns:9.1f} ns   x{py_ns / c_ns:6.1f}")


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=200_000, help="profiles per C measurement")
    ap.add_argument("--python-n", type=int, default=20_000, help="profiles per Python measurement")
    ap.add_argument("--profiles", type=int, default=2_000_000, help="plan size")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args(argv)

    ps = sp.create_many(1, args.n, SEED & 0xFFFFFFFF)
    enc = sp.encode_many(ps)
    ps_py, enc_py = ps[: args.python_n], enc[: args.python_n]
    assert sp.fold_profiles(OFFSET_BASIS, ps_py) == py_fold_profiles(OFFSET_BASIS, ps_py)
    assert sp.fold_profiles(OFFSET_BASIS, enc_py) == py_fold_profiles(OFFSET_BASIS, enc_py)

    def per_profile(fn: Callable[[], object], n: int) -> float:
        return best_seconds(fn, args.repeat) / n * 1e9

    print(f"ns per profile (C over {args.n:_}, Python over {args.python_n:_}, best of {args.repeat})")
    row(
        "fold_profiles, tuples",
        per_profile(lambda: sp.fold_profiles(OFFSET_BASIS, ps), args.n),
        per_profile(lambda: py_fold_profiles(OFFSET_BASIS, ps_py), args.python_n),
    )
    row(
        "fold_profiles, bytes",
        per_profile(lambda: sp.fold_profiles(OFFSET_BASIS, enc), args.n),
        per_profile(lambda: py_fold_profiles(OFFSET_BASIS, enc_py), args.python_n),
    )

    # generated and encoded in batches of 1_000, as the insert phase does (one huge list
    # would mostly measure page faults of fresh memory)
    def batched(fn: Callable[[int], object], n: int) -> Callable[[], None]:
        def run() -> None:
            for start in range(1, n + 1, 1000):
                fn(start)  # each batch is dropped before the next, as in the runner

        return run

    word = SEED & 0xFFFFFFFF
    row(
        "create_many (batches of 1_000)",
        per_profile(batched(lambda s: sp.create_many(s, 1000, word), args.n), args.n),
        per_profile(batched(lambda s: profiles.py_create_many(s, 1000, SEED), args.python_n), args.python_n),
    )
    row(
        "encode_many (batches of 1_000)",
        per_profile(batched(lambda s: sp.encode_many(ps[s - 1 : s + 999]), args.n), args.n),
        per_profile(
            batched(lambda s: [profiles.encode(p) for p in ps[s - 1 : s + 999]], args.python_n), args.python_n
        ),
    )

    # plan helpers: draw_plan's Python parts (emails, created-at bounds) per uid
    uids = list(range(1, args.n + 1))
    row(
        "email_many vs email_of",
        per_profile(lambda: sp.email_many(uids), args.n),
        per_profile(lambda: [profiles.email_of(u) for u in uids[: args.python_n]], args.python_n),
    )
    row(
        "created_at_many vs created_at_of",
        per_profile(lambda: sp.created_at_many(uids, word), args.n),
        per_profile(lambda: [profiles.created_at_of(u, SEED) for u in uids[: args.python_n]], args.python_n),
    )

    counts = plan_module.Counts.for_profiles(args.profiles)
    timings = {}
    plans = {}
    original = plan_module.NetRandom
    try:
        for name, rng in (("C NetRandom", sp.NetRandom), ("PyNetRandom", PyNetRandom)):
            plan_module.NetRandom = rng
            t, cpu = time.perf_counter(), time.process_time()
            plans[name] = plan_module.draw_plan(counts, SEED)
            timings[name] = (time.perf_counter() - t, time.process_time() - cpu)
    finally:
        plan_module.NetRandom = original
    same = plans["C NetRandom"] == plans["PyNetRandom"]
    print(f"draw_plan({args.profiles:_} profiles, seed {SEED}), plans equal: {same}")
    for name, (wall, cpu) in timings.items():
        print(f"  {name:12} {wall:8.2f} s wall  {cpu:8.2f} s CPU")
    if not same:
        sys.exit("C and Python plans differ")


if __name__ == "__main__":
    main()
