"""The LMDB adapter: the same answers as the memory engine on both workloads, its store
refused when foreign or damaged, kept across a reopen, and a full map named.

The scan contract is checked against the memory engine's ordered store (``DictKv``) on
random keys; the profile store's quick plan and YCSB's A and E (YCSB's own files, ``run
-P``) run through the real CLI beside the memory engine, whose checksums are the spec's.
"""

from __future__ import annotations

import json
import os
import random
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from conftest import ROOT, store_of

pytest.importorskip("lmdb")

from asyncbench.engine import EngineConfig, opened  # noqa: E402
from asyncbench.engines.lmdb import DATA_FILE, LmdbEngine, LmdbMapFull, OtherDatabases  # noqa: E402
from asyncbench.engines.memory import MemoryEngine  # noqa: E402
from asyncbench.engines.store_dir import MARKER, StoreDamaged, StoreDirError, StoreMissing  # noqa: E402
from asyncbench.workloads.profile_store.generate import create_many  # noqa: E402
from asyncbench.workloads.profile_store.kv_store import STORE_NAMES as PROFILE_STORES  # noqa: E402
from asyncbench.workloads.profile_store.profiles import COUNTRIES, STATUSES, encode  # noqa: E402
from asyncbench.workloads.ycsb.kv_store import DictKv  # noqa: E402

SEED = 570123434
LIMIT = 7
N = 600


def run(fn: Callable[..., Awaitable[Any]], *args: Any) -> Any:
    return anyio.run(fn, *args)


def make(path: Path, stores: tuple[str, ...] = PROFILE_STORES, **settings: Any) -> LmdbEngine:
    return LmdbEngine(EngineConfig("lmdb", path, settings, LIMIT, SEED, stores=stores))


async def fill(path: Path, n: int = N) -> None:
    """A cleanly closed store of ``n`` profiles."""
    async with opened(make(path)) as e:
        await store_of(e).insert(create_many(1, n, SEED), [])


async def count(path: Path) -> int:
    async with opened(make(path), reset=False) as e:
        return int(await store_of(e).count())


def crash(path: Path, n: int = N) -> None:
    """A store written and then left as a killed process leaves it: the environment closed
    without the engine's close (no clean-shutdown mark, no record of the files)."""

    async def main() -> None:
        engine = make(path)
        await engine.open(reset=True)
        await store_of(engine).insert(create_many(1, n, SEED), [])
        env, engine._env = engine._env, None
        assert env is not None
        env.close()

    run(main)


def raised(fn: Callable[..., Awaitable[Any]], *args: Any) -> BaseException:
    """The one error ``run(fn, *args)`` raised, out of ``opened``'s task group."""
    try:
        run(fn, *args)
    except BaseException as exc:  # noqa: BLE001 - unwrapped below
        while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
            exc = exc.exceptions[0]
        return exc
    raise AssertionError(f"{fn.__name__}{args} raised nothing")


def refusal(path: Path) -> BaseException:
    """The one error a reopen keeping the data raised."""
    return raised(count, path)


# --- the key/value contract ------------------------------------------------------------------


def test_scan_matches_the_ordered_reference_on_random_keys(tmp_path: Path) -> None:
    """``scan(start, last, limit)``: the first ``limit`` keys >= start and <= last (None: no
    bound) in byte order, as the memory engine's DictKv; also on empty and inverted ranges,
    starts before the first key and past the last, and bytes above 0x7f."""
    rng = random.Random(5)
    keys = {bytes(rng.randrange(0x20, 0x100) for _ in range(rng.randrange(1, 6))) for _ in range(400)}

    async def main() -> None:
        async with opened(make(tmp_path, stores=("t",))) as e:
            kv = e.worker(0).store("t")
            ref = DictKv()
            for k in sorted(keys, key=lambda _: rng.random()):
                kv.put(k, k[::-1])
                ref.put(k, k[::-1])
            dropped = rng.sample(sorted(keys), 50)
            for k in dropped:
                kv.delete(k)
                ref.delete(k)
            kv.delete(b"never there")  # deleting a missing key is no error
            assert kv.count() == ref.count() == len(keys) - 50
            assert list(kv.items()) == list(ref.items())
            probes = [b"", b"\x00", b"\xff\xff\xff\xff\xff\xff", *rng.sample(sorted(keys), 40)]
            probes += [bytes(rng.randrange(0x20, 0x100) for _ in range(3)) for _ in range(40)]
            for start in probes:
                for last in (None, start, start + b"\xff", b"\x30", *rng.sample(probes, 3)):
                    for limit in (0, 1, 3, 50, 10**9):
                        assert kv.scan(start, last, limit) == ref.scan(start, last, limit), (start, last, limit)
            for k in rng.sample(sorted(keys), 60):
                assert kv.get(k) == ref.get(k)

    run(main)


