"""P workers across K client processes (asyncbench.run.scale_out.distributed): exact checksums for
every K, merged figures, refusals, a cluster started with Dask's own tools, and a client
process killed mid-phase.

The unit tests need no server: the merge is checked on synthetic parts, and one
:class:`ClientProcessActor` hosting all P workers of the memory engine (in this process, no
Dask) must give the single-process runner's checksums. The server tests (PostgreSQL from
``scripts/postgres-server``) start real client processes; they are slow (seconds each).
"""

from __future__ import annotations

import dataclasses
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import anyio
import numpy as np
import psutil
import pytest
from conftest import postgres_expected

from asyncbench.config import load, to_json
from asyncbench.measure.latency import LatencyHistogram
from asyncbench.measure.memory_sampler import MemorySampler
from asyncbench.result import Status
from asyncbench.run.observe.observers import Observer, ObserverGroup
from asyncbench.run.runner import EngineRun
from asyncbench.run.scale_out.client_process import ClientProcessActor, PhasePart, WorkerPart, hosted_workers
from asyncbench.run.scale_out.distributed import (
    DistributedEngineRun,
    Placement,
    PlacementError,
    check_placement,
    merge_phase,
)
from asyncbench.workloads import workload
from asyncbench.workloads.profile_store.checksum import Checksum, combine
from asyncbench.workloads.profile_store.phases import PHASES, Action
from asyncbench.workloads.profile_store.plan import draw_plan

PROFILE_STORE = workload("profile_store")

ROOT = Path(__file__).resolve().parents[1]
PROFILES = 1_000
needs_postgres = pytest.mark.skipif(
    not postgres_expected(),
    reason='no PostgreSQL server: set PGHOST/PGPORT/... (eval "$(scripts/postgres-server start)")',
)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def quick_cfg(tmp_path: Path, engine: str, parallelism: int, **run: object):
    cfg = load(ROOT / "benchmarks" / "quick.toml")
    settings = {"postgres": {"database": "asyncbench_distributed"}} if engine == "postgres" else {}
    return dataclasses.replace(
        cfg,
        engines=[engine],
        parallelism=[parallelism],
        profiles=[PROFILES],
        data=tmp_path / "data",
        engine_settings=settings,
        **run,
    )


async def single_process_checksums(tmp_path: Path, engine: str, parallelism: int) -> list[str | None]:
    cfg = quick_cfg(tmp_path, engine, parallelism)
    level = cfg.level(PROFILES, parallelism)
    run = EngineRun(cfg, level, engine, draw_plan(level.counts, cfg.seed), ObserverGroup(), MemorySampler())
    result = await run.run()
    assert result.ok, result.status_text()
    return [p.checksum for p in result.phases]


# --- no server ---------------------------------------------------------------------------


