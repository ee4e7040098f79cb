"""A capacity search of a mixed phase (YCSB's 95/5 read/update workload B): its probes'
checksums are exact on every engine, the phase applies its whole stream once in order (the
probes' slices, then the rest), so its own checksum and every later phase's are those of
the unsearched run whatever the engines' probe counts; a stream too short for the search is
refused before anything runs; the probes split the stream by key owner in every client
process; and P workers of a fixed service time have capacity P / service time."""

from __future__ import annotations

import math
import time
from pathlib import Path
from typing import Any

import anyio
from conftest import ROOT
from engines_for_tests import FixedServiceWorker

from asyncbench.run.capacity.capacity import local_probe, probe_bound, search
from asyncbench.run.scale_out.capacity_remote import run_probe_part
from asyncbench.slo import parse_slo_text
from asyncbench.workloads import workload
from asyncbench.workloads.ycsb import settings as ycsb_settings
from asyncbench.workloads.ycsb.phases import PHASES, Counts, MixedOps, Plan, phase_items

B = ROOT / "benchmarks" / "ycsb" / "workloadb-smoke.toml"


def _plan(tmp_path: Path, ops: int, searched: bool = True, then_mixed: bool = True, records: int = 300) -> Path:
    """workload B at ``records`` records, its mixed phase searched (p90, rates 1k..4k: up to
    6 probes of 1_100 operations), then the same mix again, unsearched, on what it left."""
    text = B.read_text().replace("recordcount = 1000", f"recordcount = {records}")
    text = text.replace("operations = 1000", f"operations = {ops}")
    if searched:
        text = text.replace('kind = "mixed"', 'kind = "mixed"\ncapacity = true')
        text += '\n[slo]\np90 = "50ms"\n'
    if then_mixed:
        mixed = text[text.index('[[phase]]\nkind = "mixed"') :].split("\n[slo]")[0]
        text += "\n" + mixed.replace("capacity = true\n", "").replace('kind = "mixed"', 'kind = "mixed"\nname = "mixed again"')
    path = tmp_path / ("searched.toml" if searched else "plain.toml")
    path.write_text(text)
    return path


def _unsearched(tmp_path: Path, run_cli: Any, ops: int) -> dict[str, dict]:
    """The phases of the same plan run unsearched on the memory engine, by name."""
    plain_dir = tmp_path / "plain"
    plain_dir.mkdir()
    code, plain, output = run_cli(str(_plan(plain_dir, ops, searched=False)), "--engine", "memory", "--parallelism", "4", "--no-isolate", "--yes")
    assert code == 0, output
    return {p["name"]: p for p in plain[-1]["engines"][0]["phases"]}


def _phases(results: list[dict]) -> dict[tuple[str, str], dict]:
    return {(e["engine"], p["name"]): p for r in results for e in r["engines"] for p in e["phases"]}


def test_a_searched_mix_has_exact_probe_checksums_and_leaves_the_store_as_the_unsearched_phase(
    tmp_path: Path, run_cli
) -> None:
    engines = "memory,lsm"
    code, results, output = run_cli(
        str(_plan(tmp_path, 14_000)), "--engine", engines, "--parallelism", "4", "--no-isolate", "--yes",
        "--capacity-range", "1k,4k",
    )  # fmt: skip
    assert code == 0, output
    searched = _phases(results)
    caps = {e: searched[(e, "mixed")]["capacity"] for e in engines.split(",")}
    for cap in caps.values():
        assert 1 <= len(cap["probes"]) <= cap["probe_bound"] == 12
    by_number: dict[int, set[str]] = {}
    for cap in caps.values():
        for p in cap["probes"]:
            by_number.setdefault(p["number"], set()).add(p["checksum"])
    assert by_number and all(len(v) == 1 for v in by_number.values()), by_number
    # the same run unsearched: the searched phase applied every operation once, in order
    unsearched = _unsearched(tmp_path, run_cli, 14_000)
    for e in engines.split(","):
        assert searched[(e, "mixed")]["ops"] == 14_000
        assert searched[(e, "mixed")]["capacity"]["store_warmup_ops"] == 0  # a writing phase: no warm-up pass
        assert searched[(e, "mixed")]["checksum"] == unsearched["mixed"]["checksum"], e
        assert searched[(e, "mixed again")]["checksum"] == unsearched["mixed again"]["checksum"], e


