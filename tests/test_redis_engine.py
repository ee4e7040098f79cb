"""Tests of the Redis engine (engines/redis_engine.py, engines/redis_lock.py).

Without a server only the settings and the "no server" behaviour are tested; with
``REDIS_HOST`` set (``eval "$(scripts/redis-server start)"``, CI does it) the engine runs
against it, in a database of its own (:data:`TEST_DB`): every answer and checksum equal
to the memory engine's (the quick profile-store plan, YCSB A and E at P1, P4 and in two
client processes), reopen, the repair after a client that stopped without closing, and
the refusal of a database holding keys that are not ours. Under CI (``CI`` set) the
server tests run even without ``REDIS_HOST``, so a missing server fails them.
"""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

import orjson
import pytest
import redis
from conftest import ROOT, redis_expected, run_asyncbench, status_line, store_of
from store_checks import as_profile
from test_ycsb_mix import run as reference_run
from test_ycsb_run import phase_checksums, small_plan

from asyncbench import engines
from asyncbench.engine import EngineConfig, EngineUnavailable
from asyncbench.engines.memory import MemoryEngine
from asyncbench.engines.redis_engine import RedisEngine, resolve_settings, validate_settings
from asyncbench.engines.redis_lock import marker_key
from asyncbench.engines.server_lock import NotOurs, ServerBusy
from asyncbench.engines.store_dir import StoreDamaged
from asyncbench.workloads.profile_store.generate import create, create_many
from asyncbench.workloads.profile_store.kv_store import STORE_NAMES as PROFILE_STORES
from asyncbench.workloads.profile_store.plan import Counts, draw_plan
from asyncbench.workloads.profile_store.profiles import COUNTRIES, STATUSES, update

SEED = 570123434
LIMIT = 7
N = 300
#: The database the tests claim (scripts/redis-server's server is theirs; a developer's own
#: database 0 is left alone).
TEST_DB = 9
#: A database the foreign-key test fills with someone else's key.
FOREIGN_DB = 10

pytestmark = pytest.mark.anyio
needs_server = pytest.mark.skipif(
    not redis_expected(), reason='no Redis server: set REDIS_HOST/REDIS_PORT (eval "$(scripts/redis-server start)")'
)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def make(tmp_path: Path, workers: int = 1, **settings: object) -> RedisEngine:
    settings.setdefault("database", TEST_DB)
    return RedisEngine(EngineConfig("redis", tmp_path / "redis", settings, LIMIT, SEED, workers, stores=PROFILE_STORES))


def raw_client(db: int, decode: bool = False) -> redis.Redis:
    """An independent client on database ``db`` of the configured server."""
    s = resolve_settings({})
    e = s["endpoint"]
    return redis.Redis(host=e.host, port=e.port, db=db, password=s["password"] or None, decode_responses=decode)


@pytest.fixture
async def loaded(tmp_path: Path):  # type: ignore[no-untyped-def]
    engine = make(tmp_path)
    await engine.open(reset=True)
    await store_of(engine).insert(create_many(1, N, SEED), [])
    yield engine
    await engine.close()


# --- without a server -------------------------------------------------------------------------


def test_settings_toml_then_environment_then_default() -> None:
    env = {"REDIS_HOST": "10.1.2.3", "REDIS_PORT": "7000", "REDIS_DB": "4", "REDIS_PASSWORD": "pw"}
    s = resolve_settings({"database": -1, "port": 0, "host": ""}, env)
    assert (str(s["endpoint"]), s["database"], s["password"]) == ("10.1.2.3:7000", 4, "pw")
    s = resolve_settings({"database": 2, "port": 6390, "host": "127.0.0.1"}, env)
    assert (str(s["endpoint"]), s["database"]) == ("127.0.0.1:6390", 2)
    s = resolve_settings({}, {})
    assert (str(s["endpoint"]), s["database"], s["prefix"]) == ("127.0.0.1:6379", 0, "asyncbench:")


@pytest.mark.parametrize(
    ("settings", "named"),
    [({"persistence": "sometimes"}, "persistence"), ({"port": 70000}, "port"), ({"database": -5}, "database"),
     ({"prefix": ""}, "prefix")],  # fmt: skip
)
def test_bad_settings_are_refused_naming_the_setting(settings: dict, named: str) -> None:
    with pytest.raises(ValueError, match=named):
        validate_settings(settings)


def test_redis_is_a_server_engine_in_all() -> None:
    assert engines.engine_class("redis") is RedisEngine
    assert "redis" in engines.all_engines() and "redis" not in engines.default_engines()
    assert RedisEngine.needs_server and RedisEngine.multi_process


