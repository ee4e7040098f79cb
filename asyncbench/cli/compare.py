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
informational as the cost and operation-kind tables.

The text output fits the terminal (80 columns at least; ``COLUMNS`` honoured): it first
names every engine and phase present on one side only (never compared, never silently
dropped), then one table per engine, and ends with one line per engine: the geometric
mean of its phases' new/base ratios with a 95 % Student t interval of the mean log ratio
over those phases (phases are the sample, so the interval says how consistent the change
is across phases, not how noisy one phase is).

Exit codes: 0 nothing significantly slower than the threshold; 1 something regressed or a
checksum differs; 2 bad input. This is the run's rule (:class:`asyncbench.cli.run.RunOutcome`)
read for a comparison: 1 is "a result to look at" (a run: a failure or disagreeing
checksums; here: a regression or differing checksums), 2 is "nothing was done" (bad input),
and there is no 130 since a comparison is not interrupted half-way with files to keep.
"""

from __future__ import annotations

import argparse
import math
import operator
import re
import shutil
import statistics
import sys
import textwrap
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import orjson

from asyncbench import fmt
from asyncbench.config import RUN_KEYS
from asyncbench.fs.inputs import InputError, read_input
from asyncbench.fs.walk import TooManyEntries, find
from asyncbench.measure.correctness import common_prefix
from asyncbench.measure.stats import Comparison, Verdict, compare, exit_code, t_critical
from asyncbench.report import cost_compare, latency_compare, mix_compare
from asyncbench.result import EXIT_BAD_INPUT, PhaseResult, ResultError, RunResult
from asyncbench.slo import bounds_text
from asyncbench.workload import Action

__all__ = ["add_arguments", "load_side", "run"]

PhaseKey = tuple[str, str | None, int | None, bool, int]


@dataclass
class Side:
    """Everything one side pools: per (engine, phase key) its ops/s samples and checksums."""

    files: list[Path] = field(default_factory=list)
    runs: list[RunResult] = field(default_factory=list)
    samples: dict[tuple[str, PhaseKey], list[float]] = field(default_factory=lambda: defaultdict(list))
    checksums: dict[tuple[str, PhaseKey], set[str]] = field(default_factory=lambda: defaultdict(set))
    #: phases run for a duration: each run stopped elsewhere in the stream, so their
    #: checksums compare only at the common prefix (asyncbench.measure.correctness)
    prefixed: dict[tuple[str, PhaseKey], list[PhaseResult]] = field(default_factory=lambda: defaultdict(list))
    names: dict[PhaseKey, str] = field(default_factory=dict)
    #: per (engine, phase key): how its runs were paced (``2_000/s``, or ``closed loop``)
    pacing: dict[tuple[str, PhaseKey], set[str]] = field(default_factory=lambda: defaultdict(set))
    latency: latency_compare.LatencySamples = field(default_factory=dict)


def _phase_keys(run: RunResult) -> list[PhaseKey]:
    seen: dict[tuple[object, ...], int] = defaultdict(int)
    keys = []
    for spec in run.phases:
        ident = (spec.kind.kind, spec.stream, spec.count, spec.post_update)
        keys.append((*ident, seen[ident]))
        seen[ident] += 1
    return keys


#: A results directory holds a few files per run; a tree with more entries than this is
#: not one (``compare /`` would walk the whole filesystem) and is refused, not walked.
MAX_WALK_ENTRIES = 100_000
RESULT_PATTERN = "asyncbench-*.json"


def _files(arg: str, warn: list[str]) -> list[tuple[Path, bool]]:
    """(path, found by a walk) of every result a side names; what a walk skipped (an
    entry that vanished or cannot be read) goes to ``warn``."""
    out: list[tuple[Path, bool]] = []
    for part in filter(None, arg.split(",")):
        path = Path(part)
        try:
            is_dir, exists = path.is_dir(), path.exists()
        except OSError as exc:  # a name over NAME_MAX or PATH_MAX: pathlib raises, not False
            raise ResultError(f"{_short(path)}: cannot be read: {exc.strerror}") from None
        if is_dir:
            try:
                walk = find(path, RESULT_PATTERN, MAX_WALK_ENTRIES)
            except TooManyEntries as exc:
                raise ResultError(
                    f"{path}: more than {exc.seen:_d} entries below it: not a results directory "
                    f"(name the output directory of a run, or the result files)"
                ) from None
            warn += [f"skipped {_short(p)}: {reason}" for p, reason in walk.skipped]
            if not walk.found:
                raise ResultError(f"{path}: no {RESULT_PATTERN} result under this directory")
            out += [(p, True) for p in walk.found]
        elif exists:
            out.append((path, False))
        else:
            raise ResultError(f"{path}: does not exist")
    if not out:
        raise ResultError(f"{arg!r}: names no result file")
    return out


def _short(path: Path, keep: int = 300) -> str:
    """``path`` for a warning: whole, or its start and end around an ellipsis when longer
    than ``keep`` characters (a path past PATH_MAX would fill the screen)."""
    text = str(path)
    return text if len(text) <= keep else f"{text[: keep // 3]}…{text[-(keep - keep // 3):]}"


def load_side(arg: str, engines: set[str] | None, warn: list[str] | None = None) -> Side:
    """One side's results, pooled; a file found by walking a directory that vanished or
    cannot be read since is skipped (said in ``warn``), one named outright is an error."""
    warn = [] if warn is None else warn
    side = Side()
    for path, walked in _files(arg, warn):
        try:
            run = RunResult.from_json(read_input(path))  # a FIFO is refused, not waited on
        except InputError as exc:
            if walked and exc.errno is not None:
                warn.append(f"skipped {_short(path)}: {exc.reason}")
                continue
            raise ResultError(f"{path}: {exc.reason}") from None
        except ResultError as exc:
            raise ResultError(f"{path}: {exc}") from None
        side.files.append(path)
        side.runs.append(run)
        keys = _phase_keys(run)
        for e in run.engines:
            if (engines and e.engine not in engines) or e.warmup:
                continue
            for p in e.phases:
                if p.index >= len(keys):
                    continue
                key = keys[p.index]
                if p.capacity is not None:  # its searches' capacities, apart from ordinary runs of the phase
                    _capacity_samples(side, e.engine, key, p)
                    continue
                side.names.setdefault(key, p.name)
                if p.checksum and p.prefix is not None:
                    side.prefixed[(e.engine, key)].append(p)
                elif p.checksum:
                    side.checksums[(e.engine, key)].add(p.checksum)
                if p.action is Action.OPERATIONS and p.seconds > 0:
                    side.samples[(e.engine, key)].append(p.ops_per_s)
                    side.pacing[(e.engine, key)].add(_pacing(p))
                    latency_compare.add_phase(side.latency, e.engine, key, p)
    return side


def one_workload(base: Side, new: Side) -> None:
    """Both sides hold results of one workload, or a :class:`ResultError` names the files.

    Phase kinds are a workload's vocabulary: YCSB's ``mixed`` and the profile store's
    ``mixed`` are different phases, and before this check ``compare`` set one against the
    other (and called their checksums different)."""
    first: dict[str, Path] = {}
    for side, label in ((base, "BASE"), (new, "NEW")):
        for path, run in zip(side.files, side.runs, strict=True):
            first.setdefault(run.workload, path)
            if len(first) > 1:
                (a, pa), (b, pb) = first.items()
                raise ResultError(
                    f"the results are of two workloads, {a} ({_short(pa)}) and {b} ({_short(pb)}, in {label}): "
                    "compare compares runs of one workload"
                )


def _pacing(p: PhaseResult) -> str:
    return f"{fmt.count(round(p.open_loop.rate))}/s" if p.open_loop is not None else "closed loop"


def _capacity_samples(side: Side, engine: str, key: PhaseKey, p: PhaseResult) -> None:
    """A searched phase's samples are its searches' capacities (ops/s), keyed apart from
    the phase's ordinary runs and by its bounds: capacities under other bounds are not
    compared. A search that found none (below the range) gives no sample."""
    assert p.capacity is not None
    bounds = bounds_text(p.capacity.slo_ns)
    ckey: PhaseKey = (f"{key[0]} capacity under {bounds}", *key[1:])
    side.names.setdefault(ckey, f"{p.name}: capacity, {bounds}")
    found = [c for c in p.capacity.capacities if c is not None]
    if found:
        side.samples[(engine, ckey)] += found


def _differences(base: Side, new: Side) -> list[str]:
    """What is not the same between the sides (configuration, machine, software)."""

    def values(side: Side, get: Callable[[RunResult], object]) -> str:
        return ", ".join(sorted({str(get(r)) for r in side.runs}))

    # the [run] settings a result records and compare names come from the [run] table
    checks: list[tuple[str, Callable[[RunResult], object]]] = [
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
    checks += [
        ("client processes (K)", lambda r: sorted({len(e.client_processes) or 1 for e in r.engines})),
        ("reused store (--reuse-data)", lambda r: "yes" if "--reuse-data" in r.environment.get("argv", ()) else "no"),
    ]
    out = []
    for label, get in checks:
        a, b = values(base, get), values(new, get)
        if a != b:
            out.append(f"{label}: base {a}; new {b}")
    out += _rates_differ(base, new)
    out += _settings_differ(base, new)
    return out


def _rates(side: Side) -> dict[PhaseKey, str]:
    """Per phase: its target rates over the side's runs and engines ("closed loop" without)."""
    found: dict[PhaseKey, set[str]] = defaultdict(set)
    for r in side.runs:
        keys = _phase_keys(r)
        for e in r.engines:
            for p in e.phases:
                if p.index < len(keys) and p.action is Action.OPERATIONS:
                    found[keys[p.index]].add(_pacing(p))
    return {k: ", ".join(sorted(v)) for k, v in found.items()}