def test_a_least_probe_duration_keeps_a_searched_mix_exact_slice_by_slice(tmp_path: Path, run_cli) -> None:
    """capacity_probe_seconds groups slices into probes by rate, so two engines group them
    differently: each slice's checksum still agrees by number, and the searched phase still
    applies its whole stream once, in order (its checksum and the store are the unsearched
    phase's). The stream must hold the slices: 22 of 1_100 here (1k..4k, 0.5 s)."""
    from asyncbench.run.capacity.capacity import slice_bound

    assert slice_bound(2000.0, 1000.0, 4000.0, 0.5, 1100) == 22
    engines = "memory,lsm"
    code, results, output = run_cli(
        str(_plan(tmp_path, 25_000)), "--engine", engines, "--parallelism", "4", "--no-isolate", "--yes",
        "--capacity-range", "1k,4k", "--capacity-probe-seconds", "0.5",
    )  # fmt: skip
    assert code == 0, output
    searched = _phases(results)
    by_slice: dict[int, set[str]] = {}
    for e in engines.split(","):
        cap = searched[(e, "mixed")]["capacity"]
        assert cap["probe_seconds"] == 0.5
        at = 0
        for p in cap["probes"]:
            assert p["number"] == at and p["slices"] == max(1, math.ceil(0.5 * p["rate"] / 1100))
            for i, cs in enumerate([p["checksum"], *p["next_checksums"]]):
                by_slice.setdefault(at + i, set()).add(cs)
            at += p["slices"]
    assert any(len(v) for v in by_slice.values()) and all(len(v) == 1 for v in by_slice.values()), by_slice
    unsearched = _unsearched(tmp_path, run_cli, 25_000)
    for e in engines.split(","):
        assert searched[(e, "mixed")]["checksum"] == unsearched["mixed"]["checksum"], e
        assert searched[(e, "mixed again")]["checksum"] == unsearched["mixed again"]["checksum"], e
    # too short a stream for these slices is refused before the run, saying why
    short = tmp_path / "short"
    short.mkdir()
    code, _, output = run_cli(str(_plan(short, 14_000, then_mixed=False)), "--engine", "memory", "--yes",
                              "--capacity-range", "1k,4k", "--capacity-probe-seconds", "0.5")  # fmt: skip
    assert code == 2 and "24_200" in output and "capacity_probe_seconds" in output, output


def test_a_mix_too_short_for_its_search_is_refused_nothing_created(tmp_path: Path, run_cli) -> None:
    plan = _plan(tmp_path, 1000, then_mixed=False)
    code, results, output = run_cli(str(plan), "--engine", "memory", "--yes", "--capacity-range", "1k,4k")
    assert code == 2 and not results, output
    assert f"{plan}: phase[1].operations:" in output, output
    assert "13_200" in output and "1_000" in output, output
    assert not (tmp_path / "out").exists() and not (tmp_path / "data").exists()
    # --capacity-repeats multiplies what the search needs
    code, _, output = run_cli(str(_plan(tmp_path, 14_000, then_mixed=False)), "--engine", "memory", "--yes",
                              "--capacity-range", "1k,4k", "--capacity-repeats", "2")  # fmt: skip
    assert code == 2 and "26_400" in output, output


def _mixed_items(records: int, operations: int, distribution: str = "zipfian", seed: int = 7) -> MixedOps:
    doc: dict[str, Any] = {"recordcount": records, "fieldcount": 2, "fieldlength": 8, "insertorder": "hashed", "zeropadding": 1}
    settings = ycsb_settings.section(doc)
    params = ycsb_settings.mixed_params(
        {"operations": operations, "readproportion": 0.95, "updateproportion": 0.05, "requestdistribution": distribution},
        settings,
    )
    counts = Counts(records, settings["fieldcount"], settings["fieldlength"], 1, settings["zeropadding"])
    items = phase_items(PHASES["mixed"], Plan(counts, seed), params)
    assert isinstance(items, MixedOps)
    return items


