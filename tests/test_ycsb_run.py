"""YCSB's workloads A-F run through the CLI on every serverless engine: one checksum per phase.

Each shipped plan (``benchmarks/ycsb/workload{a..f}-smoke.toml``) at a small size runs on memory,
lsm, rocksdb and sqlite at P = 1, 4 and 16; every phase checksum must be the same on every
engine and level, and the mixed phase's must equal the dict-backed reference store's of
``tests/test_ycsb_mix.py`` (an independent execution of the same operations), so an
engine that returned a wrong field, skipped an operation or scanned out of key order fails.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT
from test_ycsb_mix import run as reference_run

PLANS = ROOT / "benchmarks" / "ycsb"
ENGINES = "memory,lsm,rocksdb,sqlite"


def small_plan(tmp_path: Path, letter: str, records: int = 300, ops: int = 1500, **mixed: Any) -> tuple[Path, dict]:
    """The shipped plan at ``records`` records and ``ops`` operations (scans at most 20 long)."""
    text = (PLANS / f"workload{letter}-smoke.toml").read_text()
    doc = tomllib.loads(text)
    text = text.replace("recordcount = 1000", f"recordcount = {records}")
    text = text.replace("operations = 1000", f"operations = {ops}")
    doc["ycsb"]["recordcount"], doc["phase"][1]["operations"] = records, ops
    if "maxscanlength" in doc["phase"][1]:
        text = text.replace("maxscanlength = 100\n", "maxscanlength = 20\n")
        doc["phase"][1]["maxscanlength"] = 20
    for key, value in mixed.items():
        text = text.replace(f"{key} = {str(doc['phase'][1][key]).lower()}\n", f"{key} = {str(value).lower()}\n")
        doc["phase"][1][key] = value
    path = tmp_path / f"workload{letter}.toml"
    path.write_text(text)
    assert tomllib.loads(text) == doc
    return path, doc


def phase_checksums(results: list[dict]) -> dict[tuple[str, int, str], list[str]]:
    """(engine, P, phase) -> checksums, every engine of every result."""
    out: dict[tuple[str, int, str], list[str]] = {}
    for run in results:
        for engine in run["engines"]:
            assert engine["status"] == "ok", engine.get("detail")
            for phase in engine["phases"]:
                out.setdefault((engine["engine"], run["parallelism"], phase["name"]), []).append(phase["checksum"])
    return out


@pytest.mark.parametrize("letter", "abcdef")
def test_each_workload_gives_one_checksum_per_phase_on_every_engine_and_p(letter: str, tmp_path: Path, run_cli) -> None:
    plan, doc = small_plan(tmp_path, letter)
    code, results, output = run_cli(str(plan), "--engine", ENGINES, "--parallelism", "1,4,16", "--no-isolate", "--yes")
    assert code == 0, output
    sums = phase_checksums(results)
    assert {(e, p) for e, p, _ in sums} == {(e, p) for e in ENGINES.split(",") for p in (1, 4, 16)}
    for phase in ("load", "mixed"):
        seen = {c for (_, _, name), cs in sums.items() if name == phase for c in cs}
        assert len(seen) == 1, (phase, sums)
    mixed = {c for (_, _, name), cs in sums.items() if name == "mixed" for c in cs}
    assert mixed == {reference_run(doc, 1, schedule=0)[0]}


def test_one_field_reads_and_all_field_writes_run_too(tmp_path: Path, run_cli) -> None:
    """readallfields = false and writeallfields = true take the other statements and paths."""
    plan, doc = small_plan(tmp_path, "f", readallfields=False, writeallfields=True)
    code, results, output = run_cli(str(plan), "--engine", ENGINES, "--parallelism", "1,4", "--no-isolate", "--yes")
    assert code == 0, output
    sums = phase_checksums(results)
    assert {c for (_, _, n), cs in sums.items() if n == "mixed" for c in cs} == {reference_run(doc, 1, schedule=0)[0]}


def test_isolated_engines_agree_with_in_process_ones(tmp_path: Path, run_cli) -> None:
    """Each engine in its own child process (the default) selects the plan's workload too."""
    plan, doc = small_plan(tmp_path, "e")
    code, results, output = run_cli(str(plan), "--engine", "memory,sqlite", "--parallelism", "4", "--yes")
    assert code == 0, output
    sums = phase_checksums(results)
    assert {c for (_, _, n), cs in sums.items() if n == "mixed" for c in cs} == {reference_run(doc, 1, schedule=0)[0]}


