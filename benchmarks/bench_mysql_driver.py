"""Per-query cost of the asyncio MySQL drivers against a running server, to pick one.

Why: the mysql engine pays one client round trip per operation, so the driver's own cost
per query (packet building, escaping, row decoding, awaits) is part of every number it
reports. This measures the shapes the engine runs, one statement at a time on one
connection, exactly as a batch loop would:

- ``insert``: single-row INSERT with autocommit (server side dominated by the log flush),
- ``point``: SELECT of a full row by primary key,
- ``top50``: the 50-row ordered index query (row decoding dominates).

Variants: ``aiomysql`` (pure Python, PyMySQL's protocol code), ``asyncmy-text`` (Cython,
text protocol) and ``asyncmy-prepared`` (asyncmy's statement cache: the same ``%s``
statements run as server-side prepared statements in the binary protocol; what the
engine uses). Each variant has its own connection and table. One warm-up round is
dropped; every round runs all variants in a rotated order, and the medians over rounds are
printed as wall time and as this process's CPU time per query (the client's own cost;
steadier when other processes share the machine). Start a server first::

    eval "$(scripts/mysql-server start)"
    .venv/bin/python benchmarks/bench_mysql_driver.py [--n 2000] [--inserts 400] [--rounds 5] [--loop uvloop]
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.metadata
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from asyncbench.workloads.profile_store.generate import create_many  # noqa: E402

SEED = 570123434
VARIANTS = ("aiomysql", "asyncmy-text", "asyncmy-prepared")
SHAPES = ("insert", "point", "top50")
COLS = "user_id, email, country, status, created_at, last_login, reputation, display_name, bio"


def ddl(table: str) -> str:
    return f"""CREATE TABLE {table} (
  user_id BIGINT NOT NULL PRIMARY KEY, email VARCHAR(255) NOT NULL, country VARCHAR(16) NOT NULL,
  status VARCHAR(16) NOT NULL, created_at BIGINT NOT NULL, last_login BIGINT NOT NULL,
  reputation INT NOT NULL, display_name VARCHAR(255) NOT NULL, bio VARCHAR(4096) NOT NULL,
  UNIQUE KEY (email), KEY rep (reputation DESC, user_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin"""


def settings() -> dict[str, Any]:
    return {
        "host": os.environ.get("MYSQL_HOST", "127.0.0.1"),
        "port": int(os.environ.get("MYSQL_PORT", "3306")),
        "user": os.environ.get("MYSQL_USER", "root"),
        "password": os.environ.get("MYSQL_PASSWORD", ""),
        "db": os.environ.get("MYSQL_DATABASE", "asyncbench"),
    }


class Client:
    """One variant: its connection, cursor, table and the three timed loops."""

    def __init__(self, variant: str) -> None:
        self.variant = variant
        self.table = "bench_driver_" + variant.replace("-", "_")
        self.insert_sql = f"INSERT INTO {self.table} ({COLS}) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)"
        self.point_sql = f"SELECT {COLS} FROM {self.table} WHERE user_id = %s"
        self.top_sql = (
            f"SELECT {COLS} FROM {self.table} FORCE INDEX (rep) ORDER BY reputation DESC, user_id LIMIT 50"
        )
        self.next_uid = 1

    async def open(self) -> None:
        s = settings()
        if self.variant == "aiomysql":
            import aiomysql

            self.conn = await aiomysql.connect(
                host=s["host"], port=s["port"], user=s["user"], password=s["password"], db=s["db"],
                autocommit=True, charset="utf8mb4",
            )  # fmt: skip
            self.cur = await self.conn.cursor()
        else:
            import asyncmy

            self.conn = await asyncmy.connect(
                host=s["host"], port=s["port"], user=s["user"], password=s["password"], database=s["db"],
                autocommit=True, charset="utf8mb4",
                stmt_cache_size=16 if self.variant == "asyncmy-prepared" else 0,
            )  # fmt: skip
            self.cur = self.conn.cursor()
        await self.cur.execute("SET SESSION sql_notes = 0")  # DROP IF EXISTS of nothing: no warning
        await self.cur.execute(f"DROP TABLE IF EXISTS {self.table}")
        await self.cur.execute(ddl(self.table))

    async def close(self) -> None:
        await self.cur.execute(f"DROP TABLE {self.table}")
        await self.cur.close()
        await self.conn.ensure_closed()

    async def insert(self, n: int) -> int:
        profiles = create_many(self.next_uid, n, SEED)
        self.next_uid += n
        execute, sql = self.cur.execute, self.insert_sql
        for p in profiles:
            await execute(sql, p)
        return n

    async def point(self, n: int) -> int:
        total = self.next_uid - 1
        execute, fetchone, sql = self.cur.execute, self.cur.fetchone, self.point_sql
        for i in range(1, n + 1):
            await execute(sql, ((i * 7919) % total + 1,))
            row = await fetchone()
            if row is None or type(row[0]) is not int:
                raise AssertionError(f"{self.variant}: bad row {row!r}")
        return n

    async def top50(self, n: int) -> int:
        m = max(1, n // 10)
        execute, fetchall, sql = self.cur.execute, self.cur.fetchall, self.top_sql
        for _ in range(m):
            await execute(sql, ())  # empty args (not None) keep asyncmy's prepared path
            rows = await fetchall()
            if len(rows) != 50 or type(rows[0][6]) is not int:
                raise AssertionError(f"{self.variant}: bad top-50 result")
        return m


async def run(
    variants: list[str], n: int, inserts: int, rounds: int
) -> dict[tuple[str, str], dict[str, list[float]]]:
    clients = [Client(v) for v in variants]
    for c in clients:
        await c.open()
        await c.insert(n)  # rows to read before the first timed round
    samples: dict[tuple[str, str], dict[str, list[float]]] = {
        (v, s): {"wall": [], "cpu": []} for v in variants for s in SHAPES
    }
    for r in range(rounds + 1):  # round 0 is the warm-up
        order = clients[r % len(clients) :] + clients[: r % len(clients)]
        for c in order:
            for shape in SHAPES:
                t, cpu = time.perf_counter(), time.process_time()
                ops = await getattr(c, shape)(inserts if shape == "insert" else n)
                wall_us = (time.perf_counter() - t) / ops * 1e6
                cpu_us = (time.process_time() - cpu) / ops * 1e6
                if r:
                    samples[c.variant, shape]["wall"].append(wall_us)
                    samples[c.variant, shape]["cpu"].append(cpu_us)
    for c in clients:
        await c.close()
    return samples


def version(dist: str) -> str:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return "missing"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=2000, help="point reads per round (top50: n/10)")
    ap.add_argument("--inserts", type=int, default=400, help="inserts per round (each waits for a log flush)")
    ap.add_argument("--rounds", type=int, default=5, help="timed rounds after one warm-up round")
    ap.add_argument("--loop", choices=("asyncio", "uvloop"), default="asyncio")
    ap.add_argument("--variants", default=",".join(VARIANTS))
    args = ap.parse_args()
    if args.loop == "uvloop":
        import uvloop

        asyncio.set_event_loop_policy(uvloop.EventLoopPolicy())
    variants = args.variants.split(",")
    samples = asyncio.run(run(variants, args.n, args.inserts, args.rounds))
    print(
        f"python {sys.version.split()[0]}, loop {args.loop}, aiomysql {version('aiomysql')}, "
        f"asyncmy {version('asyncmy')}, PyMySQL {version('PyMySQL')}; n={args.n}, "
        f"inserts={args.inserts}, rounds={args.rounds}"
    )
    print("median microseconds per query over rounds: wall (client CPU)")
    print(f"{'variant':18}" + "".join(f"{s:>20}" for s in SHAPES))
    for v in variants:
        cells = []
        for s in SHAPES:
            d = samples[v, s]
            cells.append(f"{statistics.median(d['wall']):10.1f} ({statistics.median(d['cpu']):6.1f})")
        print(f"{v:18}" + "".join(f"{c:>20}" for c in cells))


if __name__ == "__main__":
    main()