def test_items_walks_every_entry_across_chunks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from asyncbench.engines import lmdb as module

    monkeypatch.setattr(module, "ITEMS_CHUNK", 7)  # 100 entries: 15 chunks, the last short

    async def main() -> None:
        async with opened(make(tmp_path, stores=("t",))) as e:
            kv = e.worker(0).store("t")
            for i in range(100):
                kv.put(b"%03d" % i, b"v%d" % i)
            assert list(kv.items()) == [(b"%03d" % i, b"v%d" % i) for i in range(100)]

    run(main)


# --- the profile store, beside the memory engine -----------------------------------------------


def test_profile_store_reads_and_scans_match_memory(tmp_path: Path) -> None:
    async def main() -> None:
        lm = make(tmp_path / "lmdb")
        memory = MemoryEngine(EngineConfig("memory", tmp_path, {}, LIMIT, SEED, stores=PROFILE_STORES))
        async with opened(lm), opened(memory):
            for start in range(1, N + 1, 250):
                batch = create_many(start, min(250, N + 1 - start), SEED)
                await store_of(lm).insert(batch, [])
                await store_of(memory).insert(batch, [])
            a, b = store_of(lm), store_of(memory)
            uids = [5, 1, N, 0, N + 1, 5, 300]
            assert await a.read_by_id(uids, []) == [encode(p) for p in await b.read_by_id(uids, [])]
            queries = [(c, s) for c in COUNTRIES for s in STATUSES]
            assert await a.scan_country_status(queries, []) == await b.scan_country_status(queries, [])
            at = {p[0]: p[4] for p in create_many(1, N, SEED)}
            ranges = [(at[10], at[10]), (at[10] + 1, at[11]), (0, at[3]), (at[N] + 1, at[N] + 5), (at[100], at[200])]
            assert await a.scan_created_at(ranges, []) == await b.scan_created_at(ranges, [])
            assert await a.scan_top_reputation(3, []) == await b.scan_top_reputation(3, [])
            assert await a.count() == await b.count() == N

    run(main)


def test_quick_plan_checksums_equal_memorys_through_a_reopen(tmp_path: Path, run_cli) -> None:
    """The quick plan (every phase kind, then settle, reopen and verify: the data kept
    across a close and an open) gives the memory engine's checksum in every phase."""
    code, results, out = run_cli(
        str(ROOT / "benchmarks" / "quick.toml"), "--engine", "memory,lmdb", "--profiles", "1000",
        "--no-isolate", "--yes",
    )  # fmt: skip
    assert code == 0, out[-3000:]
    (result,) = results
    by_engine = {e["engine"]: e for e in result["engines"]}
    sums = {name: [(p["name"], p["checksum"]) for p in e["phases"]] for name, e in by_engine.items()}
    assert sums["lmdb"] == sums["memory"]
    checked = [c for _, c in sums["lmdb"] if c]
    assert len(checked) >= 17, sums["lmdb"]
    assert [p["name"] for p in by_engine["lmdb"]["phases"]][-2:] == ["reopen", "final (verify)"]
    assert by_engine["lmdb"]["phases"][-1]["checksum"] == by_engine["memory"]["phases"][-1]["checksum"]