class _KeyRecorder:
    """A worker's usertable that records the keys of the operations it runs."""

    def __init__(self) -> None:
        self.keys: list[int] = []

    def usertable(self) -> _KeyRecorder:
        return self

    async def run(self, ops: Any, marks: list[int]) -> list[int]:
        rows = ops.rows()
        self.keys += [r[2] for r in rows]  # (position, kind, key, ...)
        marks += [time.perf_counter_ns()] * (len(rows) + 1)  # the batch's start, then one per operation
        return [0] * len(rows)


def test_a_client_process_runs_its_probe_share_by_key_owner() -> None:
    """With --processes, each client process runs its workers' shares of a probe: a mixed
    phase's by key owner (key k -> worker k mod P), as in one process, never contiguous
    slices (two workers would then write one key in a timing-dependent order)."""
    items = _mixed_items(200, 4000)
    workers = 4
    stores = {w: _KeyRecorder() for w in (1, 3)}  # this process hosts workers 1 and 3 of 4
    part = anyio.run(
        run_probe_part, 1, PHASES["mixed"], items, stores, 0, workers, 50, "uniform", 1, 1, 0, 1e6, 1000, time.time(), workload("ycsb"),
    )  # fmt: skip
    for w, store in stores.items():
        assert store.keys and all(k % workers == w for k in store.keys), (w, store.keys[:20])
    assert set(part.checksums) == {1, 3}


def test_fixed_service_time_mix_capacity_is_workers_over_service_time() -> None:
    """Done when: the 95/5 mix on P = 4 workers of a fixed service time has capacity
    P / service time within 10 %, in no more probes than the bound. Each worker runs the
    operations on the keys it owns, so the busiest worker's share sets the capacity: with
    uniform keys it is within a few % of 1 / P."""
    workers = 4
    slo = parse_slo_text("p90=100ms")
    items = _mixed_items(50_000, 20_000, "uniform")
    shares = items.by_residue(workers)
    busiest = max(len(s) for s in shares) / len(items)
    expected = 1 / (busiest * FixedServiceWorker.SERVICE)  # the busiest worker saturates first
    stores = [FixedServiceWorker() for _ in range(workers)]
    probe = local_probe(PHASES["mixed"], items, stores, 0, 100, slo, wl=workload("ycsb"))
    start, low, high = 250.0, 10.0, 8000.0
    found = anyio.run(search, probe, slo, start, low, high)
    assert found.capacity is not None
    assert abs(found.capacity - expected) <= 0.1 * expected, (expected, [(p.rate, p.achieved, p.limit) for p in found.probes])
    assert abs(expected - workers / FixedServiceWorker.SERVICE) <= 0.05 * workers / FixedServiceWorker.SERVICE
    assert len(found.probes) <= probe_bound(start, low, high)


def test_the_shipped_mix_plan_searches_a_95_5_mix_under_p99_1ms(tmp_path: Path, run_cli) -> None:
    """benchmarks/capacity-mix.toml: YCSB B's 95/5 read/update mix over 200_000 records at
    P4, searched under p99 <= 1 ms; its stream holds every probe the search may run, and one
    repeat more than it holds is refused before anything runs."""
    from asyncbench.config import load, slo_for
    from asyncbench.run.capacity.capacity import needed_operations
    from asyncbench.run.checks.preflight import check_capacity_stream
    from asyncbench.slo import make_slo

    plan = ROOT / "benchmarks" / "capacity-mix.toml"
    cfg = load(plan)
    (mixed,) = [s for s in cfg.phases if s.capacity]
    params = dict(mixed.params)
    assert (params["readproportion"], params["updateproportion"]) == (0.95, 0.05)
    assert cfg.profiles == [200_000] and cfg.parallelism == [4] and make_slo(slo_for(cfg, "mixed")).text() == "p99 ≤ 1 ms"
    assert params["operations"] == needed_operations(make_slo(slo_for(cfg, "mixed")), cfg.capacity_range, cfg.capacity_repeats)
    assert cfg.capacity_repeats == 3  # an interval by default
    check_capacity_stream(cfg)
    code, results, output = run_cli(str(plan), "--capacity-repeats", "4", "--yes")
    assert code == 2 and not results and f"{plan}: phase[1].operations: 726_000 operations are too few" in output, output
