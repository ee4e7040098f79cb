"""A crash in a run, end to end (issue 57): the engine's process is SIGKILLed once the crash
point's operations are acknowledged, the recover phase opens the store again and checks it
profile by profile, and the result, the report and the verdict carry one durability row
per engine. Engines whose setting syncs every commit lose nothing; whatever an engine
loses, present and lost add up to exactly what was acknowledged."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from asyncbench.workloads.profile_store.kv_store import STORE_NAMES as PROFILE_STORES

PROFILES, AFTER = 300, 200

SYNCED = f"""[run]
profiles = {PROFILES}
batch_size = 50
engines = ["lsm", "rocksdb", "sqlite"]

[engines.lsm]
wal_mode = "sync"
[engines.rocksdb]
sync = true
[engines.sqlite]
synchronous = "FULL"

[[phase]]
kind = "insert"
crash = {{ after = {AFTER}, how = "kill" }}

[[phase]]
kind = "recover"
"""


def rows(result: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {e["engine"]: e["durability"][0] for e in result["engines"] if e["durability"]}


def test_engines_that_sync_every_commit_lose_no_acknowledged_write(tmp_path: Path, run_cli) -> None:  # type: ignore[no-untyped-def]
    plan = tmp_path / "plan.toml"
    plan.write_text(SYNCED)
    code, results, output = run_cli(str(plan), "--no-progress")
    assert code == 0, output
    (result,) = results
    assert [e["status"] for e in result["engines"]] == ["ok"] * 3, output
    for name, d in rows(result).items():
        figures = (d["acknowledged"], d["acknowledged_present"], d["acknowledged_lost"], d["torn"], d["opened"])
        assert figures == (AFTER, AFTER, 0, 0, True), (name, d)
        assert d["synced_commits"] and d["checked"] == AFTER, (name, d)
    assert [p["ops"] for p in result["engines"][0]["phases"]] == [AFTER, AFTER]  # acknowledged, then checked
    report = next((tmp_path / "out").glob("profiles-*/asyncbench-*.md")).read_text()
    section = report.split("## Durability After A Crash", 1)[1]
    for name in ("lsm", "rocksdb", "sqlite"):
        assert f"| {name} | kill in insert profiles" in section
    assert "**FAIL**" not in section and section.count("| PASS |") == 3
    assert "| **PASS** | sqlite | insert profiles | durability | kill crash: lost 0 of 200 acknowledged" in report
    html = next((tmp_path / "out").glob("profiles-*/asyncbench-*.html")).read_text()
    assert "Durability After A Crash" in html


@pytest.mark.parametrize("isolate", [True, False])
def test_what_an_engine_loses_adds_up_to_what_was_acknowledged(tmp_path: Path, run_cli, isolate: bool) -> None:  # type: ignore[no-untyped-def]
    """lsm's default log is written by a background task about once a second: a kill loses
    the acknowledged writes still in the process, counted exactly (present + lost)."""
    plan = tmp_path / "plan.toml"
    plan.write_text(
        f'[run]\nprofiles = {PROFILES}\nengines = ["lsm"]\n[[phase]]\nkind = "insert"\n[[phase]]\nkind = "update"\n'
        f'crash = {{ after = {AFTER} }}\n[[phase]]\nkind = "recover"\n[[phase]]\nkind = "reopen"\n'
    )
    flags = () if isolate else ("--no-isolate",)
    code, (result,), output = run_cli(str(plan), "--no-progress", *flags)
    assert code == 0, output
    d = rows(result)["lsm"]
    assert d["acknowledged"] == AFTER and d["opened"] and d["torn"] == 0
    assert d["acknowledged_present"] + d["acknowledged_lost"] == AFTER
    assert not d["synced_commits"] and d["promise"].startswith("about once a second")
    assert (d["lost_seconds"] is None) == (d["acknowledged_lost"] == 0)
    assert [p["name"] for p in result["engines"][0]["phases"]] == ["insert profiles", "update profiles", "recover", "reopen"]


def test_an_engine_without_a_store_is_refused(tmp_path: Path) -> None:
    """A server engine is not refused by name (its server is proven throw-away at the crash:
    tests/test_crash_server.py); an engine that keeps nothing is."""
    from asyncbench.engine import EngineConfig
    from asyncbench.engines import engine_class
    from asyncbench.run.crash.crash import refusal

    engine = engine_class("postgres")(EngineConfig("postgres", tmp_path, {}, limit=50, seed=1, stores=PROFILE_STORES))
    assert refusal(engine) is None
    memory = engine_class("memory")(EngineConfig("memory", tmp_path, {}, limit=50, seed=1, stores=PROFILE_STORES))
    assert "nothing to check" in (refusal(memory) or "")


def test_the_crash_point_and_what_was_acknowledged_repeat_exactly(tmp_path: Path) -> None:
    """The kill follows the acknowledgement of exactly ``after`` operations (the last batch
    is cut there), in plan order: the same prefix every time, and sqlite's WAL, written to
    the operating system at each commit, loses none of it to a process kill."""
    import anyio


    plan_file = tmp_path / "plan.toml"
    plan_file.write_text(f'[run]\nprofiles = {PROFILES}\nbatch_size = 50\nengines = ["sqlite"]\n[[phase]]\n'
                         'kind = "insert"\ncrash = { after = 130 }\n[[phase]]\nkind = "recover"\n')  # fmt: skip

    async def once(data: Path) -> tuple[list[int], tuple[int, int, int]]:
        record, row = await _crash_then_recover(plan_file, data)
        return [done for done, _ in record.acks], (row.acknowledged_present, row.acknowledged_lost, row.checked)

    first = anyio.run(once, tmp_path / "a")
    assert first == ([0, 50, 100, 130], (130, 0, 130))
    assert anyio.run(once, tmp_path / "b") == first


POWER = f"""[run]
profiles = {PROFILES}
batch_size = 50
engines = ["sqlite", "rocksdb"]

