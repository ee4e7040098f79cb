"""A third workload added as a plug-in, with no change under asyncbench/, engines/ or
workloads/: examples/counter_workload.py, registered by ASYNCBENCH_WORKLOADS, runs through
the real command line (each engine in its own child process) on the memory, LSM, RocksDB
and SQLite engines with one checksum per phase, equal at P=1 and P=3, and equal to what
the plan says the counters hold."""

from __future__ import annotations

import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import orjson
import pytest
from conftest import ROOT

EXAMPLES = ROOT / "examples"
SPEC = "counter=counter_workload:CounterWorkload"
ENGINES = ("memory", "lsm", "rocksdb", "sqlite")


def _cli(tmp: Path, *args: str, spec: str = SPEC) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("ASYNCBENCH_ENGINES", "ASYNCBENCH_WORKLOADS")}
    env["ASYNCBENCH_WORKLOADS"] = spec
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(EXAMPLES), env.get("PYTHONPATH")]))
    cmd = [sys.executable, "-m", "asyncbench", *args, "--no-charts", "--output", str(tmp / "out"), "--data", str(tmp / "data")]
    return subprocess.run(cmd, cwd=tmp, env=env, capture_output=True, text=True, timeout=600)


def test_the_counter_workload_runs_on_four_engines_with_one_checksum(tmp_path: Path) -> None:
    sys.path.insert(0, str(EXAMPLES))
    try:
        import counter_workload as cw
    finally:
        sys.path.remove(str(EXAMPLES))
    n = 2_000
    proc = _cli(
        tmp_path, str(EXAMPLES / "counter.toml"), "--profiles", str(n), "--engine", ",".join(ENGINES),
        "--parallelism", "1,3", "--yes",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    results = [orjson.loads(p.read_bytes()) for p in sorted((tmp_path / "out").glob("counters-*/asyncbench-*.json"))]
    assert [r["parallelism"] for r in results] == [1, 3]
    # what the plan says, computed here from the plan alone (no store): the load's digests,
    # the increments' and the counters' final values
    plan = cw.draw_plan(cw.Counts(profiles=n, increments=n), 570123434)
    final = Counter(plan.increments)
    seen: Counter[int] = Counter()
    increments = 0
    for uid in plan.increments:
        seen[uid] += 1
        increments += cw.digest(uid, cw.initial(uid) + seen[uid])
    want = {
        "load": sum(cw.digest(u, cw.initial(u)) for u in range(1, n + 1)) & cw.M64,
        "increment": increments & cw.M64,
        "verify": sum(cw.digest(u, cw.initial(u) + final[u]) for u in range(1, n + 1)) & cw.M64,
    }
    for run in results:
        assert run["workload"] == "counter"
        assert [e["engine"] for e in run["engines"]] == list(ENGINES)
        for engine in run["engines"]:
            assert engine["status"] == "ok", engine
            got = {p["name"]: int(p["checksum"], 16) for p in engine["phases"]}
            assert got == want, (run["parallelism"], engine["engine"])


def test_nothing_in_the_package_imports_or_registers_the_plug_in() -> None:
    """The plug-in is the one file (and its plan) outside the package: no module under
    asyncbench/, engines/ or workloads/ imports it, and the registry knows it only from
    the environment."""
    from asyncbench.workloads import BUILTIN

    assert "counter" not in BUILTIN
    for folder in ("asyncbench", "engines", "workloads"):
        for path in (ROOT / folder).rglob("*.py"):
            text = path.read_text()
            assert "import counter_workload" not in text and "from counter_workload" not in text, path


@pytest.mark.parametrize(
    ("spec", "problem"),
    [
        ("counter", "ASYNCBENCH_WORKLOADS: 'counter' is not name=module:attribute"),
        ("Counter=counter_workload:CounterWorkload", "the workload name is not a plain lowercase name"),
        ("ycsb=counter_workload:CounterWorkload", "the workload name 'ycsb' is taken by a built-in workload"),
    ],
)
def test_a_malformed_registration_exits_2_naming_the_variable(tmp_path: Path, spec: str, problem: str) -> None:
    proc = _cli(tmp_path, str(EXAMPLES / "counter.toml"), "--engine", "memory", spec=spec)
    assert proc.returncode == 2 and problem in proc.stderr, proc.stderr
    assert not (tmp_path / "out").exists() and not (tmp_path / "data").exists()


@pytest.mark.parametrize("stores", ['("../escape",)', '("counters", "counters")', '["counters"]', '("",)'])
def test_a_workload_declaring_unusable_store_names_exits_2_before_any_engine_opens(tmp_path: Path, stores: str) -> None:
    """A store name becomes a file or folder of a file engine's data directory: a name that
    is no plain name (or a repeated one) is the plug-in's error, named when the workload
    loads (it surfaced only when an engine opened, after the run had started)."""
    source = (EXAMPLES / "counter_workload.py").read_text()
    declared = "kv_stores: tuple[str, ...] = (TABLE,)"
    assert source.count(declared) == 1
    (tmp_path / "bad_stores.py").write_text(source.replace(declared, f"kv_stores = {stores}"))
    plan = tmp_path / "counter.toml"
    plan.write_text((EXAMPLES / "counter.toml").read_text())
    proc = _cli(tmp_path, str(plan), "--engine", "lsm", spec="counter=bad_stores:CounterWorkload")
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "declares kv_stores" in proc.stderr and "distinct plain names" in proc.stderr, proc.stderr
    assert not (tmp_path / "out").exists() and not (tmp_path / "data").exists()


def test_a_workload_that_is_not_one_is_refused_naming_what_it_lacks(tmp_path: Path) -> None:
    (tmp_path / "half_workload.py").write_text("class Half:\n    name = 'half'\n    unit = 'halves'\n")
    plan = tmp_path / "half.toml"
    plan.write_text('[run]\nworkload = "half"\nprofiles = 100\n\n[[phase]]\nkind = "load"\n')
    env_spec = "half=half_workload:Half"
    proc = _cli(tmp_path, str(plan), "--engine", "memory", spec=env_spec)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "does not implement asyncbench.workload.Workload (it lacks " in proc.stderr and "draw_plan" in proc.stderr
