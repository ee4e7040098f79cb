"""The latency-over-time chart of any operation phase, selectable (issue 26, item 3).

Write phases and phases at a rate always get one; any other operation phase gets one when
the plan asks (``over_time = true`` on the phase, ``[run] over_time = [...]``), the run's
``--over-time KINDS|NAMES|all`` does, or ``report --over-time`` re-renders a result with it.
A word that selects nothing is a bad input (exit 2), not a silently missing chart."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from conftest import copy_result_set, run_asyncbench, run_result

from asyncbench.cli.main import main
from asyncbench.config import ConfigError, chart_phases, from_document
from asyncbench.fs import ownership
from asyncbench.report.charts import CHARTS
from asyncbench.result import RunResult

PLAN = """
[run]
name = "over-time"
profiles = 2_000
engines = ["memory"]
isolate = false
output = "out"
data = "data"

[[phase]]
kind = "insert"

[[phase]]
kind = "read_by_id"
{read_extra}

[[phase]]
kind = "lookup_by_email"

[[phase]]
kind = "settle"
"""


def _doc(read_extra: str = "", run_extra: dict | None = None) -> dict:
    import tomllib

    doc = tomllib.loads(PLAN.format(read_extra=read_extra))
    doc["run"].update(run_extra or {})
    return doc


def test_phase_key_marks_the_phase() -> None:
    cfg = from_document(_doc("over_time = true"), "plan.toml")
    assert [p.over_time for p in cfg.phases] == [False, True, False, False]


def test_phase_key_on_a_phase_without_operations_is_refused() -> None:
    doc = _doc()
    doc["phase"][3]["over_time"] = True
    with pytest.raises(ConfigError) as exc:
        from_document(doc, "plan.toml")
    assert exc.value.key == "phase[3].over_time" and "runs no operations" in exc.value.reason


def test_phase_key_must_be_a_bool() -> None:
    with pytest.raises(ConfigError) as exc:
        from_document(_doc('over_time = "yes"'), "plan.toml")
    assert exc.value.key == "phase[1].over_time"


def _charts(result: Path) -> set[str]:
    return {f.name.split("-latency-over-time-", 1)[1] for f in result.parent.glob("*-latency-over-time-*.svg")}


def _plan(tmp: Path, read_extra: str = "") -> Path:
    plan = tmp / "plan.toml"
    plan.write_text(PLAN.format(read_extra=read_extra))
    return plan


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real run with ``--over-time lookup_by_email`` (a kind)."""
    tmp = tmp_path_factory.mktemp("run")
    return run_result(tmp, str(_plan(tmp)), "--over-time", "lookup_by_email", profiles=2_000, charts=True)


def test_flag_selects_by_kind(written: Path) -> None:
    assert _charts(written) == {"insert-profiles.svg", "lookup-by-email.svg"}
    md = next(written.parent.glob("*.md"))
    assert "latency-over-time-lookup-by-email.svg" in md.read_text()
    run = RunResult.from_json(written.read_bytes())
    assert [p.over_time for p in run.phases] == [False, False, True, False]  # the result records it


def test_without_a_selection_only_the_write_phase_is_drawn(written: Path) -> None:
    run = RunResult.from_json(written.read_bytes())
    run.phases = [dataclasses.replace(p, over_time=False) for p in run.phases]
    slugs = [slug for slug, _, _ in (d for c in CHARTS for d in c.drawings(run)) if slug.startswith("latency-over-time-")]
    assert slugs == ["latency-over-time-insert-profiles"]


def test_report_adds_a_phase_by_name(written: Path, tmp_path: Path, monkeypatch) -> None:
    result = copy_result_set(written, tmp_path)
    monkeypatch.setattr(ownership, "_created", set())  # as a fresh process
    assert main(["report", str(result), "--over-time", "read by user id"]) == 0
    assert _charts(result) == {"insert-profiles.svg", "lookup-by-email.svg", "read-by-user-id.svg"}
    md = next(result.parent.glob("*.md"))
    assert "latency-over-time-read-by-user-id.svg" in md.read_text()


def test_report_refuses_an_unknown_word(written: Path, tmp_path: Path, monkeypatch, capsys) -> None:
    result = copy_result_set(written, tmp_path)
    before = sorted(f.name for f in tmp_path.iterdir())
    monkeypatch.setattr(ownership, "_created", set())
    assert main(["report", str(result), "--over-time", "nope"]) == 2
    assert "--over-time" in capsys.readouterr().err
    assert sorted(f.name for f in tmp_path.iterdir()) == before


def test_plan_key_all_selects_every_operation_phase() -> None:
    cfg = from_document(_doc(run_extra={"over_time": ["all"]}), "plan.toml")
    chart_phases(cfg, "plan.toml", "run.over_time")
    assert [p.over_time for p in cfg.phases] == [True, True, True, False]


def test_plan_key_word_without_operations_is_refused() -> None:
    cfg = from_document(_doc(run_extra={"over_time": ["settle"]}), "plan.toml")
    with pytest.raises(ConfigError) as exc:
        chart_phases(cfg, "plan.toml", "run.over_time")
    assert exc.value.key == "run.over_time" and "'settle'" in exc.value.reason


def test_unknown_flag_word_is_refused_and_nothing_is_created(tmp_path: Path) -> None:
    proc = run_asyncbench(tmp_path, str(_plan(tmp_path)), "--over-time", "read_by_idd")
    assert proc.returncode == 2
    assert "--over-time" in proc.stderr and "'read_by_idd'" in proc.stderr and "read_by_id" in proc.stderr
    assert not (tmp_path / "out").exists() and not (tmp_path / "data").exists()
