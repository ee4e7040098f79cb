"""The JSON log names what each line is about: worker, kind and stream on batch and phase
lines, and the result and report paths on run_start / run_end."""

from __future__ import annotations

from pathlib import Path

import orjson
from conftest import ROOT

QUICK = str(ROOT / "benchmarks" / "quick.toml")


def test_log_lines_carry_worker_kind_stream_and_paths(run_cli, tmp_path: Path) -> None:
    log = tmp_path / "run.log"
    code, _, _ = run_cli(QUICK, "--engine", "memory", "--profiles", "2k", "--parallelism", "2", "--log-file", str(log))
    assert code == 0
    events = [orjson.loads(line) for line in log.read_bytes().splitlines()]
    starts = [e for e in events if e["event"] == "phase_start"]
    reads = next(e for e in starts if e["phase"] == "post-update read by user id")
    assert reads["kind"] == "read_by_id" and reads["stream"] == "post_reads"
    assert next(e for e in starts if e["phase"] == "insert profiles")["kind"] == "insert"
    batches = [e for e in events if e["event"] == "batch" and e["phase"] == "read by user id"]
    assert {b["worker"] for b in batches} == {0, 1}
    assert all(b["kind"] == "read_by_id" and b["stream"] == "reads" for b in batches)
    # batch lines come between the phase's start and end lines (written once its clock stopped)
    end = next(i for i, e in enumerate(events) if e["event"] == "phase_end" and e["phase"] == "read by user id")
    first_batch = next(i for i, e in enumerate(events) if e["event"] == "batch" and e["phase"] == "read by user id")
    begin = next(i for i, e in enumerate(events) if e["event"] == "phase_start" and e["phase"] == "read by user id")
    assert begin < first_batch < end
    (run_start,) = [e for e in events if e["event"] == "run_start"]
    (run_end,) = [e for e in events if e["event"] == "run_end"]
    out = tmp_path / "out" / "profiles-2000-p2"
    (json_path,) = out.glob("asyncbench-*.json")
    (md_path,) = out.glob("asyncbench-*.md")
    assert run_start["results"] == [str(json_path)] and run_start["reports"] == [str(md_path)]
    assert run_end["results"] == [str(json_path)] and run_end["reports"] == [str(md_path)]
    assert run_start["log"] == str(log)


def test_run_end_carries_the_verdicts(run_cli, tmp_path: Path) -> None:
    """Issue 51: the verdicts in the JSON log too (a closed-loop bound no read can fail)."""
    log = tmp_path / "run.log"
    code, _, _ = run_cli(QUICK, "--engine", "memory", "--profiles", "2k", "--slo", "p99=1s", "--log-file", str(log))
    assert code == 0
    (run_end,) = [e for e in (orjson.loads(x) for x in log.read_bytes().splitlines()) if e["event"] == "run_end"]
    slo = [v for v in run_end["verdicts"] if v["judged"] == "slo"]
    assert slo and all(v["outcome"] == "PASS" and v["engine"] == "memory" for v in slo), run_end["verdicts"]
