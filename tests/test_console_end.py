"""The console of a run without a terminal: a status line every interval on stderr while a
phase runs (off with ``--quiet``), and an end that gives the correctness verdict and every
file written, the CSV and the log included (issue 22, item 6), then the headline (issue 39)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from conftest import run_asyncbench

PLAN = """
[run]
name = "console-end"
profiles = 2_000
seed = 570123434
limit = 50
batch_size = 100
engines = ["paced", "memory"]

[[phase]]
kind = "insert"

[[phase]]
kind = "read_by_id"
stream = "reads"
count = 1_000
"""
STATUS = re.compile(
    r"^asyncbench: status: paced · read by user id: (\d[\d_]*)/1_000 ops, [\d_]+/s, p99 [\d._]+ µs$", re.M
)


def _run(tmp_path: Path, *extra: str):  # type: ignore[no-untyped-def]
    plan = tmp_path / "plan.toml"
    plan.write_text(PLAN)
    log = tmp_path / "run.log"
    return run_asyncbench(
        tmp_path,
        str(plan),
        "--csv",
        "--log-file",
        str(log),
        *extra,
        engines="paced=engines_for_tests:PacedEngine",
        env_extra={"ASYNCBENCH_STATUS_SECONDS": "0.5"},  # the paced read phase lasts 3 s
    )


@pytest.mark.parametrize("isolate", ["--isolate", "--no-isolate"])
def test_status_lines_and_the_closing_summary(tmp_path: Path, isolate: str) -> None:
    proc = _run(tmp_path, isolate)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    done = [int(n.replace("_", "")) for n in STATUS.findall(proc.stderr)]
    assert len(done) >= 3 and done == sorted(done) and done[-1] > done[0], proc.stderr
    assert "status:" not in proc.stdout  # status goes to stderr, the results to stdout
    out = proc.stdout.splitlines()
    assert "All 2 engines agree on every phase checksum they completed (2 phases compared)." in out
    end = out.index("== headline")  # the headline is last (test_headline), the files just before it
    # the verdict line first (issue 51), then the groups
    assert out[end + 1].startswith("  verdict: PASS"), out[end:]
    assert any(x.startswith("  write: ") for x in out[end:]), out[end:]
    files = {line.split(":", 1)[0]: Path(line.split(":", 1)[1].strip()) for line in out[end - 6:end - 1]}
    assert list(files) == ["report", "html", "result", "csv", "log"], out[end - 7:end]
    assert all(path.is_file() for path in files.values()), files
    assert files["csv"].suffix == ".csv" and files["log"] == tmp_path / "run.log"
    assert all(len(line) <= 80 for line in out if str(tmp_path) not in line), out  # paths may not fit


def test_quiet_turns_the_status_lines_off(tmp_path: Path) -> None:
    proc = _run(tmp_path, "--quiet", "--no-isolate")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "status:" not in proc.stderr + proc.stdout
