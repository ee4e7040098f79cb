"""The LSM adapter against the in-memory reference engine, on asyncio and uvloop, with
small memtables so background flushes and merges run during the workload."""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import pytest
from conftest import store_of

from asyncbench.engine import EngineConfig, opened
from asyncbench.engines.lsm import CorruptMeta, parallel_open
from asyncbench.engines.lsm.adapter import LsmEngine
from asyncbench.engines.lsm.tree import LsmTree
from asyncbench.engines.memory import MemoryEngine
from asyncbench.engines.store_dir import MARKER
from asyncbench.workloads.profile_store.generate import create_many
from asyncbench.workloads.profile_store.kv_recovery import STORE_NAMES as TREE_NAMES
from asyncbench.workloads.profile_store.kv_store import STORE_NAMES as PROFILE_STORES
from asyncbench.workloads.profile_store.profiles import decode, update

SEED = 570123434
N = 1500
BACKENDS = [
    pytest.param(("asyncio", {}), id="asyncio"),
    pytest.param(("asyncio", {"use_uvloop": True}), id="uvloop"),
]


def records(rs: list) -> list:
    return [decode(r) if isinstance(r, (bytes, str)) else r for r in rs]


@contextlib.asynccontextmanager
async def maybe_opened(engine: LsmEngine, reset: bool, background: bool) -> AsyncIterator[LsmEngine]:
    """Like the runner: a background task group around open..close (the only way; an
    lsm engine opened without one refuses, see test_open_without_task_group_refuses)."""
    async with opened(engine, reset) as e:
        yield e


async def workload(path: Path, settings: dict, background: bool) -> None:
    mem = MemoryEngine(EngineConfig("memory", path, {}, 20, SEED, stores=PROFILE_STORES))
    await mem.open(True)
    async with maybe_opened(
        LsmEngine(EngineConfig("lsm", path, settings, 20, SEED, stores=PROFILE_STORES)), True, background
    ) as lsm:
        await phases(lsm, mem, background)
    again = LsmEngine(EngineConfig("lsm", path, settings, 20, SEED, stores=PROFILE_STORES))
    async with maybe_opened(again, False, background):
        assert await store_of(again).count() == N
        ids = list(range(0, N + 10, 7))
        assert records(await store_of(again).read_by_id(ids, [])) == await store_of(mem).read_by_id(ids, [])
        queries = [("US", "active"), ("DE", "pending")]
        assert await store_of(again).scan_country_status(queries, []) == await store_of(mem).scan_country_status(queries, [])
        assert await store_of(again).scan_top_reputation(1, []) == await store_of(mem).scan_top_reputation(1, [])


async def phases(lsm: LsmEngine, mem: MemoryEngine, background: bool) -> None:
    for start in range(1, N + 1, 100):
        batch = create_many(start, 100, SEED)
        await store_of(lsm).insert(batch, [])
        await store_of(mem).insert(batch, [])
    await lsm.stabilize()
    assert all(len(t.segments) <= 1 and not t.frozen for t in lsm._trees)  # stabilized: one each
    ids = list(range(0, N + 10, 7))
    assert records(await store_of(lsm).read_by_id(ids, [])) == await store_of(mem).read_by_id(ids, [])
    emails = [p[1] for p in create_many(1, 50, SEED)] + ["nobody@example.com"]
    assert records(await store_of(lsm).lookup_by_email(emails, [])) == await store_of(mem).lookup_by_email(emails, [])
    queries = [("US", "active"), ("DE", "pending"), ("GR", "deleted"), ("XX", "active")]
    assert await store_of(lsm).scan_country_status(queries, []) == await store_of(mem).scan_country_status(queries, [])
    p = create_many(100, 1, SEED)[0]
    ranges = [(p[4], p[4] + 30_000), (0, 1), (p[4], p[4])]
    assert await store_of(lsm).scan_created_at(ranges, []) == await store_of(mem).scan_created_at(ranges, [])
    assert records(await store_of(lsm).query_created_at(ranges, [])) == await store_of(mem).query_created_at(ranges, [])
    for _ in range(3):  # updates land in memtables, flushes and merges run meanwhile
        ups = list(range(1, N + 1, 3)) + [N + 5]
        got = await store_of(lsm).update(ups, lambda q: update(q, SEED), [])
        assert got == await store_of(mem).update(ups, lambda q: update(q, SEED), [])
        assert await store_of(lsm).scan_top_reputation(2, []) == await store_of(mem).scan_top_reputation(2, [])
        assert records(await store_of(lsm).query_country_status(queries, [])) == await store_of(mem).query_country_status(
            queries, []
        )
    assert records(await store_of(lsm).query_top_reputation(1, [])) == await store_of(mem).query_top_reputation(1, [])
    if background:
        assert lsm._maint is not None and any(len(t.segments) for t in lsm._trees)
    await lsm.settle()


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("wal_mode", ["async-compressed", "sync", "none"])
def test_matches_memory_engine(tmp_path: Path, backend: tuple, wal_mode: str) -> None:
    if wal_mode == "sync" and backend[1]:
        pytest.skip("sync log covered on plain asyncio; fsync per write is slow")
    settings = {"mutable_segment_max_item_count": 700, "sparse_array_step": 8, "wal_mode": wal_mode}
    anyio.run(workload, tmp_path, settings, True, backend=backend[0], backend_options=backend[1])


