"""``--processes`` and ``--cluster`` through the real CLI: embedded engines refuse them
(exit 2, nothing created), a cluster started with Dask's own tools runs the quick plan
through ``--cluster``, and Ctrl-C stops every client process."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import orjson
import psutil
import pytest
from conftest import postgres_expected, run_asyncbench
from tests_support_open_loop import plan_text

from asyncbench.workloads.profile_store.phases import PHASES, Action

ROOT = Path(__file__).resolve().parents[1]
QUICK = str(ROOT / "benchmarks" / "quick.toml")
needs_postgres = pytest.mark.skipif(
    not postgres_expected(),
    reason='no PostgreSQL server: set PGHOST/PGPORT/... (eval "$(scripts/postgres-server start)")',
)


@pytest.mark.parametrize("flag", [("--processes", "2"), ("--cluster", "tcp://127.0.0.1:9")])
def test_embedded_engines_refuse_scaling_out(tmp_path: Path, flag: tuple[str, str]) -> None:
    r = run_asyncbench(tmp_path, QUICK, "--engine", "sqlite,memory", *flag, timeout=120)
    assert r.returncode == 2, r.stderr
    assert "sqlite, memory run in one process only" in r.stderr
    assert not (tmp_path / "out").exists() and not (tmp_path / "data").exists()


def test_more_processes_than_workers_is_refused(tmp_path: Path) -> None:
    r = run_asyncbench(tmp_path, QUICK, "--engine", "postgres", "--processes", "4", "--parallelism", "2", timeout=120)
    assert r.returncode == 2, r.stderr
    assert "parallelism 2 is less than the 4 client processes" in r.stderr


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _stop(procs: list[subprocess.Popen]) -> None:
    for p in reversed(procs):
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGTERM)
    for p in reversed(procs):
        try:
            p.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()


@needs_postgres
@pytest.mark.slow
def test_cluster_flag_with_dask_scheduler_and_workers(tmp_path: Path) -> None:
    """As on several hosts, on 127.0.0.1: `dask scheduler`, two `dask worker` processes,
    then `asyncbench --cluster tcp://127.0.0.1:PORT`; the memory engine's P2 checksums."""
    dask = str(Path(sys.executable).with_name("dask"))
    port = _free_port()
    address = f"tcp://127.0.0.1:{port}"
    quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL, "start_new_session": True}
    procs = [subprocess.Popen([dask, "scheduler", "--host", "127.0.0.1", "--port", str(port), "--no-dashboard"], **quiet)]
    try:
        for _ in range(2):
            procs.append(
                subprocess.Popen(
                    [dask, "worker", address, "--nthreads", "1", "--host", "127.0.0.1", "--no-dashboard"],
                    cwd=ROOT, **quiet,
                )
            )
        memory = run_asyncbench(tmp_path / "m", QUICK, "--engine", "memory", "--profiles", "1000", "--parallelism", "2")
        assert memory.returncode == 0, memory.stderr
        r = run_asyncbench(
            tmp_path / "c", QUICK, "--engine", "postgres", "--profiles", "1000", "--parallelism", "2",
            "--cluster", address, "--processes", "2", timeout=300,
        )
        assert r.returncode == 0, r.stdout + r.stderr

        def checksums(where: Path) -> list[str | None]:
            (result,) = (where / "out" / "profiles-1000-p2").glob("asyncbench-*.json")
            doc = orjson.loads(result.read_bytes())
            return [p["checksum"] for p in doc["engines"][0]["phases"]]

        assert checksums(tmp_path / "c") == checksums(tmp_path / "m")
        (result,) = (tmp_path / "c" / "out" / "profiles-1000-p2").glob("asyncbench-*.json")
        notes = orjson.loads(result.read_bytes())["engines"][0]["notes"]
        assert any("MALLOC_TRIM_THRESHOLD_=65536" in n and "--no-nanny" in n for n in notes), notes  # dask worker's nanny
        (report,) = (tmp_path / "c" / "out" / "profiles-1000-p2").glob("asyncbench-*.md")
        text = report.read_text()
        assert "postgres: client process 1" in text and address in text
    finally:
        _stop(procs)


