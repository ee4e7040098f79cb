"""Verdicts a person can act on (issue 51): PASS, FAIL or INCONCLUSIVE with the reason, per
engine and phase, from the result alone (asyncbench/measure/verdicts.py); the client's own
lateness never an engine's FAIL; a failed engine first in the headline; ``--slo`` a gate on
any run with three exit statuses."""

from __future__ import annotations

import copy
from pathlib import Path

import orjson
import pytest
from tests_support_open_loop import ROOT, cli

from asyncbench.measure.latency import LatencyHistogram
from asyncbench.measure.verdicts import Outcome, exit_status, judge_run
from asyncbench.rate import Arrivals
from asyncbench.report import headline, markdown_report, verdict_table
from asyncbench.result import (
    EXIT_FAILED,
    EXIT_INCONCLUSIVE,
    EXIT_OK,
    Gates,
    LatencyStats,
    OpenLoop,
    RunResult,
    Status,
)

FIXTURE = Path(__file__).parent / "fixtures" / "result-sample.json"
MS = 1_000_000


@pytest.fixture
def sample() -> RunResult:
    run = RunResult.from_json(FIXTURE.read_bytes())
    run.environment.pop("load_avg_start", None)  # an idle machine unless a test says otherwise
    for e in run.engines:  # the fixture predates latency: every operation phase at 100 µs
        for p in e.phases:
            if p.ops:
                p.latency = stats(100_000, p.ops)
    return run


def stats(ns: int, n: int = 1000) -> LatencyStats:
    """A latency summary whose every operation took ``ns``."""
    return LatencyHistogram.from_values([ns] * n).summary()


def pace(run: RunResult, engine: str, phase: str, response_ns: int, service_ns: int, delay_ns: int, missed: bool = False) -> None:
    """Put ``engine``'s ``phase`` at a rate with these figures (every percentile alike)."""
    e = next(e for e in run.engines if e.engine == engine)
    p = next(p for p in e.phases if p.name == phase)
    p.latency = stats(service_ns, p.ops)
    rate = p.ops_per_s * (2.0 if missed else 1.0)
    p.open_loop = OpenLoop(
        rate=rate, arrivals=Arrivals.UNIFORM, response=stats(response_ns, p.ops), delay_p99_ns=delay_ns,
        delay_max_ns=delay_ns, delay_ns={"p50": delay_ns, "p90": delay_ns, "p95": delay_ns, "p99": delay_ns,
                                         "p999": delay_ns, "p9999": delay_ns},
    )  # fmt: skip


def verdict(run: RunResult, engine: str, check: str, phase: str = "read by user id"):  # type: ignore[no-untyped-def]
    return next(r for r in judge_run(run) if r.engine == engine and r.check == check and r.phase == phase)


