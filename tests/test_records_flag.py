"""The store's size is ``--records`` / ``records`` for every workload (issue 54): the
profile store's profiles and YCSB's records are one setting, spelled neutrally. The first
spelling, ``--profiles`` / ``profiles``, keeps working as before; giving both is refused
(exit 2, naming both, nothing created), since which one was meant cannot be told.

Through the real command line (``asyncbench.cli.main.main``, in process)."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import ROOT

from asyncbench.config import load
from asyncbench.run.checks.scale import largest_phase

QUICK = ROOT / "benchmarks" / "quick.toml"
YCSB = ROOT / "benchmarks" / "ycsb" / "workloada-smoke.toml"
RUN = ("--engine", "memory", "--no-isolate", "--yes", "--no-progress")


def plan_with_run_keys(tmp_path: Path, source: Path, lines: str) -> Path:
    """``source`` with ``lines`` added at the top of its [run] table (and its own size key
    dropped), written under tmp_path."""
    text = "\n".join(line for line in source.read_text().splitlines() if not line.startswith("profiles ="))
    path = tmp_path / "plan.toml"
    path.write_text(text.replace("[run]", f"[run]\n{lines}", 1))
    return path


def test_records_and_profiles_flags_set_the_same_size(run_cli) -> None:  # type: ignore[no-untyped-def]
    code, (by_records,), _ = run_cli(str(QUICK), *RUN, "--records", "1k")
    assert code == 0 and by_records["profiles"] == 1_000
    code, results, _ = run_cli(str(QUICK), *RUN, "--profiles", "1k")
    assert code == 0
    by_profiles = results[-1]  # the same result directory: the second run's file is the newer
    assert by_profiles["profiles"] == 1_000
    checksums = [[p["checksum"] for p in r["engines"][0]["phases"]] for r in (by_records, by_profiles)]
    assert checksums[0] == checksums[1]


@pytest.mark.parametrize("order", [("--records", "--profiles"), ("--profiles", "--records")])
def test_both_flags_are_refused_naming_both_and_nothing_is_created(
    run_cli, tmp_path: Path, order: tuple[str, str]  # type: ignore[no-untyped-def]
) -> None:
    code, results, output = run_cli(str(QUICK), *RUN, order[0], "1k", order[1], "1k")
    assert code == 2 and results == []
    assert "--records" in output and "--profiles" in output and "give one" in output
    assert "Traceback" not in output
    assert not (tmp_path / "out").exists() and not (tmp_path / "data").exists()


def test_the_plan_key_records_sets_the_size_and_profiles_still_does(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    plan = plan_with_run_keys(tmp_path, QUICK, "records = 1_000")
    code, (result,), _ = run_cli(str(plan), *RUN)
    assert code == 0 and result["profiles"] == 1_000
    assert load(plan_with_run_keys(tmp_path, QUICK, "profiles = 1_500")).profiles == [1_500]


def test_both_plan_keys_are_refused_naming_both_and_nothing_is_created(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    plan = plan_with_run_keys(tmp_path, QUICK, "records = 1_000\nprofiles = 1_000")
    code, results, output = run_cli(str(plan), *RUN)
    assert code == 2 and results == []
    assert str(plan) in output and "run.profiles" in output and "run.records" in output
    assert not (tmp_path / "out").exists() and not (tmp_path / "data").exists()


def test_an_unknown_run_key_lists_records_among_the_allowed(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    code, _, output = run_cli(str(plan_with_run_keys(tmp_path, QUICK, "recods = 5")), *RUN)
    assert code == 2 and "run.recods: unknown key" in output and "records" in output


def test_records_is_ycsbs_record_count_over_its_recordcount(tmp_path: Path) -> None:
    """YCSB's ``[ycsb] recordcount`` is the default size; ``records`` (either spelling)
    under [run] overrides it, as --records does."""
    assert load(YCSB).profiles == [1_000]
    assert load(plan_with_run_keys(tmp_path, YCSB, "records = 300")).profiles == [300]
    assert load(plan_with_run_keys(tmp_path, YCSB, "profiles = 400")).profiles == [400]


def test_a_refusal_of_the_size_names_the_key_as_the_plan_spells_it(tmp_path: Path) -> None:
    for spelling in ("records", "profiles"):
        cfg = load(plan_with_run_keys(tmp_path, QUICK, f"{spelling} = 20_000"))
        phase = largest_phase(cfg)
        assert phase is not None and phase.key == f"run.{spelling}"


def test_ycsb_records_flag_runs(run_cli) -> None:  # type: ignore[no-untyped-def]
    code, (result,), _ = run_cli(str(YCSB), *RUN, "--records", "200")
    assert code == 0 and result["profiles"] == 200 and result["workload"] == "ycsb"


def test_compare_names_a_different_size_as_records(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """compare's list of settings measured differently speaks of the size as records,
    whatever the workload (it said "profiles" for YCSB results too)."""
    from test_compare import sample, write

    from asyncbench.cli.main import main

    bigger = sample()
    bigger.profiles *= 2
    base, new = write(tmp_path, "a", sample()), write(tmp_path, "b", bigger)
    main(["compare", str(base), str(new)])
    out = capsys.readouterr().out
    assert f"records: base {sample().profiles}; new {bigger.profiles}" in out
