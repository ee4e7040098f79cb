"""Issue 52 item 3, last clause: the estimate's memory figure. A legal request (YCSB
records of 100 kB on the memory engine, or many workers each building a batch of them)
ran until MemoryError or the kernel's kill; now the estimate prints each engine's memory
at its peak against this machine's, warns when it is over the memory available, and a
plan whose records alone cannot fit the machine's memory and swap is refused before
anything is created (exit 2, the key named). The machine is made small here (psutil's
figures patched) so the plans stay small."""

from __future__ import annotations

from collections import namedtuple
from pathlib import Path

import psutil
import pytest
from conftest import ROOT

from asyncbench.cli.main import main
from asyncbench.config import load
from asyncbench.run.checks.memory_need import FIXED_BYTES, Machine, check_memory, memory_lines, memory_needs

WORKLOADC = ROOT / "benchmarks" / "ycsb" / "workloadc.toml"
MIB = 1024 * 1024
Virtual = namedtuple("Virtual", "total available percent used free")
Swap = namedtuple("Swap", "total used free percent sin sout")


@pytest.fixture
def small_machine(monkeypatch: pytest.MonkeyPatch) -> None:
    """This machine, as psutil reports it, has 128 MiB of memory (100 MiB available), no swap."""
    monkeypatch.setattr(psutil, "virtual_memory", lambda: Virtual(128 * MIB, 100 * MIB, 0.0, 0, 0))
    monkeypatch.setattr(psutil, "swap_memory", lambda: Swap(0, 0, 0, 0.0, 0, 0))


def _run(tmp_path: Path, *flags: str) -> int:
    out, data = tmp_path / "out", tmp_path / "data"
    args = [str(WORKLOADC), "-p", "fieldlength=10000", *flags, "--output", str(out), "--data", str(data), "--yes"]
    return main([*args, "--no-progress"])


def test_a_store_held_in_the_process_that_cannot_fit_is_refused_naming_the_key(
    tmp_path: Path, capfd: pytest.CaptureFixture[str], small_machine: None
) -> None:
    # 2_000 records of 100 kB on the memory engine: 200 MB of records, over the 128 MiB
    code = _run(tmp_path, "--engine", "memory", "--profiles", "2000")
    err = capfd.readouterr().err
    assert code == 2, err
    assert "command line: --profiles: engine 'memory' keeps every record in this process's memory" in err, err
    assert "2_000 records of 97.7 KB each" in err and "more than this machine's 128.0 MB of memory" in err, err
    assert not (tmp_path / "out").exists() and not (tmp_path / "data").exists()


def test_batches_in_flight_that_cannot_fit_are_refused_naming_the_parallelism(
    tmp_path: Path, capfd: pytest.CaptureFixture[str], small_machine: None
) -> None:
    # an engine on disk, 4 workers each building a batch of 1_000 records of 100 kB: 400 MB
    code = _run(tmp_path, "--engine", "lsm", "--profiles", "4000", "--parallelism", "4")
    err = capfd.readouterr().err
    assert code == 2, err
    assert "command line: --parallelism: each worker builds its batch of 1_000 records" in err, err
    assert not (tmp_path / "out").exists() and not (tmp_path / "data").exists()


def test_a_plan_that_fits_is_not_refused_and_its_figure_is_the_model(tmp_path: Path) -> None:
    plan = tmp_path / "plan.toml"
    plan.write_text(WORKLOADC.read_text().replace("fieldlength = 100", "fieldlength = 1000"))
    cfg = load(str(plan))
    cfg.engines, cfg.profiles = ["memory", "lsm"], [10_000]
    big = Machine(total=64 * 2**30, available=32 * 2**30, swap=0)
    check_memory(cfg, machine=big)
    memory, lsm = memory_needs(cfg)
    record = 2 + 10 * (4 + 1000) + 33  # the canonical encoding as one bytes object
    assert memory.floor == 1_000 * record + 10_000 * record  # a batch in flight, and every record
    assert memory.about == FIXED_BYTES + 1_000 * record + 10_000 * (record + 400)
    assert lsm.floor == 1_000 * record and lsm.about == FIXED_BYTES + 1_000 * record
    assert not any("warning" in line for line in memory_lines(cfg, big))


def test_the_estimate_warns_when_the_figure_is_over_the_memory_available(tmp_path: Path) -> None:
    plan = tmp_path / "plan.toml"
    plan.write_text(WORKLOADC.read_text().replace("fieldlength = 100", "fieldlength = 10000"))
    cfg = load(str(plan))
    cfg.engines, cfg.profiles = ["memory"], [10_000]  # 1 GB of records, a batch, the process
    tight = Machine(total=2 * 2**30, available=512 * MIB, swap=0)
    check_memory(cfg, machine=tight)  # the records fit the machine: not refused
    text = " ".join(" ".join(memory_lines(cfg, tight)).split())
    assert "memory about 1.1 GB" in text and "512.0 MB available of 2.0 GB" in text, text
    assert "warning: memory needs about 1.1 GB at 10_000 records, more than the 512.0 MB available now" in text, text


def test_a_reused_store_builds_no_batches_of_records(tmp_path: Path) -> None:
    cfg = load(str(ROOT / "benchmarks" / "quick.toml"))
    cfg.engines = ["lsm"]
    (built,) = memory_needs(cfg)
    cfg.reuse_data = True
    (reused,) = memory_needs(cfg)
    assert built.floor > 0 and reused.floor == 0 and reused.about == FIXED_BYTES
