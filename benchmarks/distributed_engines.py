"""Dask distributed against Ray as the engine under ``--processes``/``--cluster``: the
figures the choice rests on (docs/scaling.md), measured on this machine.

For K client processes on this host: start-up (cluster up and K actors ready), the memory
of the K worker processes (and of the scheduler/raylet side), and per "phase" (one call
to each of the K actors, as the runner makes per phase): the round trip of an empty
phase (the per-phase overhead) and the skew of the calls' arrival in the K processes
(``perf_counter`` is CLOCK_MONOTONIC, one clock for every process on a host).

    python benchmarks/distributed_engines.py dask 4      # needs `distributed`
    python benchmarks/distributed_engines.py ray 4       # needs `ray`

Each run prints one JSON line; interleave runs of both and compare medians.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import sys
import time

import psutil

PHASES = 50


class Probe:
    """The actor: records when a phase call arrived (this process's monotonic clock)."""

    def pid(self) -> int:
        return os.getpid()

    def arrive(self, sent: float) -> float:
        return time.perf_counter()


def _tree_rss(pids: list[int]) -> int:
    total = 0
    for pid in pids:
        with contextlib.suppress(psutil.Error):
            total += psutil.Process(pid).memory_info().rss
    return total


def _descendants_rss() -> tuple[int, int]:
    me = psutil.Process()
    kids = me.children(recursive=True)
    return len(kids), sum(k.memory_info().rss for k in kids if k.is_running())


def _phases(call_all) -> tuple[list[float], list[float]]:
    overhead, skew = [], []
    for _ in range(PHASES):
        t0 = time.perf_counter()
        arrivals = call_all(t0)
        overhead.append(time.perf_counter() - t0)
        skew.append(max(arrivals) - min(arrivals))
    return overhead, skew


def run_dask(k: int) -> dict:
    from distributed import Client, LocalCluster

    t0 = time.perf_counter()
    cluster = LocalCluster(n_workers=k, threads_per_worker=1, processes=True, host="127.0.0.1",
                           dashboard_address=None)
    client = Client(cluster)
    workers = list(client.scheduler_info()["workers"])
    actors = [client.submit(Probe, actor=True, workers=[w], pure=False).result() for w in workers]
    pids = [a.pid().result() for a in actors]
    startup = time.perf_counter() - t0
    overhead, skew = _phases(lambda sent: [f.result() for f in [a.arrive(sent) for a in actors]])
    procs, rss_all = _descendants_rss()
    out = dict(engine="dask", k=k, startup_s=startup, worker_rss_mib=_tree_rss(pids) / 2**20,
               all_children=procs, children_rss_mib=rss_all / 2**20,
               overhead_ms_median=statistics.median(overhead) * 1e3,
               skew_ms_median=statistics.median(skew) * 1e3, skew_ms_max=max(skew) * 1e3)
    t1 = time.perf_counter()
    client.close()
    cluster.close()
    out["shutdown_s"] = time.perf_counter() - t1
    return out


def run_ray(k: int) -> dict:
    import ray

    t0 = time.perf_counter()
    ray.init(num_cpus=k, include_dashboard=False, _node_ip_address="127.0.0.1", log_to_driver=False)
    Remote = ray.remote(num_cpus=1)(Probe)
    actors = [Remote.remote() for _ in range(k)]
    pids = ray.get([a.pid.remote() for a in actors])
    startup = time.perf_counter() - t0
    overhead, skew = _phases(lambda sent: ray.get([a.arrive.remote(sent) for a in actors]))
    procs, rss_all = _descendants_rss()
    out = dict(engine="ray", k=k, startup_s=startup, worker_rss_mib=_tree_rss(pids) / 2**20,
               all_children=procs, children_rss_mib=rss_all / 2**20,
               overhead_ms_median=statistics.median(overhead) * 1e3,
               skew_ms_median=statistics.median(skew) * 1e3, skew_ms_max=max(skew) * 1e3)
    t1 = time.perf_counter()
    ray.shutdown()
    out["shutdown_s"] = time.perf_counter() - t1
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("engine", choices=("dask", "ray"), help="distributed engine to measure")
    parser.add_argument("processes", type=int, help="K: client processes (actors) to start")
    args = parser.parse_args()
    if args.processes < 1:
        parser.error("processes must be at least 1")
    figures = (run_dask if args.engine == "dask" else run_ray)(args.processes)
    print(json.dumps({key: round(v, 3) if isinstance(v, float) else v for key, v in figures.items()}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
