"""Per-operation latency through the real runner: every engine stamps ops + 1 marks per
batch, known latencies give the expected percentiles, and the stored histogram decodes."""

from __future__ import annotations

from pathlib import Path

import anyio
import orjson
import pytest
from conftest import run_asyncbench, store_of
from engines_latency import FAST_S, SLOW_EVERY, SLOW_S

from asyncbench.engine import EngineConfig, opened
from asyncbench.engines import engine_class
from asyncbench.measure.latency import LatencyHistogram
from asyncbench.workloads.profile_store.generate import create_many
from asyncbench.workloads.profile_store.kv_store import STORE_NAMES as PROFILE_STORES
from asyncbench.workloads.profile_store.profiles import update

SEED = 570123434


@pytest.mark.parametrize("name", ["memory", "lsm", "rocksdb", "sqlite"])
def test_every_engine_stamps_one_mark_per_operation_plus_the_start(tmp_path: Path, name: str) -> None:
    async def main() -> None:
        e = engine_class(name)(EngineConfig(name, tmp_path / name, {}, 5, SEED, stores=PROFILE_STORES))
        async with opened(e):
            calls = [
                ("insert", lambda m: store_of(e).insert(create_many(1, 300, SEED), m), 300),
                ("read_by_id", lambda m: store_of(e).read_by_id([1, 2, 999_999], m), 3),
                ("lookup_by_email", lambda m: store_of(e).lookup_by_email(["nobody@example.com"] * 4, m), 4),
                ("scan_country_status", lambda m: store_of(e).scan_country_status([("US", "active")] * 5, m), 5),
                ("query_country_status", lambda m: store_of(e).query_country_status([("US", "active")] * 2, m), 2),
                ("scan_created_at", lambda m: store_of(e).scan_created_at([(0, 2**62)] * 3, m), 3),
                ("query_created_at", lambda m: store_of(e).query_created_at([(0, 2**62)] * 2, m), 2),
                ("scan_top_reputation", lambda m: store_of(e).scan_top_reputation(6, m), 6),
                ("query_top_reputation", lambda m: store_of(e).query_top_reputation(2, m), 2),
                ("update", lambda m: store_of(e).update([1, 2, 999_999], lambda p: update(p, SEED), m), 3),
            ]
            for what, call, ops in calls:
                marks: list[int] = []
                await call(marks)
                assert len(marks) == ops + 1, (name, what, len(marks))
                assert marks == sorted(marks), (name, what)

    anyio.run(main)


PLAN = """
[run]
profiles = 600
engines = ["sleepy"]
[counts]
reads = 600
[[phase]]
kind = "insert"
[[phase]]
kind = "read_by_id"
"""


def test_known_latencies_give_the_expected_percentiles(tmp_path: Path) -> None:
    plan = tmp_path / "plan.toml"
    plan.write_text(PLAN)
    proc = run_asyncbench(
        tmp_path, str(plan), "--batch-size", "100", engines="sleepy=engines_latency:SleepyEngine"
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (result,) = (tmp_path / "out").glob("profiles-*/asyncbench-*.json")
    (engine,) = orjson.loads(result.read_bytes())["engines"]
    read = next(p for p in engine["phases"] if p["kind"] == "read_by_id")
    lat = read["latency"]
    assert lat["count"] == 600
    fast_ns, slow_ns = FAST_S * 1e9, SLOW_S * 1e9
    # sleep() never returns early and rarely more than a millisecond late
    assert fast_ns <= lat["p50"] < fast_ns + 1.5e6
    assert fast_ns <= lat["p90"] < fast_ns + 1.5e6
    slow_share = 1 / SLOW_EVERY  # 1% of the reads are slow: p99.9 and max are slow ones
    assert slow_share == 0.01
    assert slow_ns <= lat["p99_9"] < slow_ns + 5e6
    assert slow_ns <= lat["max"] < slow_ns + 5e6
    assert lat["min"] >= fast_ns
    # the stored histogram is HdrHistogram's standard encoding: decode and compare
    decoded = LatencyHistogram.from_encoded(lat["histogram"])
    assert decoded.count == 600
    assert decoded.values_at_percentiles([50])[0] == lat["p50"]
    # the log's batch lines carry p99 and max per batch
    (log,) = (tmp_path / "out").glob("asyncbench-*.log")
    batches = [orjson.loads(line) for line in log.read_bytes().splitlines() if b'"batch"' in line]
    reads = [b for b in batches if b["kind"] == "read_by_id"]
    assert len(reads) == 6 and all(b["max_us"] >= SLOW_S * 1e6 for b in reads)
    assert all(b["worker"] == 0 and b["stream"] == "reads" for b in reads)
