"""Counts too large for the machine are refused before anything runs, naming the file and
key (issue 23 item 12); large counts that only take time say so before the run starts."""

from __future__ import annotations

import dataclasses
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from asyncbench.config import ConfigError, load
from asyncbench.run.checks.scale import check_scale, largest_phase, notes

ROOT = Path(__file__).resolve().parent.parent
QUICK = ROOT / "benchmarks" / "quick.toml"
#: A stop (SIGTERM) is prompt: the partial report in a few seconds, well inside this bound.
STOP_PROMPTLY_SECONDS = 20


def plan_with(tmp_path: Path, run: dict[str, str], counts: str = "") -> Path:
    text = QUICK.read_text()
    for key, value in run.items():
        text = "\n".join(line for line in text.splitlines() if not line.startswith(f"{key} ="))
        text = text.replace("[run]", f"[run]\n{key} = {value}", 1)
    path = tmp_path / "plan.toml"
    path.write_text(text + (f"\n[counts]\n{counts}\n" if counts else ""))
    return path


def test_a_count_the_machine_cannot_hold_is_a_config_error(run_cli, tmp_path: Path) -> None:
    """Ten billion reads in batches of one: ~1.2 TB of per-batch bookkeeping. Before lazy
    streams the plan itself took the memory (a MemoryError, or a traceback without
    isolation); now the batches would, so the count is refused up front."""
    plan = plan_with(tmp_path, {"batch_size": "1"}, "reads = 10_000_000_000")
    code, results, output = run_cli(str(plan), "--engine", "memory", "--no-isolate")
    assert code == 2, output
    assert f"{plan}: counts.reads: 10_000_000_000 operations in one phase at batch_size 1" in output
    assert "more than this machine's" in output and "Traceback" not in output
    assert results == [] and not (tmp_path / "out").exists() and not (tmp_path / "data").exists()


def test_the_key_named_is_the_one_that_sized_the_phase(tmp_path: Path) -> None:
    cfg = load(plan_with(tmp_path, {}))
    assert largest_phase(cfg) == largest_phase(cfg, None)
    phase = largest_phase(cfg)
    assert phase is not None and (phase.ops, phase.key, phase.where) == (
        20_000,
        "run.profiles",
        str(cfg.source),
    )
    for flag in ("--records", "--profiles"):  # the spelling the command line used
        flagged = largest_phase(cfg, size_flag=flag)
        assert flagged is not None and (flagged.key, flagged.where) == (flag, "command line")
    cfg.counts["updates"] = 50_000
    phase = largest_phase(cfg)
    assert phase is not None and (phase.ops, phase.key) == (50_000, "counts.updates")
    reads = next(i for i, p in enumerate(cfg.phases) if p.stream == "reads")
    cfg.counts["reads"] = 90_000
    cfg.phases[reads] = dataclasses.replace(cfg.phases[reads], count=60_000)
    phase = largest_phase(cfg)  # the phase takes 60_000 of the stream's 90_000 items
    assert phase is not None and (phase.ops, phase.key) == (60_000, f"phase[{reads}].count")
    cfg.counts = {"updates": 50_000}
    cfg.phases[reads] = dataclasses.replace(cfg.phases[reads], count=None)
    with pytest.raises(
        ConfigError, match=r"counts\.updates: 50_000 operations in one phase at batch_size 1 "
    ):
        check_scale(dataclasses.replace(cfg, batch_size=1), memory_bytes=50_000 * 100, free_disk_bytes=10**12)
    check_scale(dataclasses.replace(cfg, batch_size=1), memory_bytes=50_000 * 200, free_disk_bytes=10**12)
    with pytest.raises(
        ConfigError, match=r"counts\.updates: 50_000 operations in one phase keep .* of latency marks"
    ):
        check_scale(cfg, memory_bytes=10**12, free_disk_bytes=1000)
    check_scale(cfg, memory_bytes=10**12, free_disk_bytes=50_000 * 8)


def test_a_count_that_only_takes_time_says_so_and_starts(tmp_path: Path) -> None:
    """Three billion reads at the default batch size fit (streams drawn as consumed, 24 GB
    of marks on disk): the run says how long skipping to the streams takes, starts, and
    stops cleanly and promptly on SIGTERM while it is still drawing."""
    plan = plan_with(tmp_path, {}, "reads = 3_000_000_000")
    cfg = load(plan)
    (line,) = notes(cfg)
    assert "streams are drawn as they are consumed" in line and "skip pass of about" in line
    proc = subprocess.Popen(
        [sys.executable, "-m", "asyncbench", str(plan), "--engine", "memory", "--yes", "--no-progress"]
        + ["--output", str(tmp_path / "out"), "--data", str(tmp_path / "data")],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    assert proc.stdout is not None
    seen = []
    deadline = time.monotonic() + 120
    for text in proc.stdout:
        seen.append(text)
        if "log:" in text or time.monotonic() > deadline:
            break
    time.sleep(3)  # the child is drawing: the skip pass takes minutes at this count
    proc.send_signal(signal.SIGTERM)
    stopping = time.monotonic()
    rest, _ = proc.communicate(timeout=120)
    stop_seconds = time.monotonic() - stopping
    output = "".join(seen) + rest
    # the child's skip pass ends between two kernel calls: before, it drew on until the
    # parent killed it after its 60 s grace (the run took 61 s to stop)
    assert stop_seconds < STOP_PROMPTLY_SECONDS, (stop_seconds, output)
    assert "memory stopped during start-up" in output, output
    assert "skip pass of about" in output, output
    assert "MemoryError" not in output and "Traceback" not in output, output
    assert proc.returncode == 130, output