BAD = [
    # (what is changed in workload A's text, the key named, words of the problem)
    ("recordcount = 1000\n", "ycsb.recordcount", "is required"),
    ("readproportion = 0.5\n", "phase[1].readproportion", "sum to 0.5, not 1"),
    ('requestdistribution = "zipfian"', "phase[1].requestdistribution", "unknown value 'zipf'"),
    ("fieldcount = 10", "ycsb.fieldcount", "between 1 and"),
    ("zipfianconstant = 0.99", "phase[1].zipfianconstant", "between 0 and 1"),
    ("readallfields = true", "phase[1].readallfields", "true or false"),
    ('insertorder = "hashed"', "ycsb.insertorder", "unknown value 'random'"),
    ("[[phase]]\nkind = \"load\"", "phase[0].readproportion", "unknown key"),
    ('workload = "ycsb"', "run.workload", "unknown workload 'tpcc'"),
    ('workload = "ycsb"\n', "ycsb", "unknown top-level key"),
]
REPLACEMENTS = {
    "recordcount = 1000\n": "",
    "readproportion = 0.5\n": "readproportion = 0.0\n",
    'requestdistribution = "zipfian"': 'requestdistribution = "zipf"',
    "fieldcount = 10": "fieldcount = 0",
    "zipfianconstant = 0.99": "zipfianconstant = 1.5",
    "readallfields = true": 'readallfields = "yes"',
    'insertorder = "hashed"': 'insertorder = "random"',
    "[[phase]]\nkind = \"load\"": "[[phase]]\nkind = \"load\"\nreadproportion = 1.0",
    'workload = "ycsb"': 'workload = "tpcc"',
    'workload = "ycsb"\n': "",
}


@pytest.mark.parametrize(("old", "key", "problem"), BAD, ids=[b[1] for b in BAD])
def test_bad_plan_names_file_key_and_problem_exits_2_and_creates_nothing(
    old: str, key: str, problem: str, tmp_path: Path, run_cli
) -> None:
    text = (PLANS / "workloada-smoke.toml").read_text()
    assert old in text
    plan = tmp_path / "bad.toml"
    plan.write_text(text.replace(old, REPLACEMENTS[old], 1))
    code, results, output = run_cli(str(plan), "--engine", "memory", "--yes")
    assert code == 2, output
    assert f"{plan}: {key}: " in output and problem in output, output
    assert not (tmp_path / "out").exists() and not (tmp_path / "data").exists()


def test_profiles_on_the_command_line_is_the_record_count(tmp_path: Path, run_cli) -> None:
    plan, doc = small_plan(tmp_path, "a")
    code, results, output = run_cli(str(plan), "--engine", "memory", "--profiles", "500", "--no-isolate", "--yes")
    assert code == 0, output
    (run,) = results
    assert run["profiles"] == 500
    doc["ycsb"]["recordcount"] = 500
    (engine,) = run["engines"]
    assert engine["phases"][1]["checksum"] == reference_run(doc, 1, schedule=0)[0]
    assert engine["phases"][0]["ops"] == 500


def test_mixed_phase_records_each_kind_and_the_skew_run(tmp_path: Path, run_cli) -> None:
    """Per kind: the operations drawn (exact) and a latency of as many operations; the hot
    shares are those of the drawn keys; all the same on every engine and P."""
    import numpy as np

    from asyncbench.workloads.common.skew import KeyCounts
    from asyncbench.workloads.ycsb.operations import KINDS, OperationStream
    from asyncbench.workloads.ycsb.plan import mix_spec

    plan, doc = small_plan(tmp_path, "e")
    code, results, output = run_cli(str(plan), "--engine", "memory,sqlite", "--parallelism", "1,4", "--no-isolate", "--yes")
    assert code == 0, output
    batches = list(OperationStream(mix_spec(doc, doc["phase"][1]), doc["run"]["seed"]))
    kinds = np.concatenate([b.kind for b in batches])
    keys = KeyCounts()
    keys.add(np.concatenate([b.key for b in batches]))
    inserts = int((kinds == KINDS.index("insert")).sum())
    want_shares = {f"{f * 100:g}%": s for f, s in keys.hot_shares(300 + inserts).items()}
    want = {k: int((kinds == code).sum()) for code, k in enumerate(KINDS) if (kinds == code).any()}
    assert set(want) == {"insert", "scan"}
    for run in results:
        assert run["workload"] == "ycsb"
        for engine in run["engines"]:
            mix = engine["phases"][1]["mix"]
            assert {k: v["ops"] for k, v in mix["kinds"].items()} == want
            assert {k: v["latency"]["count"] for k, v in mix["kinds"].items()} == want
            assert mix["hot_shares"] == pytest.approx(want_shares)
            assert engine["phases"][0]["mix"] is None  # the load runs one kind


