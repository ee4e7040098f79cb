"""A crash in a YCSB phase (issue 57, ``workloads/ycsb/recovery.py``): the load and a mixed
phase that writes may end in a crash; ``recover`` reads every record back and compares it,
byte for byte, with the versions the plan wrote. Counted exactly in a fake store (lost,
unacknowledged present, torn), the versions derived from the plan equal what the store's
own code writes, a corrupt record in a real rocksdb or sqlite store is torn, and the whole
run on lsm, rocksdb and sqlite: present and lost add up to what was acknowledged, and the
settings that sync every commit lose nothing."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import anyio
import pytest
import rocksdict
from test_crash_recovery import left_by_a_crash

from asyncbench.engine import EngineConfig, opened
from asyncbench.engines import engine_class
from asyncbench.store import Placement
from asyncbench.workload import RecoveryCounts
from asyncbench.workloads import workload
from asyncbench.workloads.ycsb import settings as ycsb_settings
from asyncbench.workloads.ycsb.kv_store import DictKv, KvTable, KvYcsbStore
from asyncbench.workloads.ycsb.operations import INSERT, READMODIFYWRITE, UPDATE
from asyncbench.workloads.ycsb.phases import MixedOps, Plan
from asyncbench.workloads.ycsb.recovery import key_writes, versions
from asyncbench.workloads.ycsb.sql_store import USERTABLE
from asyncbench.workloads.ycsb.store import run_sync

SEED = 570_123_434
RECORDS = 300
#: A mixed phase that writes every way: one field, a read-modify-write, inserts.
MIX = {
    "operations": 1200, "readproportion": 0.3, "updateproportion": 0.3, "insertproportion": 0.2,
    "scanproportion": 0.0, "readmodifywriteproportion": 0.2, "requestdistribution": "zipfian",
}  # fmt: skip

YCSB = workload("ycsb")


def plan(records: int = RECORDS) -> Plan:
    settings = YCSB.settings({"recordcount": records, "fieldcount": 4, "fieldlength": 20})  # type: ignore[attr-defined]
    return YCSB.draw_plan(YCSB.counts(records, 50, {}, settings), SEED)  # type: ignore[no-any-return]


def mixed_params() -> dict[str, Any]:
    return ycsb_settings.mixed_params(MIX, {"recordcount": RECORDS})


def mixed_ops(p: Plan) -> MixedOps:
    ops = YCSB.phase_items(YCSB.phases["mixed"], None, None, p, mixed_params())
    assert isinstance(ops, MixedOps)
    return ops


async def _here(body: Any, *args: Any) -> Any:
    return body(*args)


def dict_store(records: dict[bytes, bytes]) -> KvYcsbStore:
    kv = DictKv()
    for name, record in records.items():
        kv.put(name, record)
    return KvYcsbStore(kv, Placement.everywhere(_here))


def loaded(p: Plan, upto: int) -> dict[bytes, bytes]:
    """Records 0..upto-1 as the load writes them."""
    keys = range(upto)
    return dict(zip(p.names(keys), p.values.encoded(keys), strict=True))


def check(store: KvYcsbStore, p: Plan, kind: str, acknowledged: int, params: dict[str, Any] | None = None) -> RecoveryCounts:
    return anyio.run(YCSB.check_recovery, store, p, YCSB.phases[kind], None, None, acknowledged, params or {})  # type: ignore[attr-defined]


# --- the load ----------------------------------------------------------------------------


def test_a_load_crash_counts_present_lost_unacknowledged_and_torn_records() -> None:
    p, acked = plan(), 200
    stored = loaded(p, acked + 5)  # five written beyond the crash point, never acknowledged
    names = p.names(range(RECORDS))
    del stored[names[17]]  # an acknowledged insert lost
    stored[names[30]] = stored[names[30]][:-1] + b"#"  # one byte changed: no version the plan wrote
    stored[names[acked + 1]] = stored[names[acked + 2]]  # an unacknowledged one, but another record's bytes
    got = check(dict_store(stored), p, "load", acked)
    assert (got.acknowledged_present, got.acknowledged_lost, got.unacknowledged_present, got.torn) == (acked - 2, 1, 4, 2)
    assert got.first_lost == 17 and got.checked == acked + 4
    assert names[30].decode() in got.torn_examples[0]


def test_a_whole_load_survived_is_all_present() -> None:
    p = plan()
    got = check(dict_store(loaded(p, RECORDS)), p, "load", RECORDS)
    assert (got.acknowledged_present, got.acknowledged_lost, got.torn, got.first_lost) == (RECORDS, 0, 0, None)


# --- the mixed phase: versions from the plan ---------------------------------------------


def executed(p: Plan, ops: MixedOps, upto: int) -> DictKv:
    """The store after the load and the phase's first ``upto`` operations, as the store's own
    code runs them (``run_sync`` over a key/value table): what the derivation must equal."""
    kv = DictKv()
    for name, record in loaded(p, RECORDS).items():
        kv.put(name, record)
    run_sync(KvTable(kv), ops[:upto], [])
    return kv


def test_the_versions_derived_from_the_plan_are_what_the_operations_wrote() -> None:
    p = plan()
    ops = mixed_ops(p)
    writes = key_writes(ops.phase)
    kinds = ops.phase.kind
    assert {int(kinds[pos]) for ps in writes.values() for pos in ps} == {UPDATE, INSERT, READMODIFYWRITE}
    hot = max(writes, key=lambda k: len(writes[k]))  # the zipfian's hottest key: many versions
    inserted = next(k for k in writes if k >= RECORDS and len(writes[k]) > 1)  # inserted, then updated
    for key in (hot, inserted, 0):
        positions = writes.get(key, [])
        seen = versions(ops.phase, key, positions)
        assert len(seen) == len(positions) + 1
        assert len(set(seen)) == len(seen), "each write makes a new version"
        name = p.names([key])[0]
        for j, pos in enumerate([-1, *positions[:6]]):  # before its first write, then after each
            assert executed(p, ops, pos + 1).get(name) == seen[j], (key, j)
    assert versions(ops.phase, inserted, [])[0] is None  # before its insert the record is absent


def test_a_mixed_crash_counts_an_older_version_as_acknowledged_writes_lost() -> None:
    p = plan()
    ops = mixed_ops(p)
    writes = key_writes(ops.phase)
    acked = 800
    kv = executed(p, ops, acked)
    store = KvYcsbStore(kv, Placement.everywhere(_here))
    all_writes = sum(1 for ps in writes.values() for pos in ps if pos < acked)
    got = check(store, p, "mixed", acked, mixed_params())
    assert (got.acknowledged_present, got.acknowledged_lost, got.unacknowledged_present, got.torn) == (all_writes, 0, 0, 0)
    # one record rolled back two writes (its version before them), one record torn
    key = next(k for k, ps in writes.items() if k < RECORDS and sum(pos < acked for pos in ps) >= 3)
    ps = [pos for pos in writes[key] if pos < acked]
    name = p.names([key])[0]
    kv.put(name, versions(ops.phase, key, ps)[len(ps) - 2])
    other = next(k for k in range(RECORDS) if k not in writes)  # a record the phase never wrote
    kv.put(p.names([other])[0], loaded(p, RECORDS)[name])  # holds another record's loaded bytes
    got = check(store, p, "mixed", acked, mixed_params())
    assert (got.acknowledged_lost, got.torn, got.first_lost) == (2, 1, ps[-2])
    assert got.acknowledged_present == all_writes - 2
    # an acknowledged insert gone: lost; a write past the crash point found: unacknowledged
    kv = executed(p, ops, acked)
    new = next(k for k in writes if k >= RECORDS and writes[k][0] < acked)
    kv.delete(p.names([new])[0])
    beyond = next(k for k, ps in writes.items() if k < RECORDS and any(pos >= acked for pos in ps))
    a = sum(pos < acked for pos in writes[beyond])
    kv.put(p.names([beyond])[0], versions(ops.phase, beyond, writes[beyond])[a + 1])
    got = check(KvYcsbStore(kv, Placement.everywhere(_here)), p, "mixed", acked, mixed_params())
    lost_new = sum(pos < acked for pos in writes[new])
    assert (got.acknowledged_lost, got.unacknowledged_present, got.torn) == (lost_new, 1, 0)
    assert got.first_lost == writes[new][0]


# --- real stores: a corrupt record is torn -----------------------------------------------


async def _load_store(name: str, data: Path, p: Plan, upto: int) -> None:
    engine = engine_class(name)(EngineConfig(name, data, {}, limit=50, seed=SEED, stores=(USERTABLE,)))
    async with opened(engine, reset=True):
        items = YCSB.phase_items(YCSB.phases["load"], None, None, p, {})
        call = YCSB.phases["load"].call
        assert call is not None
        await call(YCSB.store(engine.worker(0), 50), items[:upto], SEED, [])


async def _check_store(name: str, data: Path, p: Plan, acknowledged: int) -> RecoveryCounts:
    engine = engine_class(name)(EngineConfig(name, data, {}, limit=50, seed=SEED, stores=(USERTABLE,)))
    async with opened(engine, reset=False):
        kind = YCSB.phases["load"]
        return await YCSB.check_recovery(YCSB.store(engine.worker(0), 50), p, kind, None, None, acknowledged, {})  # type: ignore[attr-defined,no-any-return]


def test_a_corrupt_value_in_a_real_rocksdb_store_is_torn(tmp_path: Path) -> None:
    p = plan()
    anyio.run(_load_store, "rocksdb", tmp_path, p, RECORDS)
    name = p.names([9])[0]
    db = rocksdict.Rdict(str(tmp_path / USERTABLE), rocksdict.Options(raw_mode=True))
    try:
        value = bytes(db[name])
        db[name] = value[:-3] + b"\xff\xfe!"  # its last bytes damaged, its length kept
    finally:
        db.close()
    left_by_a_crash(tmp_path)
    got = anyio.run(_check_store, "rocksdb", tmp_path, p, RECORDS)
    assert (got.torn, got.acknowledged_present, got.acknowledged_lost) == (1, RECORDS - 1, 0)
    assert name.decode() in got.torn_examples[0]


def test_a_corrupt_field_in_a_real_sqlite_store_is_torn(tmp_path: Path) -> None:
    p = plan()
    anyio.run(_load_store, "sqlite", tmp_path, p, RECORDS)
    assert anyio.run(_check_store, "sqlite", tmp_path, p, RECORDS).torn == 0
    db = sqlite3.connect(tmp_path / "store.db")  # one field changed behind the engine
    try:
        with db:
            columns = [row[1] for row in db.execute(f"PRAGMA table_info({USERTABLE})")]
            db.execute(f"UPDATE {USERTABLE} SET {columns[2]} = ? WHERE {columns[0]} = ?", (b"half-written", p.names([7])[0].decode()))
    finally:
        db.close()
    left_by_a_crash(tmp_path)
    got = anyio.run(_check_store, "sqlite", tmp_path, p, RECORDS)
    assert (got.torn, got.acknowledged_present, got.acknowledged_lost) == (1, RECORDS - 1, 0)


# --- the plan ------------------------------------------------------------------------------

PLAN = """[run]
workload = "ycsb"
seed = 570_123_434
engines = ["lsm", "rocksdb", "sqlite"]
{engines}
[ycsb]
recordcount = {records}
fieldcount = 10
fieldlength = 100