def test_hosted_workers_cover_every_worker_once() -> None:
    for p in range(1, 9):
        for k in range(1, p + 1):
            blocks = [hosted_workers(i, k, p) for i in range(k)]
            assert [w for b in blocks for w in b] == list(range(p))
            assert {len(b) for b in blocks} <= {p // k, p // k + 1}
    with pytest.raises(ValueError):
        hosted_workers(0, 3, 2)  # more processes than workers


def _part(process: int, release: float, workers: list[tuple[int, str, int, float]], hist: list[int]) -> PhasePart:
    encoded = LatencyHistogram.from_values(hist).encoded() if hist else None
    return PhasePart(process, release, [WorkerPart(*w) for w in workers], retries=process + 1, cpu_seconds=0.5, histogram=encoded)


def test_merge_phase_combines_in_worker_order_and_merges_histograms() -> None:
    hexes = [Checksum(i + 1).hex() for i in range(4)]
    parts = [  # out of order on purpose: process 1 reports first
        _part(1, 100.002, [(2, hexes[2], 10, 101.0), (3, hexes[3], 10, 101.5)], [3000] * 20),
        _part(0, 100.000, [(0, hexes[0], 10, 100.9), (1, hexes[1], 10, 101.2)], [1000] * 10 + [2000] * 10),
    ]
    merged = merge_phase(parts, 4, PROFILE_STORE)
    assert merged.checksum == combine(hexes)
    assert merged.ops == 40
    assert merged.seconds == pytest.approx(1.5)  # first release to the last worker's end
    assert merged.release_skew_seconds == pytest.approx(0.002)
    assert merged.retries == 3 and merged.cpu_seconds == 1.0
    assert merged.latency is not None and merged.latency.count == 40  # counts added, not averaged
    assert merged.latency.min == 1000 and merged.latency.max >= 3000
    # an empty partition takes no part in the checksum, as in the single-process loop
    parts[1].workers[1].items = 0  # worker 1 (process 0)
    assert merge_phase(parts, 4, PROFILE_STORE).checksum == combine([hexes[0], hexes[2], hexes[3]])


def test_merge_phase_refuses_a_missing_worker() -> None:
    parts = [_part(0, 1.0, [(0, "0" * 16, 1, 2.0), (2, "0" * 16, 1, 2.0)], [])]
    with pytest.raises(RuntimeError, match="expected 0..2"):
        merge_phase(parts, 3, PROFILE_STORE)


@pytest.mark.parametrize("engine", ["memory", "sqlite", "lsm", "rocksdb"])
def test_embedded_engines_refuse_several_processes(engine: str) -> None:
    for placement in (Placement(processes=2), Placement(cluster="tcp://127.0.0.1:8786")):
        with pytest.raises(PlacementError, match="run in one process only"):
            check_placement([engine], [4], placement)
    check_placement([engine], [4], Placement(processes=1))  # one client process: allowed


def test_more_processes_than_workers_is_refused() -> None:
    with pytest.raises(PlacementError, match="parallelism 2 is less than the 4 client processes"):
        check_placement(["postgres"], [2, 8], Placement(processes=4))


@pytest.mark.anyio
async def test_one_client_process_hosting_every_worker_matches_the_runner(tmp_path: Path) -> None:
    """The actor's own phase code (prepare/go/other, merged by merge_phase), no Dask: the
    memory engine at P4 gives exactly the single-process runner's 21 phase checksums."""
    expected = await single_process_checksums(tmp_path, "memory", 4)
    cfg = quick_cfg(tmp_path, "memory", 4)
    actor = ClientProcessActor()
    await actor.start(to_json(cfg), "memory", PROFILES, 4, 0, 1)
    try:
        await actor.open(True)
        got: list[str | None] = []
        for index, spec in enumerate(cfg.phases):
            action = PHASES[spec.kind].action
            if action is Action.OPERATIONS:
                await actor.prepare(index)
                part = await actor.go(time.time() + 0.01)
                got.append(merge_phase([part], 4, PROFILE_STORE).checksum)
            elif action is Action.STABILIZE:
                got.append(None)  # the memory engine needs none: the runner skips it
            else:
                got.append((await actor.other(index)).checksum)
        assert got == expected
        await actor.close()
    finally:
        await actor.stop()


# --- real client processes against PostgreSQL --------------------------------------------


class PhaseStarts(Observer):
    """Calls ``hook(phase)`` when an operation phase starts (its items are prepared)."""

    def __init__(self, hook) -> None:
        self.hook = hook

    def phase_start(self, engine, phase, total_ops, kind=None, stream=None) -> None:
        self.hook(phase)


@needs_postgres
@pytest.mark.slow
@pytest.mark.anyio
async def test_postgres_p4_across_1_2_4_processes_matches_memory(tmp_path: Path) -> None:
    expected = await single_process_checksums(tmp_path, "memory", 4)
    for k in (1, 2, 4):
        cfg = quick_cfg(tmp_path, "postgres", 4)
        result = await DistributedEngineRun(cfg, cfg.levels()[0], "postgres", ObserverGroup(), Placement(processes=k)).run()
        assert result.ok, (k, result.status_text(), result.notes)
        assert [p.checksum for p in result.phases] == expected, k
        assert len(result.client_processes) == k
        assert sorted(w for p in result.client_processes for w in p.workers) == [0, 1, 2, 3]
        assert all(p.peak_rss_bytes for p in result.client_processes)
        ops = [p for p in result.phases if p.action is Action.OPERATIONS]
        assert all(p.release_skew_seconds is not None and p.latency and p.latency.count == p.ops for p in ops)
        assert "client processes" in result.facts.cluster and "bottleneck" in result.facts.cluster
        for p in result.client_processes:  # the LocalCluster is gone with the run
            assert not psutil.pid_exists(p.pid) or psutil.Process(p.pid).status() == psutil.STATUS_ZOMBIE


@needs_postgres
@pytest.mark.slow
@pytest.mark.anyio
async def test_a_client_process_killed_mid_phase_fails_the_run_with_partial_results(tmp_path: Path) -> None:
    # enough reads that the phase outlasts the kill's 0.15 s delay on a quiet machine (with
    # the quick plan's count the phase had ended by then and the kill hit the next one)
    cfg = quick_cfg(tmp_path, "postgres", 2, timeout_seconds=120.0, counts={"reads": 50_000})
    holder: dict[str, DistributedEngineRun] = {}

    def kill_in_reads(phase: str) -> None:
        if phase == "read by user id":  # mid-phase: after the release, while the workers run
            pid = holder["run"].result.client_processes[1].pid
            threading.Timer(0.15, os.kill, (pid, signal.SIGKILL)).start()

    run = DistributedEngineRun(cfg, cfg.levels()[0], "postgres", PhaseStarts(kill_in_reads), Placement(processes=2))
    holder["run"] = run
    t0 = time.monotonic()
    result = await run.run()
    assert time.monotonic() - t0 < 60
    assert result.status is Status.FAILED, result.status_text()
    assert result.phase == "read by user id"
    assert "client process 1" in (result.detail or "")
    assert [p.name for p in result.phases if p.checksum][:1] == ["insert profiles"]  # partial results kept
    for p in result.client_processes:
        assert not psutil.pid_exists(p.pid) or psutil.Process(p.pid).status() == psutil.STATUS_ZOMBIE


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@needs_postgres
@pytest.mark.slow
@pytest.mark.anyio
async def test_cluster_started_with_dask_tools(tmp_path: Path) -> None:
    """What a user does on several hosts, on 127.0.0.1: `dask scheduler`, then `dask worker`
    processes pointed at it; asyncbench connects with the scheduler's address."""
    expected = await single_process_checksums(tmp_path, "memory", 2)
    dask = str(Path(sys.executable).with_name("dask"))
    port = _free_port()
    address = f"tcp://127.0.0.1:{port}"
    procs = [
        subprocess.Popen([dask, "scheduler", "--host", "127.0.0.1", "--port", str(port), "--no-dashboard"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True),
    ]
    try:
        procs.append(
            subprocess.Popen([dask, "worker", address, "--nworkers", "2", "--nthreads", "1", "--host", "127.0.0.1",
                              "--no-dashboard"], cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                             start_new_session=True)
        )
        cfg = quick_cfg(tmp_path, "postgres", 2)
        with anyio.fail_after(120):
            result = await DistributedEngineRun(cfg, cfg.levels()[0], "postgres", ObserverGroup(), Placement(processes=2, cluster=address)).run()
        assert result.ok, (result.status_text(), result.notes)
        assert [p.checksum for p in result.phases] == expected
        assert len(result.client_processes) == 2
        assert address in result.facts.cluster["client processes"]
    finally:
        for p in reversed(procs):
            os.killpg(p.pid, signal.SIGTERM)
        for p in reversed(procs):
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()


@pytest.mark.anyio
@pytest.mark.parametrize("arrivals", ["uniform", "poisson"])
async def test_a_client_process_schedules_its_workers_as_one_process_would(tmp_path: Path, arrivals: str) -> None:
    """Under a rate, the workers one client process hosts (here 2 and 3 of P4, process 1
    of 2: the memory engine's store is its own, so the phase is the insert) get exactly
    the intended times of WorkerSchedule(rate, release, w, P, seed, phase): the same
    schedule as the single-process loop's, from the release instant; the batches shipped
    carry them all."""
    from asyncbench.rate import Arrivals, Rate
    from asyncbench.run.phase.schedule import WorkerSchedule
    from asyncbench.run.scale_out.batch_lines import unpack

    cfg = quick_cfg(tmp_path, "memory", 4)
    cfg = dataclasses.replace(cfg, phases=[dataclasses.replace(cfg.phases[0], rate=20_000.0, arrivals=arrivals)])
    actor = ClientProcessActor()
    await actor.start(to_json(cfg), "memory", PROFILES, 4, 1, 2)
    shipped: list[dict] = []
    actor._send = shipped.append  # what Worker.log_event would carry
    try:
        await actor.open(True)
        await actor.prepare(0)
        release_at = time.time() + 0.01
        part = await actor.go(release_at)
        await actor.close()
    finally:
        await actor.stop()
    batches = [b for msg in shipped for b in unpack(msg)]
    assert part.batches == len(batches) and sum(b[2] for b in batches) == sum(w.items for w in part.workers) == 500
    start = round(release_at * 1e9) - shipped[0]["offset_ns"]  # the release on the process's clock (± its reading)
    for w in (2, 3):
        got = np.concatenate([b[5] for b in batches if b[0] == w])
        want = WorkerSchedule(Rate(20_000.0, Arrivals(arrivals)), 0, w, 4, cfg.seed, 0)
        expected = np.array([want.take(2**62, 1)[0] for _ in range(got.size)])
        first = int(got[0]) - int(expected[0])  # the schedule's origin as the process took it
        assert abs(first - start) < 5_000_000
        assert (got - first).tolist() == expected.tolist()


@pytest.mark.slow
@pytest.mark.anyio
async def test_the_local_client_processes_run_without_dasks_malloc_trim_and_fast_tick() -> None:
    """The LocalCluster of --processes gives its worker processes no environment of Dask's
    own: its nanny's MALLOC_TRIM_THRESHOLD_=65536 doubled a 50-row query's client CPU
    (docs/scaling.md); and the event-loop tick is 1 s, not 20 ms."""
    import dask
    from distributed import Client, LocalCluster

    from asyncbench.run.scale_out.distributed import DASK_CONFIG

    def probe() -> tuple[str | None, object]:
        return os.environ.get("MALLOC_TRIM_THRESHOLD_"), dask.config.get("distributed.admin.tick.interval")

    with dask.config.set(DASK_CONFIG):
        async with (
            LocalCluster(n_workers=1, threads_per_worker=1, processes=True, host="127.0.0.1",
                         dashboard_address=None, memory_limit=0, asynchronous=True) as cluster,
            Client(cluster, asynchronous=True) as client,
        ):
            (got,) = (await client.run(probe)).values()
    assert got == (None, "1s")


def test_distributed_is_a_version_the_topic_truncation_was_checked_on() -> None:
    """The coordinator clears its batch-line topic through the scheduler's event broker
    (no public API does it): pyproject.toml bounds distributed's version, and the installed
    one lies in that range."""
    import importlib.metadata

    import distributed
    from packaging.requirements import Requirement

    (req,) = [Requirement(r) for r in importlib.metadata.requires("asyncbench") or [] if r.startswith("distributed")]
    assert req.specifier and any(s.operator == "<" for s in req.specifier), f"no upper bound: {req}"
    assert distributed.__version__ in req.specifier, (distributed.__version__, str(req))


@pytest.mark.slow
@pytest.mark.anyio
async def test_the_coordinator_drops_its_batch_topic_from_the_scheduler() -> None:
    """Events logged on a run's topic are gone from the scheduler once the run unsubscribes
    (on the installed distributed); a broker it cannot truncate is a note, not silence."""
    from distributed import Client, LocalCluster

    from asyncbench.run.scale_out.distributed import _truncate_topic

    async with (
        LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=None,
                     asynchronous=True) as cluster,  # in-process: inproc:// addresses, no network
        Client(cluster, asynchronous=True) as client,
    ):
        cfg = quick_cfg(Path("."), "postgres", 2)
        run = DistributedEngineRun(cfg, cfg.levels()[0], "postgres", ObserverGroup(), Placement(processes=1))
        client.subscribe_topic(run.topic, lambda event: None)
        await client.run(lambda dask_worker: dask_worker.log_event(run.topic, {"x": 1}))
        for _ in range(100):
            if await client.get_events(run.topic):
                break
            await anyio.sleep(0.05)
        assert len(await client.get_events(run.topic)) == 1
        await run._unsubscribe(client)
        assert await client.get_events(run.topic) == ()
        assert not run.result.notes

        class NoBroker:
            pass

        with pytest.raises(RuntimeError, match="no event broker"):
            _truncate_topic(NoBroker(), run.topic)


# --- issue 34: the server the client processes reach, and losing process 0 ---------------


def _dask_cluster(tmp_path: Path, env: dict[str, str], workers: int = 2) -> tuple[str, list[subprocess.Popen]]:
    """`dask scheduler` and `dask worker --nworkers N` on 127.0.0.1, the workers with ``env``
    (as on other hosts, whose environment is their own)."""
    dask = str(Path(sys.executable).with_name("dask"))
    port = _free_port()
    address = f"tcp://127.0.0.1:{port}"
    quiet: dict = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL, "start_new_session": True}
    procs = [subprocess.Popen([dask, "scheduler", "--host", "127.0.0.1", "--port", str(port), "--no-dashboard"], **quiet)]
    procs.append(
        subprocess.Popen(
            [dask, "worker", address, "--nworkers", str(workers), "--nthreads", "1", "--host", "127.0.0.1", "--no-dashboard"],
            cwd=tmp_path, env=env, **quiet,
        )
    )
    return address, procs


