"""Unit tests of the RocksDB adapter on small data.

Results are compared with the in-memory reference engine (the executable statement of
every method's semantics) on the same profiles, with a small ``limit`` so that scans end
on the limit, on the prefix or range boundary, and on the end of the index.
"""

from __future__ import annotations

import random
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from conftest import store_of

pytest.importorskip("rocksdict")

from asyncbench.engine import EngineConfig  # noqa: E402
from asyncbench.engines.memory import MemoryEngine  # noqa: E402
from asyncbench.engines.rocksdb import RocksDbEngine, read_options_file  # noqa: E402
from asyncbench.engines.store_dir import MARKER, StoreDirError  # noqa: E402
from asyncbench.workloads.profile_store.generate import create_many  # noqa: E402
from asyncbench.workloads.profile_store.kv_recovery import STORE_NAMES as DB_NAMES  # noqa: E402
from asyncbench.workloads.profile_store.kv_store import STORE_NAMES as PROFILE_STORES  # noqa: E402
from asyncbench.workloads.profile_store.profiles import (  # noqa: E402
    COUNTRIES,
    STATUSES,
    encode,
    update,
)

SEED = 570123434
LIMIT = 7
N = 600


def run(fn: Callable[[], Awaitable[Any]]) -> Any:
    return anyio.run(fn)


def make(path: Path, limit: int = LIMIT, **settings: Any) -> RocksDbEngine:
    return RocksDbEngine(EngineConfig("rocksdb", path, settings, limit, SEED, stores=PROFILE_STORES))


async def pair(path: Path, n: int = N) -> tuple[RocksDbEngine, MemoryEngine]:
    """A RocksDB engine and a memory engine holding the same ``n`` profiles."""
    rocks = make(path)
    memory = MemoryEngine(EngineConfig("memory", path, {}, LIMIT, SEED, stores=PROFILE_STORES))
    await rocks.open(reset=True)
    await memory.open(reset=True)
    for start in range(1, n + 1, 250):
        batch = create_many(start, min(250, n + 1 - start), SEED)
        await store_of(rocks).insert(batch, [])
        await store_of(memory).insert(batch, [])
    return rocks, memory


def encoded(profiles: list) -> list[bytes]:
    return [encode(p) for p in profiles]


def test_reads_in_request_order_skip_missing(tmp_path: Path) -> None:
    async def main() -> None:
        rocks, memory = await pair(tmp_path)
        uids = [5, 1, N, 0, N + 1, 5, 300]
        got = await store_of(rocks).read_by_id(uids, [])
        assert got == encoded(await store_of(memory).read_by_id(uids, []))
        assert [int(v.split(b"|", 1)[0]) for v in got] == [5, 1, N, 5, 300]
        emails = [p[1] for p in create_many(10, 3, SEED)] + ["nobody@example.com"]
        assert await store_of(rocks).lookup_by_email(emails, []) == encoded(await store_of(memory).lookup_by_email(emails, []))
        assert len(await store_of(rocks).lookup_by_email(emails, [])) == 3
        await rocks.close()

    run(main)


def test_country_status_prefix_scans_match_reference(tmp_path: Path) -> None:
    async def main() -> None:
        rocks, memory = await pair(tmp_path)
        queries = [(c, s) for c in COUNTRIES for s in STATUSES]
        ids = await store_of(rocks).scan_country_status(queries, [])
        assert ids == await store_of(memory).scan_country_status(queries, [])
        # some prefixes have fewer than LIMIT entries: the scan stopped on the prefix end
        assert len(ids) < LIMIT * len(queries)
        assert await store_of(rocks).query_country_status(queries, []) == encoded(
            await store_of(memory).query_country_status(queries, [])
        )
        await rocks.close()

    run(main)