def test_a_bound_held_missed_and_missed_by_a_late_client(sample: RunResult) -> None:
    sample.gates = Gates(slo_ns={"p99": 2 * MS})
    pace(sample, "rocksdb", "read by user id", response_ns=MS, service_ns=50_000, delay_ns=20_000)
    pace(sample, "sqlite", "read by user id", response_ns=5 * MS, service_ns=3 * MS, delay_ns=50_000)
    pace(sample, "memory", "read by user id", response_ns=8 * MS, service_ns=40_000, delay_ns=7 * MS)
    ok, bad, late = (verdict(sample, e, "slo") for e in ("rocksdb", "sqlite", "memory"))
    assert ok.outcome is Outcome.PASS and "p99 1.0ms ≤ 2 ms" in ok.reason, ok
    assert bad.outcome is Outcome.FAIL and "p99 5.0ms > 2 ms" in bad.reason, bad
    assert late.outcome is Outcome.INCONCLUSIVE, late
    assert "client late: schedule delay p99 7.0ms against a bound of 2 ms" in late.reason
    assert "--processes" in late.reason  # what to do about it
    assert exit_status(judge_run(sample)) == EXIT_FAILED
    pace(sample, "sqlite", "read by user id", response_ns=MS, service_ns=MS // 2, delay_ns=0)
    assert exit_status(judge_run(sample)) == EXIT_INCONCLUSIVE  # none fails, one undecided
    pace(sample, "memory", "read by user id", response_ns=MS, service_ns=MS // 2, delay_ns=0)
    assert exit_status(judge_run(sample)) == EXIT_OK


def test_a_loaded_machine_turns_a_fail_into_inconclusive_but_keeps_a_pass(sample: RunResult) -> None:
    sample.gates = Gates(slo_ns={"p99": 2 * MS})
    pace(sample, "sqlite", "read by user id", response_ns=5 * MS, service_ns=3 * MS, delay_ns=50_000)
    pace(sample, "rocksdb", "read by user id", response_ns=MS, service_ns=50_000, delay_ns=20_000)
    sample.environment.update(load_avg_start=[4.5, 3.0, 2.0], logical_cpus=2)
    bad = verdict(sample, "sqlite", "slo")
    assert bad.outcome is Outcome.INCONCLUSIVE and "machine loaded: load average 4.50 on 2 CPUs" in bad.reason
    assert verdict(sample, "rocksdb", "slo").outcome is Outcome.PASS


def test_closed_loop_phases_are_bounded_by_their_service_time_and_writes_are_not(sample: RunResult) -> None:
    """``--slo`` without a rate (the ignored flag of issue 51, finding 4) judges every read,
    scan, query and mixed phase by its latency; inserts and updates are not bounded."""
    sample.gates = Gates(slo_ns={"p99": 1})  # 1 ns: nothing meets it
    rows = [r for r in judge_run(sample) if r.check == "slo"]
    assert rows and all(r.outcome is Outcome.FAIL and "closed loop" in r.reason for r in rows)
    judged = {sample.phases[r.index].kind.kind for r in rows if r.index is not None}
    assert "read_by_id" in judged and not judged & {"insert", "update"}, judged
    sample.gates = Gates(slo_ns={"p99": 3_600_000 * MS})
    assert all(r.outcome is Outcome.PASS for r in judge_run(sample) if r.check == "slo")


def test_a_missed_rate_is_the_engines_unless_the_client_set_the_pace(sample: RunResult) -> None:
    """A missed rate is the engine's FAIL when its own service time cannot carry the rate;
    when it could, the client did not keep the pace: INCONCLUSIVE."""
    sample.gates = Gates(check_rate=True)
    slow = next(p for e in sample.engines if e.engine == "sqlite" for p in e.phases if p.name == "read by user id")
    pace(sample, "sqlite", "read by user id", response_ns=50 * MS, service_ns=round(2e9 / slow.ops_per_s), delay_ns=10_000,
         missed=True)  # fmt: skip  (its service time allows half the achieved rate, a quarter of the target)
    pace(sample, "rocksdb", "read by user id", response_ns=50 * MS, service_ns=100, delay_ns=3 * MS, missed=True)
    bad = verdict(sample, "sqlite", "rate")
    assert bad.outcome is Outcome.FAIL and "the engine's mean service time allows" in bad.reason, bad
    late = verdict(sample, "rocksdb", "rate")
    assert late.outcome is Outcome.INCONCLUSIVE and "client late" in late.reason, late
    assert "schedule delay p99 3.0ms" in late.reason
    sample.gates = Gates()  # without --check-rate the rows are shown, not gated
    assert not any(r.gating for r in judge_run(sample) if r.check == "rate")
    assert exit_status(judge_run(sample)) == EXIT_OK


def test_a_failed_engine_is_the_headlines_first_line_and_no_group_leaves_it_out(sample: RunResult) -> None:
    """Issue 51, finding 2: a failed engine vanished from the headline, which read "All 3
    engines agree on every phase checksum they completed"."""
    rocks = next(e for e in sample.engines if e.engine == "rocksdb")
    failed_at = rocks.phases[3]
    rocks.phases = rocks.phases[:3]
    rocks.set_status(Status.FAILED, failed_at.name, "IndexError: array index out of range")
    h = headline.build(sample)
    assert h.lines()[0].startswith(f"rocksdb FAILED in {failed_at.name}: Failed: {failed_at.name}: IndexError"), h.lines()
    group = next(x for x in h.groups if x.startswith(failed_at.group.value))
    assert f"rocksdb FAILED in {failed_at.name}" in group, group
    assert f"Not checked (never completed): rocksdb from {failed_at.name}" in h.checksums
    assert exit_status(judge_run(sample)) == EXIT_FAILED
    text = markdown_report.render(sample)
    assert text.index("rocksdb FAILED in") < text.index("## Total By Engine")
    assert "## Verdicts" in text


def test_the_verdict_table_fits_80_columns_and_names_each_reason(sample: RunResult) -> None:
    sample.gates = Gates(slo_ns={"p99": 2 * MS}, check_rate=True)
    pace(sample, "rocksdb", "read by user id", response_ns=MS, service_ns=50_000, delay_ns=20_000)
    pace(sample, "memory", "read by user id", response_ns=8 * MS, service_ns=100, delay_ns=7 * MS, missed=True)
    lines = verdict_table.console_lines(sample)
    assert lines[1].startswith("== verdict: INCONCLUSIVE (p99 ≤ 2 ms)"), lines
    assert all(len(x) <= 80 for x in lines), lines
    assert any(x.startswith("  rocksdb") and x.endswith("PASS") for x in lines), lines
    assert any("INCONCLUSIVE memory · read by user id: client late" in x for x in lines), lines


def run_json(tmp: Path) -> dict:  # type: ignore[type-arg]
    (result,) = sorted((tmp / "out").glob("profiles-*/asyncbench-*.json"))
    doc: dict = orjson.loads(result.read_bytes())  # type: ignore[type-arg]
    return doc


PLAN = '[run]\nprofiles = 2000\nengines = ["{engine}"]\nisolate = false\n[[phase]]\nkind = "insert"\n' \
    '[[phase]]\nkind = "read_by_id"\n'


def test_slo_gates_a_run_with_three_exit_statuses(tmp_path: Path) -> None:
    """Through the CLI: PASS exits 0; the stalling engine's own stalls FAIL the bound (exit
    1); a thread hogging the interpreter makes the client late: INCONCLUSIVE (exit 3),
    naming the client's delay, never the engine's FAIL."""
    import os

    env = dict(os.environ)
    for engine, sub in (("memory", "pass"), ("stalling", "fail"), ("hogging", "late")):
        (tmp_path / sub).mkdir()
        (tmp_path / sub / "plan.toml").write_text(PLAN.format(engine=engine))
    ok = cli(tmp_path / "pass", str(tmp_path / "pass" / "plan.toml"), "--slo", "p99=1s", "--rate", "2k")
    assert ok.returncode == EXIT_OK, ok.stdout + ok.stderr
    assert "== verdict: PASS (p99 ≤ 1 s)" in ok.stdout, ok.stdout
    bad = cli(tmp_path / "fail", str(tmp_path / "fail" / "plan.toml"), "--slo", "p99=20ms", "--rate", "2k",
              env={"ASYNCBENCH_TEST_STALL_EVERY": "50"}, stalling=True)  # fmt: skip
    loaded = run_json(tmp_path / "fail")["environment"].get("load_avg_start", [0])[0] >= (os.cpu_count() or 1)
    stored = [(v["engine"], v["judged"], v["outcome"]) for v in run_json(tmp_path / "fail")["verdicts"]]
    assert ("stalling", "slo", "INCONCLUSIVE" if loaded else "FAIL") in stored, stored  # in the JSON too
    if loaded:  # the saturation the tool detects is named instead (a busy CI machine)
        assert bad.returncode == EXIT_INCONCLUSIVE and "machine loaded" in bad.stdout, bad.stdout
    else:
        assert bad.returncode == EXIT_FAILED, bad.stdout + bad.stderr
        assert "FAIL stalling · read by user id: p99" in bad.stdout.replace("\n    ", " "), bad.stdout
    env = {
        "ASYNCBENCH_ENGINES": "hogging=engines_for_tests:HoggingEngine",
        "PYTHONPATH": str(ROOT / "tests"),
        "ASYNCBENCH_TEST_HOG_SECONDS": "5",
    }
    late = cli(tmp_path / "late", str(tmp_path / "late" / "plan.toml"), "--slo", "p99=2ms", "--rate", "2k", env=env)
    assert late.returncode == EXIT_INCONCLUSIVE, late.stdout + late.stderr
    assert "INCONCLUSIVE hogging · read by user id: client late: schedule delay p99" in late.stdout.replace("\n    ", " ")
    gates = run_json(tmp_path / "late")["gates"]
    assert gates["slo_ns"] == {"p99": 2 * MS}


def test_slo_on_a_plan_with_nothing_to_bound_is_refused(tmp_path: Path) -> None:
    plan = tmp_path / "plan.toml"
    plan.write_text('[run]\nprofiles = 1000\nengines = ["memory"]\n[[phase]]\nkind = "insert"\n')
    proc = cli(tmp_path, str(plan), "--slo", "p99=2ms")
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "--slo" in proc.stderr and "has none" in proc.stderr
    assert not (tmp_path / "out").exists()


def test_report_draws_the_same_verdicts_from_a_saved_result(sample: RunResult) -> None:
    sample.gates = Gates(slo_ns={"p99": 2 * MS})
    pace(sample, "sqlite", "read by user id", response_ns=5 * MS, service_ns=3 * MS, delay_ns=50_000)
    again = RunResult.from_json(sample.to_json())
    assert [(r.engine, r.phase, r.outcome) for r in judge_run(again)] == [
        (r.engine, r.phase, r.outcome) for r in judge_run(copy.deepcopy(sample))
    ]


def test_an_engine_failing_early_is_named_in_every_later_group(sample: RunResult) -> None:
    """Issue 51, finding 11: ``quick.toml --engine memory,<a plug-in that raises>`` read
    "write: no engine completed it" for every group and never named the failure."""
    sample.engines = [e for e in sample.engines if e.engine in ("memory", "rocksdb")]
    rocks = sample.engines[1] if sample.engines[1].engine == "rocksdb" else sample.engines[0]
    second = rocks.phases[1].name
    rocks.phases = rocks.phases[:1]
    rocks.set_status(Status.FAILED, second, "RuntimeError: boom")
    groups = headline.build(sample).groups
    later = [g for g in groups if g.startswith(("lookup", "scan", "query"))]
    assert later and all(f"rocksdb FAILED in {second}" in g for g in later), groups
    assert not any(g.endswith("no engine completed it") for g in groups), groups


def test_a_required_rate_on_an_inconclusive_capacity_is_inconclusive(sample: RunResult) -> None:
    """A capacity the client's lateness decided (asyncbench.run.capacity.capacity) is no engine's
    FAIL under --require-rate: INCONCLUSIVE, unless the rates that passed carry the need."""
    from asyncbench.result import Capacity

    p = next(p for e in sample.engines if e.engine == "rocksdb" for p in e.phases if p.name == "read by user id")
    late = "client late: schedule delay p99 7.3ms against a bound of 2 ms"
    p.capacity = Capacity({"p99": 2 * MS}, [None], None, inconclusive=late, inconclusive_from=5_000.0, lower_bound=2_000.0)
    sample.gates = Gates(require_rate={"read_by_id": 3_000.0})
    row = verdict(sample, "rocksdb", "capacity")
    assert row.outcome is Outcome.INCONCLUSIVE and late in row.reason, row
    sample.gates = Gates(require_rate={"read_by_id": 1_000.0})
    assert verdict(sample, "rocksdb", "capacity").outcome is Outcome.PASS
    p.capacity = Capacity({"p99": 2 * MS}, [800.0], 800.0)
    assert verdict(sample, "rocksdb", "capacity").outcome is Outcome.FAIL


def test_a_run_with_nothing_asked_still_has_a_verdict(sample: RunResult) -> None:
    """'People decide from the verdict line: PASS, FAIL or INCONCLUSIVE, always' (issue 51)."""
    lines = headline.build(sample).lines()
    assert any(x.startswith("verdict: PASS: every engine completed and the checksums agree") for x in lines), lines
    sample.engines[1].set_status(Status.FAILED, sample.engines[1].phases[-1].name, "OSError: disk full")
    lines = headline.build(sample).lines()
    assert lines[0].startswith(f"{sample.engines[1].engine} FAILED in"), lines
    assert any(x.startswith("verdict: FAIL") for x in lines), lines
