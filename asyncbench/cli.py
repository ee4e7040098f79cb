"""Command line: ``python -m asyncbench [PLAN.toml] [flags]`` and ``python -m asyncbench report RESULT.json``."""

from __future__ import annotations

import argparse
import os
import signal
import sys
from datetime import UTC, datetime
from pathlib import Path

import anyio

from asyncbench import fmt
from asyncbench.config import BenchConfig, ConfigError, apply_run_key, check_paths, check_phase_counts, load
from asyncbench.correctness import judge
from asyncbench.logs import open_log
from asyncbench.observers import JsonLogObserver, Observers
from asyncbench.outputs import result_dir, write_run
from asyncbench.progress import NO_PROGRESS_ENV, terminal_observers
from asyncbench.result import RunResult
from asyncbench.runner import Benchmark

EXIT_OK, EXIT_FAILED, EXIT_BAD_INPUT, EXIT_INTERRUPTED = 0, 1, 2, 130

EPILOG = """\
exit codes: 0 all engines completed and agree; 1 a checksum disagrees, an engine failed or
timed out; 2 bad plan file or flag (nothing is run or written); 130 interrupted (SIGINT or
SIGTERM; the partial report is still written).

examples:
  python -m asyncbench benchmarks/quick.toml --engine memory
  python -m asyncbench benchmarks.toml --engine lsm,rocksdb --profiles 200k
  python -m asyncbench report results/profiles-20000/asyncbench-20261202T120000Z.json
"""


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m asyncbench",
        description="Run the profile-store benchmark plan in a TOML file against storage engines.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "plan", nargs="?", default="benchmarks.toml", help="TOML plan file (default: benchmarks.toml)"
    )
    p.add_argument(
        "--engine", help="engines to run, comma separated: memory, lsm, rocksdb, sqlite, mysql, or all"
    )
    p.add_argument(
        "--profiles", help="profile count(s), e.g. 20k, 2M, 2_000_000 or 1M,2M; rescales default counts"
    )
    p.add_argument("--seed", help="signed 32-bit seed of the generator and the plan")
    p.add_argument("--parallelism", help="concurrent workers per phase (P)")
    p.add_argument("--batch-size", help="operations per batch (one event-loop/thread hop per batch)")
    p.add_argument("--limit", help="rows returned per scan/query")
    p.add_argument("--output", help="directory for results (default from the plan, else ./results)")
    p.add_argument("--data", help="directory for engine data (default from the plan, else ./data)")
    p.add_argument("--timeout-seconds", help="per-engine timeout in seconds")
    p.add_argument("--log-file", help="JSON-lines log (default: OUTPUT/asyncbench-<stamp>.log)")
    p.add_argument(
        "--no-progress",
        action="store_true",
        help="no live progress bars (shown only when stdout is a terminal; the JSON log is unaffected)",
    )
    p.add_argument(
        "--update-latest",
        action="store_true",
        help="after each result is saved, copy its charts to OUTPUT/latest-<chart>.svg and write "
        "OUTPUT/latest.md linking them; with several profile counts the last one written wins",
    )
    p.add_argument(
        "--isolate",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="run each engine in its own child process so peak memory is that engine's alone "
        "(default from the plan: on unless run.isolate = false)",
    )
    # Internal: how the parent starts an isolated engine run.
    for flag in ("--child-run", "--child-engine", "--child-profiles", "--result-file"):
        p.add_argument(flag, help=argparse.SUPPRESS)
    return p


def apply_flags(cfg: BenchConfig, args: argparse.Namespace) -> None:
    """Flags override the file; each is validated like the file's key and named as the flag."""
    where = "command line"

    def number(flag: str, text: str) -> int:
        try:
            return fmt.parse_count(text)
        except (ValueError, IndexError) as exc:
            raise ConfigError(where, flag, str(exc)) from None

    if args.engine is not None:
        apply_run_key(cfg, where, "--engine", "engines", args.engine)
    if args.profiles is not None:
        apply_run_key(
            cfg, where, "--profiles", "profiles", [number("--profiles", t) for t in args.profiles.split(",")]
        )
    if args.seed is not None:
        try:
            seed = int(args.seed.replace("_", ""))
        except ValueError:
            raise ConfigError(where, "--seed", f"{args.seed!r} is not an integer") from None
        apply_run_key(cfg, where, "--seed", "seed", seed)
    for flag, key in (("--parallelism", "parallelism"), ("--batch-size", "batch_size"), ("--limit", "limit")):
        value = getattr(args, key)
        if value is not None:
            apply_run_key(cfg, where, flag, key, number(flag, value))
    if args.timeout_seconds is not None:
        try:
            t = float(args.timeout_seconds.replace("_", ""))
        except ValueError:
            raise ConfigError(
                where, "--timeout-seconds", f"{args.timeout_seconds!r} is not a number"
            ) from None
        apply_run_key(cfg, where, "--timeout-seconds", "timeout_seconds", t)
    if args.isolate is not None:
        cfg.isolate = args.isolate
    for key in ("output", "data"):
        value = getattr(args, key)
        if value is not None:
            apply_run_key(cfg, where, f"--{key}", key, value)
    check_phase_counts(cfg, where)
    check_paths(cfg, where)
    if args.log_file is not None:
        log = Path(args.log_file)
        if log.is_dir():
            raise ConfigError(where, "--log-file", f"{log} is a directory")
        if log.parent.exists() and not log.parent.is_dir():
            raise ConfigError(where, "--log-file", f"{log.parent} is not a directory")


