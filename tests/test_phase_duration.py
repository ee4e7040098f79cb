"""Time-bounded phases (issue 55): a YCSB mixed phase with ``duration`` stops at the first
batch boundary after it, and its checksums are compared across engines and P at the common
prefix of its stream, never falsely agreeing or disagreeing; YCSB's ``maxexecutiontime``
maps to it; bad values are refused naming file, key and problem (exit 2, nothing created).
"""

from __future__ import annotations

import copy
import dataclasses
from pathlib import Path

import pytest
from conftest import ROOT

from asyncbench.measure.correctness import judge
from asyncbench.measure.verdicts import Outcome, judge_run
from asyncbench.result import RunResult
from asyncbench.workloads.ycsb.prefix import checkpoint_every, prefix_checksums

PLANS = ROOT / "benchmarks" / "ycsb"


def plan(tmp_path: Path, letter: str = "a", records: int = 2000, ops: int = 300_000, extra: str = 'duration = "0.3s"\n') -> Path:
    """The shipped plan at ``records`` records, its mixed phase of ``ops`` operations with
    ``extra`` lines (a duration by default)."""
    text = (PLANS / f"workload{letter}-smoke.toml").read_text()
    text = text.replace("recordcount = 1000", f"recordcount = {records}")
    text = text.replace("operations = 1000\n", f"operations = {ops}\n{extra}")
    text = text.replace("maxscanlength = 100\n", "maxscanlength = 20\n")
    path = tmp_path / f"workload{letter}-{ops}.toml"
    path.write_text(text)
    return path


def mixed_phases(results: list[dict]) -> dict[tuple[str, int], dict]:
    return {
        (e["engine"], r["parallelism"]): e["phases"][1] for r in results for e in r["engines"] if e["status"] == "ok"
    }


