"""YCSB's workload files: the Java .properties reader, the conversion to plans, and its errors.

tests/fixtures/ycsb/workload{a..f} are YCSB's six core workload files, unchanged (with
their Apache-2.0 header, from brianfrankcooper/YCSB at d9faaac); each must convert into
exactly the shipped benchmarks/ycsb/workload{a..f}-smoke.toml (the smoke plans: YCSB's own default size).
"""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from asyncbench.workloads.ycsb.convert import YcsbFileError, plan_from_ycsb, plan_toml
from asyncbench.workloads.ycsb.plan import mix_spec
from asyncbench.workloads.ycsb.properties import PropertiesError, parse_properties

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures" / "ycsb"
SHIPPED = ROOT / "benchmarks" / "ycsb"


@pytest.mark.parametrize("letter", "abcdef")
def test_ycsbs_files_convert_to_the_shipped_plans(letter: str) -> None:
    source = FIXTURES / f"workload{letter}"
    assert source.read_text().startswith("# Copyright (c) 2010 Yahoo! Inc.")
    done = plan_from_ycsb(source)
    assert done.notes == []
    plan = done.plan
    text = plan_toml(plan, source.name)
    assert text == (SHIPPED / f"workload{letter}-smoke.toml").read_text()
    assert tomllib.loads(text) == plan
    mix_spec(plan, plan["phase"][1])  # the plan draws


def test_the_shipped_plans_say_what_ycsb_says() -> None:
    e = tomllib.loads((SHIPPED / "workloade-smoke.toml").read_text())
    assert e["run"]["workload"] == "ycsb"
    assert [p["kind"] for p in e["phase"]] == ["load", "mixed"]
    mixed = e["phase"][1]
    assert (mixed["scanproportion"], mixed["insertproportion"], mixed["maxscanlength"]) == (0.95, 0.05, 100)
    assert mixed["requestdistribution"] == "zipfian" and mixed["zipfianconstant"] == 0.99
    d = tomllib.loads((SHIPPED / "workloadd-smoke.toml").read_text())
    assert d["phase"][1]["requestdistribution"] == "latest"
    f = tomllib.loads((SHIPPED / "workloadf-smoke.toml").read_text())
    assert f["phase"][1]["readmodifywriteproportion"] == 0.5


def test_properties_syntax() -> None:
    text = "# c\n! c\n  a=1\nb : two words  \nc three\nd\\\n  e=x\\\n   y\nf=\\u0041\\t\n"
    got = {p.key: (p.value, p.line) for p in parse_properties(text, "f")}
    assert got == {"a": ("1", 3), "b": ("two words", 4), "c": ("three", 5), "de": ("xy", 6), "f": ("A", 9)}


def test_a_key_set_twice_is_named() -> None:
    with pytest.raises(PropertiesError, match=r"f: key 'a' is set twice \(lines 1 and 3\)"):
        parse_properties("a=1\nb=2\na=3\n", "f")


BASE = "recordcount=100\noperationcount=100\nworkload=site.ycsb.workloads.CoreWorkload\n"


def convert(tmp_path: Path, extra: str) -> dict:
    path = tmp_path / "wl"
    path.write_text(BASE + extra)
    return plan_from_ycsb(path).plan


@pytest.mark.parametrize(
    "extra, key, problem",
    [
        ("db=site.ycsb.BasicDB\n", "db", "not supported: the engine is chosen by asyncbench"),
        ("exporter=site.ycsb.measurements.exporter.JSONArrayMeasurementsExporter\n", "exporter", "not supported"),
        ("readbatchsize=2\n", "readbatchsize", "unknown property"),
        ("readproportion=0.5\nupdateproportion=0.4\n", "readproportion", "sum to 0.9, not 1"),
        ("readproportion=1.2\nupdateproportion=-0.2\n", "updateproportion", "must be >= 0"),
        ("requestdistribution=zipf\n", "requestdistribution", "unknown value 'zipf'"),
        ("fieldcount=0\n", "fieldcount", "must be >= 1, got 0"),
        ("fieldlength=ten\n", "fieldlength", "'ten' is not a whole number"),
        ("scanproportion=0.05\nreadproportion=0.9\nmaxscanlength=1000\n", "maxscanlength", "past the record count 100"),
        ("hotspotopnfraction=1.2\n", "hotspotopnfraction", "<= 1"),
        ("readallfields=yes\n", "readallfields", "not true or false"),
        ("workload=site.ycsb.workloads.TimeSeriesWorkload\n", "workload", "only YCSB's CoreWorkload"),
    ],
)
def test_bad_input_names_file_key_and_problem(tmp_path: Path, extra: str, key: str, problem: str) -> None:
    base = BASE.replace("workload=site.ycsb.workloads.CoreWorkload\n", "") if extra.startswith("workload=") else BASE
    path = tmp_path / "wl"
    path.write_text(base + extra)
    with pytest.raises(YcsbFileError) as err:
        plan_from_ycsb(path)
    message = str(err.value)
    assert message.startswith(f"{path}: key {key!r}"), message
    assert problem in message, message


def test_zero_records_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "wl"
    path.write_text("recordcount=0\noperationcount=10\n")
    with pytest.raises(YcsbFileError, match="key 'recordcount' \\(line 1\\): must be >= 1, got 0"):
        plan_from_ycsb(path)


def test_missing_operationcount_is_named(tmp_path: Path) -> None:
    path = tmp_path / "wl"
    path.write_text("recordcount=10\n")
    with pytest.raises(YcsbFileError, match="key 'operationcount': missing"):
        plan_from_ycsb(path)


def test_an_unreadable_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(PropertiesError, match="nope: cannot read"):
        plan_from_ycsb(tmp_path / "nope")


def test_distribution_parameters_carry_over(tmp_path: Path) -> None:
    plan = convert(tmp_path, "requestdistribution=hotspot\nhotspotdatafraction=0.1\nhotspotopnfraction=0.9\n")
    mixed = plan["phase"][1]
    assert (mixed["hotspotdatafraction"], mixed["hotspotopnfraction"]) == (0.1, 0.9)
    assert "zipfianconstant" not in mixed
    plan = convert(tmp_path, "requestdistribution=zipfian\ninsertorder=ordered\nzeropadding=9\n")
    assert plan["phase"][1]["zipfianconstant"] == 0.99
    assert plan["ycsb"]["insertorder"] == "ordered" and plan["ycsb"]["zeropadding"] == 9