def _rates_differ(base: Side, new: Side) -> list[str]:
    """A phase both sides ran at different target rates (or one of them closed loop)."""
    a, b = _rates(base), _rates(new)
    by_pair: dict[tuple[str, str], list[str]] = {}
    for k in a:
        if k in b and a[k] != b[k]:
            by_pair.setdefault((a[k], b[k]), []).append(new.names.get(k, base.names.get(k, "?")))
    out = []
    for (x, y), names in by_pair.items():  # one line per change, not one per phase
        if len(names) == 1:
            out.append(f"target rate: {names[0]}: base {x}; new {y}")
        else:
            shown = ", ".join(names[:RATE_PHASES_NAMED]) + (
                f" and {len(names) - RATE_PHASES_NAMED} more" if len(names) > RATE_PHASES_NAMED else ""
            )
            out.append(f"target rate: base {x}; new {y} in {len(names)} phases ({shown})")
    return out


#: Phases named in a "target rate" difference shared by many (the rest are counted).
RATE_PHASES_NAMED = 3


def _settings_differ(base: Side, new: Side) -> list[str]:
    """Each engine setting whose value (effective, else configured) differs, by name, of
    the engines both sides compare: an engine on one side only is named as such already,
    and its every setting read "base WAL; new -" (six lines for one absent engine)."""
    both = set(_engines_of(base)) & set(_engines_of(new))
    values: dict[tuple[str, str], dict[str, set[str]]] = {}
    for label, side in (("base", base), ("new", new)):
        for r in side.runs:
            for e in r.engines:
                if e.engine not in both:
                    continue
                for s in e.facts.settings:
                    values.setdefault((e.engine, s.name), {}).setdefault(label, set()).add(
                        str(s.effective or s.configured)
                    )
    out = []
    for (engine, name), sides in values.items():
        a, b = sides.get("base", {"-"}), sides.get("new", {"-"})
        if a != b and ("base" in sides or "new" in sides):
            out.append(f"{engine} {name}: base {', '.join(sorted(a))}; new {', '.join(sorted(b))}")
    return out


