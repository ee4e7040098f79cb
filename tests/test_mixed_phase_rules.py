"""Where a mixed phase may stand in a plan, for both workloads.

A second mixed phase draws the same seeded sequence again: without inserts it runs on
what the first left, exactly (every engine the same checksum); with inserts, after a mixed
phase that inserted, it would insert the same keys again (YCSB's D and E: SQLite failed
on the duplicate key while the key/value engines overwrote it and still "agreed"), so it
is refused by name. After a mixed phase only maintenance (stabilize, settle, reopen) and
mixed phases run: its writes leave a store the profile store's reference tables do not
describe, so a later read or verify would be compared with checksums of another store.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import ROOT

YCSB_A = ROOT / "benchmarks" / "ycsb" / "workloada-smoke.toml"
YCSB_D = ROOT / "benchmarks" / "ycsb" / "workloadd-smoke.toml"
PROFILE_MIX = ROOT / "benchmarks" / "profile-mix.toml"


def with_phase_again(plan: Path, index: int, tmp_path: Path) -> Path:
    """The plan with its ``index``-th [[phase]] table appended once more."""
    text = plan.read_text()
    tables = text.split("[[phase]]")
    out = tmp_path / plan.name
    out.write_text(text + "\n[[phase]]" + tables[index + 1])
    return out


def test_a_second_mixed_phase_that_inserts_again_is_refused(tmp_path: Path, run_cli) -> None:
    path = with_phase_again(YCSB_D, 1, tmp_path)
    code, _, output = run_cli(str(path), "--engine", "memory", "--profiles", "500", "--yes")
    assert code == 2, output
    assert str(path) in output and "phase[2].kind" in output and "insert the same keys" in output, output
    assert not (tmp_path / "out").exists() and not (tmp_path / "data").exists()


@pytest.mark.parametrize(("plan", "index"), [(YCSB_A, 1), (PROFILE_MIX, 2)])
def test_a_second_mixed_phase_without_inserts_runs_exactly(plan: Path, index: int, tmp_path: Path, run_cli) -> None:
    path = with_phase_again(plan, index, tmp_path)
    path.write_text(path.read_text().replace("operations = 200_000", "operations = 800"))
    code, results, output = run_cli(str(path), "--engine", "memory,sqlite,lsm", "--profiles", "400", "--parallelism", "3",
                                    "--no-isolate", "--yes")  # fmt: skip
    assert code == 0, output
    sums = {}
    for e in results[0]["engines"]:
        for p in e["phases"]:
            sums.setdefault(p["name"], set()).add(p["checksum"])
    assert len(sums["mixed (2)"]) == 1 and sums["mixed (2)"] != sums["mixed"], sums


@pytest.mark.parametrize("kind", ["read_by_id", "verify", "update"])
def test_a_profile_store_phase_after_the_mixed_one_is_refused_but_maintenance_runs(
    kind: str, tmp_path: Path, run_cli
) -> None:
    path = tmp_path / "mix.toml"
    text = PROFILE_MIX.read_text().replace("operations = 200_000", "operations = 500")
    path.write_text(text + f'\n[[phase]]\nkind = "{kind}"\n')
    code, _, output = run_cli(str(path), "--engine", "memory", "--profiles", "500", "--yes")
    assert code == 2, output
    assert str(path) in output and "phase[3].kind" in output and "after the mixed phase phase[2]" in output, output
    path.write_text(text + '\n[[phase]]\nkind = "settle"\n\n[[phase]]\nkind = "reopen"\n')
    code, results, output = run_cli(str(path), "--engine", "memory", "--profiles", "500", "--yes", "--no-isolate")
    assert code == 0, output
    assert [p["name"] for p in results[0]["engines"][0]["phases"]][-2:] == ["settle", "reopen"]
