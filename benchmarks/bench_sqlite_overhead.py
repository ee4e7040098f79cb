"""Per-operation overhead of the SQLite adapter against the stdlib sqlite3 module.

Why: the adapter must not measure itself. It pays one aiosqlite thread hop per batch of
operations and otherwise runs one statement per operation, so its cost per operation should
sit within a few percent of a plain stdlib loop. This script measures that, on the adapter's
own settings (WAL, synchronous=NORMAL, same cache/mmap PRAGMAs):

* point reads: ``--profiles`` rows loaded once; per run ``--reads`` random ids read by
  (a) a plain stdlib loop ``conn.execute(SELECT ... WHERE user_id=?).fetchone()``,
  (b) the adapter's batch body called directly on the event-loop thread (no hop), and
  (c) ``SqliteEngine.read_by_id`` in batches of ``--batch`` under anyio (uvloop if present);
* inserts (autocommit, one transaction per row) of ``--inserts`` profiles into a fresh
  database per run and variant, the same three ways (the adapter's body uses
  ``executemany``, which still commits row by row);
* the cost of one empty hop to aiosqlite's thread, i.e. what a batch amortizes.

One warm-up round is dropped; each round runs all variants in a rotated order and the
adapter is compared with the stdlib loop of the same round (median of the paired
differences), in wall time and in process CPU time (steadier when other processes share
the machine). Usage::

    .venv/bin/python benchmarks/bench_sqlite_overhead.py [--profiles 200000] [--reads 100000] [--inserts 20000] [--runs 9]
"""

from __future__ import annotations

import argparse
import random
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from asyncbench.engines.sql_profile_store import Statements, sync_insert, sync_read  # noqa: E402
from asyncbench.engines.sqlite import (  # noqa: E402
    DIALECT,
    SqliteEngine,
    configure,
    pragma_statements,
    validate_settings,
)
from asyncbench.workloads.profile_store.generate import create_many  # noqa: E402
from asyncbench.workloads.profile_store.profiles import Profile

from asyncbench.engine import EngineConfig  # noqa: E402

SEED = 570123434
SQL = Statements.build(DIALECT, 50)
SQL_BY_ID, SQL_INSERT = SQL.by_id, SQL.insert


def chunks(xs: Sequence, n: int) -> list[Sequence]:
    return [xs[i : i + n] for i in range(0, len(xs), n)]


def stdlib_connect(path: Path) -> sqlite3.Connection:
    """A plain sqlite3 connection with exactly the adapter's PRAGMAs and schema."""
    conn = sqlite3.connect(path, isolation_level=None)
    configure(conn, pragma_statements(validate_settings(SqliteEngine.default_settings)))
    return conn


def stdlib_reads(conn: sqlite3.Connection, uids: Sequence[int]) -> list:
    out = []
    for uid in uids:
        row = conn.execute(SQL_BY_ID, (uid,)).fetchone()
        if row is not None:
            out.append(row)
    return out


def stdlib_inserts(conn: sqlite3.Connection, profiles: Sequence[Profile]) -> None:
    for p in profiles:
        conn.execute(SQL_INSERT, p)


def timed(fn: Callable[[], object]) -> tuple[float, float, object]:
    """(wall seconds, process CPU seconds, result). CPU time counts every thread of this
    process and nothing of the other processes sharing the machine, so it is the steadier
    figure on a busy host; wall time is what a run reports."""
    w, c = time.perf_counter(), time.process_time()
    result = fn()
    return time.perf_counter() - w, time.process_time() - c, result


async def atimed(fn: Callable[[], Awaitable[object]]) -> tuple[float, float, object]:
    w, c = time.perf_counter(), time.process_time()
    result = await fn()
    return time.perf_counter() - w, time.process_time() - c, result


def engine_for(data_dir: Path) -> SqliteEngine:
    return SqliteEngine(EngineConfig("sqlite", data_dir, {}, 50, SEED))


#: A variant runs one measured round and returns (wall s, cpu s, operations done).
Variant = Callable[[int], Awaitable[tuple[float, float, int]]]
Samples = dict[str, list[tuple[float, float]]]


