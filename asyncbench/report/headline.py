"""The run's headline: the verdict a reader came for, in a few plain lines (issue 39).

Per phase group (write, lookup, scan, query, maintenance: the phase table's groups) the
fastest engine, by how much against the next one, and whether the repeats make that
significant (:func:`asyncbench.measure.stats.compare`, the test ``compare`` uses, on the
group's time per measured repeat); whether the checksums agree
(:func:`asyncbench.measure.correctness.judge`); and what limited the run: the client's CPU,
the server, or a loaded machine (the load the run started at, and the warning the run
recorded in ``environment["noise_advice"]``).

One module builds it from the result model; the console prints its lines last and the
Markdown (and HTML) report puts them first, so both say the same thing. Lines are plain
text: each renderer escapes them for its own format.
"""

from __future__ import annotations

import statistics
import textwrap
from dataclasses import dataclass, field

from asyncbench import fmt
from asyncbench.measure.aggregate import EngineRuns, group_runs
from asyncbench.measure.correctness import judge
from asyncbench.measure.stats import CLIENT_BOUND_BUSY, Verdict, compare
from asyncbench.measure.too_short import MIN_PHASE_SECONDS, TOO_SHORT, too_short
from asyncbench.measure.verdicts import Outcome, VerdictRow, judge_run, overall
from asyncbench.report.capacity import scorecard
from asyncbench.report.duration_race import duration_line, run_for_duration
from asyncbench.result import NO_SERVER, NOT_STARTED, EngineResult, PhaseResult, RunResult, Status
from asyncbench.slo import bounds_text
from asyncbench.workload import Action, Group

__all__ = ["Headline", "build", "console_lines"]

#: The verdicts other than PASS the headline spells out; the rest are in the Verdicts table.
MAX_VERDICT_LINES = 8

#: The groups a headline names, in the phase table's order (verify is a check, not a race).
GROUPS = (Group.WRITE, Group.LOOKUP, Group.SCAN, Group.QUERY, Group.MIXED, Group.MAINTENANCE)


@dataclass
class Headline:
    """The headline's plain-text lines: one per phase group, the checksums, the limit;
    ``warnings`` are the run's recorded noise warnings (a loaded machine), shown in full."""

    verdicts: list[str] = field(default_factory=list)
    groups: list[str] = field(default_factory=list)
    checksums: str = ""
    limits: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def lines(self) -> list[str]:
        return [*self.verdicts, *self.groups, self.checksums, *self.limits]


def _group_seconds(e: EngineResult, indexes: list[int]) -> float | None:
    """The engine's time over the group's phases in one repeat (a stabilization it needs
    none of counts 0 s); None when it did not complete every one of them."""
    total = 0.0
    for i in indexes:
        p = e.phase_at(i)
        if p is None:
            return None
        total += 0.0 if p.skipped else p.seconds
    return total


def _samples(g: EngineRuns, indexes: list[int]) -> list[float]:
    """The group's time in each measured repeat that completed it."""
    return [s for e in g.measured if (s := _group_seconds(e, indexes)) is not None]


def _at_rate(run: RunResult, index: int) -> bool:
    return any((p := e.phase_at(index)) is not None and p.open_loop is not None for e in run.engines)


def _rates_line(label: str, groups: list[EngineRuns], indexes: list[int], failed: dict[str, str]) -> str:
    """A group run at target rates: no engine is faster there, so per engine whether it held
    every rate (within 5 %, :attr:`PhaseResult.rate_missed`, as ``--check-rate``) in every
    measured repeat, and its worst response p99 with the client's own delay beside it (a
    late client, not the engine, may be what a reader sees in the response time)."""
    parts = []
    for g in groups:
        ran = [p for i in indexes for p in g.phases(i) if p.open_loop is not None and p.ops > 0]
        if not ran:
            continue
        missed = [p for p in ran if p.rate_missed]
        phases = len({p.index for p in ran})
        worst = max(ran, key=lambda p: p.open_loop.response.p99 if p.open_loop and p.open_loop.response else 0)
        ol = worst.open_loop
        assert ol is not None
        figures = ""
        if ol.response is not None:
            service = fmt.latency(worst.latency.p99) if worst.latency else "-"
            figures = (
                f", p99 response {fmt.latency(ol.response.p99)} (service {service}, "
                f"client delay {fmt.latency(ol.delay_p99_ns)})"
            )
        if not missed:
            top = max(p.open_loop.rate for p in ran if p.open_loop is not None)
            parts.append(f"{g.engine} held every rate (up to {round(top):_d}/s){figures}")
        else:
            low = min(p.open_loop.rate for p in missed if p.open_loop is not None)
            short = len({p.index for p in missed})
            parts.append(f"{g.engine} missed the rate in {short} of {phases} phases (from {round(low):_d}/s){figures}")
    for engine, phase in failed.items():
        parts.append(f"{engine} FAILED in {phase}")
    if not parts:
        return f"{label}: at target rates; no engine completed it"
    return f"{label}, at target rates: " + "; ".join(parts) + " (verdicts: see Verdicts)"


