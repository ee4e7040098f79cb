"""A scaled-out run (``--processes``/``--cluster``) goes through the one phase sequence
(asyncbench.run.sequence.phase_sequence) the in-process run goes through: every phase it runs has a
cost, each figure measured or named in ``not_measured`` with its reason (never silently
missing), and the figures the coordinator can get (the storage after a write phase, the
logical bytes written and kept) as in one process.

No server: one client process (a Dask ``LocalCluster`` worker) hosts the memory engine,
which ``--processes 1`` would run on the ordinary path; the coordinator is driven directly.
"""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from pathlib import Path

import pytest

from asyncbench.config import load
from asyncbench.measure.memory_sampler import MemorySampler
from asyncbench.result import EngineResult, PhaseResult
from asyncbench.run.observe.observers import ObserverGroup
from asyncbench.run.runner import EngineRun
from asyncbench.run.scale_out.distributed import DistributedEngineRun, Placement
from asyncbench.workload import Action, Group

ROOT = Path(__file__).resolve().parents[1]
PROFILES = 1_000
#: Each cost figure (``not_measured``'s key) and the fields that hold it.
FIGURES = {
    "client_cpu": ("client_cpu_seconds",),
    "engine_cpu": ("engine_cpu_seconds",),
    "server_cpu": ("server_cpu_seconds",),
    "client_io": ("client_read_bytes", "client_write_bytes"),
    "server_io": ("server_read_bytes", "server_write_bytes"),
}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _cfg(tmp_path: Path):
    cfg = load(ROOT / "benchmarks" / "quick.toml")
    return dataclasses.replace(cfg, engines=["memory"], parallelism=[2], profiles=[PROFILES], data=tmp_path / "data")


def _ran(result: EngineResult) -> list[PhaseResult]:
    assert result.ok, result.status_text()
    return [p for p in result.phases if not p.skipped]


def _said(pr: PhaseResult) -> None:
    """Every figure of the phase's cost is there or not measured with a reason."""
    cost = pr.cost
    assert cost is not None, f"{pr.name}: no cost"
    for figure, fields in FIGURES.items():
        measured = all(getattr(cost, f) is not None for f in fields)
        assert measured or cost.not_measured.get(figure), f"{pr.name}: {figure} neither measured nor said why"


@pytest.mark.slow
@pytest.mark.anyio
async def test_a_scaled_out_run_records_the_cost_of_every_phase_it_runs(tmp_path: Path) -> None:
    cfg = _cfg(tmp_path)
    level = cfg.level(PROFILES, 2)
    alone = _ran(
        await EngineRun(
            cfg, level, "memory", cfg.workload_impl.draw_plan(level.counts, cfg.seed), ObserverGroup(), MemorySampler()
        ).run()
    )
    scaled = _ran(await DistributedEngineRun(cfg, level, "memory", ObserverGroup(), Placement(processes=1)).run())
    assert [p.checksum for p in scaled] == [p.checksum for p in alone]  # the same phases, the same data
    assert [p.name for p in scaled if p.cost is not None] == [p.name for p in alone if p.cost is not None]
    for pr in scaled:
        _said(pr)
        assert pr.cost is not None
        if pr.action is Action.OPERATIONS:  # every client process's CPU, summed
            assert pr.cost.client_cpu_seconds is not None and pr.cost.client_cpu_seconds > 0
        if pr.group is Group.WRITE:  # the coordinator's figures: storage and the logical yardstick
            assert pr.cost.storage_bytes is not None or pr.cost.not_measured.get("storage"), pr.name
            assert pr.cost.logical_write_bytes and pr.cost.logical_live_bytes, pr.name
            twin = next(p for p in alone if p.name == pr.name)
            assert twin.cost is not None
            assert (pr.cost.logical_write_bytes, pr.cost.logical_live_bytes) == (
                twin.cost.logical_write_bytes,
                twin.cost.logical_live_bytes,
            )
        if pr.action is Action.SETTLE:
            assert pr.cost.client_cpu_seconds is not None  # client process 0's, which ran it
            assert pr.cost.logical_live_bytes


def test_the_in_process_runner_imports_no_scale_out_code() -> None:
    """The command line picks the scale-out (asyncbench.run.sequence.engine_runs.ScaleOut); the
    runner and the phase sequence name neither the coordinator nor the client process."""
    code = (
        "import sys, asyncbench.run.runner, asyncbench.run.sequence.phase_sequence; "
        "print(sorted(m for m in sys.modules if m in ('asyncbench.run.scale_out.distributed', 'asyncbench.run.scale_out.client_process')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