def test_created_at_range_boundaries_are_inclusive(tmp_path: Path) -> None:
    async def main() -> None:
        rocks, memory = await pair(tmp_path)
        profiles = create_many(1, N, SEED)
        at = {p[0]: p[4] for p in profiles}
        ranges = [
            (at[10], at[10]),  # exactly one key: both ends inclusive
            (at[10] + 1, at[11]),  # starts after uid 10, ends exactly on uid 11
            (at[10], at[12] - 1),  # ends just before uid 12
            (0, at[3]),  # from before the first key
            (at[N - 2], at[N] + 10**6),  # runs off the end of the index
            (at[N] + 1, at[N] + 5),  # empty: after the last key
            (at[100], at[200]),  # longer than LIMIT: stops on the limit
        ]
        rng = random.Random(7)
        for _ in range(50):
            lo = rng.randrange(at[1] - 5000, at[N] + 5000)
            ranges.append((lo, lo + rng.randrange(0, 20_000)))
        ids = await store_of(rocks).scan_created_at(ranges, [])
        assert ids == await store_of(memory).scan_created_at(ranges, [])
        per_range = [await store_of(rocks).scan_created_at([r], []) for r in ranges[:7]]
        assert per_range[:6] == [[10], [11], [10, 11], [1, 2, 3], [N - 2, N - 1, N], []]
        assert per_range[6] == list(range(100, 100 + LIMIT))
        assert await store_of(rocks).query_created_at(ranges, []) == encoded(await store_of(memory).query_created_at(ranges, []))
        await rocks.close()

    run(main)


def test_top_reputation_matches_reference(tmp_path: Path) -> None:
    async def main() -> None:
        rocks, memory = await pair(tmp_path)
        ids = await store_of(rocks).scan_top_reputation(3, [])
        assert ids == await store_of(memory).scan_top_reputation(3, [])
        assert len(ids) == 3 * LIMIT
        reps = {p[0]: p[6] for p in create_many(1, N, SEED)}
        top = ids[:LIMIT]
        assert [reps[i] for i in top] == sorted((reps[i] for i in top), reverse=True)
        assert await store_of(rocks).query_top_reputation(2, []) == encoded(await store_of(memory).query_top_reputation(2, []))
        await rocks.close()

    run(main)


def test_top_reputation_on_tiny_store_stops_at_index_end(tmp_path: Path) -> None:
    async def main() -> None:
        rocks, memory = await pair(tmp_path, n=3)
        assert await store_of(rocks).scan_top_reputation(2, []) == await store_of(memory).scan_top_reputation(2, [])
        assert len(await store_of(rocks).scan_top_reputation(1, [])) == 3
        await rocks.close()

    run(main)


def test_update_moves_index_entries(tmp_path: Path) -> None:
    async def main() -> None:
        rocks, memory = await pair(tmp_path)

        def transform(p: Any) -> Any:
            return update(p, SEED)

        uids = [4, 8, 4, 13, 999_999, 8, 100]  # repeats and a missing id
        got = await store_of(rocks).update(uids, transform, [])
        assert got == await store_of(memory).update(uids, transform, [])
        assert [p[0] for p in got] == [4, 8, 4, 13, 8, 100]
        # uid 4 was updated twice from its stored value, not from the original
        original = create_many(4, 1, SEED)[0]
        assert got[2] == update(update(original, SEED), SEED)
        assert await store_of(rocks).read_by_id([4], []) == [encode(got[2])]
        # the status of uid % 4 == 0 moved: old country/status entry gone, new one present
        old_key = f"{original[2]}|{original[3]}|{4:020d}".encode()
        new_key = f"{got[2][2]}|{got[2][3]}|{4:020d}".encode()
        assert old_key != new_key
        cs_db = rocks._dbs[2]  # country-status-index
        assert cs_db.get(old_key) is None
        assert cs_db.get(new_key) == b"%020d" % 4
        queries = [(c, s) for c in COUNTRIES for s in STATUSES]
        assert await store_of(rocks).scan_country_status(queries, []) == await store_of(memory).scan_country_status(queries, [])
        assert await store_of(rocks).scan_top_reputation(1, []) == await store_of(memory).scan_top_reputation(1, [])
        assert await store_of(rocks).count() == N
        await rocks.close()

    run(main)