def _ratio(r: float) -> str:
    return f"{r:.2f}x" if r < 9.995 else f"{r:.0f}x"


def _failed_in(run: RunResult, indexes: list[int]) -> dict[str, str]:
    """Engines that failed (or timed out) before completing these phases, by engine: the
    phase it failed in. A failed engine never completes its group, so it is named instead of
    left out (a plug-in failing in its second phase left every later group reading "no
    engine completed it", issue 51)."""
    out: dict[str, str] = {}
    for e in run.engines:
        if e.broken and any(e.phase_at(i) is None for i in indexes):
            out.setdefault(e.engine, e.phase or "start-up")
    return out


def _group_line(run: RunResult, groups: list[EngineRuns], group: Group) -> str | None:
    """One group's verdict; harness-floor engines (they store nothing) are left out of the
    race when a real engine ran, as the charts scale to the fastest real engine."""
    # a capacity search's phase is no race of times (its probes ran at many rates): the
    # capacity scorecard ranks it
    searched = {p.index for e in run.engines for p in e.phases if p.capacity is not None}
    indexes = [i for i, spec in enumerate(run.phases) if spec.kind.group is group and i not in searched]
    if not indexes:
        return None
    failed = _failed_in(run, indexes)
    failed_note = "".join(f"; {engine} FAILED in {phase}" for engine, phase in failed.items())
    paced = [i for i in indexes if _at_rate(run, i)]
    label = group.value
    if len(paced) == len(indexes):
        return _rates_line(label, groups, indexes, failed)
    bounded = [i for i in indexes if i not in paced and run_for_duration(run, i)]
    if bounded and len(bounded) + len(paced) == len(indexes):  # a race of rates: every engine ran as long
        return duration_line(label, groups, bounded, list(failed))
    indexes = [i for i in indexes if i not in bounded]  # the rest race in time
    # a phase some engine ran in under MIN_PHASE_SECONDS is no race: a 35 ms phase ranked an
    # engine "2.50x faster" (issue 51)
    short = [i for i in indexes if i not in paced and any((p := e.phase_at(i)) and too_short(p) for e in run.engines)]
    timed = [i for i in indexes if i not in paced and i not in short]
    if not timed:
        return f"{label}: {TOO_SHORT} (under {MIN_PHASE_SECONDS:g} s): not ranked{failed_note}"
    done = [(g.engine, s) for g in groups if g.engine not in failed and (s := _samples(g, timed))]
    if not done:
        return f"{label}: no engine completed it{failed_note}"
    median = {name: statistics.median(s) for name, s in done}
    done.sort(key=lambda d: median[d[0]])
    first, first_s = done[0]
    left_out = [w for w, n in (("at a target rate", paced), (TOO_SHORT, short), ("run for a duration", bounded)) if n]
    rate_note = f" (phases {' or '.join(left_out)} left out)" if left_out else ""
    if median[first] <= 0:  # stabilizations an engine needs none of: nothing was timed
        return f"{label}: no measurable time ({', '.join(n for n, _ in done)}){rate_note}{failed_note}"
    if len(done) == 1:
        return f"{label}: {first} {fmt.ms(median[first])}{rate_note}; no other engine to compare with{failed_note}"
    second, second_s = done[1]
    ratio = _ratio(median[second] / median[first])
    times = f"({fmt.ms(median[first])} vs {fmt.ms(median[second])})"
    c = compare(second_s, first_s, higher_is_better=False)
    n = f"{len(first_s)} and {len(second_s)} repeats" if len(first_s) != len(second_s) else f"{len(first_s)} repeats each"
    if c.verdict is Verdict.SAME:  # within the noise: no engine is "faster"
        line = f"{label}: {first} and {second} tie, {ratio} apart within ±{c.threshold:.0%} {times}"
    elif c.verdict is Verdict.ONE_RUN:
        line = f"{label}: {first} fastest, {ratio} faster than {second} {times}, one run each (untested)"
    elif c.verdict is Verdict.FASTER:
        line = f"{label}: {first} fastest, {ratio} faster than {second} {times}; significant over {n} (p = {c.p_value:.2g})"
    else:  # a difference the repeats do not support
        line = (
            f"{label}: {first} ahead of {second} by {ratio} {times}, not significant over {n} "
            f"(p = {c.p_value:.2g}): no engine is shown faster"
        )
    return f"{line}{rate_note}{failed_note}"


