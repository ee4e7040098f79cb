"""``python -m asyncbench compare BASE NEW``: is NEW faster, slower, or the same as BASE?

Each side is one or more result JSON files or directories (every ``asyncbench-*.json``
below them); repeats of a phase from every file of a side are pooled. Phases are matched
by identity (kind, stream, count, post-update, and which occurrence of that in the plan),
never by display name, so renamed phases still compare. Per engine and phase the table
shows base, new, ratio and a verdict from :func:`asyncbench.measure.stats.compare` (Welch's test
when both sides have repeats, the threshold alone otherwise), whether the checksums are
equal, and what differs between the two sides' configurations and machines.

Exit codes: 0 nothing significantly slower than the threshold; 1 something regressed or a
checksum differs; 2 bad input. This is the run's rule (:class:`asyncbench.cli.run.RunOutcome`)
read for a comparison: 1 is "a result to look at" (a run: a failure or disagreeing
checksums; here: a regression or differing checksums), 2 is "nothing was done" (bad input),
and there is no 130 since a comparison is not interrupted half-way with files to keep.
"""

from __future__ import annotations

import argparse
import operator
import sys
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from asyncbench.config import RUN_KEYS
from asyncbench.fs.inputs import InputError, read_input
from asyncbench.measure.stats import Comparison, Verdict, compare, comparison_row, exit_code
from asyncbench.result import EXIT_BAD_INPUT, ResultError, RunResult
from asyncbench.workloads.profile_store.phases import Action

__all__ = ["add_arguments", "load_side", "run"]

PhaseKey = tuple[str, str | None, int | None, bool, int]


@dataclass
class Side:
    """Everything one side pools: per (engine, phase key) its ops/s samples and checksums."""

    files: list[Path] = field(default_factory=list)
    runs: list[RunResult] = field(default_factory=list)
    samples: dict[tuple[str, PhaseKey], list[float]] = field(default_factory=lambda: defaultdict(list))
    checksums: dict[tuple[str, PhaseKey], set[str]] = field(default_factory=lambda: defaultdict(set))
    names: dict[PhaseKey, str] = field(default_factory=dict)


def _phase_keys(run: RunResult) -> list[PhaseKey]:
    seen: dict[tuple, int] = defaultdict(int)
    keys = []
    for spec in run.phases:
        ident = (spec.kind.kind, spec.stream, spec.count, spec.post_update)
        keys.append((*ident, seen[ident]))
        seen[ident] += 1
    return keys


def _files(arg: str) -> list[Path]:
    out: list[Path] = []
    for part in filter(None, arg.split(",")):
        path = Path(part)
        if path.is_dir():
            found = sorted(path.rglob("asyncbench-*.json"))
            if not found:
                raise ResultError(f"{path}: no asyncbench-*.json result under this directory")
            out += found
        elif path.exists():
            out.append(path)
        else:
            raise ResultError(f"{path}: does not exist")
    if not out:
        raise ResultError(f"{arg!r}: names no result file")
    return out


def load_side(arg: str, engines: set[str] | None) -> Side:
    side = Side(files=_files(arg))
    for path in side.files:
        try:
            run = RunResult.from_json(read_input(path))  # a FIFO is refused, not waited on
        except InputError as exc:
            raise ResultError(f"{path}: {exc.reason}") from None
        except ResultError as exc:
            raise ResultError(f"{path}: {exc}") from None
        side.runs.append(run)
        keys = _phase_keys(run)
        for e in run.engines:
            if (engines and e.engine not in engines) or e.warmup:
                continue
            for p in e.phases:
                if p.index >= len(keys):
                    continue
                key = keys[p.index]
                side.names.setdefault(key, p.name)
                if p.checksum:
                    side.checksums[(e.engine, key)].add(p.checksum)
                if p.action is Action.OPERATIONS and p.seconds > 0:
                    side.samples[(e.engine, key)].append(p.ops_per_s)
    return side


def _differences(base: Side, new: Side) -> list[str]:
    """What is not the same between the sides (configuration, machine, software)."""

    def values(side: Side, get: Any) -> str:
        return ", ".join(sorted({str(get(r)) for r in side.runs}))

    # the [run] settings a result records and compare names come from the [run] table
    checks: list[tuple[str, Any]] = [
        (key.compare, operator.attrgetter(key.result))
        for key in RUN_KEYS.values()
        if key.compare is not None and key.result is not None
    ]
    checks += [
        ("counts", lambda r: sorted(r.counts.items())),
        ("compiled kernels", lambda r: r.accelerated),
        ("host", lambda r: r.environment.get("hostname")),
        ("CPU", lambda r: r.environment.get("cpu_model")),
        ("asyncbench", lambda r: (r.environment.get("asyncbench_version"), r.environment.get("git_commit"))),
        ("Python", lambda r: r.environment.get("python_version")),
    ]
    out = []
    for label, get in checks:
        a, b = values(base, get), values(new, get)
        if a != b:
            out.append(f"{label}: base {a}; new {b}")
    settings: dict[str, dict[str, set[tuple[tuple[str, str], ...]]]] = {}
    for label, side in (("base", base), ("new", new)):
        for r in side.runs:
            for e in r.engines:
                settings.setdefault(e.engine, {}).setdefault(label, set()).add(
                    tuple((s.name, s.effective or s.configured) for s in e.facts.settings)
                )
    for engine, sides in settings.items():
        if len(sides) == 2 and sides["base"] != sides["new"]:
            out.append(f"{engine} settings differ")
    return out