async def interleave(variants: dict[str, Variant], runs: int, ops: int) -> Samples:
    """Round 0 warms up and is dropped; each round runs every variant once, in an order
    rotated by round so no variant always follows the same one."""
    names = list(variants)
    samples: Samples = {name: [] for name in names}
    for rnd in range(runs + 1):
        k = rnd % len(names)
        for name in names[k:] + names[:k]:
            wall, cpu, n = await variants[name](rnd)
            if n != ops:
                raise SystemExit(f"{name}: {n} operations done, expected {ops}")
            if rnd:
                samples[name].append((wall, cpu))
    return samples


async def bench_reads(args: argparse.Namespace, root: Path) -> Samples:
    data_dir = root / "reads"
    engine = engine_for(data_dir)
    await engine.open(reset=True)
    # Setup only (not measured): bulk load in one transaction.
    profiles = create_many(1, args.profiles, SEED)
    loader = stdlib_connect(engine.path)
    loader.execute("BEGIN")
    loader.executemany(SQL_INSERT, profiles)
    loader.execute("COMMIT")
    loader.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    loader.close()
    del profiles

    rng = random.Random(SEED)
    rounds = [[rng.randint(1, args.profiles) for _ in range(args.reads)] for _ in range(args.runs + 1)]
    plain = stdlib_connect(engine.path)

    async def stdlib(rnd: int) -> tuple[float, float, int]:
        wall, cpu, rows = timed(lambda: stdlib_reads(plain, rounds[rnd]))
        return wall, cpu, len(rows)

    async def body(rnd: int) -> tuple[float, float, int]:
        batches = chunks(rounds[rnd], args.batch)
        return timed(lambda: sum(len(sync_read(plain, SQL_BY_ID, b, [])) for b in batches))

    async def adapter(rnd: int) -> tuple[float, float, int]:
        batches = chunks(rounds[rnd], args.batch)

        async def go() -> int:
            n = 0
            for b in batches:
                n += len(await engine.read_by_id(b, []))
            return n

        return await atimed(go)

    try:
        return await interleave(
            {"stdlib loop": stdlib, "batch body, no hop": body, "adapter": adapter}, args.runs, args.reads
        )
    finally:
        plain.close()
        await engine.close()


async def bench_inserts(args: argparse.Namespace, root: Path) -> Samples:
    """Each round inserts the same profiles into a fresh database per variant."""
    profiles = create_many(1, args.inserts, SEED)
    batches = chunks(profiles, args.batch)

    def fresh_stdlib(tag: str) -> tuple[Path, sqlite3.Connection]:
        d = Path(tempfile.mkdtemp(prefix=tag, dir=root))
        return d, stdlib_connect(d / "profiles.db")

    def count_and_drop(d: Path, conn: sqlite3.Connection) -> int:
        n = conn.execute("SELECT COUNT(*) FROM profiles").fetchone()[0]
        conn.close()
        shutil.rmtree(d)
        return n

    async def stdlib(rnd: int) -> tuple[float, float, int]:
        d, conn = fresh_stdlib("plain-")
        wall, cpu, _ = timed(lambda: stdlib_inserts(conn, profiles))
        return wall, cpu, count_and_drop(d, conn)

    async def body(rnd: int) -> tuple[float, float, int]:
        d, conn = fresh_stdlib("body-")

        def go() -> None:
            for b in batches:
                sync_insert(conn, SQL, b, [])

        wall, cpu, _ = timed(go)
        return wall, cpu, count_and_drop(d, conn)

    async def adapter(rnd: int) -> tuple[float, float, int]:
        engine = engine_for(Path(tempfile.mkdtemp(prefix="adapter-", dir=root)))
        await engine.open(reset=True)

        async def go() -> None:
            for b in batches:
                await engine.insert(b, [])

        wall, cpu, _ = await atimed(go)
        n = await engine.count()
        await engine.close()
        shutil.rmtree(engine.data_dir)
        return wall, cpu, n

    return await interleave(
        {"stdlib loop": stdlib, "batch body, no hop": body, "adapter": adapter}, args.runs, args.inserts
    )


def _nothing(conn: sqlite3.Connection) -> None:
    return None