def _checksums(run: RunResult) -> str:
    verdict = judge(run)
    if not verdict.ok:
        return f"checksums: DISAGREE ({len(verdict.failures)} mismatch(es); see Correctness)"
    line = "checksums: " + (verdict.lines[0] if verdict.lines else "nothing to compare")
    unchecked = [f"{e.engine} from {e.phase}" for e in run.engines if e.broken and e.phase]
    if unchecked:  # "every phase they completed" must not read as every phase of every engine
        line += f" Not checked (never completed): {', '.join(dict.fromkeys(unchecked))}."
    return line


def _failed_lines(run: RunResult, rows: list[VerdictRow]) -> list[str]:
    """Each failed engine: the headline's first lines, the one thing a reader must not miss."""
    return [
        f"{r.engine} FAILED in {r.phase or 'start-up'}: {r.reason}{_traceback_note(run, r.engine)}"
        for r in rows
        if r.check == "engine" and r.outcome is Outcome.FAIL
    ]


def _verdict_lines(run: RunResult, rows: list[VerdictRow]) -> list[str]:
    """The overall verdict (always one), then, when the run judged bounds, rates or
    capacities, every verdict that is not a PASS (the Verdicts table holds them all)."""
    out: list[str] = []
    judged = [r for r in rows if r.check in ("slo", "rate", "capacity")]
    worst = overall(rows)
    if not judged:  # nothing asked beyond completing and agreeing: say so, a verdict still
        asked = "--slo, --check-rate or --require-rate judge latency, rates and capacities"
        if worst is None:
            out.append(f"verdict: PASS: every engine completed and the checksums agree; nothing else was asked ({asked})")
        else:
            out.append(f"verdict: {worst.value} (see above; {asked})")
        return out
    counts = ", ".join(f"{sum(r.outcome is o for r in judged)} {o.value}" for o in Outcome if any(r.outcome is o for r in judged))
    bounds = f" under {bounds_text(run.gates.slo_ns)}" if run.gates.slo_ns else ""
    out.append(f"verdict: {worst.value if worst else 'none gated'}{bounds} ({counts}; see Verdicts)")
    shown = [r for r in judged if r.outcome is not Outcome.PASS]
    out += [r.line() for r in shown[:MAX_VERDICT_LINES]]
    if len(shown) > MAX_VERDICT_LINES:
        out.append(f"... {len(shown) - MAX_VERDICT_LINES} more in Verdicts")
    return out


def _traceback_note(run: RunResult, engine: str) -> str:
    """Where a failed engine's whole traceback is: the ``.traceback`` file written beside
    the report (asyncbench.report.tracebacks), when its result kept one."""
    kept = any(e.engine == engine and e.traceback for e in run.engines)
    return " (traceback: the .traceback file beside the report)" if kept else ""


def _client_share(p: PhaseResult) -> float | None:
    """The client process's CPU seconds over the phase's time (the busiest side we own)."""
    cpu = p.cost.client_cpu_seconds if p.cost is not None else None
    cpu = p.client_cpu_seconds if cpu is None else cpu
    return cpu / p.seconds if cpu is not None and p.seconds > 0 else None