[[phase]]
kind = "load"
{crash}
{mixed}
[[phase]]
kind = "recover"
"""
SYNCED = '[engines.lsm]\nwal_mode = "sync"\n[engines.rocksdb]\nsync = true\n[engines.sqlite]\nsynchronous = "FULL"\n'
MIXED = """
[[phase]]
kind = "mixed"
operations = {ops}
readproportion = {reads}
updateproportion = {updates}
insertproportion = 0.0
scanproportion = 0.0
readmodifywriteproportion = 0.0
requestdistribution = "zipfian"
{extra}
"""


def durability(result: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    return {e["engine"]: e["durability"] for e in result["engines"]}


@pytest.mark.parametrize("engines", ["", SYNCED])
def test_a_load_crash_on_every_serverless_engine(tmp_path: Path, run_cli, engines: str) -> None:  # type: ignore[no-untyped-def]
    """3_000 records, a kill once 1_500 are acknowledged: every engine's present and lost
    add up to 1_500, nothing torn, nothing unacknowledged (none was issued); the settings
    that sync every commit lose none, and neither do rocksdb's and sqlite's defaults, whose
    writes reach the OS at each acknowledged operation (a kill drops none of those)."""
    plan_file = tmp_path / "plan.toml"
    crash = 'crash = { after = 1_500, how = "kill" }'
    plan_file.write_text(PLAN.format(engines=engines, records=3000, crash=crash, mixed=""))
    code, (result,), output = run_cli(str(plan_file), "--no-progress")
    assert code == 0, output
    rows = durability(result)
    for name, (d,) in rows.items():
        assert (d["phase"], d["acknowledged"], d["opened"], d["torn"], d["unacknowledged_present"]) == ("load", 1500, True, 0, 0), name
        assert d["acknowledged_present"] + d["acknowledged_lost"] == 1500, (name, d)
        assert d["checked"] == d["acknowledged_present"], (name, d)
    for name in ("rocksdb", "sqlite") if not engines else ("lsm", "rocksdb", "sqlite"):
        assert rows[name][0]["acknowledged_lost"] == 0, (name, rows[name])
    if engines:
        assert all(d["synced_commits"] for (d,) in rows.values())


def test_a_mixed_crash_that_syncs_every_commit_loses_nothing(tmp_path: Path, run_cli) -> None:  # type: ignore[no-untyped-def]
    plan_file = tmp_path / "plan.toml"
    mixed = MIXED.format(ops=1000, reads=0.5, updates=0.5, extra='crash = { after = 600, how = "kill", points = 2 }')
    plan_file.write_text(PLAN.format(engines=SYNCED, records=500, crash="", mixed=mixed))
    code, (result,), output = run_cli(str(plan_file), "--no-progress")
    assert code == 0, output
    figures = {
        name: [(d["after"], d["acknowledged_present"], d["acknowledged_lost"], d["torn"]) for d in rows]
        for name, rows in durability(result).items()
    }
    first = figures["lsm"]
    assert [after for after, *_ in first] == [300, 600] and all(lost == torn == 0 for _, _, lost, torn in first)
    assert 0 < first[0][1] < first[1][1] < 600  # the updates among the acknowledged operations
    assert figures["rocksdb"] == figures["sqlite"] == first  # the plan says which writes were acknowledged


@pytest.mark.parametrize(
    ("mixed", "key", "problem"),
    [
        (MIXED.format(ops=100, reads=1.0, updates=0.0, extra="crash = { after = 50 }"), "phase[1].crash",
         "this mixed phase only reads"),
        (MIXED.format(ops=100, reads=0.5, updates=0.5, extra="crash = { after = 50 }\nduration = 5"),
         "phase[2].kind", "runs for a duration"),  # a clock, not its crash point, would end it
        (MIXED.format(ops=100, reads=0.5, updates=0.5, extra="")
         + MIXED.format(ops=100, reads=0.5, updates=0.5, extra="crash = { after = 50 }"), "phase[2].crash",
         "crash the first phase that rewrites records"),
    ],
)  # fmt: skip
def test_a_crash_ycsb_cannot_check_is_refused_naming_the_key(tmp_path: Path, run_cli, mixed: str, key: str, problem: str) -> None:  # type: ignore[no-untyped-def]
    plan_file = tmp_path / "plan.toml"
    plan_file.write_text(PLAN.format(engines="", records=200, crash="", mixed=mixed))
    code, results, output = run_cli(str(plan_file), "--no-progress")
    assert code == 2 and not results, output
    assert f"{plan_file}: {key}" in output and problem in output, output
    assert not (tmp_path / "out").exists() and not (tmp_path / "data").exists()


def test_a_read_phase_before_a_crash_gives_one_checksum_on_every_engine(tmp_path: Path, run_cli) -> None:  # type: ignore[no-untyped-def]
    """load, a read-only mixed phase (YCSB's C, which changes no record, so a crash may
    follow it), then a mixed phase crashed at a kill: the read phase's checksum is the
    same on lsm, rocksdb and sqlite, and so is which writes the crash acknowledged."""
    plan_file = tmp_path / "plan.toml"
    reads = MIXED.format(ops=2000, reads=1.0, updates=0.0, extra="")
    crashed = MIXED.format(ops=2000, reads=0.5, updates=0.5, extra='crash = { after = 1_000, how = "kill" }')
    plan_file.write_text(PLAN.format(engines="", records=3000, crash="", mixed=reads + crashed))
    code, (result,), output = run_cli(str(plan_file), "--no-progress")
    assert code == 0, output
    sums = {e["engine"]: [p["checksum"] for p in e["phases"]] for e in result["engines"]}
    assert sums["lsm"][1] and sums["lsm"][1] == sums["rocksdb"][1] == sums["sqlite"][1], sums
    rows = {name: d for name, (d,) in durability(result).items()}
    writes = {d["acknowledged_present"] + d["acknowledged_lost"] for d in rows.values()}
    assert len(writes) == 1 and 0 < writes.pop() < 1000, rows  # the updates among 1_000 operations
    assert all(d["torn"] == 0 and d["opened"] for d in rows.values()), rows
    assert rows["rocksdb"]["acknowledged_lost"] == rows["sqlite"]["acknowledged_lost"] == 0  # each write reached the OS
