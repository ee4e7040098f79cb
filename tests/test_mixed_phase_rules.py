"""Where a mixed phase may stand in a plan, for both workloads.

A second mixed phase would draw the same seeded sequence again and insert its keys again
(YCSB's D and E: SQLite failed on the duplicate key while the key/value engines overwrote
it and still "agreed"), so a plan has at most one, refused by name otherwise. After a
mixed phase only maintenance runs (stabilize, settle, reopen): its writes leave a store
the profile store's reference tables do not describe, so a later read or verify would be
compared with checksums of another store.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import ROOT

YCSB_A = ROOT / "benchmarks" / "ycsb" / "workloada.toml"
YCSB_D = ROOT / "benchmarks" / "ycsb" / "workloadd.toml"
PROFILE_MIX = ROOT / "benchmarks" / "profile-mix.toml"


def with_phase_again(plan: Path, index: int, tmp_path: Path) -> Path:
    """The plan with its ``index``-th [[phase]] table appended once more."""
    text = plan.read_text()
    tables = text.split("[[phase]]")
    out = tmp_path / plan.name
    out.write_text(text + "\n[[phase]]" + tables[index + 1])
    return out


@pytest.mark.parametrize(("plan", "index"), [(YCSB_A, 1), (YCSB_D, 1), (PROFILE_MIX, 2)])
def test_a_second_mixed_phase_is_refused(plan: Path, index: int, tmp_path: Path, run_cli) -> None:
    path = with_phase_again(plan, index, tmp_path)
    code, _, output = run_cli(str(path), "--engine", "memory", "--profiles", "500", "--yes")
    assert code == 2, output
    assert str(path) in output and f"phase[{index + 1}].kind" in output and "one mixed phase" in output, output
    assert not (tmp_path / "out").exists() and not (tmp_path / "data").exists()


@pytest.mark.parametrize("kind", ["read_by_id", "verify", "update"])
def test_a_profile_store_phase_after_the_mixed_one_is_refused_but_maintenance_runs(
    kind: str, tmp_path: Path, run_cli
) -> None:
    path = tmp_path / "mix.toml"
    text = PROFILE_MIX.read_text().replace("operations = 200_000", "operations = 500")
    path.write_text(text + f'\n[[phase]]\nkind = "{kind}"\n')
    code, _, output = run_cli(str(path), "--engine", "memory", "--profiles", "500", "--yes")
    assert code == 2, output
    assert str(path) in output and "phase[3].kind" in output and "after the mixed phase" in output, output
    path.write_text(text + '\n[[phase]]\nkind = "settle"\n\n[[phase]]\nkind = "reopen"\n')
    code, results, output = run_cli(str(path), "--engine", "memory", "--profiles", "500", "--yes", "--no-isolate")
    assert code == 0, output
    assert [p["name"] for p in results[0]["engines"][0]["phases"]][-2:] == ["settle", "reopen"]