def test_reopen_without_settle_replays_the_log(tmp_path: Path) -> None:
    async def run() -> None:
        async with opened(LsmEngine(EngineConfig("lsm", tmp_path, {}, 50, SEED, stores=PROFILE_STORES))) as e:
            await store_of(e).insert(create_many(1, 300, SEED), [])
        # memtables were not flushed; the log carries them
        assert {p.name for p in tmp_path.iterdir()} == set(TREE_NAMES) | {"CLEAN_SHUTDOWN", MARKER}
        assert not list(tmp_path.glob("*/seg-*"))
        async with opened(LsmEngine(EngineConfig("lsm", tmp_path, {}, 50, SEED, stores=PROFILE_STORES)), False) as e:
            assert await store_of(e).count() == 300
            assert len(await store_of(e).read_by_id(range(1, 301), [])) == 300

    anyio.run(run)


def test_settings_are_validated(tmp_path: Path) -> None:
    with pytest.raises(ValueError):
        LsmEngine(EngineConfig("lsm", tmp_path, {"wal_mode": "fast"}, stores=PROFILE_STORES))
    with pytest.raises(ValueError):
        LsmEngine(EngineConfig("lsm", tmp_path, {"bogus": 1}, stores=PROFILE_STORES))
    with pytest.raises(ValueError):
        LsmEngine(EngineConfig("lsm", tmp_path, {"sparse_array_step": 0}, stores=PROFILE_STORES))


@pytest.mark.parametrize("backend", BACKENDS)
def test_runner_style_scopes(tmp_path: Path, backend: tuple) -> None:
    """The runner opens inside a timeout scope and closes outside it, shielded, with the
    background group around both; background tasks must end with close()."""

    async def run() -> None:
        async with anyio.create_task_group() as tg:
            e = LsmEngine(EngineConfig("lsm", tmp_path, {"mutable_segment_max_item_count": 500}, 50, SEED, stores=PROFILE_STORES))
            with anyio.move_on_after(60):
                await e.open(True, tg)
                for s in range(1, 2001, 250):
                    await store_of(e).insert(create_many(s, 250, SEED), [])
            with anyio.CancelScope(shield=True):
                await e.close()
            assert e._maint is None  # close stopped and awaited the background task
            tg.cancel_scope.cancel()
        e = LsmEngine(EngineConfig("lsm", tmp_path, {}, 50, SEED, stores=PROFILE_STORES))
        async with opened(e, False):
            assert await store_of(e).count() == 2000

    anyio.run(run, backend=backend[0], backend_options=backend[1])


def test_open_without_task_group_refuses(tmp_path: Path) -> None:
    """No hidden inline path: background work needs the opener's task group."""

    async def run() -> None:
        e = LsmEngine(EngineConfig("lsm", tmp_path, {}, 50, SEED, stores=PROFILE_STORES))
        with pytest.raises(TypeError, match="task group"):
            await e.open(True)

    anyio.run(run)


def test_a_failed_open_closes_the_trees_it_already_opened(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The five trees open side by side (``parallel_open``); when one is damaged, the
    others, which did open (segment mmaps, log files), are closed before the error
    propagates, so a failed open leaks no file handle into the process (a next engine, a
    retry)."""
    cfg = EngineConfig("lsm", tmp_path / "lsm", {"mutable_segment_max_item_count": 100}, 20, SEED, stores=PROFILE_STORES)

    async def build() -> None:
        async with opened(LsmEngine(cfg), True) as e:
            await store_of(e).insert(create_many(1, 300, SEED), [])
            await e.stabilize()  # the frozen memtables flushed: every tree has segments

    anyio.run(build)
    meta = cfg.data_dir / TREE_NAMES[2] / "meta.json"
    meta.write_text("not a manifest")  # the third tree is damaged
    # ... in a store without the record of a clean close (which would refuse it before any
    # tree opened: StoreDir.open_existing), so the trees' own checks find it
    marker = cfg.data_dir / MARKER
    marker.write_text(json.dumps({k: v for k, v in json.loads(marker.read_text()).items() if k != "contents"}))

    trees: list[LsmTree] = []
    logs: list = []

    class Recorded(LsmTree):
        def __init__(self, *args, **kwargs) -> None:  # type: ignore[no-untyped-def]
            super().__init__(*args, **kwargs)
            trees.append(self)
            logs.extend(self.wal.files.values())

    monkeypatch.setattr(parallel_open, "LsmTree", Recorded)

    async def reopen() -> None:
        async with opened(LsmEngine(cfg), False):
            raise AssertionError("a damaged tree opened")

    raised: list[BaseException] = []
    try:
        anyio.run(reopen)
    except* CorruptMeta as group:
        raised += group.exceptions
    assert [e.path for e in raised] == [meta]  # type: ignore[attr-defined]
    assert sorted(t.dir.name for t in trees) == sorted(n for n in TREE_NAMES if n != TREE_NAMES[2])
    segments = [s for t in trees for s in t.segments]
    assert segments and logs  # what the four healthy trees held open
    assert all(t.closed for t in trees)
    assert all(s._mm.closed for s in segments)
    assert all(log.fd == -1 for log in logs)
    fds = Path("/proc/self/fd")
    if fds.is_dir():  # and, seen from the OS, nothing under the store is open any more
        targets = []
        for fd in fds.iterdir():
            with contextlib.suppress(OSError):  # the listing's own descriptor is gone by now
                targets.append(os.readlink(fd))
        assert not [t for t in targets if t.startswith(str(cfg.data_dir))]