@dataclass
class Row:
    engine: str
    phase: str
    comparison: Comparison
    checksums_equal: bool | None
    key: PhaseKey | None = None


@dataclass
class PacedApart:
    """An engine's phase both sides ran, at a target rate on one and closed loop (or at
    another rate) on the other: its ops/s are the rate's on one side and the engine's on the
    other (``224_884 -> 2_000 0.009x``), so it is named, not compared."""

    engine: str
    phase: str
    base: str  # its pacing on each side: "2_000/s", "closed loop" (several: comma list)
    new: str

    def line(self) -> str:
        return f"not compared: {self.engine} {self.phase}: base {self.base}; new {self.new} ({PACED_APART_WHY})"


PACED_APART_WHY = "a phase at a target rate is compared only with one at the same rate"
PACED_APART_HEAD = f"not compared, paced differently ({PACED_APART_WHY}):"


def _paced_apart_lines(apart: list[PacedApart], width: int) -> list[str]:
    """The head, then per engine and change of pacing one entry naming every phase (a
    sweep against a closed-loop run is a dozen phases: one line each said the same)."""
    if not apart:
        return []
    groups: dict[tuple[str, str, str], list[str]] = {}
    for a in apart:
        groups.setdefault((a.engine, a.base, a.new), []).append(a.phase)
    lines = textwrap.wrap(PACED_APART_HEAD, width)
    for (engine, base, new), phases in groups.items():
        text = f"  {engine}: base {base}; new {new}: {', '.join(phases)}"
        lines += textwrap.wrap(text, width, subsequent_indent="      ", break_on_hyphens=False)
    return lines