@dataclass
class Row:
    engine: str
    phase: str
    comparison: Comparison
    checksums_equal: bool | None


def compare_sides(base: Side, new: Side, threshold: float) -> list[Row]:
    rows = []
    for engine, key in base.samples:
        if (engine, key) not in new.samples:
            continue
        c = compare(base.samples[(engine, key)], new.samples[(engine, key)], threshold)
        a, b = base.checksums.get((engine, key)), new.checksums.get((engine, key))
        equal = (a == b and len(a) == 1) if a and b else None
        rows.append(Row(engine, new.names.get(key, base.names[key]), c, equal))
    return rows


def _render(rows: list[Row], diffs: list[str], fmt_: str, threshold: float) -> str:
    header = ["Engine", "Phase", "Base", "New", "Ratio", "Verdict", "Checksums"]
    table = [
        [
            *comparison_row(r.engine, r.phase, r.comparison),
            {True: "equal", False: "DIFFER", None: "-"}[r.checksums_equal],
        ]
        for r in rows
    ]
    slower = [r for r in rows if r.comparison.verdict is Verdict.SLOWER]
    faster = [r for r in rows if r.comparison.verdict is Verdict.FASTER]
    summary = (
        f"{len(rows)} phases compared (threshold {threshold * 100:g}%): {len(faster)} faster, "
        f"{len(slower)} slower, {len(rows) - len(faster) - len(slower)} same or not significant"
    )
    if slower:
        summary += "; slower: " + ", ".join(f"{r.engine} {r.phase}" for r in slower)
    if any(r.checksums_equal is False for r in rows):
        summary += "; CHECKSUMS DIFFER"
    if fmt_ == "markdown":
        lines = ["| " + " | ".join(header) + " |", "| " + " | ".join("---" for _ in header) + " |"]
        lines += ["| " + " | ".join(c.replace("|", "\\|") for c in row) + " |" for row in table]
        lines += ["", summary]
        lines += [f"- differs: {d}" for d in diffs]
        return "\n".join(lines)
    widths = [max(len(h), *(len(row[i]) for row in table)) if table else len(h) for i, h in enumerate(header)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True))]
    lines += ["  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)) for row in table]
    lines += ["", summary]
    lines += [f"differs: {d}" for d in diffs]
    return "\n".join(lines)


def _threshold(text: str) -> float:
    value = float(text.strip().rstrip("%"))
    if not 0 <= value < 100:
        raise ValueError("must be between 0% and 100%")
    return value / 100


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.epilog = (
        "BASE and NEW are result JSON files or directories, or comma lists of them; repeats "
        "are pooled per side. Exit codes: 0 nothing slower, 1 something significantly slower or a "
        "checksum differs, 2 bad input (the run's rule, applied to a comparison: 1 is a result you "
        "must look at, 2 means nothing was compared)."
    )
    p.add_argument("base")
    p.add_argument("new")
    p.add_argument("--threshold", default="5%", help="smallest change that counts (default 5%%)")
    p.add_argument("--engine", help="only these engines (comma list)")
    out = p.add_mutually_exclusive_group()
    out.add_argument("--markdown", action="store_true", help="a Markdown table")
    out.add_argument("--json", action="store_true", help="machine-readable JSON")


def run(args: argparse.Namespace) -> int:
    try:
        threshold = _threshold(args.threshold)
    except ValueError as exc:
        print(f"asyncbench: command line: --threshold: {args.threshold!r}: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    engines = set(args.engine.split(",")) if args.engine else None
    try:
        base, new = load_side(args.base, engines), load_side(args.new, engines)
    except ResultError as exc:
        print(f"asyncbench: compare: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    rows = compare_sides(base, new, threshold)
    if not rows:
        print("asyncbench: compare: the two sides have no engine and phase in common", file=sys.stderr)
        return EXIT_BAD_INPUT
    diffs = _differences(base, new)
    if args.json:
        doc = {
            "threshold": threshold,
            "rows": [
                {
                    "engine": r.engine,
                    "phase": r.phase,
                    "base": r.comparison.base.to_dict(),
                    "new": r.comparison.new.to_dict(),
                    "ratio": r.comparison.ratio,
                    "change_pct": r.comparison.change_pct,
                    "verdict": r.comparison.verdict.value,
                    "p_value": r.comparison.p_value,
                    "with_spread": r.comparison.with_spread,
                    "checksums_equal": r.checksums_equal,
                }
                for r in rows
            ],
            "differences": diffs,
        }
        print(orjson.dumps(doc, option=orjson.OPT_INDENT_2).decode())
    else:
        print(_render(rows, diffs, "markdown" if args.markdown else "text", threshold))
    checksum_code = 1 if any(r.checksums_equal is False for r in rows) else 0
    return max(exit_code([r.comparison for r in rows]), checksum_code)
