"""``python -m asyncbench [run] PLAN.toml [flags]``: the run command's arguments, and what
turns them into a validated config and a run.

``run`` is the default command (``python -m asyncbench PLAN.toml`` is ``python -m asyncbench
run PLAN.toml``). Its flags are the [run] table's (:data:`asyncbench.config.RUN_KEYS`) plus
the run's own options; each flag is validated like the file's key and named as the flag.
The stop signals are installed before the plan is even read, so no signal takes its
default action from here on. Once the flags are in, the config is checked whole by
:func:`asyncbench.run.checks.validate.validate` (what a config built in code gets too); the
checks of the run's own options (``--check-reference``, ``--require-accelerator``) are
:mod:`asyncbench.run.checks.preflight`'s.
"""

from __future__ import annotations

import argparse
import sys
import textwrap

from asyncbench.config import RUN_KEYS, BenchConfig, Bool, ConfigError, apply_run_key, load
from asyncbench.config.run_keys import one_spelling
from asyncbench.dirs.paths import check_run_paths
from asyncbench.result import EXIT_BAD_INPUT, EXIT_OK
from asyncbench.run.checks.validate import validate
from asyncbench.run.observe.signals import StopSignals

__all__ = ["EPILOG", "add_arguments", "apply_flags", "epilog", "run"]

EPILOG = """\
exit codes: 0 all engines completed and agree; 1 a checksum disagrees, an engine
failed or timed out, or a result could not be written; 2 bad plan file, flag or
path, or the data or output directory is in use by another run (nothing is run);
130 interrupted (SIGINT, SIGTERM or SIGHUP: the partial report is still written;
Ctrl-C three times forces an exit).

stable operations: a phase's operations depend on the seed, the profile count
and the counts; never on the phase list. Changing a count under [counts]
re-draws that stream and every stream drawn after it (reads, email_reads,
queries/ranges, updates, post_reads, post_email_reads, post_queries).

{engines}
  python -m asyncbench engines   every engine with its settings and defaults

examples:
  python -m asyncbench benchmarks/quick.toml --engine {first}
  python -m asyncbench benchmarks.toml --engine {pair} --records 200k
  python -m asyncbench report results/profiles-20000-p1/asyncbench-<stamp>.json
  python -m asyncbench compare results/base results/new
"""

def epilog() -> str:
    """The run command's epilog: exit codes, stable operations, engines and examples."""
    from asyncbench.engines import BUILTIN, PLUGINS, REGISTRY

    first, second = list(BUILTIN)[:2]  # no engine imported for --help
    return EPILOG.format(
        first=first,
        pair=f"{first},{second}",
        engines=textwrap.fill(  # the help fits 80 columns
            "engines: "
            + ", ".join(n for n in REGISTRY if n not in PLUGINS)
            + (f"; plug-ins: {', '.join(sorted(PLUGINS))}" if PLUGINS else ""),
            80,
            subsequent_indent="  ",
        ),
    )


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The run command's arguments: the plan, one flag per [run] key, and the run's options."""
    p.epilog = epilog()
    p.add_argument(
        "plan", nargs="?", help="TOML plan file; without one, usage and the plans found here are printed"
    )
    p.add_argument(
        "--yes",
        action="store_true",
        help="start without asking, even when the estimate is over 10 minutes (asked only on a terminal)",
    )
    add_run_key_flags(p)
    p.add_argument("--log-file", help="JSON-lines log (default: OUTPUT/asyncbench-<stamp>.log)")
    p.add_argument(
        "--no-progress",
        action="store_true",
        help="no live progress bars (shown only when stdout is a terminal; the JSON log is unaffected)",
    )
    p.add_argument(
        "--quiet",
        action="store_true",
        help="no status line on stderr every 10 s (printed only when stdout is not a terminal)",
    )
    p.add_argument(
        "--update-latest",
        action="store_true",
        help="after each result is saved, copy its charts to OUTPUT/latest-<chart>.svg and write "
        "OUTPUT/latest.md linking them; with several record counts the last one written wins",
    )
    p.add_argument(
        "--check-reference",
        action="store_true",
        help="exit 1 when a checksum differs from the published reference of this configuration "
        "(refused, exit 2, for a configuration without one)",
    )
    p.add_argument(
        "--csv",
        action="store_true",
        help="also write asyncbench-<stamp>.csv: one row per engine x phase (throughput median and "
        "spread, latency percentiles, checksum), and asyncbench-<stamp>-series.csv: each operation "
        "phase second by second",
    )
    p.add_argument(
        "--check-rate",
        action="store_true",
        help="a phase run at a target rate that achieved more than 5 %% less gates the exit status: 1 when "
        "the engine missed it, 3 when the client did (docs/verdicts.md)",
    )
    p.add_argument(
        "--require-accelerator",
        action="store_true",
        help="refuse to run (exit 2) when the compiled workload kernels are not built",
    )
    p.add_argument("--keep-data", action="store_true", help="the same as --no-clean-data")
    p.add_argument(
        "-P",
        dest="ycsb_file",
        metavar="FILE",
        help="the plan, YCSB's way: a YCSB workload file (Java properties) run directly, or a plan; "
        "a bare name (workloadb) is the shipped benchmarks/ycsb/workloadb.toml",
    )
    p.add_argument(
        "-p",
        dest="ycsb_properties",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="set a YCSB property of the plan (repeatable), as YCSB's -p: recordcount, operationcount, "
        "the proportions, requestdistribution, fieldcount, threadcount (parallelism), target (rate)...",
    )
    p.add_argument(
        "--format",
        choices=("ycsb",),
        help="ycsb: also print YCSB's text summary ([OVERALL], [READ], ... per engine and phase) at the end",
    )


def add_run_key_flags(p: argparse.ArgumentParser) -> None:
    """One flag per ``[run]`` key that has one, from the table (asyncbench.config.RUN_KEYS)."""
    from asyncbench.engines import REGISTRY

    for key in RUN_KEYS.values():
        if key.flag is None:
            continue
        if isinstance(key.type, Bool):
            p.add_argument(key.flag, action=argparse.BooleanOptionalAction, default=None, help=key.help)
        elif key.name == "engines":
            p.add_argument(key.flag, help=f"engines to run, comma separated: {', '.join(REGISTRY)}, or all")
        else:
            p.add_argument(key.flag, help=key.help, metavar=key.metavar)
        for alias in key.flag_aliases:  # its own dest: apply_flags refuses both spellings at once
            p.add_argument(alias, help=f"the same as {key.flag}", metavar=key.metavar or key.dest.upper())


def apply_flags(cfg: BenchConfig, args: argparse.Namespace) -> None:
    """Flags override the file; each is validated like the file's key and named as the flag."""
    where = "command line"
    if args.keep_data and args.clean_data:
        raise ConfigError(where, "--keep-data", "contradicts --clean-data")
    if args.keep_data:
        args.clean_data = False
    given = _flags_given(args)
    one_spelling(where, given, flags=True)
    for key in RUN_KEYS.values():
        for flag in (key.flag, *key.flag_aliases) if key.flag else ():
            value = given.get(flag)
            if value is None:
                continue
            if isinstance(value, str):
                value = key.type.from_text(where, flag, value)
            apply_run_key(cfg, where, flag, key.name, value)
    if cfg.reuse_data and args.clean_data:  # a reused store is never deleted (asyncbench.run.reuse.reuse)
        raise ConfigError(where, "--clean-data", "contradicts reusing the stores (--reuse-data or run.reuse_data)")
    cfg.check_rate = bool(getattr(args, "check_rate", False))
    if args.update_latest and not cfg.charts:  # latest-*.svg are copies of the charts this run would not draw
        raise ConfigError(where, "--update-latest", "copies the run's charts, which --no-charts (or run.charts = false) leaves undrawn")
    latest = []
    if args.update_latest:
        from asyncbench.dirs.paths import output_run_dirs
        from asyncbench.report.outputs import latest_files

        latest = latest_files(cfg.output, output_run_dirs(cfg))
    check_run_paths(cfg, args.log_file, latest, where)
    # the checks a config built in code runs too, naming the flags that set a value
    validate(cfg, flags={k.name: f for k in RUN_KEYS.values() for f in given if f in (k.flag, *k.flag_aliases)})


