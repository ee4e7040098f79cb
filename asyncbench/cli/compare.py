"""``python -m asyncbench compare BASE NEW``: is NEW faster, slower, or the same as BASE?

Each side is one or more result JSON files or directories (every ``asyncbench-*.json``
below them); repeats of a phase from every file of a side are pooled. Phases are matched
by identity (kind, stream, count, post-update, and which occurrence of that in the plan),
never by display name, so renamed phases still compare. Per engine and phase the table
shows base, new, ratio and a verdict from :func:`asyncbench.measure.stats.compare` (Welch's test
when both sides have repeats; with one run on a side no winner is called), whether the
checksums are equal, and, first, what differs between the two sides' configurations and
machines (a target rate, P, K, a reused store or an engine setting of an engine both sides
ran: figures that may not compare). A phase paced differently on the two sides (a target
rate against closed loop, or another rate) is named and not compared: its ops/s are the
rate's on one side. A latency table (:mod:`asyncbench.report.latency_compare`) follows,
informational as the cost and operation-kind tables; then, when either side crashed an
engine, the durability table (:mod:`asyncbench.report.durability_compare`): a crash that
lost more acknowledged writes, tore a record or left a store that does not open is a
regression.

The text output fits the terminal (80 columns at least; ``COLUMNS`` honoured): it first
names every engine and phase present on one side only (never compared, never silently
dropped), then one table per engine, and ends with one line per engine: the geometric
mean of its phases' new/base ratios with a 95 % Student t interval of the mean log ratio
over those phases (phases are the sample, so the interval says how consistent the change
is across phases, not how noisy one phase is).

Exit codes: 0 nothing significantly slower than the threshold; 1 something regressed (a
phase slower, or a crash's durability) or a checksum differs; 2 bad input. This is the run's rule (:class:`asyncbench.cli.run.RunOutcome`)
read for a comparison: 1 is "a result to look at" (a run: a failure or disagreeing
checksums; here: a regression or differing checksums), 2 is "nothing was done" (bad input),
and there is no 130 since a comparison is not interrupted half-way with files to keep.

This module is the command line only (flags, messages, exit code); what is compared and
how it is shown live in :mod:`asyncbench.report.compare`.
"""

from __future__ import annotations

import argparse
import re
import sys

import orjson

from asyncbench.measure.stats import exit_code
from asyncbench.report import cost_compare, durability_compare, latency_compare, mix_compare
from asyncbench.report.compare.compared import Compared
from asyncbench.report.compare.differences import differences
from asyncbench.report.compare.inputs import MAX_WALK_ENTRIES, load_side, one_workload
from asyncbench.report.compare.json_doc import json_document
from asyncbench.report.compare.legends import one_sided_lines
from asyncbench.report.compare.markdown import markdown_output
from asyncbench.report.compare.rows import compare_sides, one_sided, paced_apart
from asyncbench.report.compare.side import Side
from asyncbench.report.compare.text import text_output
from asyncbench.result import EXIT_BAD_INPUT, ResultError

__all__ = ["add_arguments", "run"]


#: ``5%``, ``5``, ``2.5 %``: ASCII digits and at most one ``%`` (``float`` alone would take
#: ``٥``, ``1e1`` or ``inf``, and stripping every ``%`` would take ``5%%``).
THRESHOLD = re.compile(r"\s*([0-9]+(?:\.[0-9]*)?|\.[0-9]+)\s*%?\s*", re.ASCII)


def _threshold(text: str) -> float:
    match = THRESHOLD.fullmatch(text)
    if not match:
        raise ValueError("expected a percentage in ASCII digits, such as 5% or 2.5%")
    value = float(match[1])
    if not 0 <= value < 100:
        raise ValueError("must be between 0% and 100%")
    return value / 100


def _engines(text: str | None) -> set[str] | None:
    """``--engine a,b`` as a set (None: every engine); an empty list is refused."""
    if text is None:
        return None
    names = {n.strip() for n in text.split(",") if n.strip()}
    if not names:
        raise ValueError("names no engine")
    return names


def _unknown_engines(engines: set[str] | None, sides: tuple[Side, ...]) -> str | None:
    """The message for ``--engine`` names that are in none of the results, if any."""
    held = {e.engine for side in sides for r in side.runs for e in r.engines}
    unknown = sorted((engines or set()) - held)
    if not unknown:
        return None
    return (
        f"{', '.join(map(repr, unknown))}: in none of the results "
        f"(they hold {', '.join(sorted(held)) or 'no engine'})"
    )


