"""YCSB's ``maxexecutiontime`` is the mixed phase's ``duration`` (issue 55): from a YCSB
file (``plan --from-ycsb``, ``run -P``) and from ``-p`` on a TOML plan; 0 is YCSB's "no
limit"; a bad value, and YCSB's unbounded ``operationcount=0``, are refused by name."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from asyncbench.workloads.ycsb.convert import YcsbFileError, convert
from asyncbench.workloads.ycsb.overrides import override_plan
from asyncbench.workloads.ycsb.properties import parse_properties

BASE = "recordcount=1000\noperationcount=100000\nworkload=site.ycsb.workloads.CoreWorkload\nreadproportion=1\nupdateproportion=0\n"
SHIPPED = Path(__file__).resolve().parent.parent / "benchmarks" / "ycsb" / "workloadb.toml"


def converted(text: str) -> dict:
    return convert(parse_properties(text, "w"), "w").plan


def test_maxexecutiontime_is_the_mixed_phases_duration_and_the_plan_loads() -> None:
    from asyncbench.config import from_document

    doc = converted(BASE + "maxexecutiontime=30\n")
    assert doc["phase"][1]["duration"] == "30s" and "duration" not in doc["phase"][0]
    cfg = from_document(tomllib.loads(_toml(doc)), "w.toml")
    assert cfg.phases[1].duration == 30.0 and cfg.phases[0].duration is None
    assert "duration" not in converted(BASE + "maxexecutiontime=0\n")["phase"][1]  # YCSB's 0: no limit


def _toml(doc: dict) -> str:
    from asyncbench.workloads.ycsb.convert import plan_toml

    return plan_toml(doc, "w")


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        ("maxexecutiontime=-1", "must be between 0 (no limit) and"),
        ("maxexecutiontime=abc", "'abc' is not a whole number of seconds"),
        ("maxexecutiontime=1.5", "'1.5' is not a whole number of seconds"),
        ("maxexecutiontime=99999999999", "must be between 0 (no limit) and"),
    ],
)
def test_a_bad_maxexecutiontime_is_refused_naming_file_and_line(line: str, problem: str) -> None:
    with pytest.raises(YcsbFileError) as exc:
        converted(BASE + line + "\n")
    assert "w: key 'maxexecutiontime' (line 6): " in str(exc.value) and problem in str(exc.value)


def test_ycsbs_unbounded_operationcount_0_is_refused_saying_why() -> None:
    with pytest.raises(YcsbFileError) as exc:
        converted(BASE.replace("operationcount=100000", "operationcount=0") + "maxexecutiontime=10\n")
    assert "key 'operationcount' (line 2): must be >= 1, got 0" in str(exc.value)
    assert "with maxexecutiontime, their upper bound" in str(exc.value)


def test_p_maxexecutiontime_sets_and_clears_the_duration_of_a_toml_plan() -> None:
    from asyncbench.config import from_document

    doc = tomllib.loads(SHIPPED.read_text())
    assert override_plan(doc, [("maxexecutiontime", "5")], "x.toml") == []
    assert doc["phase"][1]["duration"] == "5s"
    assert from_document(doc, "x.toml").phases[1].duration == 5.0
    override_plan(doc, [("maxexecutiontime", "0")], "x.toml")
    assert "duration" not in doc["phase"][1]
    with pytest.raises(YcsbFileError, match="key 'maxexecutiontime' \\(-p on the command line\\): '-' is not"):
        override_plan(doc, [("maxexecutiontime", "-")], "x.toml")


def test_run_P_with_maxexecutiontime_stops_the_run_phase_in_time(run_cli) -> None:
    code, results, out = run_cli(
        "run", "-P", str(SHIPPED), "-p", "recordcount=1000", "-p", "operationcount=500000",
        "-p", "maxexecutiontime=1", "--engine", "sqlite", "--no-isolate",
    )  # fmt: skip
    assert code == 0, out[-3000:]
    (result,) = results
    mixed = result["engines"][0]["phases"][1]
    assert mixed["prefix"]["duration_seconds"] == 1.0 and 1.0 <= mixed["seconds"] < 2.5
    assert 0 < mixed["ops"] < 500_000
