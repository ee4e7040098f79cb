"""``benchmarks/lsm-insert.toml`` is the reference plan's insert phase alone.

Why: issue 40 bounds the LSM's 10M insert rate against its 200k rate, and the interleaved
series that measures it runs this plan (docs/results/scaling.md). Its figures compare
with the reference plan's insert only while it is that insert: the same seed (which
decides the records' fields), batch size and engine settings, and the same inserts (the
insert checksum folds each inserted uid, so it checks the count and order, not the seed).
``benchmarks/lsm-maintenance.toml`` makes the same promise for the write path and
maintenance, and is held to it here too.
"""

from __future__ import annotations

import pytest
from conftest import ROOT

from asyncbench.config.plan import load

PLAN = ROOT / "benchmarks" / "lsm-insert.toml"
REFERENCE = ROOT / "benchmarks.toml"


@pytest.mark.parametrize(
    ("name", "kinds"),
    [
        ("lsm-insert.toml", ["insert"]),
        # its twin, which makes the same promise (docs/lsm.md): the write path and maintenance
        ("lsm-maintenance.toml", ["insert", "stabilize", "settle", "reopen", "verify"]),
    ],
)
def test_plan_keeps_the_reference_plans_settings(name: str, kinds: list[str]) -> None:
    plan, reference = load(ROOT / "benchmarks" / name), load(REFERENCE)
    assert [p.kind for p in plan.phases] == kinds
    assert plan.engine_settings == reference.engine_settings
    for key in ("profiles", "parallelism", "seed", "limit", "batch_size", "isolate", "workload"):
        assert getattr(plan, key) == getattr(reference, key), key


def test_inserts_are_the_reference_plans(run_cli) -> None:
    args = ("--engine", "lsm", "--profiles", "2k", "--no-isolate", "--yes", "--no-progress")
    code, _, out = run_cli(str(PLAN), *args)
    assert code == 0, out
    code, results, out = run_cli(str(REFERENCE), *args)
    assert code == 0, out
    by_name = {r["name"]: r["engines"][0]["phases"] for r in results}
    assert set(by_name) == {"lsm-insert", "profile-store"}
    assert len(by_name["lsm-insert"]) == 1
    insert, reference_insert = by_name["lsm-insert"][0], by_name["profile-store"][0]
    assert insert["kind"] == reference_insert["kind"] == "insert"
    assert insert["ops"] == reference_insert["ops"] == 2_000
    assert insert["checksum"] == reference_insert["checksum"]
