"""Per-query cost of the asyncio PostgreSQL drivers against a running server, to pick one.

Why: a PostgreSQL engine pays one client round trip per operation, so the driver's own
cost per query (message building, parameter encoding, row decoding, awaits) is part of
every number it reports. This measures the two read shapes the engine runs, one statement
at a time on one connection, exactly as a batch loop would:

- ``insert``: single-row INSERT in autocommit (the engine's write; with the session's
  ``synchronous_commit = off``, as the engine runs, so the server does not wait for a flush),
- ``point``: SELECT of a full row by primary key,
- ``top50``: the 50-row ordered index query (``ORDER BY reputation DESC, user_id LIMIT 50``;
  row decoding dominates).

Variants, each on its own connection, all with server-side prepared statements:
``asyncpg`` (``Connection.prepare``: binary protocol, Cython), ``psycopg`` (psycopg 3
``AsyncConnection`` in autocommit, ``execute(..., prepare=True)``, text results) and
``psycopg-binary`` (the same with ``binary=True`` results). One table of ``--rows``
profiles is shared by all. One warm-up round is dropped; every round runs all variants in
a rotated order, and the medians over rounds are printed as wall time and as this
process's CPU time per query (the client's own cost; steadier when other processes share
the machine). Start a server first::

    eval "$(scripts/postgres-server start)"
    .venv/bin/pip install -e '.[bench]'   # psycopg[binary]
    .venv/bin/python benchmarks/bench_postgres_driver.py [--n 2000] [--inserts 400] [--rows 20000] [--rounds 5] [--loop uvloop]
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
VARIANTS = ("asyncpg", "psycopg", "psycopg-binary")
SHAPES = ("insert", "point", "top50")
TABLE = "bench_pg_driver"
COLS = "user_id, email, country, status, created_at, last_login, reputation, display_name, bio"
DDL = f"""CREATE TABLE {TABLE} (
  user_id BIGINT NOT NULL PRIMARY KEY, email TEXT NOT NULL UNIQUE, country TEXT NOT NULL,
  status TEXT NOT NULL, created_at BIGINT NOT NULL, last_login BIGINT NOT NULL,
  reputation INT NOT NULL, display_name TEXT NOT NULL, bio TEXT NOT NULL
)"""
INDEX = f"CREATE INDEX {TABLE}_rep ON {TABLE} (reputation DESC, user_id)"


def settings() -> dict[str, Any]:
    return {
        "host": os.environ.get("PGHOST", "127.0.0.1"),
        "port": int(os.environ.get("PGPORT", "5432")),
        "user": os.environ.get("PGUSER", "postgres"),
        "password": os.environ.get("PGPASSWORD", ""),
        "dbname": os.environ.get("PGDATABASE", "asyncbench"),
    }


async def load(rows: int) -> None:
    """(Re)creates the shared table with ``rows`` profiles, indexed and analyzed."""
    import asyncpg

    s = settings()
    conn = await asyncpg.connect(
        host=s["host"], port=s["port"], user=s["user"], password=s["password"], database=s["dbname"]
    )
    try:
        await conn.execute(f"DROP TABLE IF EXISTS {TABLE}")
        await conn.execute(DDL)
        await conn.copy_records_to_table(TABLE, records=create_many(1, rows, SEED))
        await conn.execute(INDEX)
        await conn.execute(f"VACUUM ANALYZE {TABLE}")
    finally:
        await conn.close()


async def drop() -> None:
    import asyncpg

    s = settings()
    conn = await asyncpg.connect(
        host=s["host"], port=s["port"], user=s["user"], password=s["password"], database=s["dbname"]
    )
    try:
        await conn.execute(f"DROP TABLE IF EXISTS {TABLE}")
    finally:
        await conn.close()


class Client:
    """One variant: its connection, prepared statements and the two timed loops."""

    def __init__(self, variant: str, rows: int, first_uid: int) -> None:
        self.variant = variant
        self.rows = rows
        self.next_uid = first_uid  # this client's own range of new ids for the inserts

    async def open(self) -> None:
        s = settings()
        if self.variant == "asyncpg":
            import asyncpg

            self.conn = await asyncpg.connect(
                host=s["host"], port=s["port"], user=s["user"], password=s["password"], database=s["dbname"],
                server_settings={"synchronous_commit": "off"},
            )  # fmt: skip
            self.insert_stmt = await self.conn.prepare(
                f"INSERT INTO {TABLE} ({COLS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)"
            )
            self.point_stmt = await self.conn.prepare(f"SELECT {COLS} FROM {TABLE} WHERE user_id = $1")
            self.top_stmt = await self.conn.prepare(
                f"SELECT {COLS} FROM {TABLE} ORDER BY reputation DESC, user_id LIMIT 50"
            )
        else:
            import psycopg

            self.conn = await psycopg.AsyncConnection.connect(
                **s, autocommit=True, options="-c synchronous_commit=off"
            )
            self.cur = self.conn.cursor(binary=self.variant == "psycopg-binary")
            self.insert_sql = f"INSERT INTO {TABLE} ({COLS}) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)"
            self.point_sql = f"SELECT {COLS} FROM {TABLE} WHERE user_id = %s"
            self.top_sql = f"SELECT {COLS} FROM {TABLE} ORDER BY reputation DESC, user_id LIMIT 50"

    async def close(self) -> None:
        if self.variant != "asyncpg":
            await self.cur.close()
        await self.conn.close()

    def keys(self, n: int) -> list[int]:
        return [(i * 7919) % self.rows + 1 for i in range(1, n + 1)]

    async def insert(self, n: int) -> int:
        profiles = create_many(self.next_uid, n, SEED)
        self.next_uid += n
        if self.variant == "asyncpg":
            fetchval = self.insert_stmt.fetchval
            for p in profiles:
                await fetchval(*p)
        else:
            execute, sql = self.cur.execute, self.insert_sql
            for p in profiles:
                await execute(sql, p, prepare=True)
        return n

    async def point(self, n: int) -> int:
        keys = self.keys(n)
        if self.variant == "asyncpg":
            fetchrow = self.point_stmt.fetchrow
            for uid in keys:
                row = await fetchrow(uid)
                if row is None or row[0] != uid:
                    raise AssertionError(f"{self.variant}: bad row {row!r}")
        else:
            execute, fetchone, sql = self.cur.execute, self.cur.fetchone, self.point_sql
            for uid in keys:
                await execute(sql, (uid,), prepare=True)
                row = await fetchone()
                if row is None or row[0] != uid:
                    raise AssertionError(f"{self.variant}: bad row {row!r}")
        return n

    async def top50(self, n: int) -> int:
        m = max(1, n // 10)
        if self.variant == "asyncpg":
            fetch = self.top_stmt.fetch
            for _ in range(m):
                rows = await fetch()
                if len(rows) != 50 or type(rows[0][6]) is not int:
                    raise AssertionError(f"{self.variant}: bad top-50 result")
        else:
            execute, fetchall, sql = self.cur.execute, self.cur.fetchall, self.top_sql
            for _ in range(m):
                await execute(sql, prepare=True)
                rows = await fetchall()
                if len(rows) != 50 or type(rows[0][6]) is not int:
                    raise AssertionError(f"{self.variant}: bad top-50 result")
        return m


async def run(
    variants: list[str], n: int, inserts: int, rows: int, rounds: int
) -> dict[tuple[str, str], dict[str, list[float]]]:
    await load(rows)
    clients = [Client(v, rows, rows + 1 + i * 10_000_000) for i, v in enumerate(variants)]
    for c in clients:
        await c.open()
    samples: dict[tuple[str, str], dict[str, list[float]]] = {
        (v, s): {"wall": [], "cpu": []} for v in variants for s in SHAPES
    }
    try:
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
    finally:
        for c in clients:
            await c.close()
        await drop()
    return samples


def version(dist: str) -> str:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return "missing"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=2000, help="point reads per round (top50: n/10)")
    ap.add_argument("--inserts", type=int, default=400, help="inserts per round")
    ap.add_argument("--rows", type=int, default=20000, help="profiles in the table")
    ap.add_argument("--rounds", type=int, default=5, help="timed rounds after one warm-up round")
    ap.add_argument("--loop", choices=("asyncio", "uvloop"), default="asyncio")
    ap.add_argument("--variants", default=",".join(VARIANTS))
    args = ap.parse_args()
    if args.loop == "uvloop":
        import uvloop

        asyncio.set_event_loop_policy(uvloop.EventLoopPolicy())
    variants = args.variants.split(",")
    unknown = set(variants) - set(VARIANTS)
    if unknown:
        ap.error(f"unknown variants: {', '.join(sorted(unknown))}")
    samples = asyncio.run(run(variants, args.n, args.inserts, args.rows, args.rounds))
    print(
        f"python {sys.version.split()[0]}, loop {args.loop}, asyncpg {version('asyncpg')}, "
        f"psycopg {version('psycopg')} (psycopg-binary {version('psycopg-binary')}); n={args.n}, "
        f"inserts={args.inserts}, rows={args.rows}, rounds={args.rounds}"
    )
    print("median microseconds per query over rounds: wall (client CPU)")
    print(f"{'variant':18}" + "".join(f"{s:>22}" for s in SHAPES))
    for v in variants:
        cells = []
        for s in SHAPES:
            d = samples[v, s]
            cells.append(f"{statistics.median(d['wall']):10.1f} ({statistics.median(d['cpu']):6.1f})")
        print(f"{v:18}" + "".join(f"{c:>22}" for c in cells))


if __name__ == "__main__":
    main()
