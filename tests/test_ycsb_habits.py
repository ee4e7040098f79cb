"""YCSB users' habits: a YCSB file read as YCSB reads it (``zipfianconstant`` ignored and
said), every refusal of a file listed at once, client and measurement properties carried
or noted, and ``run -P FILE -p KEY=VALUE`` (issue 55)."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import numpy as np
import pytest

from asyncbench.workloads.ycsb.settings import mixed_params

BASE = "recordcount=1000\noperationcount=1000\nworkload=site.ycsb.workloads.CoreWorkload\n"


def plan_cli(path: Path, capfd: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    from asyncbench.cli.main import main

    code = main(["plan", "--from-ycsb", str(path)])
    out = capfd.readouterr()
    return code, out.out, out.err


def test_zipfianconstant_in_a_ycsb_file_is_ignored_as_ycsb_ignores_it_and_said(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """YCSB has no zipfianconstant property (it always draws with 0.99): the plan draws
    with 0.99 and a note names the key and says how to set a constant in a plan."""
    path = tmp_path / "workloadz"
    path.write_text(BASE + "requestdistribution=zipfian\nzipfianconstant=0.5\n")
    code, out, err = plan_cli(path, capfd)
    assert code == 0, err
    assert tomllib.loads(out)["phase"][1]["zipfianconstant"] == 0.99
    assert f"{path}: key 'zipfianconstant' (line 5): ignored, as YCSB ignores it" in err
    assert "set zipfianconstant = 0.5 in the plan's mixed [[phase]]" in err
    assert "# note: " in out  # the plan keeps the note too


def test_a_plans_own_zipfianconstant_still_applies() -> None:
    table = {"operations": 10, "readproportion": 1.0, "requestdistribution": "zipfian", "zipfianconstant": 0.5}
    assert mixed_params(table, {"recordcount": 100})["zipfianconstant"] == 0.5


def test_every_refusal_of_a_file_is_listed_at_once(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "workloadx"
    path.write_text(BASE + "db=site.ycsb.BasicDB\nwarp=9\nfieldlengthdistribution=zipfian\nfieldcount=ten\n")
    code, out, err = plan_cli(path, capfd)
    assert code == 2 and out == ""
    for named in (
        "key 'db' (line 4): not supported",
        "key 'warp' (line 5): unknown property",
        "key 'fieldlengthdistribution' (line 6): not supported",
        "key 'fieldcount' (line 7): 'ten' is not a whole number",
    ):
        assert f"{path}: {named}" in err, err


HABITS = """\
threadcount=4
target=500
measurementtype=hdrhistogram
hdrhistogram.percentiles=50,95,99
status.interval=10
fieldlengthdistribution=constant
core_workload_insertion_retry_limit=0
requestdistribution=zipfian
"""


def test_client_and_measurement_properties_are_carried_or_noted(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    """The lines YCSB users write: threadcount is the run's parallelism, target the mixed
    phase's rate, measurement settings accepted with a note naming them; the plan loads."""
    from asyncbench.config import from_document

    path = tmp_path / "workloadh"
    path.write_text(BASE + HABITS)
    code, out, err = plan_cli(path, capfd)
    assert code == 0, err
    doc = tomllib.loads(out)
    assert doc["run"]["parallelism"] == 4 and doc["phase"][1]["rate"] == 500.0
    assert "'measurementtype', 'hdrhistogram.percentiles', 'status.interval' accepted and ignored" in err
    cfg = from_document(doc, str(path))
    assert cfg.parallelism == [4] and cfg.phases[1].rate == 500.0


