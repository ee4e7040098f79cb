"""The headline (issue 39): per phase group the fastest engine, by how much and whether the
repeats make it significant; the checksums; what limited the run. Built once from the
result (asyncbench/report/headline.py), shown last on the console and first in the report."""

from __future__ import annotations

import copy
import re
from pathlib import Path

import pytest
from conftest import ROOT

from asyncbench.report import headline, markdown_report
from asyncbench.result import PhaseCost, RunResult
from asyncbench.workloads.profile_store.phases import Action

FIXTURE = Path(__file__).parent / "fixtures" / "result-sample.json"


@pytest.fixture
def sample() -> RunResult:
    """The fixture's run with its phases 100x longer: at 2_000 profiles they are under the
    too-short floor (asyncbench.measure.too_short), which no headline ranks."""
    run = RunResult.from_json(FIXTURE.read_bytes())
    for e in run.engines:
        for p in e.phases:
            p.seconds *= 100
    return run


def test_phases_too_short_to_measure_are_not_ranked() -> None:
    """Issue 51, finding 11: a 35 ms phase ranked lsm "2.50x faster" at load 6.4."""
    short = RunResult.from_json(FIXTURE.read_bytes())
    write = line_of(headline.build(short), "write")
    assert write == "write: too short to measure (under 0.1 s): not ranked", write
    assert "fastest" not in " ".join(headline.build(short).groups)


def line_of(h: headline.Headline, group: str) -> str:
    return next(x for x in h.lines() if x.startswith((f"{group}:", f"{group}, ")))


def group_seconds(run: RunResult, engine: str, group: str) -> float:
    e = next(e for e in run.engines if e.engine == engine)
    return sum(0.0 if p.skipped else p.seconds for p in e.phases if p.group.value == group)


def with_repeats(run: RunResult, factors: dict[str, list[float]]) -> RunResult:
    """``run`` with each engine repeated, its phase times scaled by one factor per repeat."""
    out = copy.deepcopy(run)
    out.engines = []
    n = len(next(iter(factors.values())))
    for k in range(n):
        for e in run.engines:
            r = copy.deepcopy(e)
            r.repeat = k
            for p in r.phases:
                p.seconds *= factors.get(e.engine, [1.0] * n)[k]
            out.engines.append(r)
    out.repeat = n
    return out


def test_the_fastest_real_engine_per_group_and_by_how_much(sample: RunResult) -> None:
    h = headline.build(sample)
    write = line_of(h, "write")
    rocks, lite = group_seconds(sample, "rocksdb", "write"), group_seconds(sample, "sqlite", "write")
    assert rocks < lite
    assert write.startswith("write: rocksdb fastest") and f"{lite / rocks:.2f}x faster than sqlite" in write
    assert {x.split(":")[0] for x in h.groups} >= {"write", "lookup", "scan", "query", "maintenance"}
    assert not any("memory fastest" in x for x in h.lines())  # the harness floor is no contender
    assert any("memory" in x and "harness floor" in x for x in h.lines())
    assert any(x.startswith("significance: untested") for x in h.lines())  # one run each
    assert h.checksums.startswith("checksums: All 3 engines agree")


def test_repeats_decide_whether_the_lead_is_significant(sample: RunResult) -> None:
    steady = with_repeats(sample, {"rocksdb": [1.0, 1.01, 0.99], "sqlite": [1.0, 1.01, 0.99]})
    assert "; significant over 3 repeats each (p = " in line_of(headline.build(steady), "write")
    noisy = with_repeats(sample, {"rocksdb": [1.0, 4.0, 0.3], "sqlite": [1.0, 0.4, 2.5]})
    line = line_of(headline.build(noisy), "write")
    assert ", not significant over 3 repeats each (p = " in line and "fastest" not in line, line
    tie = with_repeats(sample, {"rocksdb": [1.0, 1.0, 1.0], "sqlite": [1.0, 1.0, 1.0]})
    for e in tie.engines:  # sqlite's scan time becomes rocksdb's, within 1 %
        if e.engine == "sqlite":
            for p in e.phases:
                if p.group.value == "write":
                    p.seconds = next(
                        q.seconds for r in tie.engines if r.engine == "rocksdb" and r.repeat == e.repeat
                        for q in r.phases if q.index == p.index
                    ) * 1.01
    line = line_of(headline.build(tie), "write")
    assert "rocksdb and sqlite tie, 1.01x apart within ±5%" in line and "faster" not in line, line
    assert not any(x.startswith("significance: untested") for x in headline.build(steady).lines())


def test_disagreeing_checksums_are_in_the_headline(sample: RunResult) -> None:
    sample.engines[1].phases[2].checksum = "0000000000000000"
    assert headline.build(sample).checksums.startswith("checksums: DISAGREE")