def paced_apart(base: Side, new: Side) -> list[PacedApart]:
    """Each engine's phase both sides ran, paced differently."""
    out = []
    for engine, key in base.samples:
        if (engine, key) not in new.samples:
            continue
        a, b = base.pacing.get((engine, key), set()), new.pacing.get((engine, key), set())
        if a != b:
            name = new.names.get(key, base.names[key])
            out.append(PacedApart(engine, name, ", ".join(sorted(a)), ", ".join(sorted(b))))
    return out


def compare_sides(base: Side, new: Side, threshold: float) -> list[Row]:
    """A row per engine and phase both sides ran, paced alike (:func:`paced_apart`)."""
    rows = []
    for engine, key in base.samples:
        if (engine, key) not in new.samples:
            continue
        if base.pacing.get((engine, key), set()) != new.pacing.get((engine, key), set()):
            continue
        c = compare(base.samples[(engine, key)], new.samples[(engine, key)], threshold)
        a, b = base.checksums.get((engine, key)), new.checksums.get((engine, key))
        equal = (a == b and len(a) == 1) if a and b else None
        timed = base.prefixed.get((engine, key), []) + new.prefixed.get((engine, key), [])
        if timed:
            equal = _prefix_equal(timed) if not a and not b else None
        rows.append(Row(engine, new.names.get(key, base.names[key]), c, equal, key))
    return rows


def _prefix_equal(phases: list[PhaseResult]) -> bool | None:
    """Runs of a phase run for a duration agree when their checksums at the common prefix
    of its stream are one; None when they share no checkpoint (nothing compared)."""
    common = common_prefix({str(i): p for i, p in enumerate(phases)})
    return None if common is None else len(set(common[0].values())) == 1


@dataclass
class OneSided:
    """What only one side has: engines, phases (every engine), and engine x phase pairs
    (an engine both ran, a phase both planned, completed on one side only)."""

    engines: dict[str, list[str]] = field(default_factory=dict)  # side -> engines
    phases: dict[str, list[str]] = field(default_factory=dict)  # side -> phase names
    pairs: dict[str, list[str]] = field(default_factory=dict)  # side -> "engine phase"


def _engines_of(side: Side) -> list[str]:
    out: list[str] = []
    for engine, _key in side.samples:
        if engine not in out:
            out.append(engine)
    return out


def one_sided(base: Side, new: Side) -> OneSided:
    out = OneSided()
    sides = {"base": (base, new), "new": (new, base)}
    for label, (this, other) in sides.items():
        engines = [e for e in _engines_of(this) if e not in _engines_of(other)]
        keys = [k for k in this.names if k not in other.names]
        pairs = [
            f"{engine} {this.names[key]}"
            for engine, key in this.samples
            if (engine, key) not in other.samples and engine not in engines and key not in keys
            and engine in _engines_of(other)
        ]
        out.engines[label], out.phases[label] = engines, [this.names[k] for k in keys]
        out.pairs[label] = pairs
    return out