@needs_postgres
@pytest.mark.slow
def test_ctrl_c_stops_every_client_process(tmp_path: Path) -> None:
    cmd = [
        sys.executable, "-m", "asyncbench", QUICK, "--engine", "postgres", "--profiles", "20k",
        "--parallelism", "2", "--processes", "2", "--no-progress",
        "--output", str(tmp_path / "out"), "--data", str(tmp_path / "data"),
    ]
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        seen: set[int] = set()
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:  # the client processes are up and opening/inserting
            kids = psutil.Process(proc.pid).children(recursive=True)
            seen |= {k.pid for k in kids}
            if sum("spawn_main" in " ".join(k.cmdline()) for k in kids if k.is_running()) >= 2:
                break
            time.sleep(0.2)
        time.sleep(3)
        seen |= {k.pid for k in psutil.Process(proc.pid).children(recursive=True)}
        os.killpg(proc.pid, signal.SIGINT)  # what a terminal's Ctrl-C does: the whole group
        out, _ = proc.communicate(timeout=90)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode == 130, out.decode(errors="replace")[-3000:]
    time.sleep(1)
    left = [p for p in seen if psutil.pid_exists(p) and psutil.Process(p).status() != psutil.STATUS_ZOMBIE]
    assert not left, f"still running: {left}"


def _phase_batches(log: Path, engine: str) -> list[tuple[dict, list[dict]]]:
    """Each phase_end event of ``engine`` with the batch lines written since its phase_start."""
    out: list[tuple[dict, list[dict]]] = []
    batches: list[dict] | None = None
    for raw in log.read_bytes().splitlines():
        line = orjson.loads(raw)
        if line.get("engine") != engine:
            continue
        if line["event"] == "phase_start":
            batches = []
        elif line["event"] == "batch":
            assert batches is not None, f"a batch line outside a phase: {line}"
            batches.append(line)
        elif line["event"] == "phase_end":
            out.append((line, batches or []))
            batches = None
    return out


@needs_postgres
@pytest.mark.slow
def test_batch_lines_of_every_client_process_reach_the_log_before_phase_end(tmp_path: Path) -> None:
    """--processes 2: every operation phase's batch lines of both client processes are in
    the log, with their index and host, between its phase_start and phase_end, adding up
    to its operations (the coordinator writes them live, as Dask events bring them)."""
    log = tmp_path / "log.jsonl"
    r = run_asyncbench(
        tmp_path, QUICK, "--engine", "postgres", "--profiles", "2000", "--parallelism", "2",
        "--processes", "2", "--log-file", str(log), timeout=300,
    )
    assert r.returncode == 0, r.stdout + r.stderr
    phases = _phase_batches(log, "postgres")
    assert len(phases) == 21
    operations = [(end, lines) for end, lines in phases if PHASES[end["kind"]].action is Action.OPERATIONS]
    assert len(operations) == 16
    assert all(not lines for end, lines in phases if PHASES[end["kind"]].action is not Action.OPERATIONS)
    host = socket.gethostname()
    for end, lines in operations:
        assert {b["process"] for b in lines} == {0, 1}, end["phase"]
        assert {b["host"] for b in lines} == {host}
        assert {b["worker"] for b in lines if b["process"] == 0} == {0}  # contiguous blocks: w0 in process 0
        assert sum(b["ops"] for b in lines) == end["ops"], end["phase"]
        assert max(b["done"] for b in lines) == end["ops"]
        assert all(b["phase"] == end["phase"] and b["p99_us"] is not None for b in lines)
        # what jq groups by (issue 39): on every batch line and the phase's end line
        assert {(b["repeat"], b["profiles"], b["parallelism"]) for b in [*lines, end]} == {(0, 2000, 2)}


