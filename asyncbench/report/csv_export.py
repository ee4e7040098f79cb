"""``--csv``: one row per engine x phase, for spreadsheets.

Numbers are plain (ops/s, nanoseconds); the throughput columns summarise the measured
repeats, the latency columns every measured repeat's operations together. The table is
one list of :class:`~asyncbench.report.columns.Column`, as the Markdown tables are.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from asyncbench.measure.aggregate import EngineRuns, group_runs
from asyncbench.measure.latency import LatencySummary
from asyncbench.measure.stats import Summary
from asyncbench.report.columns import Column
from asyncbench.report.columns import csv_text as render_csv
from asyncbench.result import PhaseResult, PlanPhase, RunResult, write_atomic
from asyncbench.workloads.profile_store.phases import Action

__all__ = ["COLUMNS", "TABLE", "csv_text", "write_csv"]


@dataclass
class _Row:
    runs: EngineRuns
    index: int
    spec: PlanPhase
    phase: PhaseResult  # the first measured repeat's
    tp: Summary | None
    lat: LatencySummary | None


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 3)


def _tp(get: str) -> Column[_Row]:
    return Column(f"ops_per_s_{get}", "r", lambda r: _round(getattr(r.tp, get)) if r.tp else None)


def _lat(key: str) -> Column[_Row]:
    return Column(f"latency_{key}_ns", "r", lambda r: r.lat[key] if r.lat else None)


TABLE: list[Column[_Row]] = [
    Column("engine", "l", lambda r: r.runs.engine),
    Column("phase", "l", lambda r: r.spec.name),
    Column("kind", "l", lambda r: r.phase.kind.kind),
    Column("stream", "l", lambda r: r.phase.stream),
    Column("ops", "r", lambda r: r.phase.ops),
    Column("repeats", "r", lambda r: len(r.runs.phases(r.index))),
    _tp("median"),
    _tp("min"),
    _tp("max"),
    Column("spread_pct", "r", lambda r: _round(r.tp.spread_pct) if r.tp else None),
    Column("ci95_low", "r", lambda r: _round(r.tp.ci_low) if r.tp else None),
    Column("ci95_high", "r", lambda r: _round(r.tp.ci_high) if r.tp else None),
    _lat("p50"),
    _lat("p99"),
    _lat("p99_9"),
    _lat("max"),
    Column("checksum", "l", lambda r: r.phase.checksum),
]
COLUMNS = tuple(c.name for c in TABLE)


def _rows(run: RunResult) -> list[_Row]:
    rows = []
    for g in group_runs(run):
        for index, spec in enumerate(run.phases):
            p = g.first.phase_at(index)
            if p is None or p.action not in (Action.OPERATIONS, Action.VERIFY):
                continue
            h = g.latency(index)
            rows.append(_Row(g, index, spec, p, g.throughput(index), h.summary() if h is not None else None))
    return rows


def csv_text(run: RunResult) -> str:
    return render_csv(TABLE, _rows(run))


def write_csv(run: RunResult, path: Path) -> Path:
    write_atomic(path, csv_text(run).encode())
    return path