@dataclass
class EngineSummary:
    """One engine's phases in one figure: the geometric mean of the new/base ops/s ratios,
    with a 95 % Student t interval of the mean log ratio over the phases (None for one phase)."""

    engine: str
    phases: int
    geomean: float
    low: float | None
    high: float | None
    faster: int
    slower: int
    one_run: int = 0  # phases beyond the threshold with a single run on a side: not called

    @classmethod
    def of(cls, engine: str, rows: list[Row]) -> EngineSummary:
        logs = [math.log(r.comparison.ratio) for r in rows]
        mean = statistics.fmean(logs)
        low = high = None
        called = any(r.comparison.verdict in (Verdict.FASTER, Verdict.SLOWER) for r in rows)
        if len(logs) > 1 and called:
            half = t_critical(len(logs) - 1) * statistics.stdev(logs) / math.sqrt(len(logs))
            low, high = math.exp(mean - half), math.exp(mean + half)
        return cls(
            engine,
            len(rows),
            math.exp(mean),
            low,
            high,
            sum(r.comparison.verdict is Verdict.FASTER for r in rows),
            sum(r.comparison.verdict is Verdict.SLOWER for r in rows),
            sum(r.comparison.verdict is Verdict.ONE_RUN for r in rows),
        )

    @property
    def verdict(self) -> str:
        """What the phases' own verdicts say, which the summary follows."""
        if not self.faster and not self.slower:
            return "not called: a side has one run" if self.one_run else "no significant change"
        return "mixed" if self.faster and self.slower else ("faster" if self.faster else "slower")

    def line(self, name_width: int) -> str:
        """``sqlite   0.982x [0.951, 1.014]  17 phases: 1 faster, 2 slower``; with no phase
        faster or slower, no interval (it would read like a finding the phases do not back):
        ``sqlite   1.021x  17 phases: no significant change``."""
        plural = "s" if self.phases != 1 else ""
        if not self.faster and not self.slower:
            return f"  {self.engine:<{name_width}} {self.geomean:.3f}x  {self.phases} phase{plural}: {self.verdict}"
        interval = f"[{self.low:.3f}, {self.high:.3f}]" if self.low is not None else "(one phase: no interval)"
        return (
            f"  {self.engine:<{name_width}} {self.geomean:.3f}x {interval}  {self.phases} "
            f"phase{plural}: {self.faster} faster, {self.slower} slower"
        )


def summaries(rows: list[Row]) -> list[EngineSummary]:
    by_engine: dict[str, list[Row]] = {}
    for r in rows:
        by_engine.setdefault(r.engine, []).append(r)
    return [EngineSummary.of(engine, engine_rows) for engine, engine_rows in by_engine.items()]


SUMMARY_HEAD = "geometric mean of new/base ops/s, [95% t interval of the mean log ratio]:"
#: Regressed phases listed by name at the end (the tables show them all).
SLOWER_LISTED = 8
NOT_SIGNIFICANT_LEGEND = "n.s.: not significant: the repeats' spread can explain the change (Welch's t, p >= 0.05)"
ONE_RUN_LEGEND = (
    "one run: beyond the threshold, but a side has a single run, so there is no spread to test the change "
    "against: not called faster or slower (run both sides with --repeat 3 or more)"
)
DIFFERS_HEAD = "measured differently (the figures below may not compare):"


def _verdict(c: Comparison, checksums_equal: bool | None) -> str:
    """``faster +21.3% p=0.004``, ``slower -7.2%``, ``same``, ``n.s. +6.0% p=0.35`` (and
    ``CHECKSUM DIFFERS``): the verdict column in at most 21 characters."""
    word = {
        Verdict.FASTER: "faster",
        Verdict.SLOWER: "slower",
        Verdict.SAME: "same",
        Verdict.NOT_SIGNIFICANT: "n.s.",
        Verdict.ONE_RUN: "one run",
    }
    text = f"{word[c.verdict]} {c.change_pct:+.1f}%"
    if c.p_value is not None and c.verdict is not Verdict.SAME:
        text += f" p={c.p_value:.3f}" if c.p_value >= 0.001 else " p<0.001"
    if checksums_equal is False:
        text += " CHECKSUM DIFFERS"
    return text


def _median(c: Comparison, side: str) -> str:
    return fmt.count(round((c.base if side == "base" else c.new).median))


def _one_sided_lines(gone: OneSided, width: int) -> list[str]:
    lines: list[str] = []
    for label in ("base", "new"):
        for what, items in (
            ("engine", gone.engines[label]),
            ("phase", gone.phases[label]),
            ("engine's phase", gone.pairs[label]),
        ):
            if items:
                plural = "s" if len(items) != 1 else ""
                text = f"only in {label}, not compared: {what}{plural} " + ", ".join(items)
                lines += textwrap.wrap(text, width, subsequent_indent="    ", break_on_hyphens=False)
    return lines


def _repeats(side: str, rows: list[Row]) -> str:
    """How many runs a side pooled for an engine (the most over its phases)."""
    n = max((r.comparison.base.n if side == "base" else r.comparison.new.n) for r in rows)
    return f"{n} run{'s' if n != 1 else ''}"