def test_reopen_persists_and_reset_wipes(tmp_path: Path) -> None:
    async def main() -> None:
        rocks, memory = await pair(tmp_path)
        await store_of(rocks).update([6], lambda p: update(p, SEED), [])
        await rocks.settle()
        assert sorted(p.name for p in tmp_path.iterdir()) == sorted([*DB_NAMES, MARKER])
        assert rocks.storage_bytes() > 0
        expected = await store_of(rocks).read_by_id([1, 6, N // 2, N], [])
        await rocks.close()

        again = make(tmp_path)
        await again.open(reset=False)
        assert await store_of(again).count() == N
        assert await store_of(again).read_by_id([1, 6, N // 2, N], []) == expected
        assert await store_of(again).scan_top_reputation(1, []) != []
        await again.close()

        # A file the engine did not write: the reset refuses and deletes nothing.
        (tmp_path / "stray.txt").write_text("not the engine's")
        with pytest.raises(StoreDirError, match="stray.txt"):
            await make(tmp_path).open(reset=True)
        assert (tmp_path / "stray.txt").read_text() == "not the engine's"
        assert all((tmp_path / name).is_dir() for name in DB_NAMES)
        (tmp_path / "stray.txt").unlink()
        wiped = make(tmp_path)
        await wiped.open(reset=True)
        assert await store_of(wiped).count() == 0
        assert await store_of(wiped).read_by_id([1, N], []) == []
        assert await store_of(wiped).scan_top_reputation(1, []) == []
        await wiped.close()

    run(main)


def test_writes_after_close_reach_disk_without_settle(tmp_path: Path) -> None:
    async def main() -> None:
        rocks = make(tmp_path)
        await rocks.open(reset=True)
        await store_of(rocks).insert(create_many(1, 20, SEED), [])
        await rocks.close()
        again = make(tmp_path)
        await again.open(reset=False)
        assert await store_of(again).count() == 20
        await again.close()

    run(main)


def test_concurrent_tasks_share_one_engine(tmp_path: Path) -> None:
    async def main() -> None:
        rocks = make(tmp_path)
        await rocks.open(reset=True)
        results: dict[int, Any] = {}

        async def worker(w: int) -> None:
            start = 1 + w * 200
            batch = create_many(start, 200, SEED)
            for i in range(0, 200, 50):
                await store_of(rocks).insert(batch[i : i + 50], [])
            results[w] = (
                await store_of(rocks).read_by_id(list(range(start, start + 200)), []),
                await store_of(rocks).scan_top_reputation(5, []),
            )

        async with anyio.create_task_group() as tg:
            for w in range(4):
                tg.start_soon(worker, w)
        for w in range(4):
            assert results[w][0] == encoded(create_many(1 + w * 200, 200, SEED))
            assert len(results[w][1]) == 5 * LIMIT
        assert await store_of(rocks).count() == 800
        await rocks.close()

    run(main)


def test_settings_reach_rocksdb(tmp_path: Path) -> None:
    async def main() -> None:
        rocks = make(tmp_path, write_buffer_size_mb=64, max_write_buffer_number=3)
        await rocks.open(reset=True)
        facts = rocks.facts()
        await rocks.close()
        rows = {st.name: st for st in facts.settings}
        # optimize_level_style_compaction(64 MB) runs last, as in the reference: it sets
        # write_buffer_size to budget / 4 and max_write_buffer_number to 6; configured and
        # effective values are stated side by side, the durability facts use the effective
        assert rows["WriteBufferMb"].configured == "64"
        assert rows["WriteBufferMb"].effective == "16 MB"
        assert rows["MaxWriteBufferNumber"].configured == "3"
        assert rows["MaxWriteBufferNumber"].effective == "6"
        assert rows["Compression"].effective == "overridden per level: L0-L1 none, L2-L6 LZ4"
        assert "kNoCompression" in rows["CompressionAllLevels"].effective
        assert facts.durability.sync.startswith("by the OS")
        assert facts.durability.parameters["write_buffer_size"] == "16 MB"
        assert facts.durability.parameters["max_write_buffer_number"] == "6"

        every = make(tmp_path, compression="lz4", compression_all_levels=True, sync=True)
        await every.open(reset=True)
        await every.close()
        options = read_options_file(tmp_path / "reputation-index")
        assert set(options["compression_per_level"].split(":")) == {"kLZ4Compression"}
        assert every.facts().durability.sync == "per write"

    run(main)


def test_unknown_compression_is_rejected(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="compression"):
        make(tmp_path, compression="brotli")


def test_library_versions_name_rocksdict_and_rocksdb() -> None:
    versions = RocksDbEngine.library_versions()
    assert versions["rocksdict"][0].isdigit()
    assert versions["RocksDB"].split(".")[0].isdigit()


def test_event_loop_keeps_running_during_engine_calls(tmp_path: Path) -> None:
    """Another task gets to run during every call (a call that never gave the loop a turn
    would finish before the ticker ran even once): all but the point reads go through a
    worker thread, point reads yield after their batch."""

    async def main() -> None:
        rocks = make(tmp_path)
        ticks = 0
        done = anyio.Event()

        async def ticker() -> None:
            nonlocal ticks
            while not done.is_set():
                ticks += 1
                await anyio.sleep(0)

        async def during(call: Callable[[], Awaitable[Any]]) -> int:
            nonlocal ticks
            ticks = 0
            await call()
            return ticks

        calls: list[tuple[str, Callable[[], Awaitable[Any]]]] = [
            ("open", lambda: rocks.open(reset=True)),
            ("insert", lambda: store_of(rocks).insert(create_many(1, 300, SEED), [])),
            ("read_by_id", lambda: store_of(rocks).read_by_id(list(range(1, 300)), [])),
            ("lookup_by_email", lambda: store_of(rocks).lookup_by_email([p[1] for p in create_many(1, 50, SEED)], [])),
            ("scan_country_status", lambda: store_of(rocks).scan_country_status([("US", "active")] * 20, [])),
            ("query_created_at", lambda: store_of(rocks).query_created_at([(0, 2**62)] * 20, [])),
            ("query_top_reputation", lambda: store_of(rocks).query_top_reputation(20, [])),
            ("update", lambda: store_of(rocks).update(list(range(1, 100)), lambda p: update(p, SEED), [])),
            ("stabilize", rocks.stabilize),
            ("settle", rocks.settle),
            ("count", lambda: store_of(rocks).count()),
            ("close", rocks.close),
        ]
        async with anyio.create_task_group() as tg:
            tg.start_soon(ticker)
            await anyio.sleep(0)
            for name, call in calls:
                assert await during(call) > 0, name
            done.set()

    run(main)


def test_point_reads_run_on_the_loop_thread_and_the_rest_in_a_worker(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Point reads make no thread hop (rocksdict's get holds the GIL: a thread buys no
    concurrency and costs 15-20%); every other call keeps the loop free through a worker."""
    import asyncbench.engines.rocksdb as module

    hops: list[str] = []
    real = module.anyio.to_thread.run_sync

    async def counting(fn: Callable[..., Any], *args: Any, **kw: Any) -> Any:
        hops.append(getattr(fn, "__name__", repr(fn)))
        return await real(fn, *args, **kw)

    monkeypatch.setattr(module.anyio.to_thread, "run_sync", counting)

    async def main() -> None:
        rocks = make(tmp_path)
        await rocks.open(reset=True)
        try:
            await store_of(rocks).insert(create_many(1, 20, SEED), [])
            hops.clear()
            got = await store_of(rocks).read_by_id([1, 2, 3], [])
            got += await store_of(rocks).lookup_by_email([p[1] for p in create_many(1, 2, SEED)], [])
            assert len(got) == 5 and hops == []
            await store_of(rocks).scan_top_reputation(1, [])
            await store_of(rocks).update([1], lambda p: update(p, SEED), [])
            assert hops == ["_scan_top_reputation", "_update"]  # the shared store's batch bodies
        finally:
            await rocks.close()

    run(main)


def test_effective_settings_are_known_before_open(tmp_path: Path) -> None:
    rows = {st.name: st for st in make(tmp_path / "never-opened", write_buffer_size_mb=32).facts().settings}
    assert rows["WriteBufferMb"].effective == "8 MB"
    assert rows["MaxWriteBufferNumber"].effective == "6"
    assert not (tmp_path / "never-opened").exists()


def test_compression_row_agrees_with_the_per_level_codecs(tmp_path: Path) -> None:
    """Issue 39: the report said "Compression Zstd -> effective kZSTD" while the per-level
    list (none, none, LZ4 ...) decides every level; the row now says what applies."""
    rows = {st.name: st for st in make(tmp_path / "never-opened").facts().settings}
    effective = rows["Compression"].effective or ""
    assert "kZSTD" not in effective and "overridden per level" in effective, effective
    assert "L0-L1 none" in effective and "LZ4" in effective, effective
    every = {st.name: st for st in make(tmp_path / "n2", compression_all_levels=True).facts().settings}
    assert every["Compression"].effective == "kZSTD"