async def test_no_server_is_engine_unavailable_naming_the_script(tmp_path: Path) -> None:
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    engine = make(tmp_path, host="127.0.0.1", port=port)
    with pytest.raises(EngineUnavailable, match="scripts/redis-server"):
        await engine.open(reset=True)


def test_no_server_is_skipped_under_all(monkeypatch: pytest.MonkeyPatch, run_cli, tmp_path: Path) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    monkeypatch.setenv("REDIS_HOST", "127.0.0.1")
    monkeypatch.setenv("REDIS_PORT", str(port))
    monkeypatch.setattr(engines, "ALL_ENGINES", ("redis", "memory"))
    plan = ROOT / "benchmarks" / "quick.toml"
    code, results, output = run_cli(str(plan), "--engine", "all", "--profiles", "200", "--no-isolate", "--yes")
    assert code == 0, output
    rd, memory = results[0]["engines"]
    assert status_line(rd).startswith(f"Skipped: no Redis server reachable at 127.0.0.1:{port} ("), status_line(rd)
    assert status_line(memory) == "ok"


# --- against the server -----------------------------------------------------------------------


def profiles_of(answer: object) -> object:
    """A batch's answer with every record as a profile tuple (a key/value store returns
    the encoded value, the memory engine the tuple)."""
    if isinstance(answer, list):
        return [as_profile(r) if isinstance(r, (bytes, tuple)) else r for r in answer]
    return answer


@needs_server
async def test_every_answer_equals_the_memory_engines(loaded: RedisEngine, tmp_path: Path) -> None:
    """Every read, scan and query answers as the memory engine's, before and after an
    update batch with a repeated and a missing id; count too."""
    ref = MemoryEngine(EngineConfig("memory", tmp_path / "mem", {}, LIMIT, SEED, stores=PROFILE_STORES))
    await ref.open(reset=True)
    await store_of(ref).insert(create_many(1, N, SEED), [])
    plan = draw_plan(Counts.for_profiles(N, queries=60, post_queries=60), SEED)
    pairs = [(c, s) for c in COUNTRIES for s in STATUSES]
    ranges = [*plan.stream("ranges"), (0, 1), (create(N, SEED)[4], 2**62)]
    calls = [
        ("read_by_id", [*plan.stream("reads", 200), 0, N + 1]),
        ("lookup_by_email", [*plan.stream("email_reads", 100), "missing@example.com"]),
        ("scan_country_status", pairs), ("query_country_status", pairs),
        ("scan_created_at", ranges), ("query_created_at", ranges),
        ("scan_top_reputation", 3), ("query_top_reputation", 3),
    ]  # fmt: skip

    async def compare_all() -> None:
        for method, arg in calls:
            got = await getattr(store_of(loaded), method)(arg, [])
            want = await getattr(store_of(ref), method)(arg, [])
            assert profiles_of(got) == profiles_of(want), method
        assert await store_of(loaded).count() == await store_of(ref).count() == N

    await compare_all()
    updates = plan.stream("updates", 150)
    ids = [*updates, updates[0], N + 50]  # a repeated id and a missing one

    def transform(p):  # type: ignore[no-untyped-def]
        return update(p, SEED)

    got = await store_of(loaded).update(ids, transform, [])
    assert profiles_of(got) == profiles_of(await store_of(ref).update(ids, transform, []))
    await compare_all()


@needs_server
async def test_reopen_keeps_data_and_reset_wipes_it(loaded: RedisEngine, tmp_path: Path) -> None:
    changed = await store_of(loaded).update([3], lambda p: update(p, SEED), [])
    await loaded.close()
    again = make(tmp_path)
    await again.open(reset=False)
    try:
        assert await store_of(again).count() == N
        got = await store_of(again).read_by_id([3, N], [])
        assert profiles_of(got) == profiles_of([*changed, create(N, SEED)])
        assert not again.worker(0).unclean  # closed cleanly: nothing to repair
    finally:
        await again.close()
    fresh = make(tmp_path)
    await fresh.open(reset=True)
    try:
        assert await store_of(fresh).count() == 0
        assert await store_of(fresh).read_by_id([1], []) == []
    finally:
        await fresh.close()


@needs_server
async def test_a_client_gone_without_closing_makes_the_workload_repair(loaded: RedisEngine, tmp_path: Path) -> None:
    """A registered client the server no longer has stopped mid-record maybe: the next open
    says so and the profile store repairs (here: an index entry of a profile never written)."""
    await loaded.close()
    with raw_client(TEST_DB) as other:
        other.hset(marker_key(b"asyncbench:"), "open:999999999", "1")  # a client id that is gone
    again = make(tmp_path)
    await again.open(reset=False)
    try:
        assert again.worker(0).unclean
        emails = again.worker(0).stores["email-index"]
        emails.put(b"orphan@example.com", b"%020d" % (N + 5))  # its profile never written
        store = store_of(again)  # built now: repairs before its first batch
        assert again.worker(0).repaired is not None
        assert emails.get(b"orphan@example.com") is None
        assert await store.count() == N
    finally:
        await again.close()
    clean = make(tmp_path)
    await clean.open(reset=False)
    try:
        assert not clean.worker(0).unclean  # the gone client was forgotten; a clean close registers none
    finally:
        await clean.close()