async def bench_hop(root: Path, calls: int = 5_000) -> float:
    """Seconds per empty round trip to the connection thread: the cost one batch amortizes."""
    engine = engine_for(root / "hop")
    await engine.open(reset=True)
    conn = engine._db
    per_call = []
    for _ in range(5):
        t = time.perf_counter()
        for _ in range(calls):
            await conn.run(_nothing)
        per_call.append((time.perf_counter() - t) / calls)
    await engine.close()
    return statistics.median(per_call)


def report(title: str, ops: int, samples: Samples) -> None:
    base = samples["stdlib loop"]
    runs = len(base)
    print(f"\n{title}: {ops:_d} ops per run, {runs} runs (+1 warm-up), variants interleaved")
    print(
        f"  {'variant':20} {'wall med s':>10} {'wall min s':>10} {'us/op med':>9} {'ops/s med':>10} "
        f"{'cpu us/op':>9} {'wall ratio':>10} {'cpu ratio':>9}"
    )
    for name, ts in samples.items():
        wall = statistics.median(w for w, _ in ts)
        cpu = statistics.median(c for _, c in ts)
        # Paired per round: each variant against the stdlib loop of the same round.
        wall_ratio = statistics.median(w / b[0] for (w, _), b in zip(ts, base, strict=True))
        cpu_ratio = statistics.median(c / b[1] for (_, c), b in zip(ts, base, strict=True))
        print(
            f"  {name:20} {wall:10.3f} {min(w for w, _ in ts):10.3f} {wall / ops * 1e6:9.2f} "
            f"{ops / wall:10_.0f} {cpu / ops * 1e6:9.2f} {wall_ratio:9.3f}x {cpu_ratio:8.3f}x"
        )
    adapter = samples["adapter"]
    d_wall = statistics.median(a[0] - b[0] for a, b in zip(adapter, base, strict=True)) / ops * 1e6
    d_cpu = statistics.median(a[1] - b[1] for a, b in zip(adapter, base, strict=True)) / ops * 1e6
    print(f"  adapter - stdlib loop, median of paired runs: wall {d_wall:+.2f} us/op, cpu {d_cpu:+.2f} us/op")


async def main(args: argparse.Namespace) -> None:
    root = Path(args.data_dir) if args.data_dir else Path(tempfile.mkdtemp(prefix="bench-sqlite-"))
    root.mkdir(parents=True, exist_ok=True)
    try:
        print(
            f"sqlite {sqlite3.sqlite_version}, aiosqlite {SqliteEngine.library_versions()['aiosqlite']}, "
            f"event loop: {args.loop}, batch {args.batch}, data dir {root}"
        )
        hop = await bench_hop(root)
        print(
            f"\none thread hop (empty batch): {hop * 1e6:.1f} us; "
            f"per operation at batch {args.batch}: {hop / args.batch * 1e6:.3f} us"
        )
        reads = await bench_reads(args, root)
        report(f"point reads, {args.profiles:_d} profiles loaded", args.reads, reads)
        if args.inserts:
            inserts = await bench_inserts(args, root)
            report("inserts into a fresh database, autocommit (one transaction each)", args.inserts, inserts)
    finally:
        if not args.data_dir:
            shutil.rmtree(root, ignore_errors=True)


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--profiles", type=int, default=200_000, help="rows loaded for the read test")
    p.add_argument("--reads", type=int, default=100_000, help="point reads per run")
    p.add_argument("--inserts", type=int, default=20_000, help="autocommit inserts per run (0: skip)")
    p.add_argument("--batch", type=int, default=1_000, help="operations per adapter call")
    p.add_argument("--runs", type=int, default=9, help="measured runs per variant (after a warm-up)")
    p.add_argument("--data-dir", help="where the databases go (default: a temp dir, removed after)")
    return p.parse_args(argv)


def run() -> None:
    args = parse_args()
    try:
        import uvloop  # noqa: F401

        args.loop = "uvloop"
        options = {"use_uvloop": True}
    except ImportError:
        args.loop = "asyncio"
        options = {}
    anyio.run(main, args, backend="asyncio", backend_options=options)


if __name__ == "__main__":
    run()
