"""A capacity search through the real runner and CLI: the console line, the scorecard, the
gates' exit code, the JSON result (it loads back) and the report's section."""

from __future__ import annotations

import csv
import io
import time
from pathlib import Path

import orjson
import pytest

from asyncbench.cli.main import main
from asyncbench.report.csv_export import csv_text
from asyncbench.result import RunResult

PLAN = (
    '[run]\nprofiles = 1500\nengines = ["memory"]\nisolate = false\n'
    '[[phase]]\nkind = "insert"\n[[phase]]\nkind = "read_by_id"\ncapacity = true\n[[phase]]\nkind = "verify"\n'
    '[slo]\np90 = "50ms"\n'
)


def _run(tmp_path: Path, capsys: pytest.CaptureFixture[str], *flags: str) -> tuple[int, str, dict]:
    plan = tmp_path / "plan.toml"
    plan.write_text(PLAN)
    out = tmp_path / "out"
    code = main([str(plan), "--output", str(out), "--data", str(tmp_path / "data"), "--capacity-range", "1k,4k", *flags])
    (result,) = sorted(out.glob("profiles-*/asyncbench-*.json"))
    return code, capsys.readouterr().out, orjson.loads(result.read_bytes())


def test_capacity_run_console_json_report_and_gate(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, doc = _run(tmp_path, capsys, "--require-rate", "read_by_id=1M")
    assert code == 1, out
    assert "    capacity " in out and "p90 ≤ 50 ms" in out
    assert "capacity scorecard" in out and "1. memory" in out
    assert "CAPACITY BELOW REQUIRED: engine memory, phase 'read by user id'" in out
    assert "required 1_000_000/s" in out
    long = [x for x in out.splitlines() if ("capacity" in x or x.startswith("    1.")) and str(tmp_path) not in x and len(x) > 80]
    assert not long, long
    phase = doc["engines"][0]["phases"][1]
    cap = phase["capacity"]
    assert cap["slo_ns"] == {"p90": 50_000_000} and cap["rate_range"] == [1000.0, 4000.0]
    assert cap["judged_ops"] == 1000 and cap["warmup_ops"] == 100
    assert 1 <= len(cap["probes"]) <= cap["probe_bound"]
    assert cap["capacity"] is not None and 1000 <= cap["capacity"] <= 4000
    # the store warmed first: the read phase's stream (1_500 reads) once, closed loop
    assert cap["store_warmup_ops"] == 1500 and cap["store_warmup_seconds"] > 0
    assert phase["ops"] == len(cap["probes"]) * 1100 + 1500
    run = RunResult.from_json(orjson.dumps(doc))  # the result model loads it back
    assert run.engines[0].phases[1].capacity is not None
    rows = list(csv.DictReader(io.StringIO(csv_text(run))))
    searched = next(r for r in rows if r["phase"] == "read by user id")
    assert float(searched["capacity_ops_per_s"]) == pytest.approx(cap["capacity"], abs=0.001)
    assert searched["capacity_bounds_ns"] == "p90=50000000"
    assert searched["capacity_limited_by"] or searched["capacity_at_ceiling"] == "True"
    assert next(r for r in rows if r["phase"] == "insert profiles")["capacity_ops_per_s"] == ""
    (report,) = sorted((tmp_path / "out").glob("profiles-*/asyncbench-*.md"))
    text = report.read_text()
    assert "## Capacity under the latency bounds" in text
    assert "each probe 100 warm-up and 1_000 judged operations" in text
    assert "the store warmed by the phase's stream once, closed loop (1_500 operations)." in text
    assert text.index("## Capacity under the latency bounds") < text.index("## Total By Engine")  # at the top
    # the probes' mixed throughput is no figure: the phase table shows the capacity, the
    # throughput chart leaves the phase out (here its only lookup: no chart), the capacity chart shows it
    assert any(x.startswith("| read by user id | ") and "| capacity " in x for x in text.splitlines())
    assert "Lookup Throughput" not in text and "Capacity Under The Latency Bound" in text
    # the headline ranks by capacity, and runs no race of the search's times
    assert "- capacity, read by user id (p90 ≤ 50 ms): memory " in text
    assert "\n- lookup:" not in text.split("## ", 1)[0]


def test_capacity_met_exits_0(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(tmp_path, capsys, "--require-rate", "read_by_id=500")
    assert code == 0, out
    assert "CAPACITY BELOW REQUIRED" not in out


def _with_capacities(doc: dict, values: list[float]) -> bytes:
    """The result with its searched phase's capacities set (as repeated searches give)."""
    cap = doc["engines"][0]["phases"][1]["capacity"]
    cap["capacities"] = values
    cap["capacity"] = sum(values) / len(values)
    cap["ci_low"] = cap["ci_high"] = None
    return orjson.dumps(doc)


def test_compare_compares_capacities_with_significance(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """compare's samples of a searched phase are its searches' capacities (Welch's test
    over them), not the probes' mixed throughput."""
    _, _, doc = _run(tmp_path, capsys)
    base, new = tmp_path / "base", tmp_path / "new"
    base.mkdir()
    new.mkdir()
    (base / "asyncbench-a.json").write_bytes(_with_capacities(doc, [1000.0, 1010.0, 990.0, 1005.0]))
    (new / "asyncbench-b.json").write_bytes(_with_capacities(doc, [800.0, 810.0, 790.0, 805.0]))
    code = main(["compare", str(base), str(new), "--json"])
    rows = orjson.loads(capsys.readouterr().out)["rows"]
    (row,) = [r for r in rows if "capacity" in r["phase"]]
    assert row["phase"] == "read by user id: capacity, p90 ≤ 50 ms"
    assert row["base"]["samples"] == [1000.0, 1010.0, 990.0, 1005.0]
    assert row["verdict"] == "slower" and row["p_value"] < 0.05
    assert code == 1


def test_probe_checksums_are_compared_across_engines(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Probe k reads the same slice on every engine: a probe whose checksum differs from the
    other engines' is a checksum mismatch, named by engine, phase and probe."""
    import copy

    from asyncbench.measure.correctness import judge

    _, _, doc = _run(tmp_path, capsys)
    other = copy.deepcopy(doc["engines"][0])
    other["engine"] = "twin"
    doc["engines"].append(other)
    assert judge(RunResult.from_json(orjson.dumps(doc))).ok
    third = copy.deepcopy(other)
    third["engine"] = "wrong"
    third["phases"][1]["capacity"]["probes"][0]["checksum"] = "0000000000000000"
    doc["engines"].append(third)
    verdict = judge(RunResult.from_json(orjson.dumps(doc)))
    assert not verdict.ok
    assert any("engine wrong, phase 'read by user id' (#2) probe 0" in f for f in verdict.failures), verdict.failures


def test_scorecard_ranks_engines_by_capacity_and_gates_name_each(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import copy

    from asyncbench.report.capacity import gate_failures, scorecard_lines

    _, _, doc = _run(tmp_path, capsys)
    slow = copy.deepcopy(doc["engines"][0])
    slow["engine"] = "slow"
    slow["phases"][1]["capacity"].update(
        capacities=[200.0], capacity=200.0, limited_by="p90: 60 ms > 50 ms", at_ceiling=False
    )
    none = copy.deepcopy(slow)
    none["engine"] = "none"
    none["phases"][1]["capacity"].update(capacities=[None], capacity=None)
    fast = copy.deepcopy(slow)
    fast["engine"] = "fast"
    fast["phases"][1]["capacity"].update(capacities=[900.0, 1100.0], capacity=1000.0, ci_low=900.0, ci_high=1100.0)
    late = copy.deepcopy(slow)
    late["engine"] = "late"
    late["phases"][1]["capacity"].update(
        capacities=[None], capacity=None, limited_by=None, inconclusive_from=2000.0, lower_bound=1000.0,
        inconclusive="client late: schedule delay p90 7.3 ms against a bound of 50 ms (the engine's own p90 42 µs)",
    )  # fmt: skip
    doc["engines"] = [none, late, slow, fast]
    run = RunResult.from_json(orjson.dumps(doc))
    lines = scorecard_lines(run)
    ranked = [line.split()[1] for line in lines if line.startswith("    ") and line.strip()[0].isdigit()]
    assert any("(95% 900-1_100)" in line for line in lines if " fast " in line)
    # issue 51: a capacity below the range or inconclusive is no measurement: never ranked
    # (the scorecard said "1. lsm < 500/s, 2. rocksdb < 500/s"), shown after, with the reason
    assert ranked == ["fast", "slow"], lines
    unranked = [line for line in lines if line.startswith("    -  ")]
    assert [x.split()[1] for x in unranked] == ["none", "late"], lines
    assert "< 1_000/s: failed at the range's lowest rate" in unranked[0]
    assert "inconclusive from 2_000/s (passed 1_000/s): client late" in unranked[1]
    assert all(len(line) <= 80 for line in lines), [x for x in lines if len(x) > 80]
    short = gate_failures(run, {"read_by_id": 500.0})
    assert [x.split(",")[0] for x in short] == ["CAPACITY BELOW REQUIRED: engine slow", "CAPACITY BELOW REQUIRED: engine none"]
    from asyncbench.report.capacity import gate_inconclusive, markdown_lines

    assert [x.split(",")[0] for x in gate_inconclusive(run, {"read_by_id": 500.0})] == ["CAPACITY INCONCLUSIVE: engine late"]
    table = [x for x in markdown_lines(run, str) if x.startswith("| read by user id")]
    assert [x.split(" | ")[2:4] for x in table] == [["1", "fast"], ["2", "slow"], ["-", "none"], ["-", "late"]]


def test_scorecard_pools_the_runs_repeats(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``--repeat``: each repeat's searches pool into one capacity with its interval; a
    warm-up repeat is left out."""
    import copy

    from asyncbench.report.capacity import scorecard

    _, _, doc = _run(tmp_path, capsys)
    first = doc["engines"][0]
    first["phases"][1]["capacity"].update(capacities=[1000.0], capacity=1000.0, at_ceiling=False)
    second = copy.deepcopy(first)
    second["repeat"] = 1
    second["phases"][1]["capacity"].update(capacities=[1200.0], capacity=1200.0)
    warm = copy.deepcopy(first)
    warm["repeat"], warm["warmup"] = 2, True
    warm["phases"][1]["capacity"].update(capacities=[9000.0], capacity=9000.0)
    doc["engines"] = [first, second, warm]
    doc["repeat"] = 3
    (row,) = scorecard(RunResult.from_json(orjson.dumps(doc)))[1]
    assert row.capacity == 1100.0
    assert row.text.startswith("1_100/s (95% ")


def test_every_probe_is_one_live_log_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A capacity search's probes are no batch lines: each probe logs one line with its
    target and achieved rate, the percentile judged against its bound and the verdict."""
    log = tmp_path / "run.log"
    code, _, doc = _run(tmp_path, capsys, "--log-file", str(log))
    assert code == 0
    lines = [orjson.loads(x) for x in log.read_text().splitlines()]
    probes = [x for x in lines if x.get("event") == "probe"]
    cap = doc["engines"][0]["phases"][1]["capacity"]
    assert [(p["probe"], p["target_ops_per_s"], p["verdict"]) for p in probes] == [
        (q["number"], round(q["rate"], 3), "pass" if q["limit"] is None else "inconclusive" if q["inconclusive"] else "fail")
        for q in cap["probes"]
    ]
    first = probes[0]
    assert first["engine"] == "memory" and first["phase"] == "read by user id" and first["kind"] == "read_by_id"
    assert first["search"] == 0 and first["bounds_us"] == {"p90": 50_000.0} and set(first["percentiles_us"]) == {"p90"}
    assert first["achieved_ops_per_s"] > 0 and first["parallelism"] == 1 and first["repeat"] == 0
    assert not [x for x in lines if x.get("event") == "batch" and x.get("kind") == "read_by_id"]


def test_each_probe_is_a_console_line_as_it_runs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 51, finding 7: a search of minutes showed an empty progress bar. Each probe is
    one console line as it is judged (no terminal here): its number, rate, the response,
    service and schedule-delay figures at the bounded percentile and its verdict."""
    code, out, doc = _run(tmp_path, capsys)
    assert code == 0
    probes = doc["engines"][0]["phases"][1]["capacity"]["probes"]
    lines = [x for x in out.splitlines() if x.startswith("    probe ")]
    assert len(lines) == len(probes), out
    for line, p in zip(lines, probes, strict=True):
        assert line.startswith(f"    probe {p['number']} · ") and f" · {round(p['rate']):_d}/s · p90 µs: resp " in line
        assert " svc " in line and " sched " in line and len(line) <= 80, line
        assert line.endswith(" · pass") == (p["limit"] is None), line
    # printed before the phase's own line: as the probes run, not after
    assert out.index("    probe 0 ") < out.index("  read by user id ")


def test_a_capacity_search_over_10_minutes_asks_before_starting(tmp_path: Path) -> None:
    """Issue 51, finding 7: "capacity searches: up to 63 min" started without asking. A run
    asks on a terminal when its capacity searches' bound is over 10 minutes, as any run
    estimated over 10 minutes does (``--yes`` skips it)."""
    from asyncbench.cli.run import confirm_start
    from asyncbench.config import load
    from asyncbench.run.estimate import ASK_ABOVE_SECONDS, estimate

    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    plan = tmp_path / "plan.toml"
    plan.write_text(PLAN)
    cfg = load(plan)
    cfg.output, cfg.data = tmp_path / "out", tmp_path / "data"
    cfg.capacity_range = [10.0, 1_000_000.0]  # probes of 1_100 operations at 10/s: minutes
    est = estimate(cfg)
    assert est.searches_at_most is not None and est.searches_at_most > ASK_ABOVE_SECONDS
    assert est.seconds is None or est.seconds < ASK_ABOVE_SECONDS  # the run alone would not ask
    out = Tty()
    assert confirm_start(cfg, yes=False, stdin=Tty("n\n"), stdout=out) is False
    assert "(its capacity searches up to " in out.getvalue() and "not started" in out.getvalue()
    assert confirm_start(cfg, yes=True, stdin=Tty(""), stdout=Tty()) is True
    piped = io.StringIO()  # no terminal to answer on: it starts
    assert confirm_start(cfg, yes=False, stdin=io.StringIO(""), stdout=piped) is True


def test_a_stopped_search_keeps_its_probes_in_the_partial_report(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 51, finding 7: a run stopped during a search (here by its timeout: the same
    cancellation as Ctrl-C) left a partial report without a capacity section, its probes
    only in the log. The partial result's phase carries the capacity with the probes done,
    marked interrupted, and the report renders it, unranked."""
    plan = tmp_path / "plan.toml"
    plan.write_text(PLAN)
    out = tmp_path / "out"
    # probes of 1_100 reads at 1_000-1_200/s: every wait under a millisecond and an engine
    # that answers without suspending, so nothing in a probe yields to the event loop, where
    # the stop lands; it must land between probes (before, the search ran its 50 searches,
    # 100 s, past a 4 s timeout)
    flags = ["--capacity-range", "1k,1.2k", "--capacity-repeats", "50", "--timeout-seconds", "4"]
    t0 = time.monotonic()
    code = main([str(plan), "--output", str(out), "--data", str(tmp_path / "data"), *flags])
    assert time.monotonic() - t0 < 60
    assert code == 1
    (result,) = sorted(out.glob("profiles-*/asyncbench-*.json"))
    doc = orjson.loads(result.read_bytes())
    engine = doc["engines"][0]
    assert engine["status"] == "timed_out" and engine["phase"] == "read by user id"
    phase = engine["phases"][-1]
    assert phase["name"] == "read by user id"
    cap = phase["capacity"]
    assert cap["interrupted"] and cap["capacity"] is None and len(cap["probes"]) >= 1
    assert phase["ops"] == len(cap["probes"]) * 1100
    run = RunResult.from_json(result.read_bytes())  # loads back
    assert run.engines[0].phases[-1].capacity is not None
    text = result.with_suffix(".md").read_text()
    assert "## Capacity under the latency bounds" in text
    row = next(x for x in text.splitlines() if x.startswith("| read by user id | p90"))
    assert f"| - | memory | interrupted after {len(cap['probes'])} probes" in row
    assert "the run stopped during the search" in row


def test_the_capacity_chart_draws_inconclusive_probes_apart(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A probe the client's lateness decided is drawn hollow, labelled "client late", never
    as a cross (the engine's failure)."""
    from asyncbench.report.capacity_chart import capacity_figure

    _, _, doc = _run(tmp_path, capsys)
    probe = doc["engines"][0]["phases"][1]["capacity"]["probes"][0]
    probe.update(limit="p90: 70 ms > 50 ms", inconclusive="client late: schedule delay p90 40 ms against a bound of 50 ms")
    run = RunResult.from_json(orjson.dumps(doc))
    fig = capacity_figure(run, lambda _engine: "#336699")
    labels = [t.get_text() for t in fig.legends[0].get_texts()]
    assert "client late" in labels
    (ax,) = [a for a in fig.axes if a.get_visible()]
    hollow = [c for c in ax.collections if len(c.get_offsets()) and not c.get_facecolor().any()]
    assert [list(c.get_offsets()[0]) for c in hollow] == [[probe["rate"], probe["percentiles_ns"]["p90"] / 1e6]]


def test_ctrl_c_during_an_isolated_search_keeps_its_probes(tmp_path: Path) -> None:
    """Issue 51, finding 7, as seen: Ctrl-C during a search of an isolated engine (its own
    child process) wrote a partial report without its probes. The child's partial result
    now holds the phase, its capacity marked interrupted with the probes completed."""
    import signal
    import subprocess
    import sys

    plan = tmp_path / "plan.toml"
    plan.write_text(PLAN)
    out, log = tmp_path / "out", tmp_path / "run.log"
    cmd = [sys.executable, "-m", "asyncbench", str(plan), "--isolate", "--output", str(out), "--data", str(tmp_path / "data")]
    cmd += ["--log-file", str(log), "--capacity-range", "1k,1.2k", "--capacity-repeats", "50", "--no-progress"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 120
        while not (log.exists() and log.read_bytes().count(b'"event":"probe"') >= 2):
            assert time.monotonic() < deadline, "no probe logged"
            time.sleep(0.05)
        proc.send_signal(signal.SIGINT)
        stdout, _ = proc.communicate(timeout=90)
    finally:
        proc.kill()
    assert proc.returncode == 130, stdout.decode()
    (result,) = sorted(out.glob("profiles-*/asyncbench-*.json"))
    engine = orjson.loads(result.read_bytes())["engines"][0]
    assert engine["status"] == "interrupted" and engine["phase"] == "read by user id"
    cap = engine["phases"][-1]["capacity"]
    assert cap["interrupted"] and len(cap["probes"]) >= 2
    assert "interrupted after" in result.with_suffix(".md").read_text()