@pytest.mark.parametrize("letter", ["a", "e"])
def test_ycsb_files_give_memorys_checksums_at_p1_and_p4(letter: str, run_cli) -> None:
    """YCSB's own workloada and workloade (``run -P``; E scans) at P1 and P4."""
    code, results, out = run_cli(
        "run", "-P", f"workload{letter}", "-p", "recordcount=200", "-p", "operationcount=600",
        "--engine", "memory,lmdb", "--parallelism", "1,4", "--no-isolate", "--yes",
    )  # fmt: skip
    assert code == 0, out[-3000:]
    assert sorted(r["parallelism"] for r in results) == [1, 4]
    seen: dict[str, set[str]] = {}
    for result in results:
        by_engine = {e["engine"]: e for e in result["engines"]}
        assert set(by_engine) == {"memory", "lmdb"} and all(e["status"] == "ok" for e in by_engine.values())
        for e in by_engine.values():
            for phase in e["phases"]:
                seen.setdefault(phase["name"], set()).add(phase["checksum"])
    assert seen and all(len(sums) == 1 for sums in seen.values()), seen


# --- the store: reopen, foreign, damaged --------------------------------------------------------


def test_reopen_keeps_the_data_and_a_clean_close_needs_no_repair(tmp_path: Path) -> None:
    run(fill, tmp_path)

    async def reopen() -> None:
        async with opened(make(tmp_path), reset=False) as e:
            assert not e.worker(0).unclean
            assert await store_of(e).count() == N

    run(reopen)
    run(reopen)  # and again: the record of the first reopen's close holds


def test_an_unclean_close_makes_the_workload_repair(tmp_path: Path) -> None:
    crash(tmp_path)

    async def reopen() -> None:
        async with opened(make(tmp_path), reset=False) as e:
            prims = e.worker(0)
            assert prims.unclean
            assert await store_of(e).count() == N  # the store built over it repaired first
            assert prims.repaired is not None and not prims.unclean

    run(reopen)
    assert run(count, tmp_path) == N


def test_a_reset_refuses_a_directory_holding_a_users_file(tmp_path: Path) -> None:
    run(fill, tmp_path)
    (tmp_path / "notes.txt").write_text("mine")
    exc = raised(fill, tmp_path)
    assert isinstance(exc, StoreDirError) and "did not write" in str(exc), exc
    assert (tmp_path / "notes.txt").read_text() == "mine" and (tmp_path / DATA_FILE).exists()


def test_an_lmdb_environment_asyncbench_did_not_make_is_refused(tmp_path: Path) -> None:
    """A data.mdb of someone else's (no marker) is neither reset nor opened."""
    import lmdb

    env = lmdb.open(str(tmp_path), map_size=2**20, max_dbs=1)
    env.close()
    before = sorted(os.listdir(tmp_path))
    exc = raised(fill, tmp_path)
    assert isinstance(exc, StoreDirError) and f"has no {MARKER} marker" in str(exc), exc
    exc = refusal(tmp_path)
    assert isinstance(exc, StoreDirError) and f"no {MARKER} marker" in str(exc), exc
    assert sorted(os.listdir(tmp_path)) == before


def test_another_engines_store_is_refused(tmp_path: Path) -> None:
    run(fill, tmp_path)
    doc = json.loads((tmp_path / MARKER).read_text())
    (tmp_path / MARKER).write_text(json.dumps({**doc, "engine": "rocksdb"}))
    exc = raised(fill, tmp_path)
    assert isinstance(exc, StoreDirError) and "engine 'rocksdb'" in str(exc), exc


def test_another_workloads_databases_are_refused_by_name_and_reset_away(tmp_path: Path) -> None:
    async def ycsb() -> None:
        async with opened(make(tmp_path, stores=("usertable",))) as e:
            e.worker(0).store("usertable").put(b"user1", b"x")

    run(ycsb)
    exc = refusal(tmp_path)
    assert type(exc) is OtherDatabases and "['usertable']" in str(exc) and "reset" in str(exc), exc
    run(fill, tmp_path)  # a reset makes it the profile store's: the marker proves it ours
    assert run(count, tmp_path) == N

    async def both() -> None:  # the profile store's five databases, and one more
        async with opened(make(tmp_path, stores=(*PROFILE_STORES, "usertable"))):
            pass

    run(both)  # a reset: it makes the six
    exc = refusal(tmp_path)
    assert type(exc) is OtherDatabases and "usertable" in str(exc) and "reset" in str(exc), exc


