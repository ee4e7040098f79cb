"""``python -m asyncbench report RESULT.json``: re-render a saved result's report (Markdown and
HTML) and charts.

``--output DIR`` writes them into DIR instead of beside the JSON. It never modifies its
input: the JSON is read (only if it is a regular file: a FIFO or a
device is refused, not waited on), and the Markdown and SVGs beside it are written only
where nothing is, or where an asyncbench report or chart of the same name is, as asyncbench
left it (its marker, and its entry in the directory's ledger: a user's annotated copy, edit
or hard link of one is not); anything else there is left alone and the command exits 2.

``--format ycsb`` writes nothing: it prints YCSB's text summary of the result
(:mod:`asyncbench.report.ycsb_text`: ``[OVERALL], RunTime(ms), ...`` per engine and phase),
which YCSB users' scripts parse.

Its exit status is the saved run's (as the run exited: 1 when an engine failed or timed out
or the checksums disagree), and a non-zero status always comes with its reason on stderr:
a report re-rendered without a word and exit 1 read as the report command failing.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path

from asyncbench.config import RUN_KEYS, ConfigError, PhaseSelection, selected_phases
from asyncbench.fs.inputs import InputError, read_input
from asyncbench.fs.ownership import NotOwned
from asyncbench.measure.correctness import Verdict, judge
from asyncbench.report import tracebacks
from asyncbench.report.outputs import html_path, write_run
from asyncbench.result import EXIT_BAD_INPUT, EXIT_FAILED, EXIT_OK, ResultError, RunResult, exit_code

__all__ = ["add_arguments", "run"]


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("result", help="an asyncbench-<stamp>.json written by a run")
    p.add_argument("--over-time", help=RUN_KEYS["over_time"].help)
    p.add_argument(
        "--format",
        choices=("markdown", "ycsb"),
        default="markdown",
        help="markdown (default): re-render the report and charts; ycsb: print YCSB's text summary "
        "([OVERALL], [READ], ... lines per engine and phase) on standard output, writing nothing",
    )
    p.add_argument(
        "--output",
        metavar="DIR",
        help="write the report and charts into DIR (created if missing) instead of beside the JSON",
    )
    p.epilog = (
        "exit codes: 0 the saved run passed; 1 the saved run failed (an engine failed or timed "
        "out, or checksums disagree: the reason is printed; the report is written all the same), "
        "or the report could not be written; 2 bad input (not a result, a bad flag, a file in the "
        "way that is not asyncbench's)."
    )


def run(args: argparse.Namespace) -> int:
    path = Path(args.result)
    try:
        run = RunResult.from_json(read_input(path))
    except InputError as exc:
        print(f"asyncbench: {path}: file: {exc.reason}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except ResultError as exc:
        print(f"asyncbench: {path}: result: not an asyncbench result ({exc})", file=sys.stderr)
        return EXIT_BAD_INPUT
    if args.over_time is not None:
        selection = PhaseSelection()  # the over_time row's type, read as run reads its flag
        try:
            words = selection.read("command line", "--over-time", selection.from_text("command line", "--over-time", args.over_time))
            chosen = selected_phases(
                words, [(p.kind.kind, p.name, p.sweep) for p in run.phases], run.workload_impl.phases, "command line", "--over-time"
            )
        except ConfigError as exc:
            print(f"asyncbench: {exc}", file=sys.stderr)
            return EXIT_BAD_INPUT
        run.phases = [dataclasses.replace(p, over_time=True) if i in chosen else p for i, p in enumerate(run.phases)]
    if args.format == "ycsb":
        from asyncbench.report.ycsb_text import ycsb_lines

        lines = ycsb_lines(run)
        if not lines:
            print(f"asyncbench: {path}: no phase of the result ran operations", file=sys.stderr)
        sys.stdout.write("".join(f"{line}\n" for line in lines))
        return _saved_status(run)
    stamp = path.stem.removeprefix("asyncbench-")
    where = path.parent
    if args.output is not None:
        where = Path(args.output)
        if where.exists() and not where.is_dir():
            print(f"asyncbench: command line: --output: {where} is not a directory", file=sys.stderr)
            return EXIT_BAD_INPUT
    try:
        _, md = write_run(run, where, stamp, write_json=False)
    except NotOwned as exc:
        print(f"asyncbench: {exc}; re-render from a copy of the JSON in another directory", file=sys.stderr)
        return EXIT_BAD_INPUT
    except OSError as exc:
        print(f"asyncbench: cannot write the report beside {path}: {exc}", file=sys.stderr)
        return EXIT_FAILED
    traced = f"\ntraceback: {tracebacks.traceback_path(md)}" if tracebacks.failed_engines(run) else ""
    print(f"report: {md}\nhtml:   {html_path(md)}{traced}")
    return _saved_status(run)


def _saved_status(run: RunResult) -> int:
    """The saved run's exit status, with its reason on stderr when it is not 0."""
    verdict = judge(run)
    code = exit_code([run], verdict.ok, interrupted=False)
    if code != EXIT_OK:
        print(f"asyncbench: exit {code}: {_why_failed(run, verdict)}", file=sys.stderr)
    return code


def _why_failed(run: RunResult, verdict: Verdict) -> str:
    """Why the saved run's exit status is not 0: each engine that failed or timed out (its
    status line), each checksum mismatch, as the run said them."""
    reasons = [f"{e.engine}: {e.status_text()}" for e in run.engines if e.broken]
    reasons += verdict.failures
    return "the saved run failed (the status it exited with): " + "; ".join(reasons or ["the checksums disagree"])