def _stop_all(procs: list[subprocess.Popen]) -> None:
    for p in reversed(procs):
        os.killpg(p.pid, signal.SIGTERM)
    for p in reversed(procs):
        try:
            p.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()


def _without_pg(env: dict[str, str]) -> dict[str, str]:
    return {k: v for k, v in env.items() if not k.startswith("PG")}


async def _table_exists(database: str, table: str = "asyncbench.profiles") -> bool:
    import asyncpg

    conn = await asyncpg.connect(
        host=os.environ["PGHOST"], port=int(os.environ.get("PGPORT", "5432")), user=os.environ.get("PGUSER"),
        password=os.environ.get("PGPASSWORD"), database=database,
    )
    try:
        return await conn.fetchval("SELECT to_regclass($1) IS NOT NULL", table)
    finally:
        await conn.close()


@needs_postgres
@pytest.mark.slow
@pytest.mark.anyio
async def test_a_cluster_whose_workers_have_no_database_environment_uses_the_coordinators_server(tmp_path: Path) -> None:
    """`dask worker` processes started without any PG* variable: the coordinator ships the
    connection it resolved (and locked) to every client process, so the run reaches its
    server and gives the memory engine's checksums (before: each worker connected to
    libpq's default, 127.0.0.1:5432)."""
    expected = await single_process_checksums(tmp_path, "memory", 2)
    address, procs = _dask_cluster(tmp_path, _without_pg(dict(os.environ)))
    try:
        cfg = quick_cfg(tmp_path, "postgres", 2)
        with anyio.fail_after(120):
            result = await DistributedEngineRun(
                cfg, cfg.levels()[0], "postgres", ObserverGroup(), Placement(processes=2, cluster=address)
            ).run()
        assert result.ok, (result.status_text(), result.notes)
        assert [p.checksum for p in result.phases] == expected
    finally:
        _stop_all(procs)