def test_a_database_gone_from_the_environment_is_missing_not_empty(tmp_path: Path) -> None:
    """A named database dropped behind the engine's back (after an unclean stop, so no
    record of the file to compare) is an error naming it, never opened empty."""
    import lmdb

    crash(tmp_path)
    env = lmdb.open(str(tmp_path), max_dbs=5, lib_version=0)
    with env.begin(write=True) as txn:
        txn.drop(env.open_db(b"email-index", txn=txn), delete=True)
    env.close()
    exc = refusal(tmp_path)
    assert isinstance(exc, StoreMissing) and "'email-index'" in str(exc), exc


def test_a_flipped_byte_in_a_cleanly_closed_store_is_refused(tmp_path: Path) -> None:
    """LMDB pages carry no checksum: the record of the clean close (every byte's CRC32)
    tells the damage, before LMDB reads the file."""
    run(fill, tmp_path)
    data = tmp_path / DATA_FILE
    raw = bytearray(data.read_bytes())
    raw[len(raw) // 2] ^= 0x40
    data.write_bytes(bytes(raw))
    exc = refusal(tmp_path)
    assert isinstance(exc, StoreDamaged) and DATA_FILE in str(exc), exc


def test_a_deleted_data_file_is_an_error_never_an_empty_store(tmp_path: Path) -> None:
    run(fill, tmp_path)
    (tmp_path / DATA_FILE).unlink()
    exc = refusal(tmp_path)
    assert isinstance(exc, StoreDamaged) and "missing" in str(exc), exc
    assert not (tmp_path / DATA_FILE).exists()
    crash(tmp_path / "crashed")  # no record to compare with: the engine's own check
    (tmp_path / "crashed" / DATA_FILE).unlink()
    exc = refusal(tmp_path / "crashed")
    assert isinstance(exc, StoreMissing) and DATA_FILE in str(exc), exc
    assert not (tmp_path / "crashed" / DATA_FILE).exists()


def test_a_data_file_cut_short_after_a_crash_is_refused(tmp_path: Path) -> None:
    """Without a record (an unclean stop), a data.mdb shorter than its meta page claims is
    refused before a read could fault past its end; one that is not LMDB's at all too."""
    crash(tmp_path, n=3000)
    data = tmp_path / DATA_FILE
    size = data.stat().st_size
    os.truncate(data, size // 2)
    exc = refusal(tmp_path)
    assert isinstance(exc, StoreDamaged) and "cut short" in str(exc), exc
    data.write_bytes(b"\x00" * size)
    exc = refusal(tmp_path)
    assert isinstance(exc, StoreDamaged) and "cannot open" in str(exc), exc


# --- the map, the settings, the facts ------------------------------------------------------------


def test_a_full_map_is_a_named_error(tmp_path: Path) -> None:
    async def main() -> None:
        async with opened(make(tmp_path, map_size_mb=1)) as e:
            store = store_of(e)
            for start in range(1, 20_001, 500):
                await store.insert(create_many(start, 500, SEED), [])

    exc = raised(main)
    assert isinstance(exc, LmdbMapFull), exc
    assert "map_size_mb = 1" in str(exc) and "raise [engines.lmdb] map_size_mb" in str(exc)

    async def reopen() -> None:  # the failed put may have left a profile partial: not closed clean
        async with opened(make(tmp_path, map_size_mb=1), reset=False) as e:
            prims = e.worker(0)
            assert prims.unclean
            store_of(e)
            assert prims.repaired is not None and not prims.unclean

    run(reopen)


def test_settings_are_checked_and_shown_configured_and_effective(tmp_path: Path) -> None:
    for bad in ({"map_size_mb": 0}, {"map_size_mb": True}, {"map_size_mb": 2**40}):
        with pytest.raises(ValueError, match="engines.lmdb.map_size_mb"):
            make(tmp_path, **bad)
    with pytest.raises(ValueError, match="engines.lmdb.sync"):
        make(tmp_path, sync="yes")
    facts = make(tmp_path, map_size_mb=64).facts()  # before open: read from a probe
    rows = {s.name: s for s in facts.settings}
    assert (rows["MapSizeMb"].configured, rows["MapSizeMb"].effective) == ("64", "64 MB")
    assert rows["Sync"].effective == "false (MDB_NOSYNC)"
    assert make(tmp_path, map_size_mb=2**20).facts().settings[1].effective == "1048576 MB"  # not 1.04858e+06
    assert not facts.durability.synced_commits and "MDB_NOSYNC" in facts.durability.sync

    async def synced() -> None:
        async with opened(make(tmp_path, sync=True, readahead=False)) as e:
            rows = {s.name: s for s in e.facts().settings}
            assert rows["Sync"].effective == "true" and rows["MetaSync"].effective == "true"
            assert rows["ReadAhead"].effective == "false"
            assert e.facts().durability.synced_commits

    run(synced)
    assert not make(tmp_path, sync=True, metasync=False).facts().durability.synced_commits


def test_a_plan_with_a_bad_setting_exits_2_naming_it(tmp_path: Path, run_cli) -> None:
    text = (ROOT / "benchmarks" / "quick.toml").read_text() + "\n[engines.lmdb]\nmap_size_mb = 0\n"
    plan = tmp_path / "plan.toml"
    plan.write_text(text)
    code, _, out = run_cli(str(plan), "--engine", "lmdb", "--yes")
    assert code == 2, out
    assert "map_size_mb" in out and not (tmp_path / "data").exists()


def test_a_kill_loses_no_commit_synced_before_it_was_acknowledged(tmp_path: Path, run_cli) -> None:
    """The engine's process SIGKILLed mid-insert (sync on: every commit fsynced, so the
    facts promise none lost); the recover phase reopens the store, which the workload
    repairs (a record is five transactions), and finds every acknowledged profile."""
    plan = tmp_path / "plan.toml"
    plan.write_text(
        '[run]\nprofiles = 100\nbatch_size = 20\nengines = ["lmdb"]\n[engines.lmdb]\nsync = true\n'
        '[[phase]]\nkind = "insert"\ncrash = { after = 60, how = "kill" }\n[[phase]]\nkind = "recover"\n'
    )
    code, results, out = run_cli(str(plan), "--no-progress", "--yes")
    assert code == 0, out[-3000:]
    (row,) = results[0]["engines"][0]["durability"]
    got = (row["acknowledged"], row["acknowledged_present"], row["acknowledged_lost"], row["torn"], row["opened"])
    assert got == (60, 60, 0, 0, True), row
    assert row["synced_commits"]


def test_clean_data_deletes_exactly_the_engines_files(tmp_path: Path) -> None:
    """``--clean-data``: data.mdb, lock.mdb, the marks, then the directory; a file of the
    user's keeps the directory and itself."""
    store = tmp_path / "lmdb"
    run(fill, store)
    assert run(make(store).delete_store) and not store.exists()
    run(fill, store)
    (store / "mine.txt").write_text("keep")
    exc = raised(make(store).delete_store)
    assert isinstance(exc, StoreDirError) and "mine.txt" in str(exc), exc
    assert (store / "mine.txt").read_text() == "keep" and (store / DATA_FILE).exists()


def test_lock_mdb_is_passed_over_only_when_it_is_lmdbs(tmp_path: Path) -> None:
    """LMDB's reader table changes whenever a process opens the environment (another
    reader: ``mdb_stat``), which is no damage; a user's file named lock.mdb is not LMDB's:
    a reset neither deletes it nor takes it for the engine's."""
    import lmdb

    run(fill, tmp_path)
    env = lmdb.open(str(tmp_path), readonly=True, max_dbs=5, lib_version=0)  # a reader elsewhere
    with env.begin() as txn:
        assert txn.stat(env.open_db(b"profiles", txn=txn, create=False))["entries"] == N
    env.close()
    assert run(count, tmp_path) == N
    run(fill, tmp_path)  # a reset after it: the engine's files, lock.mdb included, go
    lock = tmp_path / "lock.mdb"
    lock.unlink()
    lock.write_bytes(b"my own lock file, not LMDB's")
    exc = raised(fill, tmp_path)
    assert isinstance(exc, StoreDirError) and "lock.mdb" in str(exc), exc
    assert lock.read_bytes() == b"my own lock file, not LMDB's"
