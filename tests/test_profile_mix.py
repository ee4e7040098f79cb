"""The profile store's mixed phase: exact checksums on every engine, P and K.

The shipped plan (``benchmarks/profile-mix.toml``) at a small size runs on memory, lsm,
rocksdb and sqlite at P = 1, 4 and 16; every phase checksum must be the same on every
engine at a P, and the mixed phase's must equal that of a dict-backed reference store that
runs the drawn operations in sequence order and folds each owner's records (an
independent execution: an engine that read a stale profile, skipped an operation or ran a
user's operations out of order fails). On MySQL and PostgreSQL the same with the workers
in two client processes.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT, mysql_configured, postgres_expected

from asyncbench.workloads.profile_store.checksum import Checksum, combine
from asyncbench.workloads.profile_store.generate import create
from asyncbench.workloads.profile_store.mix import UPDATE, MixedPhase, mixed_params
from asyncbench.workloads.profile_store.profiles import update

PLAN = ROOT / "benchmarks" / "profile-mix.toml"
ENGINES = "memory,lsm,rocksdb,sqlite"


def small_plan(tmp_path: Path, ops: int = 3000, extra: str = "") -> tuple[Path, dict[str, Any]]:
    text = PLAN.read_text().replace("operations = 200_000", f"operations = {ops}") + extra
    doc = tomllib.loads(text)
    assert doc["phase"][2]["operations"] == ops
    path = tmp_path / "profile-mix.toml"
    path.write_text(text)
    return path, doc


def reference(profiles: int, seed: int, phase: dict[str, Any], workers: int) -> str:
    """The mixed phase's checksum as a dict store gives it: user u's operations on worker
    u % P in sequence order, each worker folding the records its operations return."""
    drawn = MixedPhase(profiles, seed, mixed_params({k: v for k, v in phase.items() if k != "kind"}))
    store = {uid: create(uid, seed) for uid in range(1, profiles + 1)}
    sums = [Checksum() for _ in range(workers)]
    for kind, uid in zip(drawn.kind.tolist(), drawn.uid.tolist(), strict=True):
        if kind == UPDATE:
            store[uid] = update(store[uid], seed)
        sums[uid % workers].add_profiles([store[uid]])
    return combine([s.hex() for s in sums])


def checksums(results: list[dict]) -> dict[tuple[int, str], set[str]]:
    """(P, phase) -> the checksums every engine gave."""
    out: dict[tuple[int, str], set[str]] = {}
    for run in results:
        for engine in run["engines"]:
            assert engine["status"] == "ok", engine.get("detail")
            for p in engine["phases"]:
                out.setdefault((run["parallelism"], p["name"]), set()).add(p["checksum"])
    return out


def test_the_shipped_plan_gives_the_reference_checksums_on_every_engine_and_p(tmp_path: Path, run_cli) -> None:
    plan, doc = small_plan(tmp_path)
    code, results, output = run_cli(
        str(plan), "--engine", ENGINES, "--profiles", "1500", "--parallelism", "1,4,16", "--no-isolate", "--yes"
    )
    assert code == 0, output
    sums = checksums(results)
    assert {p for p, _ in sums} == {1, 4, 16}
    for (p, name), seen in sums.items():
        assert len(seen) == 1, (p, name, sums)
    for p in (1, 4, 16):
        assert sums[(p, "mixed")] == {reference(1500, doc["run"]["seed"], doc["phase"][2], p)}
    # the same again: a second run draws the same operations
    code, again, output = run_cli(str(plan), "--engine", "memory", "--profiles", "1500", "--parallelism", "4",
                                  "--no-isolate", "--yes")
    assert code == 0, output
    assert checksums(again[-1:])[(4, "mixed")] == sums[(4, "mixed")]


def test_the_mix_and_skew_run_are_in_the_result_and_console(tmp_path: Path, run_cli) -> None:
    plan, _ = small_plan(tmp_path)
    code, results, output = run_cli(str(plan), "--engine", "memory,sqlite", "--profiles", "1500", "--no-isolate", "--yes")
    assert code == 0, output
    for engine in results[0]["engines"]:
        mix = engine["phases"][2]["mix"]
        counts = {k: v["ops"] for k, v in mix["kinds"].items()}
        assert set(counts) == {"read_by_id", "lookup_by_email", "update"} and sum(counts.values()) == 3000
        assert 0.85 < counts["read_by_id"] / 3000 < 0.95  # 0.90 within binomial bounds (sd 0.55 %)
        assert all(v["latency"] is not None for v in mix["kinds"].values())  # measured in this process
        assert mix["hot_shares"]["10%"] > 0.3  # zipfian 0.99: far above the uniform 10 %
    assert "read_by_id" in output and "hottest keys' share of ops" in output


SERVERS = [
    pytest.param(
        "mysql", marks=pytest.mark.skipif(not mysql_configured(), reason="no MySQL server: set MYSQL_HOST/MYSQL_PORT")
    ),
    pytest.param(
        "postgres", marks=pytest.mark.skipif(not postgres_expected(), reason="no PostgreSQL server: set PGHOST")
    ),
]


@pytest.mark.parametrize("engine", SERVERS)
def test_two_client_processes_give_the_reference_checksum(engine: str, tmp_path: Path, run_cli) -> None:
    plan, doc = small_plan(tmp_path, ops=1200, extra=f'\n[engines.{engine}]\ndatabase = "asyncbench_pmix_test"\n')
    code, results, output = run_cli(
        str(plan), "--engine", engine, "--profiles", "600", "--parallelism", "4", "--processes", "2", "--yes"
    )
    assert code == 0, output
    (result,) = results[0]["engines"]
    assert len(result["client_processes"]) == 2
    assert result["phases"][2]["checksum"] == reference(600, doc["run"]["seed"], doc["phase"][2], 4)
    kinds = result["phases"][2]["mix"]["kinds"]  # each kind's latency, merged from both processes
    assert sum(k["ops"] for k in kinds.values()) == 1200
    assert all(k["latency"] is not None and k["latency"]["count"] == k["ops"] for k in kinds.values()), kinds


@pytest.mark.parametrize(
    ("extra", "key", "problem"),
    [
        ("update_proportion = 0.5\n", "read_by_id_proportion", "sum to 1.45, not 1"),
        ('requestdistribution = "pareto"\n', "requestdistribution", "unknown value 'pareto'"),
        ("colour = 1\n", "colour", "unknown key"),
        ("zipfianconstant = 1.5\n", "zipfianconstant", "between 0 and 1"),
    ],
)
def test_bad_mixed_keys_are_refused_naming_file_and_key(
    extra: str, key: str, problem: str, tmp_path: Path, run_cli
) -> None:
    text = PLAN.read_text()
    for line in extra.splitlines():  # replace the key where the plan sets it, else add it
        name = line.split(" = ")[0]
        lines = [ln for ln in text.splitlines() if ln.startswith(f"{name} = ")]
        text = text.replace(lines[0], line) if lines else text + line + "\n"
    plan = tmp_path / "bad.toml"
    plan.write_text(text)
    code, results, output = run_cli(str(plan), "--engine", "memory", "--yes")
    assert code == 2, output
    assert str(plan) in output and f"phase[2].{key}" in output and problem in output, output
    assert not (tmp_path / "out").exists() and not (tmp_path / "data").exists()


def test_a_reused_store_never_runs_the_mixed_phase_and_a_mixed_build_is_no_plain_build(tmp_path: Path, run_cli) -> None:
    """The mixed phase writes: a --reuse-data run skips it as it skips the insert, and a
    store it changed is not taken for the store of a plan without it (the fingerprint's
    write phases differ)."""
    plan, _ = small_plan(tmp_path, ops=800)
    args = ("--engine", "lsm", "--profiles", "500", "--no-isolate", "--yes")
    code, _, output = run_cli(str(plan), *args, "--keep-data")
    assert code == 0, output
    code, results, output = run_cli(str(plan), *args, "--reuse-data")
    assert code == 0, output
    phases = {p["name"]: p for p in results[-1]["engines"][0]["phases"]}
    assert phases["mixed"]["skipped"], phases["mixed"]
    plain = tmp_path / "plain.toml"
    plain.write_text(plan.read_text().split('[[phase]]\nkind = "mixed"')[0] + '[[phase]]\nkind = "read_by_id"\n')
    code, _, output = run_cli(str(plain), *args, "--reuse-data")
    assert code != 0 and "mixed" in output, output


def test_kinds_reach_report_csv_and_compare(tmp_path: Path, run_cli, capfd) -> None:
    from asyncbench.cli.main import main

    plan, _ = small_plan(tmp_path, ops=2000)
    code, results, output = run_cli(str(plan), "--engine", "memory", "--profiles", "800", "--no-isolate", "--csv", "--yes")
    assert code == 0, output
    kinds = results[0]["engines"][0]["phases"][2]["mix"]["kinds"]
    lines = output.splitlines()
    for name, k in kinds.items():  # console: a line per kind under the mixed phase, 80 columns
        (line,) = [x for x in lines if x.startswith(f"    {name} ")]
        assert f"{k['ops']:_d}" in line and len(line) <= 80
    md = next((tmp_path / "out").glob("profiles-800-p1/asyncbench-*.md")).read_text()
    section = md.split("## Operation Kinds", 1)[1].split("\n## ", 1)[0]
    for name in ("read_by_id", "lookup_by_email", "update"):
        assert f"| memory | mixed | {name} |" in section
    csv = next((tmp_path / "out").glob("profiles-800-p1/asyncbench-*[0-9]Z.csv")).read_text().splitlines()
    header = csv[0].split(",")
    rows = [dict(zip(header, r.split(","), strict=True)) for r in csv[1:]]
    assert {r["op_kind"]: int(r["ops"]) for r in rows if r["op_kind"]} == {k: v["ops"] for k, v in kinds.items()}
    (result,) = (tmp_path / "out").glob("profiles-800-p1/asyncbench-*.json")
    capfd.readouterr()
    assert main(["compare", str(result), str(result)]) == 0
    shown = capfd.readouterr().out
    assert "mixed read_by_id p99 µs" in shown and "mixed ops on hottest 1% keys" in shown, shown
