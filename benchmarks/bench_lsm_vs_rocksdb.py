"""The profile workload on the native LSM engine and on RocksDB, in one run, per phase.

Why: the LSM engine's targets are stated relative to the RocksDB adapter (ahead on insert
and update throughput, within 2x on every read, scan and query phase), and the machine
is shared, so both engines run here back to back on the same plan, through the same
Engine interface, in batches like the runner's, and the script prints per-phase ops/s
(wall clock and process CPU) and the lsm/rocksdb ratio. Phase checksums of the two
engines are compared (and with the spec's at 10_000 profiles), so a fast wrong answer
shows up as a mismatch, not as a win.

Usage::

    .venv/bin/python benchmarks/bench_lsm_vs_rocksdb.py [PROFILES=200000] [--batch 1000]
        [--engines lsm,rocksdb] [--lsm-setting key=value ...] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from asyncbench.engine import Engine, EngineConfig  # noqa: E402
from engines import engine_class  # noqa: E402
from workloads.profile_store.checksum import Checksum  # noqa: E402
from workloads.profile_store.plan import Counts, draw_plan  # noqa: E402
from workloads.profile_store.profiles import create_many, update  # noqa: E402
from workloads.profile_store.reference import REFERENCE_CHECKSUMS, REFERENCE_SEED  # noqa: E402

SEED = REFERENCE_SEED
#: Phases whose lsm/rocksdb throughput ratio must be >= 1 (the rest: >= 0.5).
WRITE_PHASES = ("insert profiles", "update profiles")


class Timing:
    def __init__(self) -> None:
        self.rows: list[tuple[str, int, float, float, str]] = []  # name, ops, wall s, cpu s, checksum
        self.storage_bytes = 0

    async def phase(
        self,
        name: str,
        items: Sequence[Any] | int,
        batch: int,
        call: Callable[[Any], Awaitable[list]],
        ints: bool,
    ) -> None:
        if isinstance(items, int):
            n = items
            work: list[Any] = [min(batch, n - i) for i in range(0, n, batch)]
        else:
            n = len(items)
            work = [items[i : i + batch] for i in range(0, n, batch)]
        cs = Checksum()
        add = cs.add_ints if ints else cs.add_profiles
        w, c = time.perf_counter(), time.process_time()
        for chunk in work:
            add(await call(chunk, []))
        self.rows.append((name, n, time.perf_counter() - w, time.process_time() - c, cs.hex()))

    async def untimed_ops(self, name: str, fn: Callable[[], Awaitable[None]]) -> None:
        w, c = time.perf_counter(), time.process_time()
        await fn()
        self.rows.append((name, 0, time.perf_counter() - w, time.process_time() - c, ""))


async def run_engine(name: str, profiles: int, batch: int, settings: dict, data: Path) -> Timing:
    """The whole plan on one engine, with a background task group around each
    open..close like the runner's."""
    async with anyio.create_task_group() as tg:
        t = await run_phases(tg, name, profiles, batch, settings, data)
        tg.cancel_scope.cancel()
    return t


