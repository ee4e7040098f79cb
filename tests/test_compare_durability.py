"""``compare`` carries the crash rows (issue 57, ``asyncbench/report/durability_compare.py``):
two results with a crash show each engine's acknowledged writes lost side by side, and
more lost, a torn record or a store that no longer opens is a regression (exit 1) like a
slower phase; results without a crash print and exit as before."""

from __future__ import annotations

import copy
from pathlib import Path

import orjson
import pytest
from test_compare import sample, with_repeats, write

from asyncbench.cli.main import main
from asyncbench.result import DurabilityRow, RunResult


def crashed(lost: dict[str, int], torn: int = 0, opened: bool = True) -> RunResult:
    """The sample (identical timings) with one kill crash per engine: ``lost`` by engine."""
    run = copy.deepcopy(with_repeats(sample(), "sqlite", [1.0, 1.0, 1.0]))
    for e in run.engines:
        n = lost.get(e.engine, 0)
        e.durability = [
            DurabilityRow(phase="load", how="kill", after=1500, acknowledged=1500, crash_seconds=0.2,
                          opened=opened, acknowledged_present=1500 - n, acknowledged_lost=n, torn=torn,
                          promise="per write", synced_commits=False)
        ]  # fmt: skip
    return run


def run_compare(capsys: pytest.CaptureFixture[str], base: Path, new: Path, *flags: str) -> tuple[int, str]:
    code = main(["compare", str(base), str(new), "--engine", "sqlite", *flags])
    return code, capsys.readouterr().out


def test_the_lost_counts_show_side_by_side_and_more_lost_is_a_regression(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base, new = write(tmp_path, "a", crashed({"sqlite": 0})), write(tmp_path, "b", crashed({"sqlite": 59}))
    code, text = run_compare(capsys, base, new)
    assert code == 1, text
    assert "sqlite kill in load after 1_500: base lost 0 of 1_500; new lost 59 of 1_500: REGRESSED" in text
    code, doc = run_compare(capsys, base, new, "--json")
    (row,) = orjson.loads(doc)["durability"]
    assert (row["base"]["acknowledged_lost"], row["new"]["acknowledged_lost"], row["regressed"]) == (0, 59, True)
    code, md = run_compare(capsys, base, new, "--markdown")
    assert code == 1 and "| sqlite | kill in load after 1_500 | lost 0 of 1_500 | lost 59 of 1_500 | REGRESSED |" in md
    # the other way round: fewer lost is no regression, and the timings alone decide
    code, text = run_compare(capsys, new, base)
    assert code == 0 and "base lost 59 of 1_500; new lost 0 of 1_500: improved" in text


@pytest.mark.parametrize(("torn", "opened", "shown"), [(1, True, "lost 0 of 1_500, 1 torn"), (0, False, "did not open")])
def test_a_torn_record_or_a_store_that_no_longer_opens_is_a_regression(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], torn: int, opened: bool, shown: str
) -> None:
    base = write(tmp_path, "a", crashed({}))
    new = write(tmp_path, "b", crashed({}, torn=torn, opened=opened))
    code, text = run_compare(capsys, base, new)
    assert code == 1 and f"new {shown}: REGRESSED" in text, text


def test_results_without_a_crash_are_unchanged(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = with_repeats(sample(), "sqlite", [1.0, 1.0, 1.0])
    base, new = write(tmp_path, "a", run), write(tmp_path, "b", run)
    code, text = run_compare(capsys, base, new)
    assert code == 0 and "Durability" not in text
    code, doc = run_compare(capsys, base, new, "--json")
    assert orjson.loads(doc)["durability"] == []