[engines.sqlite]
synchronous = "FULL"
[engines.rocksdb]
sync = false

[[phase]]
kind = "insert"
crash = {{ after = AFTER, how = "power" }}

[[phase]]
kind = "recover"
"""


@pytest.mark.parametrize("after", [1, 120, 275])
def test_a_power_cut_drops_exactly_the_unsynced_writes(tmp_path: Path, run_cli, after: int) -> None:  # type: ignore[no-untyped-def]
    """On the power-cut filesystem: sqlite syncing every commit loses no acknowledged write
    at any point; rocksdb with ``sync=false`` synced nothing since the store's clean close,
    so the cut drops every acknowledged insert of the phase, counted exactly."""
    from asyncbench.run.crash.power_mount import missing

    if missing():
        assert not os.environ.get("CI"), f"CI: a power crash needs {missing()}"  # .ci/run installs it
        pytest.skip(f"a power crash needs {missing()}")
    plan = tmp_path / "plan.toml"
    plan.write_text(POWER.replace("AFTER", str(after)))
    code, (result,), output = run_cli(str(plan), "--no-progress")
    assert code == 0, output
    sqlite, rocksdb = rows(result)["sqlite"], rows(result)["rocksdb"]
    assert (sqlite["how"], sqlite["acknowledged"], sqlite["acknowledged_lost"], sqlite["torn"]) == ("power", after, 0, 0)
    assert sqlite["synced_commits"] and sqlite["acknowledged_present"] == after
    assert (rocksdb["acknowledged_present"], rocksdb["acknowledged_lost"], rocksdb["torn"]) == (0, after, 0), rocksdb
    assert rocksdb["opened"] and not rocksdb["synced_commits"]
    report = next((tmp_path / "out").glob("profiles-*/asyncbench-*.md")).read_text()
    assert "| rocksdb | power in insert profiles" in report


def test_a_store_syncing_every_commit_loses_nothing_at_twenty_power_cut_points(tmp_path: Path) -> None:
    """Issue 57's bar: sqlite with ``synchronous=FULL`` cut at 20 seeded points of its insert
    (each on a fresh store, each point repeatable from the seed) keeps every acknowledged
    insert, and no record is torn."""
    import random

    import anyio

    from asyncbench.run.crash.power_mount import missing

    if missing():
        assert not os.environ.get("CI"), f"CI: a power crash needs {missing()}"  # .ci/run installs it
        pytest.skip(f"a power crash needs {missing()}")
    points = sorted(random.Random(57).sample(range(1, PROFILES + 1), 20))
    plan_file = tmp_path / "plan.toml"

    async def cut_at(after: int) -> tuple[int, int, int]:
        plan_file.write_text(f'[run]\nprofiles = {PROFILES}\nbatch_size = 25\nengines = ["sqlite"]\n'
                             '[engines.sqlite]\nsynchronous = "FULL"\n[[phase]]\nkind = "insert"\n'
                             f'crash = {{ after = {after}, how = "power" }}\n[[phase]]\nkind = "recover"\n')  # fmt: skip
        _, row = await _crash_then_recover(plan_file, tmp_path / f"data-{after}")
        assert row.opened and row.synced_commits, row
        return row.acknowledged, row.acknowledged_lost, row.torn

    for after in points:
        assert anyio.run(cut_at, after) == (after, 0, 0)


def test_several_crash_points_in_one_run_each_on_a_copy_of_the_store(tmp_path: Path, run_cli) -> None:  # type: ignore[no-untyped-def]
    """``crash.points = 3``: points at a third, two thirds and all of ``after``, each a row;
    the earlier ones run on copies of the store as the phase found it, deleted after."""
    from asyncbench.run.crash.power_mount import missing

    if missing():
        assert not os.environ.get("CI"), f"CI: a power crash needs {missing()}"  # .ci/run installs it
        pytest.skip(f"a power crash needs {missing()}")
    plan = tmp_path / "plan.toml"
    plan.write_text(POWER.replace('how = "power" }', 'how = "power", points = 3 }').replace("AFTER", str(AFTER)))
    assert "points = 3" in plan.read_text()
    code, (result,), output = run_cli(str(plan), "--no-progress", "--keep-data")
    assert code == 0, output
    by_engine = {e["engine"]: e["durability"] for e in result["engines"]}
    assert [(d["after"], d["acknowledged_lost"]) for d in by_engine["sqlite"]] == [(66, 0), (133, 0), (200, 0)]
    assert [(d["after"], d["acknowledged_lost"]) for d in by_engine["rocksdb"]] == [(66, 66), (133, 133), (200, 200)]
    assert all(d["opened"] and d["torn"] == 0 for rows in by_engine.values() for d in rows)
    stores = next((tmp_path / "data").glob("profiles-*"))
    assert sorted(p.name for p in stores.iterdir()) == ["rocksdb", "sqlite"]  # the copies are gone


async def _crash_then_recover(plan_file: Path, data: Path) -> tuple[Any, Any]:
    """The plan's crashed insert on a fresh sqlite store under ``data`` (the plan's sqlite
    settings), then its recover phase: the crash record and the durability row."""
    import anyio

    from asyncbench.config import load
    from asyncbench.dirs.paths import store_root
    from asyncbench.engine import EngineConfig
    from asyncbench.engines import engine_class
    from asyncbench.run.crash.crash import crash_phase, recover_phase

    cfg = load(plan_file)
    cfg.data = data
    level = cfg.level(PROFILES, 1)
    econf = EngineConfig(
        "sqlite",
        store_root(data, PROFILES, "profiles") / "sqlite",
        cfg.engine_settings.get("sqlite", {}),
        limit=50,
        seed=cfg.seed,
        stores=PROFILE_STORES,
    )
    econf.data_dir.mkdir(parents=True)
    async with anyio.create_task_group() as tg:
        engine = engine_class("sqlite")(econf)
        await engine.open(True, tg)
        drawn = cfg.workload_impl.draw_plan(level.counts, cfg.seed)
        record = await crash_phase(cfg, level, 0, engine, drawn)
        fresh = engine_class("sqlite")(econf)
        row, _ = await recover_phase(record, drawn, engine, fresh, tg, cfg.workload_impl)
        await fresh.close()
        tg.cancel_scope.cancel()
    return record, row