def utc_stamp() -> str:
    """UTC to the millisecond, so two runs started in one second do not share files."""
    now = datetime.now(UTC)
    return now.strftime("%Y%m%dT%H%M%S") + f".{now.microsecond // 1000:03d}Z"


async def _watch_signals(state: dict, scope: anyio.CancelScope) -> None:
    with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        async for signum in signals:
            state["interrupted"] = f"interrupted by {signal.Signals(signum).name}"
            scope.cancel()
            return


def run_benchmark(
    cfg: BenchConfig, log_file: str | None, no_progress: bool = False, update_latest: bool = False
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
    observer = Observers(JsonLogObserver(logger), *([progress] if progress else []), console)
    written: dict[int, tuple[Path, Path]] = {}

    def save(run: RunResult, final: bool = False) -> None:
        directory = result_dir(cfg.output, run.profiles)
        written[run.profiles] = write_run(run, directory, stamp, charts=final)
        if final and update_latest:
            from asyncbench.charts import update_latest as write_latest

            write_latest(run, directory, stamp, cfg.output)

    bench = Benchmark(cfg, observer, started, save, log_path)
    state: dict = {"interrupted": None}

    async def main() -> None:
        async with anyio.create_task_group() as tg:
            tg.start_soon(_watch_signals, state, tg.cancel_scope)
            await bench.run()
            tg.cancel_scope.cancel()

    console.message(f"asyncbench: plan {cfg.source}, engines {', '.join(cfg.engines)}; log: {log_path}")
    observer.run_start(plan=cfg.source, engines=cfg.engines, profiles=cfg.profiles, seed=cfg.seed)
    try:
        anyio.run(main, backend_options=_backend_options())
    except KeyboardInterrupt:  # a second Ctrl-C before the handler ran
        state["interrupted"] = "interrupted by SIGINT"
    code = EXIT_OK
    for run in bench.results:
        run.interrupted = state["interrupted"]
        save(run, final=True)
        verdict = judge(run)
        for line in verdict.failures:
            console.message(line)
        if not verdict.ok or any(e.status.startswith(("Failed", "Timed out")) for e in run.engines):
            code = EXIT_FAILED
        json_path, md_path = written[run.profiles]
        console.message(f"\nreport: {md_path}\nresult: {json_path}")
    observer.run_end(exit_code=code, interrupted=state["interrupted"])
    log_fh.close()
    if state["interrupted"]:
        console.message(f"asyncbench: {state['interrupted']}; partial report written")
        return EXIT_INTERRUPTED
    return code


def child_main(args: argparse.Namespace) -> int:
    """One engine at one profile count, in a child process started by ``ChildEngineRun``."""
    from asyncbench.config import from_json
    from asyncbench.isolation import PartialResultWriter
    from asyncbench.metrics import MemorySampler
    from asyncbench.runner import EngineRun
    from workloads.profile_store.plan import draw_plan

    cfg = from_json(Path(args.child_run).read_bytes())
    profiles = int(args.child_profiles)
    logger, log_fh = open_log(Path(args.log_file))
    plan = draw_plan(cfg.counts_for(profiles), cfg.seed)
    sampler = MemorySampler()
    engine_run = EngineRun(cfg, args.child_engine, plan, Observers(), sampler)
    writer = PartialResultWriter(Path(args.result_file), engine_run.result)
    console, progress = terminal_observers()  # off unless a terminal; --no-progress via the environment
    extra = [progress] if progress else []
    engine_run.observer = Observers(JsonLogObserver(logger), writer, *extra, console)
    state: dict = {"interrupted": None}

    async def main() -> None:
        async with anyio.create_task_group() as tg:
            tg.start_soon(_watch_signals, state, tg.cancel_scope)
            tg.start_soon(sampler.run)
            await engine_run.run()
            tg.cancel_scope.cancel()

    try:
        anyio.run(main, backend_options=_backend_options())
    except KeyboardInterrupt:
        state["interrupted"] = "interrupted by SIGINT"
    writer.engine_end(engine_run.result)
    log_fh.close()
    return EXIT_INTERRUPTED if state["interrupted"] else EXIT_OK


def _backend_options() -> dict:
    try:
        import uvloop

        return {"loop_factory": uvloop.new_event_loop}
    except ImportError:
        return {}


def report_command(argv: list[str]) -> int:
    p = argparse.ArgumentParser(
        prog="python -m asyncbench report",
        description="Re-render the Markdown report (and charts) of a saved result JSON, beside it.",
    )
    p.add_argument("result", help="an asyncbench-<stamp>.json written by a run")
    args = p.parse_args(argv)
    path = Path(args.result)
    try:
        run = RunResult.from_json(path.read_bytes())
    except FileNotFoundError:
        print(f"asyncbench: {path}: file: does not exist", file=sys.stderr)
        return EXIT_BAD_INPUT
    except (ValueError, TypeError) as exc:
        print(f"asyncbench: {path}: result: not an asyncbench result ({exc})", file=sys.stderr)
        return EXIT_BAD_INPUT
    stamp = path.stem.removeprefix("asyncbench-")
    _, md = write_run(run, path.parent, stamp)
    print(f"report: {md}")
    return EXIT_OK if judge(run).ok else EXIT_FAILED


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["report"]:
        return report_command(argv[1:])
    args = build_parser().parse_args(argv)
    if args.child_run:
        return child_main(args)
    try:
        cfg = load(args.plan)
        apply_flags(cfg, args)
    except ConfigError as exc:
        print(f"asyncbench: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    return run_benchmark(cfg, args.log_file, args.no_progress, args.update_latest)
