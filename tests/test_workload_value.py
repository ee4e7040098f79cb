"""The workload travels as a value: a plan (``BenchConfig.workload``) and a result
(``RunResult.workload``) each carry their own, and no process-wide selection decides
what a plan runs or how a result reads.

It was a process global set as a side effect of reading a plan or *loading* a result, so
a process holding two of them (a test session, the report of one result after another was
loaded, a plan built before another was read) read the second one's phase kinds, counts
and unit for the first.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import anyio
from conftest import ROOT

from asyncbench.config import BenchConfig, load
from asyncbench.report.markdown_report import render
from asyncbench.result import RunResult, Status
from asyncbench.run.estimate import phase_operations
from asyncbench.run.observe.observers import Observer
from asyncbench.run.runner import Benchmark
from asyncbench.workloads import workload

FIXTURE = ROOT / "tests" / "fixtures" / "result-sample.json"


def _ycsb_plan(tmp_path: Path) -> Path:
    plan = tmp_path / "a.toml"
    text = (ROOT / "benchmarks" / "ycsb" / "workloada-smoke.toml").read_text()
    plan.write_text(text.replace("recordcount = 1000", "recordcount = 300").replace("operations = 1000", "operations = 300"))
    return plan


def _ycsb_result(tmp_path: Path, run_cli) -> bytes:
    code, _, output = run_cli(str(_ycsb_plan(tmp_path)), "--engine", "memory", "--no-isolate", "--yes")
    assert code == 0, output
    (path,) = (tmp_path / "out").glob("records-*/asyncbench-*.json")
    return path.read_bytes()


def test_a_result_reads_and_reports_by_its_own_workload_whichever_was_loaded_last(tmp_path: Path, run_cli) -> None:
    ycsb_json = _ycsb_result(tmp_path, run_cli)
    ycsb = RunResult.from_json(ycsb_json)
    profile_store = RunResult.from_json(FIXTURE.read_bytes())  # loaded after: it named the process's workload
    assert ycsb.workload == "ycsb" and profile_store.workload == "profile_store"
    assert [p.kind for p in ycsb.phases] == [workload("ycsb").phases[p.kind.kind] for p in ycsb.phases]
    assert "# Benchmark 300 Records / P1" in render(ycsb)
    assert "| Records | 300 |" in render(ycsb)
    assert "· 300 records · P1" in render(ycsb)  # the footer's size, in the result's own unit
    assert "| Engine | Load | Stabilize | Load ready | Load-ready throughput |" in render(ycsb)  # its own kinds' columns

    again = RunResult.from_json(ycsb_json)  # and the other way round
    assert again.workload == "ycsb"
    text = render(profile_store)
    assert "# Benchmark 2K Profiles / P1" in text
    assert f"· {profile_store.profiles:_d} profiles · P1" in text and "records" not in text


def test_a_plan_keeps_its_workload_after_another_plan_is_read(tmp_path: Path) -> None:
    first = load(ROOT / "benchmarks" / "quick.toml")
    second = load(_ycsb_plan(tmp_path))  # read after: it named the process's workload
    assert (first.workload, second.workload) == ("profile_store", "ycsb")
    want = workload("profile_store").counts(1_000, first.limit, first.counts, first.workload_settings)
    assert first.counts_for(1_000) == want
    reads = next(n for spec, n in phase_operations(first, 1_000) if spec.kind == "read_by_id" and spec.stream == "reads")
    assert reads == want.reads  # the profile store's stream, not YCSB's


def test_a_plan_runs_its_own_workload_after_another_plan_is_read(tmp_path: Path) -> None:
    import dataclasses

    first = load(ROOT / "benchmarks" / "quick.toml")
    load(_ycsb_plan(tmp_path))
    cfg: BenchConfig = dataclasses.replace(
        first, profiles=[1_000], engines=["memory"], isolate=False, output=tmp_path / "out", data=tmp_path / "data"
    )
    started = datetime.now(UTC).isoformat(timespec="seconds")
    bench = Benchmark(cfg, Observer(), started, lambda _run: None, tmp_path / "log.jsonl")
    (run,) = anyio.run(bench.run)
    assert run.workload == "profile_store"
    (engine,) = run.engines
    assert engine.status is Status.OK, engine.status_text()
    assert [p.kind.kind for p in engine.phases] == [s.kind for s in cfg.phases]
    assert engine.final_checksum is not None
