"""Per-operation overhead of the RocksDB adapter against plain rocksdict calls.

Why: the adapter must not measure itself. It pays one ``anyio.to_thread`` hop per batch
and otherwise makes one rocksdict call per operation, so its cost per operation should sit
close to a plain loop calling rocksdict directly (target: under 15 % on point reads at
batch 1_000). Measured on the adapter's own handles and settings:

* point reads, after a full compaction (as the read phases run): ``--reads`` random ids
  drawn from ``--profiles`` stored profiles, the same ids for every variant:
  (a) a plain loop ``db.get(primary_key(uid))`` on the event-loop (main) thread, over
  the same batches (keeping each batch's values, as the adapter does),
  (b) the adapter's synchronous batch body called directly on that thread (no hop),
  (c) ``RocksDbEngine.read_by_id`` in batches of ``--batch`` (one thread hop per batch);
* inserts of ``--insert-profiles`` profiles into a fresh store (five puts per profile):
  (a) a plain loop of the five ``put`` calls on five rocksdict handles opened with the
  adapter's options, (c) ``RocksDbEngine.insert`` in batches of ``--batch``;
* the bare cost of one ``anyio.to_thread.run_sync`` hop.

Everything runs inside one ``anyio.run`` (asyncio with uvloop when installed). Variants
are interleaved, in a rotating order, after one warm-up round. On a shared machine other
processes shift single timings a lot, so both wall time and process CPU time are shown,
and the overhead is given three ways: ratio of the medians, median of the per-round
ratios (back-to-back runs see the same load), and ratio of the minima. Unpinned, the
worker thread may run on the other vCPU, whose speed under other tenants' load differs;
``--pin 0`` keeps every thread on one CPU and isolates what the adapter itself costs.
Usage::

    .venv/bin/python benchmarks/bench_rocksdb_overhead.py [--profiles 200000] [--reads 20000] [--runs 41]
"""

from __future__ import annotations

import argparse
import importlib.metadata
import importlib.util
import os
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path

import anyio
import anyio.to_thread
import rocksdict

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from asyncbench.engines.rocksdb import DB_NAMES, RocksDbEngine, rocksdb_version  # noqa: E402
from asyncbench.workloads.profile_store.profiles import (  # noqa: E402
    Profile,
    country_status_key,
    create_many,
    created_at_key,
    encode,
    primary_key,
    reputation_key,
)

from asyncbench.engine import EngineConfig  # noqa: E402

SEED = 570123434


def chunks(xs: Sequence, n: int) -> list[Sequence]:
    return [xs[i : i + n] for i in range(0, len(xs), n)]


def plain_reads(db: rocksdict.Rdict, uids: Sequence[int]) -> list[bytes]:
    """What anyone would write against rocksdict: one get per id, keep the found ones."""
    get = db.get
    out: list[bytes] = []
    append = out.append  # as tight as the adapter's own loop
    for uid in uids:
        value = get(primary_key(uid))
        if value is not None:
            append(value)
    return out


def plain_inserts(dbs: Sequence[rocksdict.Rdict], profiles: Sequence[Profile]) -> None:
    profiles_db, email, country_status, created_at, reputation = dbs
    for p in profiles:
        pk = primary_key(p[0])
        profiles_db.put(pk, encode(p))
        email.put(p[1].encode(), pk)
        country_status.put(country_status_key(p), pk)
        created_at.put(created_at_key(p), pk)
        reputation.put(reputation_key(p), pk)


def open_plain(engine: RocksDbEngine, root: Path) -> list[rocksdict.Rdict]:
    """Five rocksdict handles with exactly the adapter's options and write options."""
    write_opts = rocksdict.WriteOptions()
    write_opts.sync = False
    dbs = []
    for name in DB_NAMES:
        db = rocksdict.Rdict(str(root / name), engine._options())
        db.set_write_options(write_opts)
        dbs.append(db)
    return dbs


Samples = dict[str, list[tuple[float, float]]]  # label -> [(wall s, process CPU s) per op]


def clock() -> tuple[float, float]:
    return time.perf_counter(), time.process_time()


def per_op(start: tuple[float, float], ops: int) -> tuple[float, float]:
    """Wall and process-CPU seconds per operation since ``start``. CPU time counts every
    thread of the process (the loop, the worker, RocksDB's) but not time spent waiting
    for a core, so it is what the adapter costs even when other processes load the box."""
    wall, cpu = clock()
    return (wall - start[0]) / ops, (cpu - start[1]) / ops


async def timed(fn: Callable[[], Awaitable[object]], ops: int) -> tuple[float, float]:
    start = clock()
    await fn()
    return per_op(start, ops)