@needs_server
async def test_a_database_with_keys_not_ours_is_refused_naming_them(tmp_path: Path) -> None:
    with raw_client(FOREIGN_DB) as other:
        other.flushdb()
        other.set(b"session:42", b"someone else's")
        try:
            engine = make(tmp_path, database=FOREIGN_DB)
            with pytest.raises(NotOurs, match=r"database 10.*'session:42'"):
                await engine.open(reset=True)
            assert other.get(b"session:42") == b"someone else's"  # untouched
            assert other.dbsize() == 1  # nothing written beside it (no marker, no lock left)
            # and one inside our claimed database, beside our marker
            engine = make(tmp_path)
            await engine.open(reset=True)
            await engine.close()
            with raw_client(TEST_DB) as ours:
                ours.set(b"cache:x", b"1")
                try:
                    with pytest.raises(NotOurs, match=r"also keys asyncbench did not create.*'cache:x'"):
                        await make(tmp_path).open(reset=True)
                finally:
                    ours.delete(b"cache:x")
        finally:
            other.flushdb()


@needs_server
def test_quick_plan_checksums_equal_the_memory_engine(run_cli) -> None:
    plan = ROOT / "benchmarks" / "quick.toml"
    code, results, output = run_cli(
        str(plan), "--engine", "memory,redis", "--profiles", "1000", "--no-isolate", "--yes"
    )
    assert code == 0, output
    (run,) = results
    memory, rd = run["engines"]
    assert rd["engine"] == "redis" and rd["status"] == "ok", status_line(rd)
    sums = [p["checksum"] for p in rd["phases"] if p["checksum"] is not None]
    assert len(sums) == 17 and sums == [p["checksum"] for p in memory["phases"] if p["checksum"] is not None]


def ycsb_plan(tmp_path: Path, letter: str) -> tuple[Path, dict]:
    path, doc = small_plan(tmp_path, letter, records=200, ops=800)
    path.write_text(path.read_text() + f"\n[engines.redis]\ndatabase = {TEST_DB}\n")
    return path, doc


@needs_server
@pytest.mark.parametrize("letter", "ae")
def test_ycsb_gives_the_memory_engines_checksums_at_p1_and_p4(letter: str, tmp_path: Path, run_cli) -> None:
    plan, doc = ycsb_plan(tmp_path, letter)
    code, results, output = run_cli(str(plan), "--engine", "memory,redis", "--parallelism", "1,4", "--no-isolate", "--yes")
    assert code == 0, output
    sums = phase_checksums(results)
    assert {e for e, _, _ in sums} == {"memory", "redis"}
    for phase in ("load", "mixed"):
        assert len({c for (_, _, n), cs in sums.items() if n == phase for c in cs}) == 1, sums
    assert {c for (_, _, n), cs in sums.items() if n == "mixed" for c in cs} == {reference_run(doc, 1, schedule=0)[0]}


@needs_server
@pytest.mark.parametrize("letter", "ae")
def test_ycsb_in_two_client_processes_gives_the_same_checksums(letter: str, tmp_path: Path, run_cli) -> None:
    plan, doc = ycsb_plan(tmp_path, letter)
    code, results, output = run_cli(str(plan), "--engine", "redis", "--parallelism", "4", "--processes", "2", "--yes")
    assert code == 0, output
    (run,) = results
    (result,) = run["engines"]
    assert len(result["client_processes"]) == 2
    assert result["phases"][1]["checksum"] == reference_run(doc, 1, schedule=0)[0]


@needs_server
async def test_a_prefix_with_glob_characters_is_reset_whole(tmp_path: Path) -> None:
    """SCAN MATCH takes a glob: the prefix's own ``[``, ``]``, ``*`` are escaped, so a reset
    finds (and removes) every store key under it."""
    try:
        engine = make(tmp_path, prefix="ab[c]*?:")
        await engine.open(reset=True)
        try:
            await store_of(engine).insert(create_many(1, 20, SEED), [])
        finally:
            await engine.close()
        again = make(tmp_path, prefix="ab[c]*?:")
        await again.open(reset=True)
        try:
            assert await store_of(again).count() == 0
        finally:
            await again.close()
    finally:  # the database is the other tests' too: nothing of this prefix stays
        with raw_client(TEST_DB) as client:
            for key in client.scan_iter(match=b"ab\\[c\\]\\*\\?:*"):
                client.delete(key)


