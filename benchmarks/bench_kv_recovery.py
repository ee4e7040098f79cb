"""What the crash repair (engines/kv_recovery.py) costs: build a store of N profiles
through the adapter, close it, drop the clean-shutdown mark (as a kill would), and time
the reopen that repairs, next to a clean reopen.

    .venv/bin/python benchmarks/bench_kv_recovery.py --engine rocksdb --profiles 200000

For lsm, whose adapter does not run the repair itself yet, ``--engine lsm`` times the same
repair run by hand over its trees right after a clean open. Peak RSS is the process's
(``ru_maxrss``), printed before and after the repair.
"""

from __future__ import annotations

import argparse
import resource
import tempfile
import time
from pathlib import Path

import anyio

from asyncbench.engine import Engine, EngineConfig, opened
from asyncbench.engines import engine_class
from asyncbench.engines.clean_shutdown import CleanShutdownMarker
from asyncbench.engines.store_dir import StoreDir
from asyncbench.workloads.profile_store.generate import create_many
from asyncbench.workloads.profile_store.kv_recovery import KvView, profile_indexes, repair
from asyncbench.workloads.profile_store.kv_store import STORE_NAMES
from asyncbench.workloads.profile_store.stores import profile_store

SEED = 570123434


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


async def build(name: str, data: Path, n: int, batch: int) -> None:
    engine = engine_class(name)(EngineConfig(name, data, {}, seed=SEED, stores=STORE_NAMES))
    async with opened(engine, reset=True):
        for start in range(1, n + 1, batch):
            await profile_store(engine.worker(0), engine.limit).insert(create_many(start, min(batch, n - start + 1), SEED), [])
        await engine.stabilize()  # the store as the read phases see it


def repair_lsm(engine: Engine):  # type: ignore[no-untyped-def]
    views = [KvView(items=t.iter, get=t.get, put=t.upsert, delete=t.delete) for t in engine._trees]  # type: ignore[attr-defined]
    return repair(views[0], list(zip(profile_indexes(values_are_pks=False), views[1:], strict=True)))


async def reopen(name: str, data: Path, clean: bool) -> tuple[float, object]:
    if not clean:  # opened (so the record of the clean close no longer holds), then killed
        StoreDir(data, engine_class(name).store_layout).open_existing()
        CleanShutdownMarker(data).take()
    engine = engine_class(name)(EngineConfig(name, data, {}, seed=SEED, stores=STORE_NAMES))
    t0 = time.perf_counter()
    async with opened(engine, reset=False):
        report = getattr(engine, "recovery", None)
        if name == "lsm" and not clean and report is None:
            report = await anyio.to_thread.run_sync(repair_lsm, engine)
        seconds = time.perf_counter() - t0
    return seconds, report


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--engine", default="rocksdb", choices=["rocksdb", "lsm"])
    ap.add_argument("--profiles", type=int, default=200_000)
    ap.add_argument("--batch", type=int, default=1000)
    ap.add_argument("--data", type=Path, default=None, help="data dir (default: a temporary one)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-kv-recovery-") as tmp:
        data = args.data or Path(tmp) / args.engine
        t0 = time.perf_counter()
        anyio.run(build, args.engine, data, args.profiles, args.batch)
        print(
            f"built {args.profiles} profiles in {time.perf_counter() - t0:.1f} s, peak RSS {peak_mb():.0f} MB"
        )
        seconds, _ = anyio.run(reopen, args.engine, data, True)
        print(f"clean reopen: {seconds:.2f} s")
        before = peak_mb()
        seconds, report = anyio.run(reopen, args.engine, data, False)
        print(f"unclean reopen (repair): {seconds:.2f} s; {report.summary()}")  # type: ignore[attr-defined]
        print(f"peak RSS before repair {before:.0f} MB, after {peak_mb():.0f} MB")
        per = seconds / args.profiles * 1e6
        print(f"{per:.2f} us per profile -> ~{per * 2_000_000 / 1e6:.0f} s at 2_000_000 profiles")


if __name__ == "__main__":
    main()
