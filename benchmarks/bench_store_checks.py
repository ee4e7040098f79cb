"""What trusting an existing store costs (docs/stores.md): SQLite's checks at open and
the RocksDB iterator-status check on the scan phases.

    .venv/bin/python benchmarks/bench_store_checks.py --profiles 200000

SQLite: a store of N profiles of the benchmark's shape (bulk-loaded in one transaction:
the same schema, rows and indexes as the engine's inserts, only faster to make), then,
interleaved per round: ``PRAGMA quick_check`` (what the engine runs), ``PRAGMA
integrity_check`` (what it does not: it also compares every index with the table), the
whole-file CRC32 of the record of a clean close, and the engine's whole reopen (record,
schema, quick_check, connection).

RocksDB: a store of N profiles built through the engine, then the four scan bodies of
the workload (2000 queries each, limit 50) with three scans, A/B/C interleaved per round:
the key iterator with no status check (before), a raw iterator whose status is checked
after every scan, and the shipped scan (key iterator, status checked where it ran out).
Printed: medians and the median of per-round ratios to "before".
"""

from __future__ import annotations

import argparse
import sqlite3
import statistics
import tempfile
import time
import zlib
from itertools import islice
from pathlib import Path

import anyio

from asyncbench.engine import EngineConfig, opened
from asyncbench.engines.rocksdb import RocksDbEngine, RocksKv
from asyncbench.engines.sql_tables import DDL_SEPARATOR, RECORD_TABLE, record_schema
from asyncbench.engines.sqlite import DIALECT, LAYOUT, SqliteEngine, pragma_statements
from asyncbench.engines.store_dir import StoreDir
from asyncbench.workloads.profile_store.generate import create_many
from asyncbench.workloads.profile_store.kv_store import STORE_NAMES
from asyncbench.workloads.profile_store.plan import Counts, draw_plan
from asyncbench.workloads.profile_store.sql_store import PROFILES_TABLE
from asyncbench.workloads.profile_store.stores import profile_store

SEED = 570123434


def build_sqlite(d: Path, n: int) -> None:
    StoreDir(d, LAYOUT).reset()
    conn = sqlite3.connect(d / "store.db")
    conn.execute("PRAGMA journal_mode=WAL").fetchall()
    # as the engine makes it: the table record, then the profile store's table, recorded
    ddl = DIALECT.create(PROFILES_TABLE)
    conn.execute(record_schema(DIALECT))
    conn.execute(f"INSERT INTO {RECORD_TABLE} (name, ddl) VALUES (?, ?)", (PROFILES_TABLE.name, DDL_SEPARATOR.join(ddl)))
    for statement in ddl:
        conn.execute(statement)
    conn.commit()  # the record row's implicit transaction
    conn.execute("BEGIN")
    for start in range(1, n + 1, 10_000):
        rows = create_many(start, min(10_000, n + 1 - start), SEED)
        conn.executemany("INSERT INTO profiles VALUES (?,?,?,?,?,?,?,?,?)", rows)
    conn.execute("COMMIT")
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
    conn.close()
    StoreDir(d, LAYOUT).record_files()  # as the engine's clean close does


def sqlite_checks(d: Path, rounds: int) -> None:
    db = d / "store.db"
    pragmas = pragma_statements(SqliteEngine(EngineConfig("sqlite", d)).settings)

    def pragma(name: str) -> float:
        conn = sqlite3.connect(db)
        for p in pragmas:
            conn.execute(p).fetchall()
        t = time.perf_counter()
        assert conn.execute(f"PRAGMA {name}").fetchall() == [("ok",)]
        dt = time.perf_counter() - t
        conn.close()
        return dt

    def crc() -> float:
        t, x = time.perf_counter(), 0
        with open(db, "rb") as f:
            while chunk := f.read(1 << 20):
                x = zlib.crc32(chunk, x)
        return time.perf_counter() - t

    def reopen() -> float:
        async def main() -> float:
            t = time.perf_counter()
            async with opened(SqliteEngine(EngineConfig("sqlite", d)), False):
                return time.perf_counter() - t

        return anyio.run(main)

    res: dict[str, list[float]] = {"quick_check": [], "integrity_check": [], "crc32 of the file": [], "engine reopen": []}
    for _ in range(rounds):
        res["quick_check"].append(pragma("quick_check"))
        res["integrity_check"].append(pragma("integrity_check"))
        res["crc32 of the file"].append(crc())
        res["engine reopen"].append(reopen())
    print(f"SQLite {db.stat().st_size / 2**20:.1f} MiB, {rounds} interleaved rounds: median (min-max) s")
    for k, v in res.items():
        print(f"  {k:18s} {statistics.median(v):.3f} ({min(v):.3f}-{max(v):.3f})")