async def run_phases(tg: Any, name: str, profiles: int, batch: int, settings: dict, data: Path) -> Timing:
    # At 10_000 profiles use the spec's reference counts so every checksum is checkable.
    counts = Counts.for_profiles(
        profiles, **({"queries": 2500, "post_queries": 2500} if profiles == 10_000 else {})
    )
    plan = draw_plan(counts, SEED)
    cls = engine_class(name)
    e: Engine = cls(EngineConfig(name, data, settings, counts.limit, SEED))
    await e.open(True, tg)
    t = Timing()

    async def insert(start_count: tuple[int, int]) -> list[int]:
        ps = create_many(start_count[0], start_count[1], SEED)
        await e.insert(ps, [])
        return [p[0] for p in ps]

    starts = [(s, min(batch, profiles - s + 1)) for s in range(1, profiles + 1, batch)]
    await t.phase("insert profiles", starts, 1, lambda ch, _marks: insert(ch[0]), True)
    t.rows[-1] = ("insert profiles", profiles, *t.rows[-1][2:])
    if cls.needs_stabilization:
        await t.untimed_ops("(pre-read stabilization)", e.stabilize)
    q = counts.queries
    await t.phase("read by user id", plan.reads, batch, e.read_by_id, False)
    await t.phase("lookup by email", plan.email_reads, batch, e.lookup_by_email, False)
    await t.phase("scan country/status index", plan.queries, batch, e.scan_country_status, True)
    await t.phase("query country/status", plan.queries, batch, e.query_country_status, False)
    await t.phase("scan created-at index", plan.ranges, batch, e.scan_created_at, True)
    await t.phase("query created-at range", plan.ranges, batch, e.query_created_at, False)
    await t.phase("scan top reputation index", q, batch, e.scan_top_reputation, True)
    await t.phase("query top reputation", q, batch, e.query_top_reputation, False)
    await t.phase(
        "update profiles", plan.updates, batch, lambda ids, marks: e.update(ids, lambda p: update(p, SEED), marks), False
    )
    if cls.needs_stabilization:
        await t.untimed_ops("(post-update stabilization)", e.stabilize)
    pq = counts.post_queries
    await t.phase("post-update read by user id", plan.post_reads, batch, e.read_by_id, False)
    await t.phase("post-update lookup by email", plan.post_email_reads, batch, e.lookup_by_email, False)
    await t.phase(
        "post-update scan country/status index", plan.post_queries, batch, e.scan_country_status, True
    )
    await t.phase("post-update query country/status", plan.post_queries, batch, e.query_country_status, False)
    await t.phase("post-update scan top reputation index", pq, batch, e.scan_top_reputation, True)
    await t.phase("post-update query top reputation", pq, batch, e.query_top_reputation, False)
    await t.untimed_ops("(settle)", e.settle)
    size = e.storage_bytes()
    await t.untimed_ops("(close)", e.close)
    e = cls(EngineConfig(name, data, settings, counts.limit, SEED))

    async def verify() -> None:
        await e.open(False, tg)
        cs = Checksum()
        cs.add_int(await e.count())
        cs.add_profiles(await e.read_by_id([1, max(1, profiles // 2), profiles], []))
        await e.close()
        verify.hex = cs.hex()  # type: ignore[attr-defined]

    await t.untimed_ops("(reopen + verify)", verify)
    t.rows[-1] = (*t.rows[-1][:4], verify.hex)  # type: ignore[attr-defined]
    t.storage_bytes = size
    return t


def report(profiles: int, results: dict[str, Timing]) -> int:
    names = list(results)
    ref = REFERENCE_CHECKSUMS if profiles == 10_000 else {}
    base = results[names[0]]
    other = results[names[1]] if len(names) > 1 else None
    head = f"{'phase':40} {'ops':>8}"
    for n in names:
        head += f" {n + ' ops/s':>14} {n + ' cpu ops/s':>16}"
    if other is not None:
        head += f" {'ratio wall':>11} {'ratio cpu':>10} {'target':>7}"
    print(head)
    misses = 0
    for i, row in enumerate(base.rows):
        name, ops = row[0], row[1]
        line = f"{name:40} {ops:8d}"
        for n in names:
            r = results[n].rows[i]
            if ops:
                line += f" {ops / r[2]:14,.0f} {ops / max(r[3], 1e-9):16,.0f}"
            else:
                line += f" {r[2] * 1000:11.0f} ms {r[3] * 1000:13.0f} ms"
        if other is not None and ops:
            o = other.rows[i]
            wall = o[2] / row[2]
            cpu = o[3] / max(row[3], 1e-9)
            target = 1.0 if name in WRITE_PHASES else 0.5
            line += f" {wall:11.2f} {cpu:10.2f} {'>=' + str(target):>7}"
            if wall < target:
                misses += 1
        sums = {results[n].rows[i][4] for n in names}
        label = "final (verify)" if name.startswith("(reopen") else name
        if row[4] and (len(sums) > 1 or (label in ref and ref[label] != row[4])):
            line += "  CHECKSUM MISMATCH " + " ".join(results[n].rows[i][4] for n in names)
            misses += 1000
        print(line)
    print("storage after settle: " + ", ".join(f"{n} {results[n].storage_bytes:,} bytes" for n in names))
    if other is not None:
        print(f"ratio = {names[0]} throughput / {names[1]} throughput; phases below target: {misses % 1000}")
    if misses >= 1000:
        print("checksums differ between engines or from the spec")
    return 1 if misses >= 1000 else 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("profiles", nargs="?", type=int, default=200_000)
    ap.add_argument("--batch", type=int, default=1000)
    ap.add_argument("--engines", default="lsm,rocksdb")
    ap.add_argument("--lsm-setting", action="append", default=[], metavar="KEY=VALUE")
    ap.add_argument("--keep", type=Path, help="data directory to keep (default: a temp dir, removed)")
    args = ap.parse_args(argv)
    lsm_settings = {}
    for kv in args.lsm_setting:
        k, _, v = kv.partition("=")
        lsm_settings[k] = json.loads(v) if v[:1].isdigit() else v
    root = args.keep or Path(tempfile.mkdtemp(prefix="bench-lsm-"))
    results: dict[str, Timing] = {}
    try:
        for name in args.engines.split(","):
            settings = lsm_settings if name == "lsm" else {}
            print(f"running {name} at {args.profiles} profiles ...", file=sys.stderr, flush=True)
            results[name] = anyio.run(
                run_engine,
                name,
                args.profiles,
                args.batch,
                settings,
                root / name,
                backend_options={"use_uvloop": True},
            )
    finally:
        if args.keep is None:
            shutil.rmtree(root, ignore_errors=True)
    return report(args.profiles, results)


if __name__ == "__main__":
    sys.exit(main())
