"""Durability: SIGKILL during the insert (or update) phase, reopen, check the store.

A child process (``tests/crash_child.py``) opens the engine like the runner and inserts
batches through the adapter, printing each acknowledged batch; the parent kills it
mid-run, reopens the store in this process and checks (``store_checks``): it opens, holds
exactly profiles 1..k, with k >= the last acknowledged uid wherever the engine promises
that across a process kill, and every index agrees with the profiles.

The key/value engines write one profile as five separate puts, so a kill can cut a
profile in half; the profile store repairs that when built after the next open (the engine
says its last close was not clean: ``workloads/profile_store/kv_recovery.py``).
The deterministic cases make the child kill itself before one chosen write, so the torn
state is known and the repair's report can be checked exactly.
"""

from __future__ import annotations

import json
import random
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import pytest
from conftest import ROOT, mysql_configured, postgres_expected, store_of
from store_checks import (
    HUGE_LIMIT,
    as_profile,
    check_store,
    created_or_updated,
)

from asyncbench.engine import Engine, EngineConfig, opened
from asyncbench.engines import engine_class
from asyncbench.engines.store_dir import MARKER
from asyncbench.workloads.profile_store.generate import create_many
from asyncbench.workloads.profile_store.kv_recovery import repair
from asyncbench.workloads.profile_store.kv_store import STORE_NAMES as PROFILE_STORES
from asyncbench.workloads.profile_store.profiles import (
    country_status_key,
    reputation_key,
    update,
)

SEED = 570123434
N = 20_000
CHILD = str(Path(__file__).with_name("crash_child.py"))
MYSQL_DB = "asyncbench_durability"  # also the postgres engine's test database
SERVER_ENGINES = ("mysql", "postgres")