@needs_postgres
@pytest.mark.slow
@pytest.mark.anyio
async def test_client_processes_that_would_reach_another_database_are_refused(tmp_path: Path) -> None:
    """With ``client_environment = true`` each client process takes its own environment;
    one that names another database than the coordinator locked is refused before any
    process opens the engine: no table is created there."""
    other = "asyncbench_elsewhere"
    env = {**os.environ, "PGDATABASE": other}
    address, procs = _dask_cluster(tmp_path, env)
    try:
        cfg = quick_cfg(tmp_path, "postgres", 2)
        cfg = dataclasses.replace(cfg, engine_settings={"postgres": {"client_environment": True}})
        with anyio.fail_after(120):
            result = await DistributedEngineRun(
                cfg, cfg.levels()[0], "postgres", ObserverGroup(), Placement(processes=2, cluster=address)
            ).run()
        assert result.status is Status.FAILED, result.status_text()
        assert "would reach another server than the one this run locked" in (result.detail or ""), result.detail
        assert other in (result.detail or "")
        assert not result.phases
    finally:
        _stop_all(procs)


@needs_postgres
@pytest.mark.slow
@pytest.mark.anyio
async def test_losing_client_process_0_still_drops_the_table_and_calls_it_no_more(tmp_path: Path) -> None:
    """Client process 0 killed mid-phase: the coordinator, which holds the run's lock,
    drops the table process 0 would have dropped, and the clean-up does not call the dead
    process (no "not closed"/"not stopped" notes about it)."""
    cfg = quick_cfg(tmp_path, "postgres", 2, timeout_seconds=120.0, counts={"reads": 50_000})
    holder: dict[str, DistributedEngineRun] = {}

    def kill_in_reads(phase: str) -> None:
        if phase == "read by user id":
            pid = holder["run"].result.client_processes[0].pid
            threading.Timer(0.15, os.kill, (pid, signal.SIGKILL)).start()

    run = DistributedEngineRun(cfg, cfg.levels()[0], "postgres", PhaseStarts(kill_in_reads), Placement(processes=2))
    holder["run"] = run
    result = await run.run()
    assert result.status is Status.FAILED, result.status_text()
    assert "client process 0" in (result.detail or "")
    assert not await _table_exists("asyncbench_distributed")
    assert not [n for n in result.notes if n.startswith("client process 0")], result.notes
    assert "store deleted by the coordinator: client process 0 was lost" in result.notes


