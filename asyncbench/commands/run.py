"""``python -m asyncbench PLAN.toml``: run a validated plan and write its results."""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path

import anyio

from asyncbench.aggregate import throughput_stats, unstable_phases
from asyncbench.config import BenchConfig
from asyncbench.correctness import judge
from asyncbench.csv_export import write_csv
from asyncbench.logs import open_log
from asyncbench.observers import JsonLogObserver, ObserverGroup
from asyncbench.outputs import result_dir, write_run
from asyncbench.progress import NO_PROGRESS_ENV, terminal_observers
from asyncbench.result import RunResult, exit_code
from asyncbench.runner import Benchmark
from asyncbench.signals import backend_options, watch_signals
from asyncbench.stats import noise_advice, snapshot
from workloads.profile_store import kernels

__all__ = ["confirm_start", "run", "utc_stamp"]


def confirm_start(cfg: BenchConfig, yes: bool, stdin=None, stdout=None) -> bool:
    """Print the plan's estimate; on a terminal, ask before a run estimated over 10 minutes."""
    import sys

    from asyncbench.estimate import ASK_ABOVE_SECONDS, duration, estimate

    stdin, stdout = stdin or sys.stdin, stdout or sys.stdout
    est = estimate(cfg)
    print("\n".join(est.lines(cfg)), file=stdout, flush=True)
    long = est.seconds is not None and est.seconds > ASK_ABOVE_SECONDS
    if yes or not long or not (stdin.isatty() and stdout.isatty()):
        return True
    print(f"Start this run of about {duration(est.seconds)}? [y/N] ", end="", file=stdout, flush=True)
    answer = stdin.readline().strip().lower()
    if answer in ("y", "yes"):
        return True
    print("asyncbench: not started (pass --yes to skip this question)", file=stdout)
    return False


def utc_stamp() -> str:
    """UTC to the millisecond, so two runs started in one second do not share files."""
    now = datetime.now(UTC)
    return now.strftime("%Y%m%dT%H%M%S") + f".{now.microsecond // 1000:03d}Z"


def run(
    cfg: BenchConfig,
    log_file: str | None,
    no_progress: bool = False,
    update_latest: bool = False,
    csv: bool = False,
    check_reference: bool = False,
) -> int:
    stamp = utc_stamp()
    started = datetime.now(UTC).isoformat(timespec="seconds")
    cfg.output.mkdir(parents=True, exist_ok=True)
    log_path = Path(log_file) if log_file else cfg.output / f"asyncbench-{stamp}.log"
    logger, log_fh = open_log(log_path)
    if no_progress:  # engine child processes inherit the environment
        os.environ[NO_PROGRESS_ENV] = "1"
    console, progress = terminal_observers(no_progress)  # console lines print above the bars
    # bars first, so a finished phase's bar is gone before its console line is printed
    observer = ObserverGroup(JsonLogObserver(logger), *([progress] if progress else []), console)
    written: dict[tuple[int, int], tuple[Path, Path]] = {}

    def save(result: RunResult, final: bool = False) -> None:
        result.throughput = throughput_stats(result)
        if final and cfg.repeat - cfg.warmup > 1:
            result.environment["noise_advice"] = noise_advice(snapshot(0.1))
        directory = result_dir(cfg.output, result.profiles, result.parallelism)
        written[result.profiles, result.parallelism] = write_run(result, directory, stamp, charts=final)
        if final and csv:
            write_csv(result, directory / f"asyncbench-{stamp}.csv")
        if final and update_latest:
            from asyncbench.charts import update_latest as write_latest

            write_latest(result, directory, stamp, cfg.output)

    bench = Benchmark(cfg, observer, started, save, log_path)
    state: dict = {"interrupted": None}

    async def main() -> None:
        async with anyio.create_task_group() as tg:
            tg.start_soon(watch_signals, state, tg.cancel_scope)
            await bench.run()
            tg.cancel_scope.cancel()

    console.message(f"asyncbench: engines {', '.join(cfg.engines)}\n  log: {log_path}")
    if not kernels.ACCELERATED:
        console.message(f"asyncbench: WARNING: {kernels.status_line()}")
    planned = [result_dir(cfg.output, n, p) / f"asyncbench-{stamp}" for n, p in cfg.levels()]
    observer.run_start(
        plan=cfg.source,
        engines=cfg.engines,
        profiles=cfg.profiles,
        parallelism=cfg.parallelisms,
        seed=cfg.seed,
        log=str(log_path),
        results=[f"{base}.json" for base in planned],
        reports=[f"{base}.md" for base in planned],
    )
    try:
        anyio.run(main, backend_options=backend_options())
    except KeyboardInterrupt:  # a second Ctrl-C before the handler ran
        state["interrupted"] = "interrupted by SIGINT"
    agree = True
    for result in bench.results:
        result.interrupted = state["interrupted"]
        result.environment["load_avg_end"] = list(os.getloadavg())
        save(result, final=True)
        verdict = judge(result)
        for line in verdict.failures:
            console.message(line)
        for line in verdict.lines:
            if "published reference" in line:
                console.message(line)
        agree = agree and verdict.ok
        if check_reference and verdict.published_mismatch:
            agree = False
        for engine, phase, summary in unstable_phases(result):
            console.message(f"asyncbench: unstable: {engine}, {phase}: {summary.format()} (spread over 10%)")
        if unstable_phases(result):
            for advice in result.environment.get("noise_advice", []):
                console.message(f"  {advice}")
        json_path, md_path = written[result.profiles, result.parallelism]
        console.message(f"\nreport: {md_path}\nresult: {json_path}")
    code = exit_code(bench.results, agree, state["interrupted"] is not None)
    observer.run_end(
        exit_code=code,
        interrupted=state["interrupted"],
        results=[str(j) for j, _ in written.values()],
        reports=[str(m) for _, m in written.values()],
    )
    log_fh.close()
    if state["interrupted"]:
        console.message(f"asyncbench: {state['interrupted']}; partial report written")
    return code