def _limit_line(g: EngineRuns, loaded: bool) -> str | None:
    """Per engine: in how many operation phases its client CPU was saturated; on a
    ``loaded`` machine a client below the mark may have waited for a core, so the engine is
    not named as the limit on that alone."""
    shares = [s for p in g.first.phases if p.action is Action.OPERATIONS and (s := _client_share(p)) is not None]
    if not shares:
        return None
    bound = sum(s >= CLIENT_BOUND_BUSY for s in shares)
    in_process = any(p.cost is not None and p.cost.not_measured.get("server_cpu") == NO_SERVER for p in g.first.phases)
    if not bound:  # nothing to count: say what limited it, and the mark the client stayed under
        who = "the loaded machine or the engine (see the machine's line)" if loaded else "the engine or server (or I/O), not the client"
        return f"limit, {g.engine}: {who}: client CPU under {CLIENT_BOUND_BUSY:.0%} busy in every operation phase"
    if bound == len(shares) and in_process:
        # the engine's own work is in that CPU: "the client limited it" would read as the
        # harness's fault
        why = "the one process's CPU limited it (the engine runs in it: its work and the harness's)"
    elif bound == len(shares):
        why = "the client (Python) limited it"
    elif loaded:
        why = "the loaded machine or the engine limited it (see the machine's line)"
    else:
        why = "the client limited those; the engine or server the others"
    return (
        f"limit, {g.engine}: client CPU at least {CLIENT_BOUND_BUSY:.0%} busy in {bound} of {len(shares)} "
        f"operation phases: {why}"
    )


def _machine_line(run: RunResult) -> str | None:
    """The machine's load when the run started, when it was at least its CPUs."""
    start = run.environment.get("load_avg_start")
    cpus = run.environment.get("logical_cpus")
    if not isinstance(start, list) or not start or not isinstance(cpus, int) or cpus < 1:
        return None
    if start[0] < cpus:
        return None
    return (
        f"limit, machine: load average {start[0]:.2f} at the start on {cpus} CPUs: "
        "other work competed for the cores, so figures vary"
    )


def _partial(run: RunResult) -> str:
    """A stopped run: the signal, and each engine it did not finish (the groups compare only
    what finished)."""
    unfinished = []
    for e in run.engines:
        if e.ok or e.status is Status.SKIPPED:
            continue
        if e.detail == NOT_STARTED and not e.phases:
            unfinished.append(f"{e.engine} not started")
        else:
            unfinished.append(f"{e.engine} stopped during {e.phase or 'start-up'}")
    return f"partial: {run.interrupted}" + (f"; {', '.join(dict.fromkeys(unfinished))}" if unfinished else "")


def build(run: RunResult) -> Headline:
    """The headline of a run (skipped engines and engines that never started left out)."""
    ran = run.without_skipped()
    ran.engines = [e for e in ran.engines if e.phases]
    floors = {e.engine for e in ran.engines if e.facts.harness_floor}
    # the floor leaves the race to the real engines that completed (a failed one is named
    # in each group it did not finish); with none, the floor is drawn like any engine
    real = [g for g in group_runs(ran) if g.engine not in floors and not all(e.broken for e in g.runs)]
    groups = real or group_runs(ran)
    h = Headline()
    judged = run.without_skipped()
    # failed engines first, then a stopped run's line, then the overall verdict
    verdicts = judge_run(judged)  # once: the failed engines' lines and the overall verdict read the same rows
    h.verdicts = _failed_lines(judged, verdicts) + ([_partial(run)] if run.interrupted else []) + _verdict_lines(judged, verdicts)
    for group in GROUPS:
        line = _group_line(ran, groups, group)
        if line:
            h.groups.append(line)
    for rows in scorecard(ran).values():  # capacity searches: the engines by capacity
        ranked = "; ".join(f"{r.engine} {r.text}" for r in rows)
        h.groups.append(f"capacity, {rows[0].phase} ({rows[0].bounds}): {ranked}")
    h.checksums = _checksums(ran)
    if any(len(g.measured) < 2 for g in groups) and len(groups) > 1:
        h.groups.append("significance: untested, an engine ran once (--repeat 3 or more tests it)")
    if real and floors:
        h.groups.append(f"left out: {', '.join(sorted(floors))} (the harness floor: it stores nothing)")
    machine = _machine_line(ran)
    h.limits = [x for g in groups if (x := _limit_line(g, machine is not None))]
    if machine:
        h.limits.append(machine)
    if run.repeat - run.warmup <= 1:  # a single run: its loaded-machine warning (cli/run.py records it)
        advice = run.environment.get("noise_advice")
        h.warnings = [a for a in advice if isinstance(a, str)] if isinstance(advice, list) else []
    return h


def console_lines(run: RunResult, width: int = 80) -> list[str]:
    """The console's closing lines: ``== headline`` then each line wrapped to ``width``."""
    out = ["", "== headline"]
    for line in build(run).lines():
        out += textwrap.wrap(line, width, initial_indent="  ", subsequent_indent="    ")
    return out
