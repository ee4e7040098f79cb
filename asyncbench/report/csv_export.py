"""``--csv``: one row per engine x phase, for spreadsheets.

Numbers are plain (ops/s, nanoseconds); the throughput columns summarise the measured
repeats, the latency columns every measured repeat's operations together.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path

from asyncbench.measure.aggregate import group_runs
from asyncbench.result import RunResult, write_atomic

__all__ = ["COLUMNS", "csv_text", "write_csv"]

COLUMNS = (
    "engine",
    "phase",
    "kind",
    "stream",
    "ops",
    "repeats",
    "ops_per_s_median",
    "ops_per_s_min",
    "ops_per_s_max",
    "spread_pct",
    "ci95_low",
    "ci95_high",
    "latency_p50_ns",
    "latency_p99_ns",
    "latency_p99_9_ns",
    "latency_max_ns",
    "checksum",
)


def csv_text(run: RunResult) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(COLUMNS)
    for g in group_runs(run):
        for index, spec in enumerate(run.phases):
            p = g.first.phase_at(index)
            if p is None or p.action not in ("ops", "verify"):
                continue
            tp = g.throughput(index)
            h = g.latency(index)
            lat = h.summary() if h is not None else None
            w.writerow(
                [
                    g.engine,
                    spec["name"],
                    p.kind,
                    p.stream or "",
                    p.ops,
                    len(g.phases(index)),
                    *((round(tp.median, 3), round(tp.min, 3), round(tp.max, 3)) if tp else ("", "", "")),
                    "" if tp is None or tp.spread_pct is None else round(tp.spread_pct, 3),
                    "" if tp is None or tp.ci_low is None else round(tp.ci_low, 3),
                    "" if tp is None or tp.ci_high is None else round(tp.ci_high, 3),
                    *((lat["p50"], lat["p99"], lat["p99_9"], lat["max"]) if lat else ("", "", "", "")),
                    p.checksum or "",
                ]
            )
    return buf.getvalue()


def write_csv(run: RunResult, path: Path) -> Path:
    write_atomic(path, csv_text(run).encode())
    return path
