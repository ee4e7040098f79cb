"""What the benchmark asks of one engine's run, wherever it runs, and of a scaled-out
placement: the interface :class:`~asyncbench.run.runner.Benchmark` drives.

Three runs exist: in this process (:class:`~asyncbench.run.runner.EngineRun`), in an
isolated child process (:class:`~asyncbench.run.isolated.isolation.ChildEngineRun`) and across
client processes (:class:`~asyncbench.run.scale_out.distributed.DistributedEngineRun`). The
benchmark needs of each only :class:`EngineRunner`; which engines run scaled out is a
:class:`ScaleOut` the command line chooses and hands in, so the runner imports no
scale-out code (Dask's coordinator stays out of every plain run).
"""

from __future__ import annotations

from typing import Protocol

from asyncbench.config import BenchConfig, Level
from asyncbench.result import EngineResult
from asyncbench.run.observe.observers import Observer

__all__ = ["EngineRunner", "ScaleOut"]


class EngineRunner(Protocol):
    """One engine at one level: ``run`` returns its result; ``result`` holds what completed
    when the run stops early (an interrupt, a fault), for the partial report."""

    result: EngineResult

    async def run(self) -> EngineResult: ...


class ScaleOut(Protocol):
    """Where a scaled-out run (``--processes``/``--cluster``) runs an engine."""

    def runs(self, name: str) -> bool:
        """Whether engine ``name`` runs across the client processes (else on the ordinary path)."""
        ...

    def engine_run(self, cfg: BenchConfig, level: Level, name: str, observer: Observer) -> EngineRunner:
        """The run of ``name`` across the client processes (``runs(name)`` is true)."""
        ...

    def ordinary_note(self, name: str) -> str:
        """The result's note of an engine the scaled-out run ran on the ordinary path."""
        ...