def render_text(
    rows: list[Row],
    diffs: list[str],
    threshold: float,
    gone: OneSided,
    width: int | None = None,
    apart: list[PacedApart] | None = None,
) -> str:
    """The console table: fits ``width`` columns (default: the terminal's, 80 at least)."""
    width = width or max(80, shutil.get_terminal_size((80, 24)).columns)
    figures = 1 + 10 + 1 + 10 + 1 + 8 + 1 + 21  # base, new, ratio, verdict
    room = max(width - 2 - figures, 12)
    lines = _one_sided_lines(gone, width) + _paced_apart_lines(apart or [], width)
    if diffs:  # first: a reader must know before any figure that the runs measured different things
        lines += textwrap.wrap(DIFFERS_HEAD, width)
        for d in diffs:
            lines += textwrap.wrap(f"  {d}", width, subsequent_indent="      ")
    by_engine: dict[str, list[Row]] = {}
    for r in rows:
        by_engine.setdefault(r.engine, []).append(r)
    for engine, engine_rows in by_engine.items():
        runs = f"base {_repeats('base', engine_rows)} (median), new {_repeats('new', engine_rows)}"
        lines += ["", _cut(f"== {engine} · {runs}", width)]
        lines.append(f"  {'phase (ops/s)':<{room}} {'base':>10} {'new':>10} {'new/base':>8} verdict")
        for r in engine_rows:
            c = r.comparison
            name = r.phase if len(r.phase) <= room else r.phase[: room - 1] + "…"
            lines.append(
                f"  {name:<{room}} {_median(c, 'base'):>10} {_median(c, 'new'):>10} {c.ratio:>7.3f}x "
                f"{_verdict(c, r.checksums_equal)}"
            )
    slower = [r for r in rows if r.comparison.verdict is Verdict.SLOWER]
    faster = [r for r in rows if r.comparison.verdict is Verdict.FASTER]
    lines.append("")
    if any(r.comparison.verdict is Verdict.NOT_SIGNIFICANT for r in rows):
        lines += textwrap.wrap(NOT_SIGNIFICANT_LEGEND, width)
    one_run = sum(r.comparison.verdict is Verdict.ONE_RUN for r in rows)
    if one_run:
        lines += textwrap.wrap(ONE_RUN_LEGEND, width)
    same = sum(r.comparison.verdict is Verdict.SAME for r in rows)
    lines += textwrap.wrap(
        f"{len(rows)} phases compared (threshold {threshold * 100:g}%): {len(faster)} faster, "
        f"{len(slower)} slower, {same} same, {len(rows) - len(faster) - len(slower) - same - one_run} n.s."
        + (f", {one_run} one run (not called)" if one_run else "")
        + ("; CHECKSUMS DIFFER" if any(r.checksums_equal is False for r in rows) else ""),
        width,
    )
    shown = slower if len(slower) <= SLOWER_LISTED else slower[: SLOWER_LISTED - 1]
    for i, r in enumerate(shown):  # one per line: a name is never broken across lines
        lines.append(_cut(("slower: " if i == 0 else "        ") + f"{r.engine} {r.phase}", width))
    if len(shown) < len(slower):
        lines.append(f"        … and {len(slower) - len(shown)} more (see the tables above)")
    sums = summaries(rows)
    name_width = max(len(s.engine) for s in sums)
    lines += textwrap.wrap(SUMMARY_HEAD, width)
    lines += [s.line(name_width) for s in sums]
    return "\n".join(lines)


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def render_markdown(
    rows: list[Row], diffs: list[str], threshold: float, gone: OneSided, apart: list[PacedApart] | None = None
) -> str:
    header = ["Engine", "Phase", "Base", "New", "Ratio", "Verdict", "Checksums"]
    table = [
        [
            r.engine,
            r.phase,
            r.comparison.base.format(),
            r.comparison.new.format(),
            f"{r.comparison.ratio:.3f}x",
            r.comparison.describe(),
            {True: "equal", False: "DIFFER", None: "-"}[r.checksums_equal],
        ]
        for r in rows
    ]
    lines = [f"- {line}" for line in _one_sided_lines(gone, 10_000)]
    lines += [f"- {a.line()}" for a in apart or []]
    if diffs:
        lines += ["", DIFFERS_HEAD, ""] + [f"- {d}" for d in diffs]
    lines += ["", "| " + " | ".join(header) + " |", "| " + " | ".join("---" for _ in header) + " |"]
    lines += ["| " + " | ".join(c.replace("|", "\\|") for c in row) + " |" for row in table]
    slower = [f"{r.engine} {r.phase}" for r in rows if r.comparison.verdict is Verdict.SLOWER]
    faster = sum(r.comparison.verdict is Verdict.FASTER for r in rows)
    one_run = sum(r.comparison.verdict is Verdict.ONE_RUN for r in rows)
    lines += [
        "",
        f"{len(rows)} phases compared (threshold {threshold * 100:g}%): {faster} faster, {len(slower)} slower, "
        f"{len(rows) - faster - len(slower) - one_run} same or not significant"
        + (f", {one_run} one run (not called)" if one_run else "")
        + (f"; slower: {', '.join(slower)}" if slower else "")
        + ("; CHECKSUMS DIFFER" if any(r.checksums_equal is False for r in rows) else ""),
    ]
    if any(r.comparison.verdict is Verdict.ONE_RUN for r in rows):
        lines += ["", ONE_RUN_LEGEND]
    lines += ["", SUMMARY_HEAD, ""]
    lines += [f"- {s.line(0).strip()}" for s in summaries(rows)]
    return "\n".join(lines)


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

