"""After a crash, the store is read back profile by profile against the plan (issue 57,
``workloads/profile_store/recovery.py``): acknowledged writes present and lost, counted
exactly; unacknowledged ones found; torn or corrupt records detected (never allowed), in a
fake store and in real sqlite and rocksdb stores; and the verdict that follows."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from pathlib import Path

import anyio
import pytest
import rocksdict
from conftest import store_of

from asyncbench.engine import EngineConfig, opened
from asyncbench.engines import engine_class
from asyncbench.engines.store_dir import MARKER
from asyncbench.measure.verdicts import Outcome, durability_failed, judge_run
from asyncbench.result import DurabilityRow, EngineResult, RunResult
from asyncbench.workload import RecoveryCounts
from asyncbench.workloads import workload
from asyncbench.workloads.profile_store.generate import create_many
from asyncbench.workloads.profile_store.kv_store import STORE_NAMES as PROFILE_STORES
from asyncbench.workloads.profile_store.plan import Counts
from asyncbench.workloads.profile_store.profiles import Profile, encode, primary_key, update

SEED = 570123434
N = 300


def plan(profiles: int = N):  # type: ignore[no-untyped-def]
    return workload("profile_store").draw_plan(Counts.for_profiles(profiles, limit=50), SEED)


class DictStore:
    """Profiles by uid, read back as a key/value engine returns them (encoded bytes)."""

    def __init__(self, stored: dict[int, bytes]) -> None:
        self.stored = stored

    async def read_by_id(self, uids: Sequence[int], marks: list[int]) -> list[bytes]:
        return [self.stored[u] for u in uids if u in self.stored]


def check(stored: dict[int, bytes], kind: str, acknowledged: int, p=None) -> RecoveryCounts:  # type: ignore[no-untyped-def]
    w = workload("profile_store")
    return anyio.run(w.check_recovery, DictStore(stored), p or plan(), w.phases[kind], None if kind == "insert" else "updates",
                     None, acknowledged, {})  # fmt: skip


def created() -> dict[int, Profile]:
    return {p[0]: p for p in create_many(1, N, SEED)}


def test_insert_counts_present_lost_and_unacknowledged_exactly() -> None:
    profiles = created()
    stored = {u: encode(p) for u, p in profiles.items() if u <= 120 and u not in (50, 51, 99)}
    stored[130] = encode(profiles[130])  # beyond the 120 acknowledged: present, allowed
    got = check(stored, "insert", 120)
    assert (got.acknowledged_present, got.acknowledged_lost, got.unacknowledged_present, got.torn) == (117, 3, 1, 0)
    assert got.first_lost == 49  # profile 50 is operation 49
    assert got.checked == 118


def test_a_torn_record_is_detected_and_named() -> None:
    profiles = created()
    stored = {u: encode(p) for u, p in profiles.items() if u <= 100}
    stored[7] = encode(profiles[7])[:-9]  # a cut value: decodes, but is no version the plan wrote
    stored[8] = b"\xff\xfe not utf-8"  # does not decode: the batch is read again one by one
    stored[9] = encode(profiles[10])  # another profile's bytes under profile 9's key
    got = check(stored, "insert", 100)
    assert (got.torn, got.acknowledged_present, got.acknowledged_lost) == (3, 97, 0)
    assert any("profile 8 does not decode" in t for t in got.torn_examples), got.torn_examples
    assert any("profile 7 is no version" in t for t in got.torn_examples), got.torn_examples


def test_update_counts_each_profiles_acknowledged_updates() -> None:
    """Profile u's version j is its creation and j updates: behind its acknowledged updates
    it lost the difference, ahead of them it holds unacknowledged ones."""
    p = plan()
    items = workload("profile_store").phase_items(workload("profile_store").phases["update"], "updates", None, p, {})
    acked = 60
    done: dict[int, Profile] = created()
    for uid in items[:acked]:
        done[uid] = update(done[uid], SEED)
    stored = {u: encode(v) for u, v in done.items()}
    assert check(stored, "update", acked, p).acknowledged_lost == 0
    first = int(items[0])
    stored[first] = encode(created()[first])  # its first (acknowledged) update lost
    times = sum(1 for u in items[:acked] if u == first)
    beyond = int(items[acked])  # an update never acknowledged (never issued) found
    stored[beyond] = encode(update(done[beyond], SEED))
    got = check(stored, "update", acked, p)
    assert (got.acknowledged_lost, got.unacknowledged_present, got.torn, got.first_lost) == (times, 1, 0, 0)
    assert got.acknowledged_present == acked - times


async def _sqlite_store(data: Path, synchronous: str = "NORMAL") -> None:
    engine = engine_class("sqlite")(EngineConfig("sqlite", data, {"synchronous": synchronous}, limit=50, seed=SEED, stores=PROFILE_STORES))
    async with opened(engine, reset=True):
        await store_of(engine).insert(create_many(1, N, SEED), [])


def left_by_a_crash(data: Path) -> None:
    """Mark the store as a kill leaves it: opened and never closed cleanly (``in_use`` in
    its marker), so the engine's own recovery decides at the next open, not the record of
    a clean close, which refuses any changed file (engines/store_dir.py)."""
    marker = data / MARKER
    doc = json.loads(marker.read_text())
    marker.write_text(json.dumps({**doc, "in_use": True}))


async def _check_engine(name: str, data: Path) -> RecoveryCounts:
    engine = engine_class(name)(EngineConfig(name, data, {}, limit=50, seed=SEED, stores=PROFILE_STORES))
    async with opened(engine, reset=False):
        w = workload("profile_store")
        return await w.check_recovery(store_of(engine), plan(), w.phases["insert"], None, None, N, {})


def test_a_corrupt_row_in_a_real_sqlite_store_is_torn(tmp_path: Path) -> None:
    anyio.run(_sqlite_store, tmp_path)
    assert anyio.run(_check_engine, "sqlite", tmp_path).torn == 0
    db = sqlite3.connect(tmp_path / "store.db")  # the records changed behind the engine
    try:
        with db:
            db.execute("UPDATE profiles SET bio = 'half-written' WHERE user_id = 7")
            db.execute("UPDATE profiles SET reputation = 'x' WHERE user_id = 8")
    finally:
        db.close()  # (its last connection gone, SQLite removes the -wal and -shm files it made)
    left_by_a_crash(tmp_path)
    got = anyio.run(_check_engine, "sqlite", tmp_path)
    assert (got.torn, got.acknowledged_present, got.acknowledged_lost) == (2, N - 2, 0)


def test_a_corrupt_value_in_a_real_rocksdb_store_is_torn(tmp_path: Path) -> None:
    async def build() -> None:
        engine = engine_class("rocksdb")(EngineConfig("rocksdb", tmp_path, {}, limit=50, seed=SEED, stores=PROFILE_STORES))
        async with opened(engine, reset=True):
            await store_of(engine).insert(create_many(1, N, SEED), [])

    anyio.run(build)
    db = rocksdict.Rdict(str(tmp_path / "profiles"), rocksdict.Options(raw_mode=True))
    try:
        db[primary_key(9)] = b"9|\xff\xfe torn"  # its value's bytes damaged
    finally:
        db.close()
    left_by_a_crash(tmp_path)
    got = anyio.run(_check_engine, "rocksdb", tmp_path)
    assert (got.torn, got.acknowledged_lost) == (1, 0)
    assert "profile 9 does not decode" in got.torn_examples[0]


def row(**figures: object) -> DurabilityRow:
    base: dict[str, object] = {"phase": "insert profiles", "how": "kill", "after": 100, "acknowledged": 100,
                               "crash_seconds": 1.0, "opened": True, "acknowledged_present": 100}  # fmt: skip
    return DurabilityRow(**{**base, **figures})  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("figures", "fails"),
    [
        ({"synced_commits": True}, False),
        ({"synced_commits": True, "acknowledged_lost": 1, "acknowledged_present": 99}, True),
        ({"synced_commits": False, "acknowledged_lost": 100, "acknowledged_present": 0, "lost_seconds": 0.5}, False),
        ({"synced_commits": False, "torn": 1}, True),
        ({"synced_commits": False, "opened": False, "open_error": "CorruptionError: bad block"}, True),
    ],
)
def test_the_verdict_fails_a_broken_promise_a_torn_record_and_a_store_that_does_not_open(
    figures: dict[str, object], fails: bool
) -> None:
    d = row(**figures)
    assert durability_failed(d) is fails
    run = RunResult(name="t", started_utc="2026-12-07T15:00:00Z", profiles=100, parallelism=1, seed=SEED, limit=50,
                    batch_size=1000, timeout_seconds=None, counts={}, phases=[], source="plan.toml")  # fmt: skip
    run.engines.append(EngineResult(engine="lsm", durability=[d]))
    (verdict,) = [r for r in judge_run(run) if r.check == "durability"]
    assert verdict.outcome is (Outcome.FAIL if fails else Outcome.PASS)
    assert "kill crash: " in verdict.reason


def test_a_store_that_does_not_open_is_the_finding_not_a_failure(tmp_path: Path) -> None:
    """The recover phase's open failing is what the crash did: the row says so (opened
    false, the error), and the verdict FAILs it, whatever the engine promised."""
    from asyncbench.config.model import CrashPoint, PhaseSpec
    from asyncbench.run.crash.crash import CrashRecord, recover_phase

    sqlite = engine_class("sqlite")

    class Unopenable(sqlite):  # type: ignore[misc, valid-type]
        async def open(self, reset: bool, background: object) -> None:
            raise RuntimeError("database disk image is malformed")

    spec = PhaseSpec(kind="insert", name="insert profiles", crash=CrashPoint(after=10, how="power"))
    record = CrashRecord(spec, acknowledged=10, seconds=0.5, acks=[(0, 0), (10, 500_000_000)])
    econf = EngineConfig("sqlite", tmp_path, {"synchronous": "FULL"}, limit=50, seed=SEED, stores=PROFILE_STORES)

    async def recover() -> DurabilityRow:
        async with anyio.create_task_group() as tg:
            row, _ = await recover_phase(record, plan(), sqlite(econf), Unopenable(econf), tg, workload("profile_store"))
        return row

    row = anyio.run(recover)
    assert (row.opened, row.open_error, row.how, row.synced_commits) == (
        False, "RuntimeError: database disk image is malformed", "power", True
    )
    assert durability_failed(row)