def test_a_saturated_client_and_a_loaded_machine_are_named(sample: RunResult) -> None:
    e = next(e for e in sample.engines if e.engine == "sqlite")
    ops = [p for p in e.phases if p.action is Action.OPERATIONS]
    for p in ops:
        p.cost = PhaseCost(client_cpu_seconds=p.seconds * 0.95)
    rocks = next(e for e in sample.engines if e.engine == "rocksdb")
    for p in rocks.phases:
        if p.action is Action.OPERATIONS:
            p.cost = PhaseCost(client_cpu_seconds=p.seconds * 0.3)
    assert "limit, rocksdb: the engine or server (or I/O), not the client: client CPU under 80% busy in every " \
        "operation phase" in headline.build(sample).lines()
    sample.environment.update(load_avg_start=[5.5, 4.0, 3.0], logical_cpus=2)
    lines = headline.build(sample).lines()
    # on a loaded machine a client short of 80 % is not proof the engine was the limit
    assert "limit, rocksdb: the loaded machine or the engine (see the machine's line): client CPU under 80% busy " \
        "in every operation phase" in lines
    assert not any("busy in 0 of" in x for x in lines)  # issue 51: a count of nothing read as a bug
    assert f"limit, sqlite: client CPU at least 80% busy in {len(ops)} of {len(ops)} operation phases: " \
        "the client (Python) limited it" in lines
    assert any(x.startswith("limit, machine: load average 5.50 at the start on 2 CPUs") for x in lines)


def test_the_report_opens_with_the_headline_and_a_single_runs_load_warning(sample: RunResult) -> None:
    warning = "WARNING: a loaded machine: load average 6.00 (1 min) at the start on 2 CPUs; other busy ..."
    sample.environment["noise_advice"] = [warning]
    text = markdown_report.render(sample)
    body = text.split("## Total By Engine")[0]
    assert "**Headline**" in body
    assert "rocksdb fastest" in body and "checksums: All 3 engines agree" in body
    assert "load average 6.00" in re.sub(r"\\(.)", r"\1", body)  # today console-only


def test_the_console_ends_with_the_headline(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    from asyncbench.cli.main import main

    code = main(
        [
            str(ROOT / "benchmarks" / "quick.toml"), "--engine", "memory,sqlite", "--profiles", "2k",
            "--no-isolate", "--no-progress", "--output", str(tmp_path / "out"), "--data", str(tmp_path / "data"),
        ]
    )  # fmt: skip
    out = capfd.readouterr().out
    assert code == 0, out
    lines = out.rstrip("\n").splitlines()
    start = max(i for i, x in enumerate(lines) if x.startswith("== headline"))
    tail = lines[start:]
    # at 2_000 profiles a write phase may be under the too-short floor: then it is not ranked
    assert any(x.startswith(("  write: sqlite", "  write: too short to measure")) for x in tail), out
    assert any(x.startswith("  checksums: All 2 engines agree") for x in tail), out
    assert all(len(x) <= 80 for x in tail), tail
    assert not any(x.startswith(("report:", "log:")) for x in tail), tail  # the verdict is last


def test_a_stopped_run_says_so_and_names_the_engines_it_did_not_finish(sample: RunResult) -> None:
    """A Ctrl-C'd quick run's headline read as if memory alone had been asked for."""
    from asyncbench.result import NOT_STARTED, Status

    sample.interrupted = "interrupted by SIGINT"
    lsm, lite = sample.engines[1], sample.engines[2]
    lsm.phases = lsm.phases[:1]
    lsm.set_status(Status.INTERRUPTED, "read by user id", "interrupted by SIGINT")
    lite.phases = []
    lite.set_status(Status.INTERRUPTED, None, NOT_STARTED)
    first = headline.build(sample).lines()[0]
    assert first == (
        f"partial: interrupted by SIGINT; {lsm.engine} stopped during read by user id, {lite.engine} not started"
    ), first


def test_phases_at_a_rate_say_which_engine_kept_up() -> None:
    """A rate sweep's lookups read "no engine is faster" and nothing else; the verdict there
    is whether each engine kept the target rates (within 5 %, as --check-rate)."""
    from asyncbench.rate import Arrivals
    from asyncbench.result import OpenLoop

    run = RunResult.from_json(FIXTURE.read_bytes())
    for e in run.engines:
        for p in e.phases:
            if p.group.value == "lookup" and p.ops:
                keeps = e.engine != "sqlite" or p.name != "lookup by email"
                p.open_loop = OpenLoop(rate=p.ops_per_s * (1.0 if keeps else 2.0), arrivals=Arrivals.UNIFORM)
    line = line_of(headline.build(run), "lookup")
    assert line.startswith("lookup, at target rates: ") and "rocksdb held every rate (up to " in line, line
    email = next(p for e in run.engines if e.engine == "sqlite" for p in e.phases if p.name == "lookup by email")
    assert f"sqlite missed the rate in 1 of 4 phases (from {round(email.ops_per_s * 2):_d}/s)" in line, line


def test_an_in_process_engines_saturated_cpu_is_not_blamed_on_the_harness(sample: RunResult) -> None:
    """An in-process engine (lsm, rocksdb, sqlite) works on the client process's CPU: a
    saturated client there is the engine's work and the harness's together, and the line
    said "the client (Python) limited it" (read from the quick plan's headline)."""
    from asyncbench.result import NO_SERVER

    e = next(e for e in sample.engines if e.engine == "sqlite")
    ops = [p for p in e.phases if p.action is Action.OPERATIONS]
    for p in ops:
        p.cost = PhaseCost(client_cpu_seconds=p.seconds * 0.95, not_measured={"server_cpu": NO_SERVER})
    lines = headline.build(sample).lines()
    line = next(x for x in lines if x.startswith("limit, sqlite:"))
    assert line.endswith("the one process's CPU limited it (the engine runs in it: its work and the harness's)")
    assert "client (Python)" not in line