summary: per engine, the geometric mean of NEW/BASE ops/s over its compared
phases, with the 95% Student t interval of the mean log ratio (the phases are
the sample: a narrow interval says the change is consistent across phases);
when no phase is faster or slower, "no significant change" and no interval.

exit codes: 0 no phase slower and every checksum equal; 1 at least one phase
slower (as above) or a checksum differs; 2 bad input (a missing or invalid file,
a bad flag, or no engine and phase in common).
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
        for line in _one_sided_lines(gone, 80) + [a.line() for a in apart]:
            print(f"  {line}", file=sys.stderr)
        return EXIT_BAD_INPUT
    latency = latency_compare.latency_rows(
        base.latency, new.latency, [(r.engine, r.key, r.phase) for r in rows], threshold
    )
    diffs = _differences(base, new)
    costs = cost_compare.cost_changes(base.runs, new.runs, engines)
    kinds = mix_compare.kind_changes(base.runs, new.runs, engines)
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
            "not_compared": [
                {"engine": a.engine, "phase": a.phase, "base": a.base, "new": a.new, "reason": PACED_APART_WHY}
                for a in apart
            ],
            "latency": latency_compare.json_rows(latency),
            "cost": [
                {"engine": c.engine, "figure": c.figure, "base": c.base, "new": c.new, "ratio": c.ratio} for c in costs
            ],
            "operation_kinds": [
                {"engine": c.engine, "figure": c.figure, "base": c.base, "new": c.new, "ratio": c.ratio} for c in kinds
            ],
            "only_in_base": {
                "engines": gone.engines["base"], "phases": gone.phases["base"], "engine_phases": gone.pairs["base"]
            },
            "only_in_new": {
                "engines": gone.engines["new"], "phases": gone.phases["new"], "engine_phases": gone.pairs["new"]
            },
            "engines": [
                {
                    "engine": s.engine,
                    "phases": s.phases,
                    "geomean_ratio": s.geomean,
                    "ci95_low": s.low,
                    "ci95_high": s.high,
                    "interval": "95% Student t interval of the mean log ratio over the engine's phases",
                    "faster": s.faster,
                    "slower": s.slower,
                    "verdict": s.verdict,
                }
                for s in summaries(rows)
            ],
        }
        print(orjson.dumps(doc, option=orjson.OPT_INDENT_2).decode())
    else:
        if args.markdown:
            render = render_markdown(rows, diffs, threshold, gone, apart)
            render += "\n".join(latency_compare.markdown_lines(latency, lambda t: t.replace("|", "\\|")))
            render += "\n".join(cost_compare.markdown_lines(costs, lambda t: t.replace("|", "\\|")))
            render += "\n".join(cost_compare.markdown_lines(kinds, lambda t: t.replace("|", "\\|"), mix_compare.TITLE))
        else:
            render = render_text(rows, diffs, threshold, gone, apart=apart)
            render += "\n".join(["", *latency_compare.text_lines(latency)]) if latency else ""
            render += "\n".join(["", *cost_compare.text_lines(costs)]) if costs else ""
            render += "\n".join(["", *cost_compare.text_lines(kinds, title=mix_compare.TITLE)]) if kinds else ""
        print(render)
    checksum_code = 1 if any(r.checksums_equal is False for r in rows) else 0
    return max(exit_code([r.comparison for r in rows]), checksum_code)