def test_a_ycsb_result_is_read_back_by_report_and_compare(tmp_path: Path, run_cli, capfd) -> None:
    """The result names its workload, so report and compare know its phase kinds; compare
    shows each kind's latency and the skew, base against new."""
    from asyncbench.cli.main import main

    plan, _ = small_plan(tmp_path, "a")
    code, _, output = run_cli(str(plan), "--engine", "memory,sqlite", "--no-isolate", "--yes")
    assert code == 0, output
    (result,) = (tmp_path / "out").glob("records-*/asyncbench-*.json")
    assert main(["report", str(result)]) == 0
    capfd.readouterr()
    assert main(["compare", str(result), str(result)]) == 0
    shown = capfd.readouterr().out
    assert "Operation kinds" in shown and "mixed read p99 µs" in shown and "mixed update p50 µs" in shown
    assert "mixed ops on hottest 1% keys" in shown


def test_kinds_and_skew_reach_console_report_and_csv(tmp_path: Path, run_cli) -> None:
    plan, _ = small_plan(tmp_path, "a")
    code, results, output = run_cli(str(plan), "--engine", "memory", "--no-isolate", "--csv", "--yes")
    assert code == 0, output
    (run,) = results
    kinds = run["engines"][0]["phases"][1]["mix"]["kinds"]
    assert set(kinds) == {"read", "update"}
    lines = output.splitlines()
    for name, k in kinds.items():  # console: a line per kind under the mixed phase, 80 columns
        (line,) = [x for x in lines if x.startswith(f"    {name} ")]
        assert f"{k['ops']:_d}" in line and "p99.9" in line and len(line) <= 80
    assert any(x.startswith("    hottest keys' share of ops: 0.1%: ") for x in lines)
    assert "== memory · 300 records" in lines and "  300 records, P1, engines memory" in lines  # its size's unit
    md = next((tmp_path / "out").glob("records-*/asyncbench-*.md")).read_text()
    section = md.split("## Operation Kinds", 1)[1].split("\n## ", 1)[0]
    assert "| memory | mixed | read |" in section and "| memory | mixed | update |" in section
    assert "ops on hottest 0.1% of keys" in section
    csv = next((tmp_path / "out").glob("records-*/asyncbench-*[0-9]Z.csv")).read_text().splitlines()
    header = csv[0].split(",")
    rows = [dict(zip(header, r.split(","), strict=True)) for r in csv[1:]]
    per_kind = {r["op_kind"]: int(r["ops"]) for r in rows if r["op_kind"]}
    assert per_kind == {k: v["ops"] for k, v in kinds.items()}
    (phase_row,) = [r for r in rows if r["phase"] == "mixed" and not r["op_kind"]]
    assert float(phase_row["hot_0_1pct_keys_ops_share"]) == pytest.approx(run["engines"][0]["phases"][1]["mix"]["hot_shares"]["0.1%"], abs=1e-6)


@pytest.mark.parametrize("letter", "abcdef")
def test_plan_from_ycsb_prints_the_shipped_plan(letter: str, capfd) -> None:
    from asyncbench.cli.main import main

    assert main(["plan", "--from-ycsb", str(ROOT / "tests" / "fixtures" / "ycsb" / f"workload{letter}")]) == 0
    out = capfd.readouterr()
    assert out.out == (PLANS / f"workload{letter}-smoke.toml").read_text() and out.err == ""


@pytest.mark.parametrize(
    ("text", "named"),
    [
        ("recordcount=10\noperationcount=5\ndb=site.ycsb.BasicDB\n", "key 'db' (line 3): not supported"),
        ("recordcount=10\noperationcount=5\nreadproportion=0.7\n", "sum to"),
        ("recordcount=10\noperationcount=5\nrequestdistribution=zipf\n", "key 'requestdistribution' (line 3)"),
        ("recordcount=10\noperationcount=5\nwarp=9\n", "key 'warp' (line 3): unknown property"),
    ],
)
def test_plan_from_a_bad_ycsb_file_names_file_and_property_and_exits_2(text: str, named: str, tmp_path: Path, capfd) -> None:
    from asyncbench.cli.main import main

    path = tmp_path / "workloadx"
    path.write_text(text)
    assert main(["plan", "--from-ycsb", str(path)]) == 2
    out = capfd.readouterr()
    assert out.out == "" and f"{path}: " in out.err and named in out.err, out.err


