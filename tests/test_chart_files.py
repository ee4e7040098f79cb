"""The chart files a run writes, by name: a quick-plan run, a rate sweep and a ``--repeat``
run (issue 35, item 4). The report layer's registry of charts was rebuilt (one table of
every chart, one SVG renderer); a run must still write the same files under the same names,
and ``--update-latest`` must still copy the same ones, so the lists are written out here.

Small runs of the memory engine in-process (a few seconds each), not the benchmark."""

from __future__ import annotations

from pathlib import Path

import pytest

from asyncbench.report import charts, outputs
from asyncbench.result import RunResult

SWEEP = """
[run]
profiles = 1000
engines = ["memory"]
isolate = false

[[phase]]
kind = "insert"

[[phase]]
kind = "read_by_id"
rate = [1000, 2000]
count = 300

[[phase]]
kind = "scan_country_status"
count = 100
"""

QUICK_CHARTS = [
    "execution-time",
    "write-throughput",
    "lookup-throughput",
    "scan-throughput",
    "query-throughput",
    "resource-footprint",
    "cost",
    "latency-percentiles",
    "latency-over-time-insert-profiles",
    "latency-over-time-update-profiles",
]

SWEEP_CHARTS = [
    "execution-time",
    "write-throughput",
    "lookup-throughput",
    "scan-throughput",
    "resource-footprint",
    "cost",
    "latency-percentiles",
    "latency-over-time-insert-profiles",
    "latency-vs-throughput",
]

#: the files ``--update-latest`` copies to ``latest-<slug>.svg``: the fixed charts only
LATEST = [
    "execution-time",
    "write-throughput",
    "lookup-throughput",
    "scan-throughput",
    "query-throughput",
    "mixed-throughput",  # a mixed phase's (its own group)
    "resource-footprint",
    "cost",
]


def _written(out: Path) -> tuple[list[str], list[str]]:
    """(slugs of the chart files in the run's folder, in the order the report links them;
    the same from the files on disk, sorted)."""
    (result,) = sorted(out.glob("profiles-*/asyncbench-*.json"))
    stamp = result.stem.removeprefix("asyncbench-")
    on_disk = sorted(p.name.removeprefix(f"asyncbench-{stamp}-")[: -len(".svg")] for p in result.parent.glob("*.svg"))
    run = RunResult.from_json(result.read_bytes())
    drawn = [path.name for _title, path, _data, _own in outputs.chart_files(run, result.parent, stamp)]
    return [n.removeprefix(f"asyncbench-{stamp}-")[: -len(".svg")] for n in drawn], on_disk


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["benchmarks/quick.toml", "--profiles", "1000", "--engine", "memory", "--no-isolate"], QUICK_CHARTS),
        (["benchmarks/quick.toml", "--profiles", "1000", "--engine", "memory", "--no-isolate", "--repeat", "2"],
         QUICK_CHARTS),
    ],
    ids=["quick", "repeat"],
)  # fmt: skip
def test_a_run_writes_the_same_chart_files(args: list[str], expected: list[str], tmp_path: Path, run_cli) -> None:  # type: ignore[no-untyped-def]
    root = Path(__file__).resolve().parent.parent
    code, _results, output = run_cli(*[str(root / a) if a.endswith(".toml") else a for a in args], charts=True)
    assert code == 0, output
    drawn, on_disk = _written(tmp_path / "out")
    assert drawn == expected
    assert on_disk == sorted(expected)


def test_a_rate_sweep_writes_the_same_chart_files(tmp_path: Path, run_cli) -> None:  # type: ignore[no-untyped-def]
    plan = tmp_path / "sweep.toml"
    plan.write_text(SWEEP)
    code, _results, output = run_cli(str(plan), charts=True)
    assert code == 0, output
    drawn, on_disk = _written(tmp_path / "out")
    assert drawn == SWEEP_CHARTS
    assert on_disk == sorted(SWEEP_CHARTS)


def test_update_latest_copies_the_fixed_charts_only(tmp_path: Path) -> None:
    files = outputs.latest_files(tmp_path, [])
    assert [p.name for p, _own, kind in files if kind == "chart"] == [f"latest-{s}.svg" for s in LATEST]
    assert [c.slug for c in charts.CHARTS if c.latest] == LATEST