def test_core_workload_insertion_properties_are_not_called_foreign(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "workloadk"
    path.write_text(BASE + "core_workload_insertion_keep_going_on_error=true\n")
    code, _, err = plan_cli(path, capfd)
    assert code == 2 and "not supported: a failed insert fails the run" in err and "unknown" not in err


def test_workload_f_counts_a_read_modify_write_under_read_and_update_as_ycsb() -> None:
    """YCSB's [READ] count of workload F is its reads plus its read-modify-writes (each
    RMW's read), [UPDATE] its updates plus its RMWs; the plan's own readmodifywrite kind
    stays beside them, and each kind's latencies are its own operations'."""
    from asyncbench.workloads.ycsb.operations import READ, READMODIFYWRITE, UPDATE
    from asyncbench.workloads.ycsb.phases import PHASES
    from asyncbench.workloads.ycsb.workload import WORKLOAD

    doc = tomllib.loads((Path(__file__).resolve().parent.parent / "benchmarks" / "ycsb" / "workloadf-smoke.toml").read_text())
    settings = WORKLOAD.settings(doc["ycsb"])
    table = {k: v for k, v in doc["phase"][1].items() if k != "kind"}
    kind = PHASES["mixed"]
    params = WORKLOAD.phase_params(kind, table, settings)
    plan = WORKLOAD.draw_plan(WORKLOAD.counts(1000, 0, {}, settings), 7)
    items = WORKLOAD.phase_items(kind, None, None, plan, params)
    figures = WORKLOAD.mix_figures(kind, items)
    assert figures is not None
    drawn = np.bincount(items.phase.kind[items.positions], minlength=5)  # type: ignore[attr-defined]
    reads, updates, rmws = int(drawn[READ]), int(drawn[UPDATE]), int(drawn[READMODIFYWRITE])
    assert reads > 0 and rmws > 0
    assert figures.counts == {"read": reads + rmws, "update": updates + rmws, "readmodifywrite": rmws}


#: the line YCSB users' tools parse: ``[READ], 95thPercentileLatency(us), 1866``
YCSB_LINE = re.compile(r"^\[(\w[\w-]*)\], (.+?), ([\d.]+)$")
YCSB_MEASUREMENTS = [
    "Operations",
    "AverageLatency(us)",
    "MinLatency(us)",
    "MaxLatency(us)",
    "95thPercentileLatency(us)",
    "99thPercentileLatency(us)",
    "Return=OK",
]


def parse_ycsb(text: str) -> list[dict[str, list[tuple[str, float]]]]:
    """Blocks (one per '#' header) of name -> [(measurement, value)] in printed order."""
    blocks: list[dict[str, list[tuple[str, float]]]] = []
    for line in text.splitlines():
        if line.startswith("# asyncbench "):
            blocks.append({})
            continue
        m = YCSB_LINE.match(line)
        if m and blocks:
            blocks[-1].setdefault(m[1], []).append((m[2], float(m[3])))
    return blocks


def test_report_format_ycsb_prints_ycsbs_summary(tmp_path: Path, run_cli, capfd: pytest.CaptureFixture[str]) -> None:
    """Workload F at 300 records: run --format ycsb prints YCSB's summary at the end, report
    --format ycsb of its result the same lines; parsed with YCSB users' regex: [OVERALL]
    then each kind with YCSB's measurements in YCSB's order, percentiles from the
    result's histograms, [READ] counting every read-modify-write's read."""
    from asyncbench.cli.main import main
    from asyncbench.measure.latency import LatencyHistogram

    doc = tomllib.loads((Path(__file__).resolve().parent.parent / "benchmarks" / "ycsb" / "workloadf-smoke.toml").read_text())
    text = (Path(__file__).resolve().parent.parent / "benchmarks" / "ycsb" / "workloadf-smoke.toml").read_text()
    plan = tmp_path / "workloadf.toml"
    plan.write_text(text.replace("recordcount = 1000", "recordcount = 300").replace("operations = 1000", "operations = 1500"))
    code, results, out = run_cli("run", str(plan), "--engine", "memory", "--format", "ycsb")
    assert code == 0, out[-3000:]
    printed = [line for line in out.splitlines() if YCSB_LINE.match(line) or line.startswith("# asyncbench ")]
    (path,) = sorted((tmp_path / "out").glob("*-*-p*/asyncbench-*.json"))
    assert main(["report", "--format", "ycsb", str(path)]) == 0
    report = capfd.readouterr().out
    assert all(YCSB_LINE.match(line) or line.startswith("# asyncbench ") for line in report.splitlines()), report
    assert report.splitlines() == printed
    load, mixed = parse_ycsb(report)
    phases = results[0]["engines"][0]["phases"]
    assert list(load) == ["OVERALL", "INSERT"] and load["INSERT"][0] == ("Operations", 300)
    assert list(mixed) == ["OVERALL", "READ", "UPDATE", "READ-MODIFY-WRITE"]
    assert [m for m, _ in mixed["OVERALL"]] == ["RunTime(ms)", "Throughput(ops/sec)"]
    assert mixed["OVERALL"][0][1] == round(phases[1]["seconds"] * 1000)
    assert mixed["OVERALL"][1][1] == pytest.approx(1500 / phases[1]["seconds"], rel=1e-3)
    kinds = phases[1]["mix"]["kinds"]
    # F's updates are its read-modify-writes' only: counted (YCSB's [UPDATE]) but timed whole,
    # under READ-MODIFY-WRITE, so [UPDATE] has no latency lines of its own (none invented)
    assert mixed["UPDATE"] == [("Operations", kinds["update"]["ops"]), ("Return=OK", kinds["update"]["ops"])]
    for name, kind in (("READ", "read"), ("READ-MODIFY-WRITE", "readmodifywrite")):
        got = dict(mixed[name])
        assert [m for m, _ in mixed[name]] == YCSB_MEASUREMENTS, name
        assert got["Operations"] == got["Return=OK"] == kinds[kind]["ops"]
        hist = LatencyHistogram.from_encoded(kinds[kind]["latency"]["histogram"])
        p95, p99 = hist.values_at_percentiles([95.0, 99.0])
        assert (got["95thPercentileLatency(us)"], got["99thPercentileLatency(us)"]) == (round(p95 / 1000), round(p99 / 1000))
        assert got["MinLatency(us)"] <= got["95thPercentileLatency(us)"] <= got["99thPercentileLatency(us)"] <= got["MaxLatency(us)"]
    # F is reads and read-modify-writes: YCSB's [READ] counts all 1500 (each RMW's read too)
    assert dict(mixed["READ"])["Operations"] == 1500 == phases[1]["ops"]
    assert dict(mixed["READ-MODIFY-WRITE"])["Operations"] == dict(mixed["UPDATE"])["Operations"]
    assert doc["phase"][1]["readmodifywriteproportion"] == 0.5


FIXTURES = Path(__file__).resolve().parent / "fixtures" / "ycsb"


def test_run_P_workloadb_with_p_properties_runs_ycsbs_way(run_cli) -> None:
    """Issue 55's check: -P workloadb (the shipped plan, by YCSB's bare name) with -p
    recordcount, operationcount and a 50/50 mix runs 4,000 operations at about 50/50 on two
    engines, whose checksums agree."""
    code, results, out = run_cli(
        "run", "-P", "workloadb", "-p", "recordcount=5000", "-p", "operationcount=4000",
        "-p", "readproportion=0.5", "-p", "updateproportion=0.5", "--engine", "memory,lsm",
    )  # fmt: skip
    assert code == 0, out[-3000:]
    assert "-P workloadb: no file of that name here; running the shipped plan" in out
    (result,) = results
    assert result["profiles"] == 5000
    checksums = {}
    for engine in result["engines"]:
        load, mixed = engine["phases"]
        assert load["ops"] == 5000 and mixed["ops"] == 4000
        kinds = mixed["mix"]["kinds"]
        assert set(kinds) == {"read", "update"} and kinds["read"]["ops"] + kinds["update"]["ops"] == 4000
        assert abs(kinds["read"]["ops"] - 2000) <= 5 * (4000 * 0.25) ** 0.5  # binomial, 5 sigma
        checksums[engine["engine"]] = (load["checksum"], mixed["checksum"])
    assert len(set(checksums.values())) == 1, checksums


def test_run_P_takes_a_ycsb_file_directly(run_cli) -> None:
    """YCSB's own workloadb file, unchanged, with -p: threadcount is the parallelism, a
    measurement setting is noted, and the run is that of its converted plan."""
    code, results, out = run_cli(
        "run", "-P", str(FIXTURES / "workloadb"), "-p", "recordcount=200", "-p", "operationcount=300",
        "-p", "threadcount=2", "-p", "measurementtype=hdrhistogram", "--engine", "memory",
    )  # fmt: skip
    assert code == 0, out[-3000:]
    (result,) = results
    assert result["parallelism"] == 2 and result["profiles"] == 200
    assert result["engines"][0]["phases"][1]["ops"] == 300
    assert "note: " in out and "'measurementtype' accepted and ignored" in out


def test_a_ycsb_file_given_as_the_plan_is_recognized(run_cli) -> None:
    code, _, out = run_cli("run", str(FIXTURES / "workloadb"), "--engine", "memory")
    assert code == 2
    assert f"{FIXTURES / 'workloadb'}: file: is a YCSB workload file (Java properties), not a TOML plan" in out
    assert f"-P {FIXTURES / 'workloadb'}" in out and "syntax" not in out


def test_p_properties_are_checked_and_every_refusal_listed(run_cli) -> None:
    code, results, out = run_cli(
        "run", "-P", "workloadb", "-p", "db=site.ycsb.BasicDB", "-p", "warp=9", "-p", "fieldcount=ten",
        "--engine", "memory",
    )  # fmt: skip
    assert code == 2 and results == []
    for named in (
        "key 'db' (-p on the command line): not supported",
        "key 'warp' (-p on the command line): unknown property",
        "key 'fieldcount' (-p on the command line): 'ten' is not a whole number",
    ):
        assert named in out, out
    code, _, out = run_cli("run", "-P", "workloadb", "-p", "recordcount", "--engine", "memory")
    assert code == 2 and "-p: 'recordcount' is not KEY=VALUE" in out


def test_p_properties_land_where_the_converter_puts_them_in_a_toml_plan() -> None:
    """override_plan on the shipped workloadb-smoke.toml: the [ycsb] layout, the mixed phase's
    keys, threadcount as parallelism, target as the rate (0: none), notes for what YCSB
    ignores; the document still loads as a plan."""
    from asyncbench.config import from_document
    from asyncbench.workloads.ycsb.overrides import override_plan

    shipped = Path(__file__).resolve().parent.parent / "benchmarks" / "ycsb" / "workloadb-smoke.toml"
    doc = tomllib.loads(shipped.read_text())
    notes = override_plan(
        doc,
        [("recordcount", "5000"), ("operationcount", "4000"), ("requestdistribution", "uniform"),
         ("exponential.frac", "0.5"), ("threadcount", "3"), ("target", "2000"), ("zipfianconstant", "0.7"),
         ("hdrhistogram.percentiles", "50,99"), ("fieldlengthdistribution", "constant")],
        "x.toml",
    )  # fmt: skip
    mixed = doc["phase"][1]
    assert doc["ycsb"]["recordcount"] == 5000 and doc["run"]["parallelism"] == 3
    assert (mixed["operations"], mixed["requestdistribution"], mixed["rate"]) == (4000, "uniform", 2000.0)
    assert mixed["exponential_frac"] == 0.5 and mixed["zipfianconstant"] == 0.99
    assert len(notes) == 2 and "zipfianconstant" in notes[0] and "'hdrhistogram.percentiles'" in notes[1]
    cfg = from_document(doc, "x.toml")
    assert cfg.parallelism == [3] and cfg.phases[1].rate == 2000.0
    override_plan(doc, [("target", "0")], "x.toml")
    assert "rate" not in doc["phase"][1]
