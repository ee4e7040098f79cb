"""benchmarks/bench_scaling.py: runs one engine per CLI call, reads earlier results instead
of re-running them, and refuses (exit 1) a table whose engines disagree on a checksum.

One real run at a tiny count (the memory engine, 1_000 profiles, one child process) feeds
every test; the rest ingest its result, so nothing else runs."""

from __future__ import annotations

import importlib.util
import subprocess
import sys

import orjson
import pytest
from conftest import ROOT

SCRIPT = ROOT / "benchmarks" / "bench_scaling.py"


def bench(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args], cwd=ROOT, capture_output=True, text=True, timeout=300
    )


def load_script():
    """The script as a module (it is not a package module), to call its main in-process."""
    spec = importlib.util.spec_from_file_location("bench_scaling", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def bench_here(capsys: pytest.CaptureFixture[str], *args: str) -> subprocess.CompletedProcess[str]:
    """``bench`` without a new interpreter: for the calls that only read results."""
    code = load_script().main(list(args))
    got = capsys.readouterr()
    return subprocess.CompletedProcess(args, code, got.out, got.err)


@pytest.fixture(scope="module")
def first_run(tmp_path_factory: pytest.TempPathFactory):
    out = tmp_path_factory.mktemp("scaling")
    proc = bench("--profiles", "1000", "--engines", "memory", "--no-harness", "--out", str(out))
    return out, proc


def test_runs_each_engine_in_its_own_cli_call_and_prints_one_table(first_run) -> None:
    out, proc = first_run
    assert proc.returncode == 0, proc.stderr
    calls = [line for line in proc.stderr.splitlines() if line.startswith("$ ")]
    assert len(calls) == 1 and "--engine memory --profiles 1000" in calls[0]
    (result,) = out.glob("results/profiles-*/asyncbench-*.json")
    table = proc.stdout
    assert "| phase | memory 1_000 |" in table
    assert "| insert profiles | " in table and "/s |" in table
    assert "| **whole run** |" in table and "| storage |" in table and "| peak RSS |" in table
    assert "| runs (ok/all) | 1/1 |" in table


def test_ingested_results_are_not_run_again(first_run, tmp_path, capsys) -> None:
    out, _ = first_run
    table = tmp_path / "table.md"
    proc = bench(
        "--profiles",
        "1000",
        "--engines",
        "memory",
        "--no-harness",
        "--ingest",
        str(out),
        "--table",
        str(table),
    )
    assert proc.returncode == 0, proc.stderr
    assert not [line for line in proc.stderr.splitlines() if line.startswith("$ ")]
    assert table.read_text().strip() == proc.stdout.split("\n\n")[0].strip()


def test_lsm_rocksdb_ratio_and_a_differing_checksum_fails(first_run, tmp_path, capsys) -> None:
    """Two engines' results (the memory engine's, renamed) give a ratio column; a changed
    checksum in one of them makes the script exit 1 and mark the phase."""
    out, _ = first_run
    (path,) = out.glob("results/profiles-*/asyncbench-*.json")
    doc = orjson.loads(path.read_bytes())
    (engine,) = doc["engines"]
    lsm = {**engine, "engine": "lsm"}
    rocks = orjson.loads(orjson.dumps(engine))
    rocks["engine"] = "rocksdb"
    for p in rocks["phases"]:
        p["seconds"] = p["seconds"] * 2
    doc["engines"] = [lsm, rocks]
    same = tmp_path / "same" / "asyncbench-same.json"
    same.parent.mkdir()
    same.write_bytes(orjson.dumps(doc))
    proc = bench_here(
        capsys, "--profiles", "1000", "--engines", "lsm,rocksdb", "--no-harness", "--ingest", str(same)
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "lsm/rocksdb 1_000" in proc.stdout
    insert = next(line for line in proc.stdout.splitlines() if line.startswith("| insert profiles |"))
    assert insert.rstrip(" |").endswith("0.50")  # rocksdb took twice as long
    bad = orjson.loads(orjson.dumps(doc))
    bad["engines"][1]["phases"][0]["checksum"] = "0000000000000000"
    other = tmp_path / "bad" / "asyncbench-bad.json"
    other.parent.mkdir()
    other.write_bytes(orjson.dumps(bad))
    proc = bench_here(
        capsys, "--profiles", "1000", "--engines", "lsm,rocksdb", "--no-harness", "--ingest", str(other)
    )
    assert proc.returncode == 1
    assert "checksums differ" in proc.stdout and "CHECKSUMS DIFFER" in proc.stdout


def test_the_printed_size_estimate_is_read_back() -> None:
    """Item 4's check: the estimate the CLI printed before a run, against the run's time."""
    parse = load_script().parse_estimate
    out = "asyncbench: plan x\n  time: about 1 h 5 min\n  disk: about 1 GB under d\n  (from a 3.0 s calibration at"
    assert parse(out) == (3900, "calibration")
    assert parse("  time: about 45 s\n  (scaled from the last runs of plan 'p'") == (45, "history")
    assert parse("  time and disk: not estimated: a small plan") is None


def test_a_missing_ingest_path_is_refused_with_exit_2(tmp_path, capsys) -> None:
    with pytest.raises(SystemExit) as exc:
        bench_here(capsys, "--profiles", "1000", "--engines", "memory", "--ingest", str(tmp_path / "nope"))
    assert exc.value.code == 2
    assert "nope: no such file or directory" in capsys.readouterr().err
    (tmp_path / "empty").mkdir()
    with pytest.raises(SystemExit) as exc:
        bench_here(capsys, "--profiles", "1000", "--engines", "memory", "--ingest", str(tmp_path / "empty"))
    assert exc.value.code == 2
