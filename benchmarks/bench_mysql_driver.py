"""Per-query cost of the asyncio MySQL drivers against a running server, to pick one.

The mysql engine pays one client round trip per operation, so the driver's own per-query
overhead (packet building, escaping, row decoding, awaits) is part of every number it
reports. This measures the shapes the engine runs, one statement at a time on one
connection, exactly as a batch loop would:

- point SELECT of a full row by primary key,
- single-row INSERT with autocommit,
- a 50-row ordered index query (row decoding dominates).

Variants: aiomysql (pure Python, PyMySQL protocol code), asyncmy text protocol (Cython),
asyncmy with its statement cache (transparent server-side prepared statements, binary
protocol). Start a server first:

    eval "$(scripts/mysql-server start)"
    .venv/bin/python benchmarks/bench_mysql_driver.py [--n 4000] [--repeat 3] [--loop uvloop]
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.metadata
import os
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from workloads.profiles import create_many  # noqa: E402

TABLE = "bench_driver"
DDL = f"""CREATE TABLE {TABLE} (
  user_id BIGINT NOT NULL PRIMARY KEY, email VARCHAR(64) NOT NULL, country CHAR(2) NOT NULL,
  status VARCHAR(16) NOT NULL, created_at BIGINT NOT NULL, last_login BIGINT NOT NULL,
  reputation INT NOT NULL, display_name VARCHAR(64) NOT NULL, bio VARCHAR(255) NOT NULL,
  UNIQUE KEY (email), KEY rep (reputation DESC, user_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin"""
COLS = "user_id, email, country, status, created_at, last_login, reputation, display_name, bio"
INSERT = f"INSERT INTO {TABLE} ({COLS}) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)"
SELECT = f"SELECT {COLS} FROM {TABLE} WHERE user_id = %s"
TOP = f"SELECT {COLS} FROM {TABLE} ORDER BY reputation DESC, user_id LIMIT 50"


def settings() -> dict:
    return {
        "host": os.environ.get("MYSQL_HOST", "127.0.0.1"),
        "port": int(os.environ.get("MYSQL_PORT", "3306")),
        "user": os.environ.get("MYSQL_USER", "root"),
        "password": os.environ.get("MYSQL_PASSWORD", ""),
        "db": os.environ.get("MYSQL_DATABASE", "asyncbench"),
    }


async def connect(variant: str):  # noqa: ANN201 - either driver's connection
    s = settings()
    if variant == "aiomysql":
        import aiomysql

        return await aiomysql.connect(
            host=s["host"], port=s["port"], user=s["user"], password=s["password"], db=s["db"],
            autocommit=True, charset="utf8mb4",
        )  # fmt: skip
    import asyncmy

    return await asyncmy.connect(
        host=s["host"], port=s["port"], user=s["user"], password=s["password"], database=s["db"],
        autocommit=True, charset="utf8mb4", stmt_cache_size=16 if variant == "asyncmy-prepared" else 0,
    )  # fmt: skip


async def timed(fn: Callable[[], Awaitable[int]], repeat: int) -> float:
    """Median microseconds per op over ``repeat`` runs."""
    per_op = []
    for _ in range(repeat):
        t = time.perf_counter()
        n = await fn()
        per_op.append((time.perf_counter() - t) / n * 1e6)
    return statistics.median(per_op)


async def bench(variant: str, n: int, repeat: int) -> dict[str, float]:
    conn = await connect(variant)
    cur = await conn.cursor() if variant == "aiomysql" else conn.cursor()
    await cur.execute("SET SESSION sql_notes = 0")  # DROP IF EXISTS of nothing: no warning round trip
    await cur.execute(f"DROP TABLE IF EXISTS {TABLE}")
    await cur.execute(DDL)
    runs = {"next": 1}

    async def inserts() -> int:
        start = runs["next"]
        runs["next"] += n
        for p in create_many(start, n, 570123434):
            await cur.execute(INSERT, p)
        return n

    async def point_selects() -> int:
        total = runs["next"] - 1
        ok = 0
        for uid in range(1, n + 1):
            await cur.execute(SELECT, ((uid * 7919) % total + 1,))
            row = await cur.fetchone()
            ok += row is not None and isinstance(row[0], int)
        assert ok == n, (ok, n)
        return n

    async def top_queries() -> int:
        m = max(1, n // 10)
        for _ in range(m):
            await cur.execute(TOP, ())  # empty args (not None) keep asyncmy's prepared path
            rows = await cur.fetchall()
            assert len(rows) == 50 and isinstance(rows[0][6], int)
        return m

    insert = await timed(inserts, repeat)
    await cur.execute(f"ANALYZE TABLE {TABLE}")  # fresh statistics: the top-50 plan uses the index
    await cur.fetchall()
    out = {
        "insert": insert,
        "point_select": await timed(point_selects, repeat),
        "top50_query": await timed(top_queries, repeat),
    }
    await cur.execute(f"DROP TABLE {TABLE}")
    await cur.close()
    await conn.ensure_closed()
    return out


def version(dist: str) -> str:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return "missing"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=4000, help="operations per run (top-50 runs n/10)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--loop", choices=("asyncio", "uvloop"), default="asyncio")
    ap.add_argument("--variants", default="aiomysql,asyncmy-text,asyncmy-prepared")
    args = ap.parse_args()
    if args.loop == "uvloop":
        import uvloop

        asyncio.set_event_loop_policy(uvloop.EventLoopPolicy())
    print(
        f"python {sys.version.split()[0]}, loop {args.loop}, aiomysql {version('aiomysql')}, "
        f"asyncmy {version('asyncmy')}, PyMySQL {version('PyMySQL')}; n={args.n}, repeat={args.repeat}, "
        "median us/op"
    )
    print(f"{'variant':18} {'insert':>10} {'point_select':>13} {'top50_query':>12}")
    for variant in args.variants.split(","):
        r = asyncio.run(bench(variant, args.n, args.repeat))
        print(f"{variant:18} {r['insert']:10.1f} {r['point_select']:13.1f} {r['top50_query']:12.1f}")


if __name__ == "__main__":
    main()