@needs_server
@pytest.mark.slow
def test_ycsb_through_a_dask_cluster_gives_the_same_checksums(tmp_path: Path) -> None:
    """``--cluster``: as on several hosts, on 127.0.0.1 (a ``dask scheduler`` and two
    ``dask worker`` processes), YCSB A's checksums at P4 equal the reference's."""
    dask = str(Path(sys.executable).with_name("dask"))
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    address = f"tcp://127.0.0.1:{port}"
    quiet: dict = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL, "start_new_session": True}
    procs = [subprocess.Popen([dask, "scheduler", "--host", "127.0.0.1", "--port", str(port), "--no-dashboard"], **quiet)]
    try:
        for _ in range(2):
            procs.append(subprocess.Popen(
                [dask, "worker", address, "--nthreads", "1", "--host", "127.0.0.1", "--no-dashboard"], cwd=ROOT, **quiet
            ))  # fmt: skip
        plan, doc = ycsb_plan(tmp_path, "a")
        r = run_asyncbench(tmp_path, str(plan), "--engine", "redis", "--parallelism", "4", "--cluster", address,
                           "--processes", "2", "--yes", timeout=300)  # fmt: skip
        assert r.returncode == 0, r.stdout + r.stderr
        (result,) = (tmp_path / "out").glob("*-p4/asyncbench-*.json")
        (engine,) = orjson.loads(result.read_bytes())["engines"]
        assert len(engine["client_processes"]) == 2
        assert engine["phases"][1]["checksum"] == reference_run(doc, 1, schedule=0)[0]
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            p.wait()


@needs_server
async def test_the_persistence_setting_is_set_on_the_server_and_stated(tmp_path: Path) -> None:
    with raw_client(TEST_DB, decode=True) as client:
        before = {k: client.config_get(k)[k] for k in ("appendonly", "appendfsync", "save")}
        try:
            engine = make(tmp_path, persistence="none")
            await engine.open(reset=True)
            try:
                assert client.config_get("appendonly")["appendonly"] == "no"
                facts = engine.facts()
                assert {s.name: s.effective for s in facts.settings}["persistence"] == "none"
                assert "restart loses everything" in facts.durability.after_crash
            finally:
                await engine.close()
            engine = make(tmp_path, persistence="aof-always")
            await engine.open(reset=False)
            try:
                facts = engine.facts()
                assert {s.name: s.effective for s in facts.settings}["persistence"] == "aof-always"
                assert facts.durability.synced_commits
            finally:
                await engine.close()
        finally:  # the server is every test's: its settings as they were
            for key, value in before.items():
                client.config_set(key, value)


@needs_server
async def test_a_marker_key_of_another_type_is_refused(tmp_path: Path) -> None:
    with raw_client(TEST_DB) as client:
        client.flushdb()
        client.set(b"asyncbench:owner", b"not a hash")
        try:
            with pytest.raises(NotOurs, match="does not say tool='asyncbench'"):
                await make(tmp_path).open(reset=True)
        finally:
            client.flushdb()


@needs_server
async def test_a_damaged_or_missing_store_is_refused_at_an_open_keeping_data(loaded: RedisEngine, tmp_path: Path) -> None:
    await loaded.close()
    with raw_client(TEST_DB) as client:
        client.zrem(b"asyncbench:s:email-index:k", client.zrange(b"asyncbench:s:email-index:k", 0, 0)[0])
    with pytest.raises(StoreDamaged, match=f"store 'email-index' holds {N} values but {N - 1} ordered keys"):
        await make(tmp_path).open(reset=False)
    other = RedisEngine(EngineConfig("redis", tmp_path / "r", {"database": TEST_DB}, LIMIT, SEED, stores=("usertable",)))
    with pytest.raises(StoreDamaged, match="the marker lists no store 'usertable'"):
        await other.open(reset=False)


@needs_server
async def test_a_second_run_on_the_same_database_waits_then_is_refused(loaded: RedisEngine, tmp_path: Path) -> None:
    """``loaded`` holds the run lock (opened on its own): another engine on the same database
    and prefix waits ``lock_wait_seconds`` and is refused, touching nothing."""
    second = make(tmp_path, lock_wait_seconds=0.3)
    with pytest.raises(ServerBusy, match=r"another asyncbench run holds the lock 'asyncbench:lock' .*lapsing in"):
        await second.open(reset=True)
    assert await store_of(loaded).count() == N  # not reset