def spawn(engine: str, data: Path, n: int, batch: int, **extra: Any) -> subprocess.Popen[str]:
    spec = {"engine": engine, "data": str(data), "n": n, "batch": batch, "seed": SEED, **extra}
    return subprocess.Popen(
        [sys.executable, CHILD, json.dumps(spec)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )


def run_until_killed(
    child: subprocess.Popen[str], kill_after_line: int | None, kill_delay: float = 0.0
) -> tuple[int, int]:
    """Read acknowledgements; SIGKILL after line ``kill_after_line`` (None: the child kills
    itself). Returns (last acknowledged inserted uid, last acknowledged updated uid)."""
    acked = {"insert": 0, "update": 0}
    lines = 0
    assert child.stdout is not None
    try:
        for line in child.stdout:
            word, _, value = line.partition(" ")
            assert word in acked, f"child finished (or said {line!r}) before it was killed"
            acked[word] = int(value)
            lines += 1
            if lines == kill_after_line:
                time.sleep(kill_delay)  # let the next batch get under way
                child.send_signal(signal.SIGKILL)
                break
        child.wait(timeout=60)
    finally:
        child.kill()
    assert child.stderr is not None
    stderr = child.stderr.read()
    child.stderr.close()
    child.stdout.close()
    assert child.returncode == -signal.SIGKILL, f"child exited {child.returncode}: {stderr}"
    return acked["insert"], acked["update"]


def make(name: str, data: Path, **settings: Any) -> Engine:
    if name in SERVER_ENGINES:
        settings.setdefault("database", MYSQL_DB)
    return engine_class(name)(EngineConfig(name, data, settings, limit=HUGE_LIMIT, seed=SEED, stores=PROFILE_STORES))


def _repaired(engine: Any) -> Any:
    """What the profile store's crash repair did over the engine's key/value primitives
    after this open (None: the store was closed cleanly, or the engine has none)."""
    return getattr(engine.worker(0), "repaired", None)


async def reopen_and_check(
    name: str, data: Path, n: int, allowed: Any = None, **settings: Any
) -> tuple[int, Any]:
    """Open the store (reset off) in this process, check it; (count, the repair report)."""
    engine = make(name, data, **settings)  # on the loop: the lsm adapter makes anyio primitives
    async with opened(engine, reset=False):
        state = await check_store(engine, n, SEED, allowed)
        return state.count, _repaired(engine)


# --- a kill at a random-ish point --------------------------------------------------------

CASES = [
    pytest.param("rocksdb", {}, 500, True, id="rocksdb"),
    pytest.param("sqlite", {}, 500, True, id="sqlite"),
    pytest.param(
        "mysql",
        {},
        100,
        True,
        id="mysql",
        marks=pytest.mark.skipif(not mysql_configured(), reason="MYSQL_HOST/MYSQL_PORT not set"),
    ),
    pytest.param(
        "postgres",
        {},
        100,
        True,  # every acknowledged insert committed on the server, which a client kill leaves running
        id="postgres",
        marks=pytest.mark.skipif(not postgres_expected(), reason="PGHOST not set"),
    ),
    pytest.param(
        "lsm",
        {"wal_mode": "sync"},
        100,
        True,
        id="lsm-sync-wal",
    ),
    pytest.param(
        "lsm",
        {},
        500,
        False,
        id="lsm-async-wal",
    ),
]


@pytest.mark.parametrize(("name", "settings", "batch", "keeps_acked"), CASES)
def test_sigkill_during_inserts_leaves_a_consistent_prefix(
    tmp_path: Path, name: str, settings: dict, batch: int, keeps_acked: bool
) -> None:
    rng = random.Random()
    kill_after = rng.randint(2, 8)  # batches acknowledged before the kill
    n = N if name not in SERVER_ENGINES else 2_000
    child = spawn(
        name, tmp_path / name, n, batch, settings=settings if name not in SERVER_ENGINES else {"database": MYSQL_DB}
    )
    delay = rng.uniform(0, 0.03)
    acked, _ = run_until_killed(child, kill_after, delay)
    where = f"killed {delay * 1000:.0f} ms after batch {kill_after} was acknowledged"
    assert acked == kill_after * batch, where
    k, recovery = anyio.run(lambda: reopen_and_check(name, tmp_path / name, n, **settings))
    print(f"{name} {settings}: {where}; recovered {k}; {recovery.summary() if recovery else 'no repair'}")
    if keeps_acked:
        assert k >= acked, f"lost acknowledged inserts: {k} < {acked} ({where})"
    if name == "rocksdb":
        assert recovery is not None  # no clean-shutdown mark: the repair ran


# --- a kill before one chosen write: the torn state is known -----------------------------


def _torn(
    tmp_path: Path, name: str, die: dict, settings: dict, n: int = 3000, **extra: Any
) -> tuple[Path, int]:
    data = tmp_path / name
    acked, _ = run_until_killed(spawn(name, data, n, 100, settings=settings, die=die, **extra), None)
    return data, acked


@pytest.mark.parametrize(
    ("store", "deleted"),
    [("profiles", [1, 1, 1, 1]), ("created-at-index", [1, 1, 0, 0]), ("email-index", [0, 0, 0, 0])],
    ids=["before-profile", "before-created-at", "before-first-index"],
)
def test_rocksdb_insert_torn_between_puts_is_repaired(tmp_path: Path, store: str, deleted: list[int]) -> None:
    """Indexes are written before the profile: a cut insert leaves only orphan entries."""
    at = 1234
    data, acked = _torn(
        tmp_path, "rocksdb", {"phase": "insert", "store": store, "method": "put", "at": at}, {}
    )
    assert acked == 1200
    k, recovery = anyio.run(reopen_and_check, "rocksdb", data, 3000)
    assert k == at - 1  # the profile in flight was never written
    assert [ix.deleted for ix in recovery.indexes] == deleted
    assert [ix.added for ix in recovery.indexes] == [0, 0, 0, 0]
    assert recovery.profiles == k


def test_rocksdb_update_torn_before_profile_put_is_repaired(tmp_path: Path) -> None:
    """New keys written, profile not yet: the new keys are stale, the profile stays old."""
    uid = 1236  # uid % 4 == 0: its country/status key changes
    old = create_many(uid, 1, SEED)[0]
    new = update(old, SEED)
    assert country_status_key(new) != country_status_key(old) and reputation_key(new) != reputation_key(old)
    die = {"phase": "update", "store": "profiles", "method": "put", "at": uid}
    data, _ = _torn(tmp_path, "rocksdb", die, {}, update=True)
    k, recovery = anyio.run(reopen_and_check, "rocksdb", data, 3000, created_or_updated(SEED))
    assert k == 3000
    assert [(ix.deleted, ix.added) for ix in recovery.indexes] == [(0, 0), (1, 0), (0, 0), (1, 0)]
    assert anyio.run(read_one, data, uid) == old


def test_rocksdb_update_torn_between_delete_and_put_of_same_key_is_repaired(tmp_path: Path) -> None:
    """An unchanged country/status key is deleted and put back after the profile (as the
    reference does): a cut there leaves that entry missing and the old reputation key."""
    uid = 1237  # uid % 4 != 0: its country/status key stays
    old = create_many(uid, 1, SEED)[0]
    new = update(old, SEED)
    assert country_status_key(new) == country_status_key(old) and reputation_key(new) != reputation_key(old)
    die = {"phase": "update", "store": "country-status-index", "method": "put", "at": uid}
    data, _ = _torn(tmp_path, "rocksdb", die, {}, update=True)
    k, recovery = anyio.run(reopen_and_check, "rocksdb", data, 3000, created_or_updated(SEED))
    assert k == 3000
    assert [(ix.deleted, ix.added) for ix in recovery.indexes] == [(0, 0), (0, 1), (0, 0), (1, 0)]
    assert anyio.run(read_one, data, uid) == new


async def read_one(data: Path, uid: int) -> Any:
    engine = make("rocksdb", data)
    async with opened(engine, reset=False):
        (record,) = await store_of(engine).read_by_id([uid], [])
        return as_profile(record)


def test_lsm_insert_torn_between_puts_is_repaired(tmp_path: Path) -> None:
    """The lsm adapter writes the profile first: a cut leaves it without some entries."""
    die = {"phase": "insert", "store": "country-status-index", "method": "put", "at": 1234}
    data, acked = _torn(tmp_path, "lsm", die, {"wal_mode": "sync"})
    k, _ = anyio.run(lambda: reopen_and_check("lsm", data, 3000, wal_mode="sync"))
    assert k >= acked


def test_kv_recovery_repairs_a_torn_lsm_store(tmp_path: Path) -> None:
    """The lsm adapter's open repairs a torn insert: exactly the expected fixes, then the
    store checks pass."""
    die = {"phase": "insert", "store": "country-status-index", "method": "put", "at": 1234}
    data, acked = _torn(tmp_path, "lsm", die, {"wal_mode": "sync"})

    async def main() -> tuple[int, Any]:
        engine = make("lsm", data, wal_mode="sync")
        async with opened(engine, reset=False):
            store_of(engine)  # the workload's store: built over the primitives, it repairs first
            report = _repaired(engine)
            state = await check_store(engine, 3000, SEED)
            return state.count, report

    k, report = anyio.run(main)
    assert k >= acked
    # The adapter writes profile 1234 and its email entry before the cut (k == 1234); were
    # it to write the profile last, as rocksdb does, only an orphan email entry (k == 1233).
    fixes = {1234: [(0, 0), (0, 1), (0, 1), (0, 1)], 1233: [(1, 0), (0, 0), (0, 0), (0, 0)]}
    assert k in fixes and report is not None
    assert [(ix.deleted, ix.added) for ix in report.indexes] == fixes[k]


# --- the normal reopen pays nothing ------------------------------------------------------


def test_rocksdb_clean_reopen_does_not_scan(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import asyncbench.workloads.profile_store.kv_store as rocksdb_module  # where the engines call repair

    scans: list[str] = []

    def spy(*args: Any) -> Any:
        scans.append("repair")
        return repair(*args)

    monkeypatch.setattr(rocksdb_module, "repair", spy)
    data = tmp_path / "rocksdb"

    async def main() -> None:
        engine = make("rocksdb", data)
        async with opened(engine, reset=True):
            await store_of(engine).insert(create_many(1, 500, SEED), [])
            assert _repaired(engine) is None and scans == []  # a fresh store is not scanned
        for _ in range(2):  # close + reopen, as the runner's reopen phase does
            engine = make("rocksdb", data)
            async with opened(engine, reset=False):
                store_of(engine)
                assert _repaired(engine) is None
                await check_store(engine, 600, SEED)
        assert scans == []
        (data / "CLEAN_SHUTDOWN").unlink()  # as if the last session had been killed ...
        marker = json.loads((data / MARKER).read_text())
        (data / MARKER).write_text(json.dumps({**marker, "in_use": True}))  # ... after its open
        engine = make("rocksdb", data)
        async with opened(engine, reset=False):
            store_of(engine)  # the workload's store repairs before its first batch
            report = _repaired(engine)
            assert report is not None and report.changed == 0
        assert scans == ["repair"]

    anyio.run(main)
