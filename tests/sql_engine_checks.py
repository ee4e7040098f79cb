"""Checks the client/server SQL engines (mysql, postgres) must both pass against a live
server: results equal to the in-memory reference engine, reopen and reset, the storage
figure measured after settle and cached, an endpoint no worker uses probed and let go.

Written once so the two engines are held to the same contract; each test module builds
its engine (its own database, settings) and adds what only its server can show.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
from conftest import store_of

from asyncbench.engine import EngineConfig
from asyncbench.engines.client_server import SessionPoolEngine
from asyncbench.engines.memory import MemoryEngine
from asyncbench.workloads.profile_store.generate import create, create_many
from asyncbench.workloads.profile_store.kv_store import STORE_NAMES as PROFILE_STORES
from asyncbench.workloads.profile_store.plan import Counts, draw_plan
from asyncbench.workloads.profile_store.profiles import COUNTRIES, STATUSES, update


async def results_equal_the_memory_engine(
    loaded: SessionPoolEngine[Any], data_dir: Path, *, profiles: int, limit: int, seed: int
) -> None:
    """``loaded`` holds profiles 1..``profiles``: every read, scan and query answers as the
    memory engine's does, before and after an update batch with a repeated and a missing
    id; on one server with disjoint rows nothing is retried."""
    ref = MemoryEngine(EngineConfig("memory", data_dir, {}, limit, seed, stores=PROFILE_STORES))
    await ref.open(reset=True)
    await store_of(ref).insert(create_many(1, profiles, seed), [])
    plan = draw_plan(Counts.for_profiles(profiles, queries=60, post_queries=60), seed)
    pairs = [(c, s) for c in COUNTRIES for s in STATUSES]
    ranges = [*plan.stream("ranges"), (0, 1), (create(profiles, seed)[4], 2**62)]
    reads = [*plan.stream("reads", 200), 0, profiles + 1]
    emails = [*plan.stream("email_reads", 100), "missing@example.com"]

    def transform(p):  # type: ignore[no-untyped-def]
        return update(p, seed)

    async def same(method: str, arg) -> None:  # type: ignore[no-untyped-def]
        got = await getattr(store_of(loaded), method)(arg, [])
        want = await getattr(store_of(ref), method)(arg, [])
        assert got == want, method

    async def compare_all() -> None:
        await same("read_by_id", reads)
        await same("lookup_by_email", emails)
        await same("scan_country_status", pairs)
        await same("query_country_status", pairs)
        await same("scan_created_at", ranges)
        await same("query_created_at", ranges)
        await same("scan_top_reputation", 3)
        await same("query_top_reputation", 3)
        assert await store_of(loaded).count() == await store_of(ref).count()

    await compare_all()
    updates = plan.stream("updates", 150)
    ids = [*updates, updates[0], profiles + 50]  # a repeated id and a missing one
    assert await store_of(loaded).update(ids, transform, []) == await store_of(ref).update(ids, transform, [])
    await compare_all()
    assert loaded.take_retries() == 0  # one server, disjoint rows: nothing to retry


async def reopen_keeps_data_and_reset_wipes_it(
    loaded: SessionPoolEngine[Any], make: Callable[[], SessionPoolEngine[Any]], *, profiles: int, seed: int
) -> None:
    """``loaded`` holds profiles 1..``profiles``; ``make`` builds another engine on the same
    database: after close, a reopen sees every row (an update included), a reset none."""
    changed = await store_of(loaded).update([3], lambda p: update(p, seed), [])
    await loaded.close()
    again = make()
    await again.open(reset=False)
    try:
        assert await store_of(again).count() == profiles
        assert await store_of(again).read_by_id([3, profiles], []) == [*changed, create(profiles, seed)]
    finally:
        await again.close()
    fresh = make()
    await fresh.open(reset=True)
    try:
        assert await store_of(fresh).count() == 0
        assert await store_of(fresh).read_by_id([1], []) == []
    finally:
        await fresh.close()


async def storage_is_measured_then_cached(settled: SessionPoolEngine[Any]) -> int:
    """Right after settle: settle did not measure (0), ``measure_storage`` (the runner's
    untimed step) returns the figure and ``storage_bytes`` then returns that cache, on the
    event loop and from a worker thread. Returns the figure for the server's own check."""
    assert settled.storage_bytes() == 0  # the size query is not part of settle
    stored = await settled.measure_storage()
    assert settled.storage_bytes() == stored  # the cache, on the event loop: no query
    assert await anyio.to_thread.run_sync(settled.storage_bytes) == stored  # and off it
    return stored


async def an_endpoint_no_worker_uses_is_probed_and_closed(
    engine: SessionPoolEngine[Any], hosts: list[str]
) -> None:
    """``engine`` (P1, not open) has ``hosts``: two names of one server, the first again
    at the end. Open reads both endpoints' facts, the second's through one probe session
    that is closed before open returns; the worker keeps and uses its own session."""
    assert engine.config.workers == 1 and len(hosts) == 3 and hosts[2] == hosts[0] != hosts[1]
    probes: list[Any] = []
    real_probe = engine._probe

    async def probe(endpoint):  # type: ignore[no-untyped-def]
        session = await real_probe(endpoint)
        probes.append(session)
        return session

    engine._probe = probe  # type: ignore[method-assign]
    await engine.open(reset=True)
    try:
        assert [str(p.endpoint) for p in probes] == [hosts[1]]  # once, for the unused endpoint only
        assert probes[0].conn is None  # closed by its session's close
        assert list(engine._nodes) == hosts[:2]  # each endpoint once, in order
        assert [str(s.endpoint) for s in engine._sessions()] == [hosts[0]]
        await store_of(engine).insert(create_many(1, 2, engine.config.seed), [])
        assert await store_of(engine).count() == 2
        facts = engine.facts()
        assert facts.endpoints == hosts
        assert {f"server {hosts[0]}", f"server {hosts[1]}"} <= set(facts.versions)
        assert facts.cluster["workers"] == (
            f"worker 0 -> {hosts[0]}; no worker -> {hosts[1]}; no worker -> {hosts[0]}"
        )
    finally:
        await engine.close()
    assert engine._sessions() == []