@needs_postgres
@pytest.mark.slow
def test_a_rate_across_two_client_processes(tmp_path: Path) -> None:
    """--rate with --processes 2 (uniform, P2; Poisson's schedule is checked without a
    server in test_distributed): every phase checksum equals the single-process run's at
    P2 (memory engine, closed loop); the open-loop figures cover both processes (response
    histogram of every operation, per-second series); --check-rate passes at a rate
    PostgreSQL holds over a 2 s phase and exits 1 naming the phase at one it cannot (a
    phase of tens of operations misses any rate by its last operation's latency)."""
    plan = tmp_path / "plan.toml"
    plan.write_text(plan_text(["postgres"], 600, rate="1000", parallelism=2))
    closed = tmp_path / "closed.toml"
    closed.write_text(plan_text(["memory"], 600, parallelism=2))

    def doc(where: Path) -> dict:
        (result,) = sorted((where / "out").glob("profiles-*/asyncbench-*.json"))
        return orjson.loads(result.read_bytes())

    memory = run_asyncbench(tmp_path / "m", str(closed))
    assert memory.returncode == 0, memory.stderr
    r = run_asyncbench(tmp_path / "r", str(plan), "--processes", "2", timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    (engine,) = doc(tmp_path / "r")["engines"]
    assert [p["checksum"] for p in engine["phases"]] == [p["checksum"] for p in doc(tmp_path / "m")["engines"][0]["phases"]]
    timed = [p for p in engine["phases"] if p["action"] == "ops"]
    assert len(timed) == 8
    for p in timed:
        ol = p["open_loop"]
        assert ol["rate"] == 1000 and ol["arrivals"] == "uniform"
        assert ol["response"]["count"] == p["ops"] == p["latency"]["count"]
        assert ol["response"]["p99"] >= p["latency"]["p50"] and ol["delay_max_ns"] >= 0
        assert p["time_series"] and sum(s[1] for s in p["time_series"]) == p["ops"]
        assert ol["response_series"] and sum(s[1] for s in ol["response_series"]) == p["ops"]
    reads = tmp_path / "reads.toml"
    reads.write_text(
        '[run]\nprofiles = 1000\nengines = ["postgres"]\nparallelism = 2\n[[phase]]\nkind = "insert"\n'
        '[[phase]]\nkind = "read_by_id"\nstream = "reads"\ncount = 1000\nrate = 500\n'
    )
    held = run_asyncbench(tmp_path / "h", str(reads), "--processes", "2", "--check-rate", timeout=300)
    assert held.returncode == 0, held.stdout + held.stderr
    # --rate no longer paces an insert (a load runs unthrottled, as YCSB's): the insert asks
    # for an unreachable rate of its own, which the engine's service time cannot carry
    unreachable = tmp_path / "unreachable.toml"
    unreachable.write_text(reads.read_text().replace('kind = "insert"\n', 'kind = "insert"\nrate = 1000000\n', 1))
    missed = run_asyncbench(tmp_path / "x", str(unreachable), "--processes", "2", "--check-rate", timeout=300)
    assert missed.returncode == 1, missed.stdout + missed.stderr
    assert "RATE MISSED: engine postgres, phase 'insert profiles'" in missed.stdout + missed.stderr  # (the reads keep their own)
    assert "FAIL postgres · insert profiles: rate missed" in missed.stdout.replace("\n    ", " ")


def test_processes_1_on_an_embedded_engine_says_it_ran_the_ordinary_path(tmp_path: Path) -> None:
    """--processes 1 is allowed for an embedded engine, which then runs in this process:
    the result says so instead of passing for a client-process run (issue 34)."""
    r = run_asyncbench(tmp_path, QUICK, "--engine", "memory", "--profiles", "1000", "--processes", "1", timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    (result,) = (tmp_path / "out" / "profiles-1000-p1").glob("asyncbench-*.json")
    notes = orjson.loads(result.read_bytes())["engines"][0]["notes"]
    assert any("--processes 1: memory is an embedded engine" in n and "ordinary" in n for n in notes), notes