async def bench_reads(args: argparse.Namespace, root: Path) -> Samples:
    engine = RocksDbEngine(EngineConfig("rocksdb", root / "reads", {}, 50, SEED))
    await engine.open(reset=True)
    t = time.perf_counter()
    for start in range(1, args.profiles + 1, args.batch):
        await engine.insert(create_many(start, min(args.batch, args.profiles + 1 - start), SEED), [])
    load = time.perf_counter() - t
    await engine.stabilize()
    print(f"loaded {args.profiles:,} profiles in {load:.1f} s (adapter, batch {args.batch}), compacted")

    rng = random.Random(1)
    uids = [rng.randrange(1, args.profiles + 1) for _ in range(args.reads)]
    batches = chunks(uids, args.batch)
    db = engine._dbs[0]  # the profiles database
    expected = plain_reads(db, uids)

    async def plain() -> None:
        n = 0
        for b in batches:  # same batches: one long result list instead costs ~10 % more
            n += len(plain_reads(db, b))
        assert n == len(expected)

    async def body() -> None:
        n = 0
        for b in batches:
            n += len(engine._store.read_by_id(b, []))
        assert n == len(expected)

    async def adapter() -> None:
        n = 0
        for b in batches:
            n += len(await engine.read_by_id(b, []))
        assert n == len(expected)

    assert [v for b in batches for v in await engine.read_by_id(b, [])] == expected
    variants = {
        "(a) plain rocksdict loop": plain,
        "(b) adapter body, no hop": body,
        "(c) adapter read_by_id": adapter,
    }
    labels = list(variants)
    times: Samples = {k: [] for k in variants}
    for run in range(args.runs + 1):
        # rotate the order each round so no variant always runs first or last
        for label in labels[run % 3 :] + labels[: run % 3]:
            sample = await timed(variants[label], args.reads)
            if run:  # round 0 warms caches
                times[label].append(sample)
    await engine.close()
    return times


async def bench_inserts(args: argparse.Namespace, root: Path) -> Samples:
    profiles = create_many(1, args.insert_profiles, SEED)
    batches = chunks(profiles, args.batch)
    times: Samples = {"(a) plain rocksdict loop": [], "(c) adapter insert": []}
    for run in range(args.insert_runs):
        engine = RocksDbEngine(EngineConfig("rocksdb", root / f"ins-{run}-c", {}, 50, SEED))
        for label in sorted(times, reverse=bool(run % 2)):  # alternate which goes first
            if label.startswith("(a)"):
                dbs = open_plain(engine, root / f"ins-{run}-a")
                start = clock()
                plain_inserts(dbs, profiles)
                times[label].append(per_op(start, len(profiles)))
                for d in dbs:
                    d.close()
                del dbs
            else:
                await engine.open(reset=True)
                start = clock()
                for b in batches:
                    await engine.insert(b, [])
                times[label].append(per_op(start, len(profiles)))
                await engine.close()
    return times


async def bench_hop(n: int = 2000) -> float:
    samples = []
    for _ in range(5):
        t = time.perf_counter()
        for _ in range(n):
            await anyio.to_thread.run_sync(int)
        samples.append((time.perf_counter() - t) / n)
    return statistics.median(samples)


def report(title: str, times: Samples, unit_ops: str) -> None:
    """Per variant, wall and CPU medians, and the overhead against the first variant three
    ways: ratio of medians, median of per-round ratios (rounds run back to back, so this
    cancels load drift from other processes), and ratio of minima (least disturbed rounds)."""
    print(f"\n{title}")
    for kind, idx in (("wall", 0), ("cpu ", 1)):
        base = [s[idx] for s in next(iter(times.values()))]
        for label, pairs in times.items():
            samples = [s[idx] for s in pairs]
            med = statistics.median(samples)
            paired = statistics.median(s / b for s, b in zip(samples, base, strict=True))
            print(
                f"  {kind} {label:26} median {med * 1e6:7.3f} us/{unit_ops} (min {min(samples) * 1e6:7.3f})"
                f" {1 / med:10,.0f} {unit_ops}/s | overhead: medians"
                f" {100 * (med / statistics.median(base) - 1):+5.1f} %, paired {100 * (paired - 1):+5.1f} %,"
                f" minima {100 * (min(samples) / min(base) - 1):+5.1f} %"
            )


async def main(args: argparse.Namespace, backend: str) -> None:
    pinned = f"; pinned to CPU {args.pin}" if args.pin is not None else ""
    print(
        f"rocksdict {importlib.metadata.version('rocksdict')} / RocksDB {rocksdb_version()};"
        f" event loop: {backend}{pinned}"
    )
    with tempfile.TemporaryDirectory(prefix="bench-rocksdb-", dir=args.dir) as tmp:
        root = Path(tmp)
        hop = await bench_hop()
        print(
            f"one anyio.to_thread hop: {hop * 1e6:.1f} us (= {hop / args.batch * 1e6:.3f} us/op at batch {args.batch})"
        )
        reads = await bench_reads(args, root)
        report(f"point reads: {args.reads:,} random ids over {args.profiles:,} profiles", reads, "op")
        inserts = await bench_inserts(args, root)
        report(
            f"inserts: {args.insert_profiles:,} profiles x 5 puts, {args.insert_runs} fresh stores each",
            inserts,
            "profile",
        )


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--profiles", type=int, default=200_000)
    p.add_argument("--reads", type=int, default=20_000, help="reads per round")
    p.add_argument("--batch", type=int, default=1_000)
    p.add_argument("--runs", type=int, default=41, help="timed read rounds")
    p.add_argument("--insert-profiles", type=int, default=100_000)
    p.add_argument("--insert-runs", type=int, default=3)
    p.add_argument("--dir", default=None, help="parent directory for the temporary stores")
    p.add_argument(
        "--pin",
        type=int,
        default=None,
        metavar="CPU",
        help="run every thread on this one CPU: the loop and the worker then share a core, so a"
        " slower or busier other vCPU cannot pass for adapter overhead",
    )
    return p.parse_args()


if __name__ == "__main__":
    arguments = parse_args()
    if arguments.pin is not None:  # before any thread starts: threads inherit the mask
        os.sched_setaffinity(0, {arguments.pin})
    uvloop = importlib.util.find_spec("uvloop") is not None
    anyio.run(
        main,
        arguments,
        "asyncio+uvloop" if uvloop else "asyncio",
        backend="asyncio",
        backend_options={"use_uvloop": uvloop},
    )
