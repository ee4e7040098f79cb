"""Per-operation overhead of the SQLite adapter against the stdlib sqlite3 module.

Why: the adapter must not measure itself. It pays one aiosqlite thread hop per batch of
operations and otherwise runs one statement per operation, so its cost per operation should
sit within a few percent of a plain stdlib loop. This script measures that, on the adapter's
own settings (WAL, synchronous=NORMAL, same cache/mmap PRAGMAs):

* point reads: ``--profiles`` rows loaded once; ``--reads`` random ids read by
  (a) a plain stdlib loop ``conn.execute(SELECT ... WHERE user_id=?).fetchone()``,
  (b) the adapter's batch body called directly on the event-loop thread (no hop), and
  (c) ``SqliteEngine.read_by_id`` in batches of ``--batch`` under anyio (uvloop if present);
* inserts (autocommit, one transaction per row) into a fresh database: (a) a plain stdlib
  loop of ``conn.execute(INSERT ...)``, (c) ``SqliteEngine.insert`` in batches.

Runs are interleaved (a, b, c, a, b, c ...) after one warm-up round, and medians are
reported. Usage::

    .venv/bin/python benchmarks/bench_sqlite_overhead.py [--profiles 200000] [--runs 5]
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
from collections.abc import Callable, Sequence
from pathlib import Path

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from asyncbench.engine import EngineConfig  # noqa: E402
from engines.sqlite import (  # noqa: E402
    SQL_BY_ID,
    SQL_INSERT,
    SqliteEngine,
    configure,
    pragma_statements,
    read_batch,
    validate_settings,
)
from workloads.profiles import Profile, create_many  # noqa: E402

SEED = 570123434


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


def timed(fn: Callable[[], object]) -> tuple[float, object]:
    t = time.perf_counter()
    result = fn()
    return time.perf_counter() - t, result


async def atimed(fn: Callable[[], object]) -> tuple[float, object]:
    t = time.perf_counter()
    result = await fn()
    return time.perf_counter() - t, result


def engine_for(data_dir: Path) -> SqliteEngine:
    return SqliteEngine(EngineConfig("sqlite", data_dir, {}, 50, SEED))


async def bench_reads(args: argparse.Namespace, root: Path) -> dict[str, list[float]]:
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
    uids = [rng.randint(1, args.profiles) for _ in range(args.reads)]
    batches = chunks(uids, args.batch)
    plain = stdlib_connect(engine.path)

    async def adapter() -> int:
        n = 0
        for b in batches:
            n += len(await engine.read_by_id(b))
        return n

    def body() -> int:
        return sum(len(read_batch(plain, SQL_BY_ID, b)) for b in batches)

    times: dict[str, list[float]] = {"stdlib loop": [], "batch body, no hop": [], "adapter": []}
    for run in range(args.runs + 1):  # run 0 warms caches and is dropped
        t_plain, n_plain = timed(lambda: len(stdlib_reads(plain, uids)))
        t_body, n_body = timed(body)
        t_adapter, n_adapter = await atimed(adapter)
        if not n_plain == n_body == n_adapter == len(uids):
            raise SystemExit(f"row counts differ: {n_plain} {n_body} {n_adapter} of {len(uids)}")
        if run:
            times["stdlib loop"].append(t_plain)
            times["batch body, no hop"].append(t_body)
            times["adapter"].append(t_adapter)
    plain.close()
    await engine.close()
    return times


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


async def bench_inserts(args: argparse.Namespace, root: Path) -> dict[str, list[float]]:
    profiles = create_many(1, args.inserts, SEED)
    batches = chunks(profiles, args.batch)
    times: dict[str, list[float]] = {"stdlib loop": [], "adapter": []}
    for run in range(args.runs + 1):
        d = root / f"ins-plain-{run}"
        d.mkdir()
        conn = stdlib_connect(d / "profiles.db")
        t_plain, _ = timed(lambda conn=conn: stdlib_inserts(conn, profiles))
        assert conn.execute("SELECT COUNT(*) FROM profiles").fetchone()[0] == len(profiles)
        conn.close()
        shutil.rmtree(d)

        engine = engine_for(root / f"ins-adapter-{run}")
        await engine.open(reset=True)
        t = time.perf_counter()
        for b in batches:
            await engine.insert(b)
        t_adapter = time.perf_counter() - t
        assert await engine.count() == len(profiles)
        await engine.close()
        shutil.rmtree(engine.data_dir)
        if run:
            times["stdlib loop"].append(t_plain)
            times["adapter"].append(t_adapter)
    return times


def report(title: str, ops: int, times: dict[str, list[float]]) -> None:
    base = statistics.median(times["stdlib loop"])
    print(f"\n{title}: {ops:_d} ops, median of {len(times['stdlib loop'])} runs")
    print(f"  {'variant':22} {'median s':>9} {'us/op':>8} {'ops/s':>10} {'vs stdlib':>10}  runs (s)")
    for name, ts in times.items():
        med = statistics.median(ts)
        runs = " ".join(f"{t:.3f}" for t in ts)
        print(f"  {name:22} {med:9.3f} {med / ops * 1e6:8.2f} {ops / med:10_.0f} {med / base:9.3f}x  {runs}")
    extra = statistics.median(times["adapter"]) - base
    print(f"  adapter overhead: {extra / ops * 1e6:+.2f} us/op ({extra / base * 100:+.1f}%)")


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
        report(f"point reads ({args.profiles:_d} profiles loaded)", args.reads, reads)
        if args.inserts:
            inserts = await bench_inserts(args, root)
            report("inserts into a fresh database (autocommit, one transaction each)", args.inserts, inserts)
    finally:
        if not args.data_dir:
            shutil.rmtree(root, ignore_errors=True)


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--profiles", type=int, default=200_000, help="rows loaded for the read test")
    p.add_argument("--reads", type=int, default=200_000, help="point reads per run")
    p.add_argument("--inserts", type=int, default=50_000, help="autocommit inserts per run (0: skip)")
    p.add_argument("--batch", type=int, default=1_000, help="operations per adapter call")
    p.add_argument("--runs", type=int, default=5, help="measured runs per variant (after a warm-up)")
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