def _flags_given(args: argparse.Namespace) -> dict[str, object]:
    """Each [run] key's flag (or other spelling of it) given on the command line: its value."""
    given: dict[str, object] = {}
    for key in RUN_KEYS.values():
        for flag in (key.flag, *key.flag_aliases) if key.flag else ():
            dest = key.dest if flag == key.flag else flag.lstrip("-").replace("-", "_")  # argparse's
            value = getattr(args, dest, None)
            if value is not None:
                given[flag] = value
    return given


def run(args: argparse.Namespace) -> int:
    """The run command: stop signals first, then the config, the checks, the estimate, the run."""
    stop = StopSignals()
    stop.install()  # before anything runs: no signal may take its default action from here on
    try:
        return _run(args, stop)
    finally:
        stop.restore()


def _load_plan(args: argparse.Namespace) -> BenchConfig:
    """The positional plan, or YCSB's way (``-P FILE``, ``-p KEY=VALUE``: its notes printed)."""
    if args.ycsb_file is None and not args.ycsb_properties:
        return load(args.plan)
    if args.ycsb_file is not None and args.plan is not None:
        raise ConfigError("command line", "-P", f"a second plan beside {args.plan!r}: give the plan or -P FILE")
    from asyncbench.config.native import load_with_properties

    cfg, notes = load_with_properties(args.ycsb_file or args.plan, args.ycsb_properties)
    for note in notes:
        print(f"asyncbench: note: {note}", file=sys.stderr)
    return cfg


def _run(args: argparse.Namespace, stop: StopSignals) -> int:
    if args.plan is None and args.ycsb_file is None:
        from asyncbench.cli.plans import usage

        print(usage(args.parser), file=sys.stderr)
        return EXIT_BAD_INPUT
    try:
        cfg = _load_plan(args)
        apply_flags(cfg, args)
        from asyncbench.run.checks import preflight

        if args.check_reference:
            preflight.check_published(cfg)
        if args.require_accelerator:
            preflight.check_accelerator(cfg)
    except ConfigError as exc:
        print(f"asyncbench: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    from asyncbench.cli.run import confirm_start, run

    if not confirm_start(cfg, args.yes):
        return EXIT_OK
    if args.quiet:  # engine child processes inherit it, as they do --no-progress
        import os

        from asyncbench.run.observe.status import QUIET_ENV

        os.environ[QUIET_ENV] = "1"
    return run(
        cfg,
        args.log_file,
        args.no_progress,
        args.update_latest,
        stop,
        csv=args.csv,
        check_reference=args.check_reference,
        check_rate=args.check_rate,
        summary_format=args.format,
    )