def before(self: RocksKv, start: bytes, last: bytes | None, limit: int) -> list[bytes]:
    keys = islice(self.db.keys(from_key=start), limit)
    if last is None:
        return list(keys)
    out = []
    for key in keys:
        if key > last:
            break
        out.append(key)
    return out


def raw(self: RocksKv, start: bytes, last: bytes | None, limit: int) -> list[bytes]:
    it = self.db.iter()
    it.seek(start)
    out: list[bytes] = []
    while len(out) < limit and it.valid():
        k = it.key()
        if last is not None and k > last:
            break
        out.append(k)
        it.next()
    it.status()
    return out


def rocksdb_scans(d: Path, n: int, rounds: int, nq: int) -> None:
    plan = draw_plan(Counts.for_profiles(n), SEED)
    queries, ranges = list(plan.stream("queries"))[:nq], list(plan.stream("ranges"))[:nq]
    shipped = RocksKv.scan
    variants = {"before": before, "raw+status": raw, "shipped": shipped}

    async def main() -> None:
        async with opened(RocksDbEngine(EngineConfig("rocksdb", d, {}, 50, SEED, stores=STORE_NAMES)), False) as e:
            s = profile_store(e.worker(0), e.limit)
            bodies = {
                "scan_country_status": lambda: s._scan_country_status(queries, []),
                "scan_created_at": lambda: s._scan_created_at(ranges, []),
                "scan_top_reputation": lambda: s._scan_top_reputation(nq, []),
                "query_created_at": lambda: s._query_created_at(ranges, []),
            }
            res = {(k, v): [] for k in bodies for v in variants}
            try:
                for r in range(rounds):
                    for k, body in bodies.items():
                        names = list(variants)[r % 3 :] + list(variants)[: r % 3]
                        outs = {}
                        for v in names:
                            RocksKv.scan = variants[v]  # type: ignore[method-assign]
                            t = time.perf_counter()
                            outs[v] = body()
                            res[(k, v)].append(time.perf_counter() - t)
                        assert outs["before"] == outs["raw+status"] == outs["shipped"]
            finally:
                RocksKv.scan = shipped  # type: ignore[method-assign]
            print(f"RocksDB {n:_d} profiles, {nq} queries per body, limit 50, {rounds} rounds: median s, paired ratio")
            for k in bodies:
                base = res[(k, "before")]
                cells = [f"before {statistics.median(base):.4f}"]
                for v in ("raw+status", "shipped"):
                    ratio = statistics.median(b / a for a, b in zip(base, res[(k, v)], strict=True))
                    cells.append(f"{v} {statistics.median(res[(k, v)]):.4f} (x{ratio:.3f})")
                print(f"  {k:20s} " + "  ".join(cells))

    anyio.run(main)


async def build_rocksdb(d: Path, n: int) -> None:
    async with opened(RocksDbEngine(EngineConfig("rocksdb", d, {}, 50, SEED, stores=STORE_NAMES)), True) as e:
        for start in range(1, n + 1, 1000):
            await profile_store(e.worker(0), e.limit).insert(create_many(start, min(1000, n + 1 - start), SEED), [])
        await e.stabilize()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--profiles", type=int, default=200_000)
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--queries", type=int, default=2_000)
    parser.add_argument("--only", choices=["sqlite", "rocksdb"], help="one engine only")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="asyncbench-store-checks-") as tmp:
        if args.only != "rocksdb":
            t = time.perf_counter()
            build_sqlite(Path(tmp) / "sqlite", args.profiles)
            print(f"built SQLite {args.profiles:_d} in {time.perf_counter() - t:.1f} s")
            sqlite_checks(Path(tmp) / "sqlite", args.rounds)
        if args.only != "sqlite":
            t = time.perf_counter()
            anyio.run(build_rocksdb, Path(tmp) / "rocksdb", args.profiles)
            print(f"built RocksDB {args.profiles:_d} in {time.perf_counter() - t:.1f} s")
            rocksdb_scans(Path(tmp) / "rocksdb", args.profiles, args.rounds, args.queries)


if __name__ == "__main__":
    main()