def checksum_at(phase: dict, count: int) -> str | None:
    pre = phase["prefix"]
    if count == pre["complete"]:
        return phase["checksum"]
    if count % pre["every"] == 0 and 0 < count // pre["every"] <= len(pre["checkpoints"]):
        return pre["checkpoints"][count // pre["every"] - 1]
    return None


@pytest.mark.parametrize("letter", "ae")
def test_engines_and_p_agree_at_the_common_prefix_of_a_phase_run_for_a_duration(
    letter: str, tmp_path: Path, run_cli
) -> None:
    """Each engine and P runs a different number of the 300k operations in 0.3 s, yet at
    every checkpoint two of them both reached, their checksums are equal."""
    code, results, output = run_cli(
        str(plan(tmp_path, letter)), "--engine", "memory,lsm,sqlite", "--parallelism", "1,4", "--no-isolate", "--yes"
    )
    assert code == 0, output
    phases = mixed_phases(results)
    assert len(phases) == 6
    every = checkpoint_every(300_000)
    for p in phases.values():
        assert p["prefix"]["every"] == every and p["prefix"]["operations"] == 300_000
        assert p["prefix"]["complete"] <= p["ops"] < 300_000  # stopped by the duration, what ran counted
        assert sum(k["ops"] for name, k in p["mix"]["kinds"].items() if name != "readmodifywrite") == p["ops"]
    completes = sorted({p["prefix"]["complete"] for p in phases.values()})
    assert len(completes) > 1, completes  # engines stopped at different points: the case this tests
    shortest = min(completes) - min(completes) % every
    assert shortest > 0
    for count in range(every, shortest + 1, every):
        assert len({checksum_at(p, count) for p in phases.values()}) == 1, count
    assert "at the common prefix" in output and "Phase 'mixed' (#2) ran for a duration" in output
    # every engine ran about 0.3 s: the headline races their rates, not their times
    assert "mixed, run for 0.3 s each (ranked by operations per second, not time): " in output, output


def reference_prefix(path: Path, count: int) -> str:
    """The checksum of the first ``count`` operations of the plan's mixed phase, run one
    after another on the dict-backed reference store of tests/test_ycsb_mix.py (an
    independent execution of the same drawn stream)."""
    import tomllib

    import numpy as np
    from test_ycsb_mix import ReferenceStore, Values, layout, mix_spec, operations, ops_of

    from asyncbench.workloads.ycsb.checksum import PhaseChecksum
    from asyncbench.workloads.ycsb.operations import INSERT, READMODIFYWRITE, UPDATE

    doc = tomllib.loads(path.read_text())
    lay = layout(doc)
    batches = operations(mix_spec(doc, doc["phase"][1]))
    written: set[bytes] = set()
    store = ReferenceStore(lay, Values(doc["run"]["seed"], lay.fieldcount, lay.fieldlength), written, True)
    for b in batches:  # the whole stream's writes: what its scans leave out
        written.update(ReferenceStore.name(store, int(k)) for k in b.key[np.isin(b.kind, (UPDATE, INSERT, READMODIFYWRITE))])
    total = PhaseChecksum()
    done = 0
    for b in batches:
        for op in ops_of(b, np.arange(len(b.kind))):
            if done == count:
                return total.hex()
            total.add(store.execute(op))
            done += 1
    return total.hex()


def test_the_checksum_at_a_prefix_is_the_reference_stores_over_those_operations(tmp_path: Path, run_cli) -> None:
    """At P = 4 the workers stop at different points of the stream; the recorded whole
    prefix and a checkpoint equal an independent sequential execution of that prefix."""
    path = plan(tmp_path, "f", ops=100_000)
    code, results, output = run_cli(str(path), "--engine", "sqlite", "--parallelism", "4", "--no-isolate", "--yes")
    assert code == 0, output
    (timed,) = mixed_phases(results).values()
    pre = timed["prefix"]
    assert 0 < pre["complete"] < 100_000 and pre["checkpoints"]
    assert timed["checksum"] == reference_prefix(path, pre["complete"])
    assert pre["checkpoints"][0] == reference_prefix(path, pre["every"])


def test_a_phase_run_for_a_duration_stops_in_time(tmp_path: Path, run_cli) -> None:
    code, results, output = run_cli(
        str(plan(tmp_path, "b", ops=1_000_000, extra='duration = "500ms"\n')),
        "--engine", "sqlite", "--parallelism", "2", "--no-isolate", "--yes",
    )  # fmt: skip
    assert code == 0, output
    (p,) = mixed_phases(results).values()
    assert 0.5 <= p["seconds"] < 1.5, p["seconds"]  # the batch under way finishes, none starts after
    assert 0 < p["ops"] < 1_000_000
    assert p["prefix"]["duration_seconds"] == 0.5


def test_a_phase_that_ends_before_its_duration_is_compared_whole(tmp_path: Path, run_cli) -> None:
    code, results, output = run_cli(
        str(plan(tmp_path, "a", ops=3000, extra='duration = "1h"\n')), "--engine", "memory,lsm", "--no-isolate", "--yes"
    )
    assert code == 0, output
    phases = mixed_phases(results)
    assert {p["ops"] for p in phases.values()} == {3000}
    assert {p["prefix"]["complete"] for p in phases.values()} == {3000}
    assert len({p["checksum"] for p in phases.values()}) == 1
    assert "at the common prefix" not in output


def test_a_duration_under_a_rate_stops_in_time(tmp_path: Path, run_cli) -> None:
    """YCSB's target and maxexecutiontime together: paced, then stopped."""
    code, results, output = run_cli(
        str(plan(tmp_path, "a", ops=100_000, extra='duration = "0.5s"\nrate = 2000\n')),
        "--engine", "memory", "--no-isolate", "--yes",
    )  # fmt: skip
    assert code == 0, output
    (p,) = mixed_phases(results).values()
    assert 0.4 <= p["seconds"] < 1.0 and 500 <= p["ops"] <= 1500, (p["seconds"], p["ops"])


# --- the verdicts, on results built by hand -----------------------------------------------


def _result(tmp_path: Path, run_cli) -> RunResult:
    code, results, output = run_cli(
        str(plan(tmp_path, "a", ops=50_000, extra='duration = "0.2s"\n')), "--engine", "memory,sqlite", "--no-isolate", "--yes"
    )
    assert code == 0, output
    (path,) = (tmp_path / "out").glob("*/asyncbench-*.json")
    return RunResult.from_json(path.read_bytes())


def test_a_wrong_checkpoint_is_a_mismatch_at_the_prefix_and_none_is_no_agreement(tmp_path: Path, run_cli) -> None:
    run = _result(tmp_path, run_cli)
    (report,) = (tmp_path / "out").glob("*/asyncbench-*.md")
    for e in run.engines:  # the report says of which operations each stopped phase's checksum is
        p = e.phases[1]
        assert p.prefix is not None
        if p.prefix.stopped:
            assert f"`{p.checksum}` (first {p.prefix.complete:_d} operations)" in report.read_text()
    v = judge(run)
    assert v.ok and not v.uncompared, v.failures
    short = min((e.phases[1] for e in run.engines), key=lambda p: p.prefix.complete if p.prefix else 0)
    assert short.prefix is not None and short.prefix.stopped
    # the longer engine's checkpoint at the shorter's prefix is wrong: a mismatch, said at that prefix
    bad = copy.deepcopy(run)
    longer = next(e for e in bad.engines if e.phases[1].prefix.complete > short.prefix.complete)
    pre = longer.phases[1].prefix
    common = short.prefix.complete - short.prefix.complete % pre.every
    pre.checkpoints[common // pre.every - 1] = "0123456789ABCDEF"
    v = judge(bad)
    assert not v.ok
    assert any(f"phase 'mixed' (#2) at its first {common:_d} operations" in f for f in v.failures), v.failures
    # an engine that ran less than one checkpoint: nothing compared, an inconclusive verdict
    none = copy.deepcopy(run)
    p = none.engines[0].phases[1]
    assert p.prefix is not None
    p.prefix = dataclasses.replace(p.prefix, complete=p.prefix.every - 1, checkpoints=[])
    p.checksum = "0000000000000000"
    v = judge(none)
    assert v.ok and len(v.uncompared) == 1 and "not compared" in v.uncompared[0]
    assert not any("agree on every phase" in line and "1 of them at the common prefix" in line for line in v.lines)
    rows = [r for r in judge_run(none) if r.check == "checksums"]
    assert [r.outcome for r in rows] == [Outcome.INCONCLUSIVE]


def test_prefix_checksums_are_the_sums_of_the_stream_prefixes() -> None:
    """Two workers' batches out of stream order: the whole prefix is where the first gap is."""
    digests = {i: (i * 0x9E3779B97F4A7C15) % 2**64 for i in range(10)}
    ran = [([0, 2, 4], [digests[0], digests[2], digests[4]]), ([1, 3, 5, 7], [digests[i] for i in (1, 3, 5, 7)])]
    prefix, positions = prefix_checksums(lambda chunk: chunk, 10, ran)
    assert positions.tolist() == [0, 1, 2, 3, 4, 5, 7]
    assert prefix.ran == 7 and prefix.complete == 6 and prefix.every == 1
    want = [f"{sum(digests[i] for i in range(n)) % 2**64:016X}" for n in range(1, 7)]
    assert list(prefix.checkpoints) == want and prefix.checksum == want[-1]


# --- bad input ------------------------------------------------------------------------------

BAD = [
    ('duration = "-1s"\n', "phase[1].duration", "must be a positive duration"),
    ('duration = "abc"\n', "phase[1].duration", "'abc' is not a duration"),
    ('duration = "10 s"\n', "phase[1].duration", "is not a duration"),
    ("duration = 0\n", "phase[1].duration", "must be a positive duration"),
    ("duration = true\n", "phase[1].duration", "must be a duration"),
    ('duration = "2y"\n', "phase[1].duration", "write a number with ms, s, m or h"),
    ('duration = "60s"\ncapacity = true\n', "phase[1].duration", "a capacity search chooses its own probe lengths"),
]


@pytest.mark.parametrize(("extra", "key", "problem"), BAD, ids=[b[0].strip() for b in BAD])
def test_a_bad_duration_names_file_key_and_problem(extra: str, key: str, problem: str, tmp_path: Path, run_cli) -> None:
    path = plan(tmp_path, "a", ops=1000, extra=extra)
    code, _, output = run_cli(str(path), "--engine", "memory", "--yes")
    assert code == 2, output
    assert f"{path}: {key}: " in output and problem in output, output
    assert not (tmp_path / "out").exists() and not (tmp_path / "data").exists()


def test_a_duration_on_the_load_phase_or_before_another_phase_is_refused(tmp_path: Path, run_cli) -> None:
    path = plan(tmp_path, "a", ops=1000, extra="")
    text = path.read_text()
    path.write_text(text.replace('kind = "load"\n', 'kind = "load"\nduration = "1s"\n'))
    code, _, output = run_cli(str(path), "--engine", "memory", "--yes")
    assert code == 2 and f"{path}: phase[0].duration: phase kind 'load' cannot run for a duration" in output, output
    path.write_text(text.replace("operations = 1000\n", 'operations = 1000\nduration = "1s"\n') + '\n[[phase]]\nkind = "mixed"\noperations = 10\nreadproportion = 1.0\n')
    code, _, output = run_cli(str(path), "--engine", "memory", "--yes")
    assert code == 2 and f"{path}: phase[2].kind: 'mixed' comes after phase[1], which runs for a duration" in output, output
    assert not (tmp_path / "out").exists() and not (tmp_path / "data").exists()


def test_a_scaled_out_run_refuses_a_duration(tmp_path: Path, run_cli) -> None:
    code, _, output = run_cli(str(plan(tmp_path, "a", ops=1000)), "--engine", "memory", "--processes", "2", "--yes")
    assert code == 2 and "--processes: phase[1] ('mixed') runs for a duration" in output, output


def test_compare_does_not_call_two_runs_of_a_duration_phase_different(tmp_path: Path, run_cli, capfd) -> None:
    """Two runs of one engine stop at different points of the stream: their checksums are
    of different prefixes, which ``compare`` must not report as CHECKSUMS DIFFER."""
    from asyncbench.cli.main import main

    path = plan(tmp_path, "a", ops=200_000, extra='duration = "0.3s"\n')
    found: dict[int, Path] = {}  # operations completed -> the result that stopped there
    for attempt in range(5):  # two runs may stop at the same operation (it happened once in CI): run again
        code, _, output = run_cli(str(path), "--engine", "sqlite", "--batch-size", "7", "--no-isolate", "--yes")
        assert code == 0, output
        (result,) = (tmp_path / "out").glob("*/asyncbench-*.json")
        complete = RunResult.from_json(result.read_bytes()).engines[0].phases[1].prefix.complete
        found.setdefault(complete, result.rename(tmp_path / f"run{attempt}.json"))
        if len(found) == 2:
            break
    assert len(found) == 2, found  # the case this tests: each run stopped elsewhere
    files = list(found.values())
    code = main(["compare", str(files[0]), str(files[1])])
    captured = capfd.readouterr()
    out = captured.out + captured.err
    assert "mixed" in out and code != 2, out
    assert "CHECKSUMS DIFFER" not in out and "DIFFER" not in out, out


def test_the_estimate_stops_a_duration_phase_at_its_duration(tmp_path: Path) -> None:
    """At 1 op/s 100k operations take 28 h; with duration = "2s" the phase takes 2 s, and
    the start prompt must not ask about a day-long run."""
    from asyncbench.config import load
    from asyncbench.run.estimate import paced_seconds

    cfg = load(plan(tmp_path, "a", ops=100_000, extra='duration = "2s"\nrate = 1\n'))
    assert paced_seconds(cfg, 2000) == 2.0
    cfg = load(plan(tmp_path, "b", ops=100_000, extra="rate = 1\n"))
    assert paced_seconds(cfg, 2000) == 100_000.0
