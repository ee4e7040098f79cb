"""``--csv``: one row per engine x phase, for spreadsheets.

Numbers are plain (ops/s, nanoseconds); the throughput columns summarise the measured
repeats, the latency columns every measured repeat's operations together. The table is
one list of :class:`~asyncbench.report.columns.Column`, as the Markdown tables are.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from asyncbench.measure.aggregate import EngineRuns, group_runs
from asyncbench.measure.stats import Summary
from asyncbench.report.columns import Column
from asyncbench.report.columns import csv_text as render_csv
from asyncbench.report.mix import csv_kinds
from asyncbench.result import LatencyStats, PhaseCost, PhaseResult, PlanPhase, RunResult, write_atomic
from asyncbench.workload import Action

__all__ = ["COLUMNS", "SERIES_COLUMNS", "TABLE", "csv_text", "series_csv_text", "write_csv", "write_series_csv"]


@dataclass
class _Row:
    runs: EngineRuns
    index: int
    spec: PlanPhase
    phase: PhaseResult  # the first measured repeat's
    tp: Summary | None
    lat: LatencyStats | None
    op_kind: str | None = None  # a mixed phase's per-kind row (report/mix.py): that kind alone
    op_kind_ops: int | None = None


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 3)


def _not_measured(cost: PhaseCost | None) -> str | None:
    if cost is None:
        return None
    why = dict(cost.not_measured)
    if cost.writes_off_disk:  # an amplification of data not on disk yet: empty, and why
        why["write_amplification"] = "not on disk yet (the engine still held the data in memory)"
    if cost.storage_off_disk:
        why["space_amplification"] = "not on disk yet (the engine still held the data in memory)"
    return "; ".join(f"{figure}: {text}" for figure, text in why.items()) or None


def _series_cost(cost: PhaseCost, row: list[float]) -> tuple[float | int | None, ...]:
    """A second's cost cells: empty for a figure the phase did not measure (the JSON
    series holds 0 there), never a 0 that reads as measured."""
    return (
        round(row[1], 6) if cost.client_cpu_seconds is not None else None,
        round(row[2], 6) if cost.engine_cpu_seconds is not None else None,
        round(row[3], 6) if cost.server_cpu_seconds is not None else None,
        int(row[4]) if cost.read_bytes is not None else None,
        int(row[5]) if cost.write_bytes is not None else None,
    )


def _cost_us(r: _Row, who: str) -> float | None:
    c = r.phase.cost
    return None if c is None else _round(c.per_op_us(getattr(c, f"{who}_cpu_seconds"), r.phase.ops))


def _cost_cpu(who: str) -> Column[_Row]:
    return Column(f"{who}_cpu_us_per_op", "r", lambda r: _cost_us(r, who))


def _tp(get: str) -> Column[_Row]:
    return Column(f"ops_per_s_{get}", "r", lambda r: _round(getattr(r.tp, get)) if r.tp else None)


def _hot(key: str) -> Column[_Row]:
    def share(r: _Row) -> float | None:
        mix = r.phase.mix
        return None if mix is None or r.op_kind is not None or key not in mix.hot_shares else round(mix.hot_shares[key], 6)

    return Column(f"hot_{key.rstrip('%').replace('.', '_')}pct_keys_ops_share", "r", share)


def _lat(key: str) -> Column[_Row]:
    return Column(f"latency_{key}_ns", "r", lambda r: getattr(r.lat, key) if r.lat else None)


TABLE: list[Column[_Row]] = [
    Column("engine", "l", lambda r: r.runs.engine),
    Column("phase", "l", lambda r: r.spec.name),
    Column("kind", "l", lambda r: r.phase.kind.kind),
    Column("stream", "l", lambda r: r.phase.stream),
    # a mixed phase has a row per operation kind after its own: its ops and latency
    Column("op_kind", "l", lambda r: r.op_kind),
    Column("ops", "r", lambda r: r.phase.ops if r.op_kind is None else r.op_kind_ops),
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
    # what the phase cost (PhaseResult.cost; empty: not measured, or an older result)
    *(_cost_cpu(who) for who in ("client", "engine", "server")),
    Column("device_read_bytes", "r", lambda r: r.phase.cost.read_bytes if r.phase.cost else None),
    Column("device_write_bytes", "r", lambda r: r.phase.cost.write_bytes if r.phase.cost else None),
    Column("logical_write_bytes", "r", lambda r: r.phase.cost.logical_write_bytes if r.phase.cost else None),
    Column("write_amplification", "r", lambda r: _round(r.phase.cost.write_amplification) if r.phase.cost else None),
    Column("space_amplification", "r", lambda r: _round(r.phase.cost.space_amplification) if r.phase.cost else None),
    Column("stall_seconds", "r", lambda r: r.phase.cost.stall_seconds if r.phase.cost else None),
    # why a cost cell is empty ("figure: why; ..."), as the report says below its table
    Column("cost_not_measured", "l", lambda r: _not_measured(r.phase.cost)),
    # a capacity search's phase (PhaseResult.capacity; empty: not searched)
    Column("capacity_ops_per_s", "r", lambda r: _round(r.phase.capacity.capacity) if r.phase.capacity else None),
    Column("capacity_ci95_low", "r", lambda r: _round(r.phase.capacity.ci_low) if r.phase.capacity else None),
    Column("capacity_ci95_high", "r", lambda r: _round(r.phase.capacity.ci_high) if r.phase.capacity else None),
    Column("capacity_at_ceiling", "l", lambda r: r.phase.capacity.at_ceiling if r.phase.capacity else None),
    Column("capacity_limited_by", "l", lambda r: r.phase.capacity.limited_by if r.phase.capacity else None),
    Column(
        "capacity_bounds_ns",
        "l",
        lambda r: " ".join(f"{k}={v}" for k, v in r.phase.capacity.slo_ns.items()) if r.phase.capacity else None,
    ),
    # the skew a mixed phase ran: the share of its operations on its hottest keys
    *(_hot(key) for key in ("0.1%", "1%", "10%")),
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
            for name, k in csv_kinds(p):  # the first measured repeat's, as the cost columns
                rows.append(_Row(g, index, spec, p, None, k.latency, name, k.ops))
    return rows


def csv_text(run: RunResult) -> str:
    return render_csv(TABLE, _rows(run))


def write_csv(run: RunResult, path: Path) -> Path:
    write_atomic(path, csv_text(run).encode())
    return path


#: ``--csv``'s second file, one row per engine x operation phase x second.
SERIES_COLUMNS = (
    "engine",
    "phase",
    "second",
    "ops",
    "ops_per_s",
    "p50_ns",
    "p99_ns",
    "max_ns",
    "target_rate",
    "response_p50_ns",
    "response_p99_ns",
    "response_max_ns",
    # the phase's cost in that second (PhaseResult.cost.series): CPU seconds and device bytes
    "client_cpu_s",
    "engine_cpu_s",
    "server_cpu_s",
    "device_read_bytes",
    "device_write_bytes",
)


def series_csv_text(run: RunResult) -> str:
    """Each operation phase second by second (the first measured repeat of each engine):
    operations ending in that second, throughput, exact p50/p99/max service time and, under
    a rate, the target and the response time's. The last second of a phase may be partial:
    its throughput is its operations over the part of the second the phase lasted."""
    import csv
    import io

    buf = io.StringIO()
    out = csv.writer(buf, lineterminator="\n")
    out.writerow(SERIES_COLUMNS)
    for g in group_runs(run):
        for p in g.first.phases:
            if not p.time_series:
                continue
            ol = p.open_loop
            response = {row[0]: row for row in (ol.response_series or [])} if ol else {}
            last = len(p.time_series)
            cost = p.cost.series if p.cost is not None and p.cost.series else []
            for t_s, ops, p50, p99, mx in p.time_series:
                c = cost[int(t_s) - 1] if 0 < t_s <= len(cost) else None
                length = p.seconds - (last - 1) if t_s == last and p.seconds > last - 1 else 1.0
                r = response.get(t_s)
                out.writerow(
                    [
                        g.engine,
                        p.name,
                        int(t_s),
                        int(ops),
                        round(ops / length, 3) if length > 0 else None,
                        int(p50),
                        int(p99),
                        int(mx),
                        ol.rate if ol else None,
                        int(r[2]) if r else None,
                        int(r[3]) if r else None,
                        int(r[4]) if r else None,
                        *(_series_cost(p.cost, c) if c and p.cost is not None else (None,) * 5),
                    ]
                )
    return buf.getvalue()


def write_series_csv(run: RunResult, path: Path) -> Path:
    write_atomic(path, series_csv_text(run).encode())
    return path