COMPARE_EPILOG = f"""\
BASE and NEW are result JSON files or directories (every asyncbench-*.json below
them), or comma lists of them; the repeats of a phase are pooled per side.
Phases match by what they run (kind, stream, count), not by name. Engines and
phases on one side only are named, never compared. A directory is walked
without following symbolic links; an entry that vanishes or cannot be read is
skipped with a warning, and a tree of more than {MAX_WALK_ENTRIES:_d} entries is refused as
not a results directory (compare / would read the whole filesystem).

verdict per engine and phase, on the median ops/s of each side:
  same     within the threshold
  faster   NEW is faster by more than the threshold and Welch's t test on
  slower   both sides' repeats says so (p < 0.05)
  n.s.     beyond the threshold, but the repeats' spread can explain it
  one run  beyond the threshold, but a side has a single run: no spread to
           test it against, so not called (the threshold alone decides
           nothing)

Settings the two sides measured differently (target rate, P, K, a reused
store, limit, counts, settings of the engines both ran) are named first, before
any table. A phase at a target rate on one side and closed loop (or at another
rate) on the other is named "not compared" and left out of every table.

latency (informational: not part of the exit code): per engine and phase, the
p50, p99 and p99.9 in µs (the response time at a target rate, else the service
time), base against new, with the verdicts above for a time (lower, higher,
same, n.s., one run).

durability (results with a crash): per engine and crash, the acknowledged
writes lost (and torn records) of each side's worst run; more lost, a torn
record or a store that no longer opens on NEW is REGRESSED (part of the exit
code).

summary: per engine, the geometric mean of NEW/BASE ops/s over its compared
phases, with the 95% Student t interval of the mean log ratio (the phases are
the sample: a narrow interval says the change is consistent across phases);
when no phase is faster or slower, "no significant change" and no interval.

exit codes: 0 no phase slower and every checksum equal; 1 at least one phase
slower (as above), a crash's durability regressed or a checksum differs; 2 bad
input (a missing or invalid file, a bad flag, or no engine and phase in common).
"""


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.description = (
        "Compare two benchmark results (or sets of results) phase by phase:\n"
        "is NEW faster, slower or the same as BASE?"
    )
    p.epilog = COMPARE_EPILOG
    p.formatter_class = argparse.RawDescriptionHelpFormatter  # the epilog is laid out by hand
    p.add_argument("base")
    p.add_argument("new")
    p.add_argument(
        "--threshold", default="5%", help="smallest change that counts, ASCII digits and one %% (default 5%%)"
    )
    p.add_argument("--engine", help="only these engines (comma list)")
    out = p.add_mutually_exclusive_group()
    out.add_argument("--markdown", action="store_true", help="a Markdown table")
    out.add_argument("--json", action="store_true", help="machine-readable JSON")


#: Skipped entries named one by one before the rest are counted (``compare`` on a large
#: tree can skip thousands of unreadable ones).
WARNINGS_LISTED = 10


def _warn(warn: list[str]) -> None:
    for line in warn[:WARNINGS_LISTED]:
        print(f"asyncbench: compare: warning: {line}", file=sys.stderr)
    if len(warn) > WARNINGS_LISTED:
        print(f"asyncbench: compare: warning: ... and {len(warn) - WARNINGS_LISTED} more skipped", file=sys.stderr)


def run(args: argparse.Namespace) -> int:
    try:
        threshold = _threshold(args.threshold)
    except ValueError as exc:
        print(f"asyncbench: command line: --threshold: {args.threshold!r}: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    try:
        engines = _engines(args.engine)
    except ValueError as exc:
        print(f"asyncbench: command line: --engine: {args.engine!r}: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    warn: list[str] = []
    try:
        base, new = load_side(args.base, engines, warn), load_side(args.new, engines, warn)
        one_workload(base, new)
    except ResultError as exc:
        _warn(warn)
        print(f"asyncbench: compare: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    _warn(warn)
    unknown = _unknown_engines(engines, (base, new))
    if unknown:
        print(f"asyncbench: command line: --engine: {unknown}", file=sys.stderr)
        return EXIT_BAD_INPUT
    rows = compare_sides(base, new, threshold)
    apart = paced_apart(base, new)
    gone = one_sided(base, new)
    if not rows:
        what = "paced alike " if apart else ""
        print(f"asyncbench: compare: the two sides have no engine and phase {what}in common", file=sys.stderr)
        for line in one_sided_lines(gone, 80) + [a.line() for a in apart]:
            print(f"  {line}", file=sys.stderr)
        return EXIT_BAD_INPUT
    latency = latency_compare.latency_rows(
        base.latency, new.latency, [(r.engine, r.key, r.phase) for r in rows], threshold
    )
    diffs = differences(base, new)
    costs = cost_compare.cost_changes(base.runs, new.runs, engines)
    kinds = mix_compare.kind_changes(base.runs, new.runs, engines)
    crashes = durability_compare.durability_changes(base.runs, new.runs, engines)
    found = Compared(rows, diffs, threshold, gone, apart, latency, costs, kinds, crashes)
    if args.json:
        print(orjson.dumps(json_document(found), option=orjson.OPT_INDENT_2).decode())
    else:
        print(markdown_output(found) if args.markdown else text_output(found))
    checksum_code = 1 if any(r.checksums_equal is False for r in rows) else 0
    durability_code = 1 if any(c.regressed for c in crashes) else 0  # a durability regression fails as a slower phase
    return max(exit_code([r.comparison for r in rows]), checksum_code, durability_code)
