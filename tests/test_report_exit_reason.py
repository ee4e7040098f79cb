"""``asyncbench report`` exits with the saved run's status, and a non-zero one always says
why on stderr (issue 51, finding 11: it exited 1 without a word, which read as the report
command failing)."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from conftest import ROOT

from asyncbench.cli.main import main

FIXTURE = ROOT / "tests" / "fixtures" / "result-sample.json"


def _saved(tmp_path: Path, change: str) -> Path:
    doc = orjson.loads(FIXTURE.read_bytes())
    if change == "failed":
        e = doc["engines"][1]
        e.update(status="failed", phase=e["phases"][2]["name"], detail="RuntimeError: disk on fire")
        e["phases"] = e["phases"][:2]
    elif change == "mismatch":
        doc["engines"][0]["phases"][2]["checksum"] = "0123456789ABCDEF"
    path = tmp_path / "asyncbench-saved.json"
    path.write_bytes(orjson.dumps(doc))
    return path


def test_a_saved_run_that_passed_exits_0_without_a_reason(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    assert main(["report", str(_saved(tmp_path, "none"))]) == 0
    assert "exit" not in capfd.readouterr().err


@pytest.mark.parametrize(
    ("change", "said"),
    [
        ("failed", "sqlite: Failed: read by user id: RuntimeError: disk on fire"),
        ("mismatch", "CHECKSUM MISMATCH: engine memory, phase 'read by user id'"),
    ],
)
def test_a_saved_run_that_failed_exits_1_and_says_why(
    tmp_path: Path, capfd: pytest.CaptureFixture[str], change: str, said: str
) -> None:
    path = _saved(tmp_path, change)
    assert main(["report", str(path)]) == 1
    out, err = capfd.readouterr()
    assert "report: " in out  # the report was written all the same
    assert err.startswith("asyncbench: exit 1: the saved run failed"), err
    assert said in err, err
