"""The ``[run]`` keys are one table (asyncbench.config.RUN_KEYS): each row is a field of the
plan, its flag is on the command line, the child's copy of the config carries it, and the
per-level settings (profiles, P, counts) are a frozen Level the engine's worker count
comes from."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import anyio
import pytest

from asyncbench.cli.main import build_parser
from asyncbench.config import RUN_KEYS, BenchConfig, Level, from_document, from_json, to_json
from asyncbench.run.observe.observers import Observer
from asyncbench.run.runner import EngineRun

PLAN = {
    "run": {
        "name": "keys",
        "profiles": [300, 200],
        "parallelism": [1, 3],
        "seed": -7,
        "limit": 9,
        "batch_size": 17,
        "timeout_seconds": 30,
        "engines": ["memory"],
        "output": "out",
        "data": "dat",
        "isolate": False,
        "charts": False,
        "repeat": 3,
        "warmup": 1,
        "clean_data": False,
        "processes": 2,  # (with memory and both set, the run's preflight refuses it; the table reads it)
        "cluster": "tcp://127.0.0.1:8786",
        "reuse_data": True,
        "rate": "2k",
        "arrivals": "poisson",
        "over_time": ["read_by_id"],
    },
    "counts": {"reads": 40},
    "phase": [{"kind": "insert"}, {"kind": "read_by_id", "count": 20}, {"kind": "verify"}],
}


#: The keys no one plan can set together with PLAN's: a capacity search contradicts a run
#: rate, and the ycsb workload has other phase kinds.
CAPACITY_PLAN = {
    "run": {
        "name": "capacity-keys",
        "engines": ["memory"],
        "capacity": True,
        "slo": "p99=2ms,p999=10ms",
        "require_rate": "read_by_id=5k",
        "capacity_repeats": 2,
        "capacity_range": "200,50k",
        "capacity_probe_seconds": 1.5,
    },
    "phase": [{"kind": "insert"}, {"kind": "read_by_id"}],
}
YCSB_PLAN = {
    "run": {"name": "ycsb-keys", "engines": ["memory"], "workload": "ycsb"},
    "ycsb": {"recordcount": 100},
    "phase": [{"kind": "load"}, {"kind": "mixed", "operations": 100, "readproportion": 1.0}],
}
PLANS = [PLAN, CAPACITY_PLAN, YCSB_PLAN]


def test_every_run_key_is_a_plan_field_and_every_flag_is_on_the_command_line() -> None:
    fields = {f.name for f in dataclasses.fields(BenchConfig)}
    help_text = build_parser().format_help()
    for key in RUN_KEYS.values():
        assert key.name in fields
        if key.flag:
            assert key.flag in help_text
    assert set().union(*(p["run"] for p in PLANS)) == set(RUN_KEYS)  # these plans set every key


@pytest.mark.parametrize("plan", PLANS, ids=["run", "capacity", "ycsb"])
def test_the_childs_copy_of_the_config_is_the_config(plan: dict) -> None:  # type: ignore[type-arg]
    cfg = from_document(plan, "plan.toml")
    again = from_json(to_json(cfg))
    assert again == cfg
    for name in set(plan["run"]) - {"name", "engines"} if plan is not PLAN else plan["run"]:
        # no key was left at its default by accident
        assert getattr(cfg, name) != getattr(BenchConfig(source="x"), name), name


def test_levels_are_frozen_and_derived_from_the_plan() -> None:
    cfg = from_document(PLAN, "plan.toml")
    levels = cfg.levels()
    assert [(lv.profiles, lv.parallelism) for lv in levels] == [(300, 1), (300, 3), (200, 1), (200, 3)]
    assert levels[1].workers == 3 and levels[1].counts.reads == 40 and levels[1].counts.limit == 9
    assert cfg.level(200, 3) == levels[3]
    with pytest.raises(dataclasses.FrozenInstanceError):
        levels[0].parallelism = 2  # type: ignore[misc]
    with pytest.raises(ValueError):
        cfg.level(200, 2)


def test_the_engine_and_the_phase_loop_agree_on_the_worker_count(tmp_path: Path, monkeypatch) -> None:
    """The worker count is derived once (the level), given to the engine, and the phase
    loop asks the engine for exactly that many worker stores."""
    from asyncbench.engines.memory import MemoryEngine
    from asyncbench.workloads.profile_store.plan import draw_plan

    cfg = from_document({**PLAN, "run": {**PLAN["run"], "data": str(tmp_path), "reuse_data": False}}, "plan.toml")
    level: Level = cfg.level(200, 3)
    asked: list[int] = []
    worker = MemoryEngine.worker

    def counting(self: MemoryEngine, index: int):  # type: ignore[no-untyped-def]
        asked.append(index)
        return worker(self, index)

    monkeypatch.setattr(MemoryEngine, "worker", counting)
    run = EngineRun(cfg, level, "memory", draw_plan(level.counts, cfg.seed), Observer(), _NoSampler())
    anyio.run(run.run)
    assert run.result.ok, run.result.status_text()
    assert run.engine is not None and run.engine.config.workers == 3
    operation_phases = 2  # insert, read_by_id (verify reads through worker 0 once)
    assert asked == [0, 1, 2] * operation_phases + [0]
    assert [p.ops for p in run.result.phases if p.kind.kind == "read_by_id"] == [20]


class _NoSampler:
    peak = 0
    peak_anon: int | None = None  # the memory sampler's split (issue 40): not sampled
    peak_file: int | None = None

    def reset(self) -> int:
        return 0

    def sample(self) -> None:
        pass


def test_one_row_drives_the_flag_the_childs_copy_and_the_report_label(tmp_path: Path, monkeypatch) -> None:
    """A row added to the table (here warmup's, given a flag and a report label it has not
    today) reaches the flag parser, the child's copy of the config and the report's
    Configuration table, with no other edit: nothing else names the key or its label."""
    from asyncbench.cli.main import parse_args
    from asyncbench.cli.run_command import apply_flags
    from asyncbench.config import Int, RunKey, load
    from asyncbench.report.markdown_report import configuration
    from asyncbench.run.runner import new_result

    row = RunKey("warmup", Int(0, 999), "warm-ups", flag="--warm-ups", report="Warm-ups left out", result="warmup")
    monkeypatch.setitem(RUN_KEYS, "warmup", row)
    plan = tmp_path / "p.toml"
    plan.write_text('[run]\nrepeat = 3\n[[phase]]\nkind = "insert"\n')
    args = parse_args([str(plan), "--output", str(tmp_path / "out"), "--data", str(tmp_path / "d"), "--warm-ups", "2"])
    cfg = load(plan)
    apply_flags(cfg, args)
    assert cfg.warmup == 2  # the flag, read by the row's type
    assert from_json(to_json(cfg)).warmup == 2  # the child's copy
    run = new_result(cfg, cfg.levels()[0], "2026-01-01T00:00:00Z")
    assert "| Warm-ups left out | 2 |" in configuration(run)  # the report's label and value
    # every row with a report label is in the table the report writes, by that label
    monkeypatch.setitem(RUN_KEYS, "warmup", dataclasses.replace(row, report=None))
    labels = [line.split("|")[1].strip() for line in configuration(run)[2:]]
    assert [k.report for k in RUN_KEYS.values() if k.report] == [x for x in labels if x in {k.report for k in RUN_KEYS.values()}]