def test_plan_from_a_missing_or_special_file_exits_2(tmp_path: Path, capfd) -> None:
    import os

    from asyncbench.cli.main import main

    assert main(["plan", "--from-ycsb", str(tmp_path / "nope")]) == 2
    assert f"{tmp_path / 'nope'}: file: does not exist" in capfd.readouterr().err
    os.mkfifo(tmp_path / "fifo")  # refused, never waited on
    assert main(["plan", "--from-ycsb", str(tmp_path / "fifo")]) == 2
    assert "not a regular file" in capfd.readouterr().err


def test_a_mixed_phase_runs_at_a_rate_and_is_never_swept(tmp_path: Path, run_cli) -> None:
    """The open loop paces a mixed phase (same checksum, open-loop figures); a sweep would
    repeat it on the store its writes changed (and insert its keys twice), so a plan's rate
    list on it is refused and --rate's list leaves it closed loop, as an update phase."""
    plan, doc = small_plan(tmp_path, "d")
    code, results, output = run_cli(str(plan), "--engine", "memory,sqlite", "--rate", "20k", "--no-isolate", "--yes")
    assert code == 0, output
    for engine in results[0]["engines"]:
        mixed = engine["phases"][1]
        assert mixed["open_loop"]["rate"] == 20_000 and mixed["checksum"] == reference_run(doc, 1, schedule=0)[0]
        assert engine["phases"][0]["open_loop"] is None  # the load runs unthrottled, as YCSB's
    code, results, output = run_cli(str(plan), "--engine", "sqlite", "--rate", "10k,20k", "--no-isolate", "--yes")
    assert code == 0, output
    assert [p["name"] for p in results[-1]["engines"][0]["phases"]] == ["load", "mixed"]
    swept = tmp_path / "swept.toml"
    swept.write_text(plan.read_text().replace('kind = "mixed"', 'kind = "mixed"\nrate = [10_000, 20_000]'))
    code, _, output = run_cli(str(swept), "--engine", "memory", "--yes")
    assert code == 2 and f"{swept}: phase[1].rate: a sweep repeats the phase" in output, output


def test_an_engine_that_is_its_own_profile_store_is_refused_before_anything_runs(
    tmp_path: Path, run_cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A plug-in written for the profile store only (it implements the ten operations
    itself instead of handing out primitives) gives YCSB nothing to map: refused up front
    (exit 2, nothing run), where it used to fail at the load phase."""
    from asyncbench import engines

    monkeypatch.setitem(engines.REGISTRY, "noycsb", "engines_for_tests:NoYcsbEngine")
    plan, _ = small_plan(tmp_path, "a")
    code, results, output = run_cli(str(plan), "--engine", "noycsb", "--no-isolate", "--yes")
    assert code == 2 and not results, output
    assert "engine 'noycsb': NoYcsbEngine is its own store (it keeps Engine.worker)" in output
    assert "it cannot run the ycsb workload" in output


def test_a_load_phase_has_no_capacity_search(tmp_path: Path, run_cli) -> None:
    """A write-only phase has no capacity to search (a mixed phase has: tests/test_capacity_mix.py)."""
    plan, _ = small_plan(tmp_path, "c")
    searched = tmp_path / "searched.toml"
    searched.write_text(plan.read_text().replace('kind = "load"', 'kind = "load"\ncapacity = true'))
    code, _, output = run_cli(str(searched), "--engine", "memory", "--yes")
    assert code == 2 and f"{searched}: phase[0].capacity: phase kind 'load' is no read, scan, query or mixed phase" in output, output


def test_the_mixed_phase_chart_says_what_it_measured(tmp_path: Path, run_cli) -> None:
    """The query chart's text is the profile store's ("whole profiles found through a
    secondary index"): YCSB's mixed phase has a chart of its own that says it is one."""
    from asyncbench.report import charts
    from asyncbench.result import RunResult

    plan, _ = small_plan(tmp_path, "b")
    code, _, output = run_cli(str(plan), "--engine", "memory", "--no-isolate", "--yes")
    assert code == 0, output
    (path,) = (tmp_path / "out").glob("records-*/asyncbench-*.json")
    figure = charts.mixed_throughput(RunResult.from_json(path.read_bytes()))
    texts = " ".join(t.get_text() for t in figure.texts)
    assert "Mixed Phase Throughput" in texts and "whole profiles" not in texts
