"""A mixed phase is its own group: "mixed" in the console's cost table, the headline, the
result and the charts, never counted among the queries (it was Group.QUERY: the console
said "queries (all)" and the headline "query:" for YCSB's reads and updates)."""

from __future__ import annotations

from pathlib import Path

import orjson
from conftest import ROOT

from asyncbench.cli.main import main


def test_a_mixed_phase_is_labelled_mixed_not_query(tmp_path: Path, run_cli) -> None:
    plan = tmp_path / "a.toml"
    plan.write_text((ROOT / "benchmarks" / "ycsb" / "workloada-smoke.toml").read_text().replace("recordcount = 1000", "recordcount = 300"))
    code, results, output = run_cli(str(plan), "--engine", "memory,sqlite", "--no-isolate", "--yes", charts=True)
    assert code == 0, output
    assert "queries (all)" not in output and "mixed (all)" in output, output
    headline = output.split("== headline")[1]
    assert "\n  mixed: " in headline and "\n  query" not in headline, headline
    (phases,) = {tuple(p["group"] for p in e["phases"]) for e in results[0]["engines"]}
    assert phases == ("write", "mixed")
    charts = {p.name.split("-", 2)[-1] for p in (tmp_path / "out").glob("*/asyncbench-*-*.svg")}
    assert any("mixed-throughput" in c for c in charts) and not any("query-throughput" in c for c in charts), charts


def test_a_result_written_when_a_mixed_phase_was_a_query_still_loads(tmp_path: Path, run_cli) -> None:
    plan = tmp_path / "a.toml"
    plan.write_text((ROOT / "benchmarks" / "ycsb" / "workloada-smoke.toml").read_text().replace("recordcount = 1000", "recordcount = 300"))
    code, _, output = run_cli(str(plan), "--engine", "memory", "--no-isolate", "--yes")
    assert code == 0, output
    (path,) = (tmp_path / "out").glob("*/asyncbench-*.json")
    doc = orjson.loads(path.read_bytes())
    for e in doc["engines"]:
        for p in e["phases"]:
            if p["kind"] == "mixed":
                p["group"] = "query"
    old = tmp_path / "old" / path.name
    old.parent.mkdir()
    old.write_bytes(orjson.dumps(doc))
    assert main(["report", str(old)]) == 0
    assert "mixed" in (old.with_suffix(".md")).read_text()
