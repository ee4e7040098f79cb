"""A capacity search with ``--processes K``: the capacity of a server driven by K client
processes. Every probe's checksum is that of the same probe run in one process (the same
slice of the stream, folded over the same P workers)."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from conftest import ROOT, postgres_expected, run_asyncbench

needs_postgres = pytest.mark.skipif(
    not postgres_expected(),
    reason='no PostgreSQL server: set PGHOST/PGPORT/... (eval "$(scripts/postgres-server start)")',
)

PLAN = (
    '[run]\nprofiles = 1500\nengines = ["postgres"]\nparallelism = 2\n'
    '[[phase]]\nkind = "insert"\n[[phase]]\nkind = "read_by_id"\ncapacity = true\n[[phase]]\nkind = "verify"\n'
    '[slo]\np90 = "50ms"\n'
)


def _probes(tmp: Path, *flags: str) -> dict[int, str]:
    plan = tmp / "plan.toml"
    tmp.mkdir()
    plan.write_text(PLAN)
    r = run_asyncbench(tmp, str(plan), "--capacity-range", "200,1600", *flags, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "    capacity " in r.stdout and "capacity scorecard" in r.stdout
    (result,) = sorted((tmp / "out").glob("profiles-*/asyncbench-*.json"))
    cap = orjson.loads(result.read_bytes())["engines"][0]["phases"][1]["capacity"]
    assert cap["capacity"] is not None or cap["limited_by"], cap
    assert 1 <= len(cap["probes"]) <= cap["probe_bound"]
    assert cap["store_warmup_ops"] == 1500  # the store warmed by the stream, every process its share
    return {p["number"]: p["checksum"] for p in cap["probes"]}


@pytest.mark.slow
@needs_postgres
def test_capacity_with_client_processes_has_the_checksums_of_one_process(tmp_path: Path) -> None:
    scaled = _probes(tmp_path / "scaled", "--processes", "2")
    alone = _probes(tmp_path / "alone")
    common = sorted(set(scaled) & set(alone))
    assert common, (scaled, alone)
    assert all(scaled[k] == alone[k] for k in common), (scaled, alone)


MIX = (ROOT / "benchmarks" / "ycsb" / "workloadb-smoke.toml").read_text().replace("recordcount = 1000", "recordcount = 2000").replace(
    "operations = 1000", "operations = 14000"
).replace('kind = "mixed"', 'kind = "mixed"\ncapacity = true').replace(
    "[run]\n", '[run]\nengines = ["postgres"]\nparallelism = 4\n'
) + '\n[slo]\np90 = "50ms"\n'


def _mix(tmp: Path, *flags: str) -> tuple[dict[int, str], str]:
    tmp.mkdir()
    plan = tmp / "mix.toml"
    plan.write_text(MIX)
    r = run_asyncbench(tmp, str(plan), "--capacity-range", "1k,4k", *flags, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    (result,) = sorted((tmp / "out").glob("records-*/asyncbench-*.json"))
    phase = orjson.loads(result.read_bytes())["engines"][0]["phases"][1]
    assert phase["ops"] == 14000 and 1 <= len(phase["capacity"]["probes"]) <= phase["capacity"]["probe_bound"]
    assert sum(k["ops"] for k in phase["mix"]["kinds"].values()) == 14000  # its whole stream's kinds
    return {p["number"]: p["checksum"] for p in phase["capacity"]["probes"]}, phase["checksum"]


@pytest.mark.slow
@needs_postgres
def test_a_searched_mix_with_client_processes_has_the_checksums_of_one_process(tmp_path: Path) -> None:
    """YCSB B's 95/5 mix searched at P4 on PostgreSQL, in two client processes and in one:
    the key-owner split keeps each probe exact, and the phase (probes, then the rest of the
    stream) has one checksum."""
    scaled, scaled_phase = _mix(tmp_path / "scaled", "--processes", "2")
    alone, alone_phase = _mix(tmp_path / "alone")
    common = sorted(set(scaled) & set(alone))
    assert common and all(scaled[k] == alone[k] for k in common), (scaled, alone)
    assert scaled_phase == alone_phase


@pytest.mark.slow
@needs_postgres
def test_a_stopped_search_with_client_processes_keeps_its_probes(tmp_path: Path) -> None:
    """Issue 51, finding 7, scaled out: a search stopped by the run's timeout (the same
    cancellation as Ctrl-C) leaves its phase in the partial result with the probes it
    completed, marked interrupted."""
    plan = tmp_path / "plan.toml"
    plan.write_text(PLAN)
    flags = ["--capacity-range", "300,400", "--capacity-repeats", "50", "--timeout-seconds", "25"]
    r = run_asyncbench(tmp_path, str(plan), "--processes", "2", *flags, timeout=600)
    assert r.returncode == 1, r.stdout + r.stderr
    (result,) = sorted((tmp_path / "out").glob("profiles-*/asyncbench-*.json"))
    engine = orjson.loads(result.read_bytes())["engines"][0]
    assert engine["status"] == "timed_out", engine["status"]
    phase = engine["phases"][-1]
    assert phase["name"] == "read by user id", [p["name"] for p in engine["phases"]]
    cap = phase["capacity"]
    assert cap["interrupted"] and cap["capacity"] is None and len(cap["probes"]) >= 1, cap
    assert "    probe 0 · " in r.stdout and "interrupted after" in r.stdout