def test_the_bottleneck_line_blames_a_saturated_machine_not_the_server() -> None:
    """K client processes, the coordinator and the server on 2 cores at load 6-7: no client
    process is 80 % busy, but the machine, not the server, is the limit (issue 34)."""
    from asyncbench.run.capacity.saturation import PhaseLoad, bottleneck_line

    saturated = bottleneck_line([PhaseLoad(busiest=0.45, wait_share=0.35, load_per_cpu=3.3)] * 3)
    assert "the server (or the network) was the limit" not in saturated
    assert "machine-bound in 3 of 3" in saturated and "3.3 per CPU" in saturated and "35%" in saturated
    by_wait = bottleneck_line([PhaseLoad(busiest=0.5, wait_share=0.2, load_per_cpu=0.5)])
    assert "machine-bound in 1 of 1" in by_wait
    idle = bottleneck_line([PhaseLoad(busiest=0.3, wait_share=0.01, load_per_cpu=0.4)])
    assert idle.endswith("the server (or the network) was the limit") and "machine-bound" not in idle


@pytest.mark.anyio
async def test_a_client_process_reports_its_run_queue_wait_and_host_load(tmp_path: Path) -> None:
    """Each phase part carries the process's run-queue wait over the phase and its host's
    load and CPUs: what the coordinator weighs for a saturated machine."""
    cfg = quick_cfg(tmp_path, "memory", 2)
    actor = ClientProcessActor()
    await actor.start(to_json(cfg), "memory", PROFILES, 2, 0, 1)
    try:
        await actor.open(True)
        await actor.prepare(0)
        part = await actor.go(time.time() + 0.01)
        await actor.close()
    finally:
        await actor.stop()
    assert part.wait_seconds is not None and part.wait_seconds >= 0
    assert part.load is not None and part.load >= 0 and part.cpus and part.cpus >= 1
