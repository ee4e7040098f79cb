"""The verdicts a person decides from: PASS, FAIL or INCONCLUSIVE, each with its reason.

A run's figures answer "how fast"; the question people bring is "does it hold my bound at
my rate?". This module draws that answer from the result model alone (the thresholds are
in :class:`~asyncbench.result.Gates`), so the console, the headline, the Markdown and HTML
reports, the result JSON and the exit status all say the same thing, and ``report`` of a
saved result says it again.

What is judged, per engine (every measured repeat; a warm-up repeat only for a failure):

- ``engine``: an engine that failed or timed out is a FAIL, named first (the run's most
  important line); one interrupted is INCONCLUSIVE.
- ``checksums``: disagreeing checksums are a FAIL of the run.
- ``slo``: every read, scan, query or mixed phase (the phases a capacity can be searched
  for; writes are the store's preparation) the run's latency bounds cover (``--slo`` or
  ``[slo]``; a capacity search's phase is judged by its capacity instead). The response
  time at each bounded percentile (from each operation's intended start under a rate; the
  service time in the closed loop, where the two are one) against the bound.
- ``rate``: every phase run at a target rate: the achieved rate within 5 % of it. It gates
  the exit status only under ``--check-rate``; without it the row says so.
- ``capacity``: a searched phase's capacity against ``--require-rate``.
- ``durability``: a crash in the plan (docs/durability.md): a store that does not open again
  or holds a torn record FAILs; a lost acknowledged write FAILs an engine whose stated
  promise is synced commits (``Durability.synced_commits``).

The client's own lateness is never an engine's failure. A bound missed while the harness's
schedule delay at that percentile took at least half of it (:func:`asyncbench.slo.client_late`)
is INCONCLUSIVE and names the delay; so is a bound's FAIL on a machine that was loaded when
the run started (load average at least its CPUs), the saturation the tool already reports.
A missed rate is the engine's FAIL when its own mean service time cannot carry the rate
with the phase's workers (a stalling tail counts: the mean holds it); when it could, the
client (or the machine) did not keep the pace: INCONCLUSIVE, naming the delay. A PASS stays a PASS on a busy machine: the bound held
with the client's lateness inside it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import StrEnum

from asyncbench import fmt
from asyncbench.config.phases import searchable
from asyncbench.measure.correctness import judge
from asyncbench.measure.latency import LatencyHistogram
from asyncbench.result import (
    EXIT_FAILED,
    EXIT_INCONCLUSIVE,
    EXIT_OK,
    DurabilityRow,
    EngineResult,
    LatencyStats,
    PhaseResult,
    RunResult,
    Status,
    VerdictRecord,
)
from asyncbench.slo import PERCENTILES, client_late, ns_text
from asyncbench.workload import Action

__all__ = ["Figures", "Outcome", "VerdictRow", "durability_failed", "durability_text", "exit_status", "judge_run", "overall", "records"]

#: What to do about a client that was late, in the words the console prints.
CLIENT_ADVICE = "use --processes K, fewer engines at once, or an idle machine"
#: The engine's row when the run as a whole is judged (its checksums).
RUN = "(run)"


class Outcome(StrEnum):
    PASS = "PASS"
    FAIL = "FAIL"
    INCONCLUSIVE = "INCONCLUSIVE"

    @property
    def rank(self) -> int:
        """How bad: a FAIL outranks an INCONCLUSIVE, which outranks a PASS (the worst decides)."""
        return {"PASS": 0, "INCONCLUSIVE": 1, "FAIL": 2}[self.value]


@dataclass(frozen=True)
class Figures:
    """The figures a reader checks a verdict against (ns and ops/s; None: not measured)."""

    percentile: str = "p99"
    bound_ns: int | None = None
    response_ns: int | None = None
    service_ns: int | None = None
    delay_ns: int | None = None
    rate: float | None = None
    achieved: float | None = None


@dataclass(frozen=True)
class VerdictRow:
    """One verdict: who, what was judged, the outcome and its reason. ``gating``: it decides
    the exit status (a rate without ``--check-rate`` is shown, not gated)."""

    engine: str
    check: str  # engine, checksums, slo, rate, capacity
    outcome: Outcome
    reason: str
    phase: str | None = None
    index: int | None = None
    repeat: int = 0
    gating: bool = True
    figures: Figures | None = None

    def line(self) -> str:
        """``FAIL rocksdb · mixed: p99 5.1 ms > 2 ms (...)`` for the console and the report."""
        where = f"{self.engine} · {self.phase}" if self.phase else self.engine
        flag = "--check-reference" if self.check == "checksums" else "--check-rate"
        note = "" if self.gating else f" (shown, not gated: add {flag})"
        return f"{self.outcome.value} {where}: {self.reason}{note}"


def percentile_ns(stats: LatencyStats | None, name: str) -> int | None:
    """``stats`` at percentile ``name`` (one of :data:`PERCENTILES`): the recorded figure
    where the summary has it, else read from its HdrHistogram."""
    if stats is None or not stats.count:
        return None
    recorded = {"p50": stats.p50, "p90": stats.p90, "p99": stats.p99, "p999": stats.p99_9}
    if name in recorded:
        return recorded[name]
    return LatencyHistogram.from_encoded(stats.histogram).values_at_percentiles([100.0 * PERCENTILES[name]])[0]


def _delay_ns(p: PhaseResult, name: str) -> int | None:
    ol = p.open_loop
    if ol is None:
        return None
    if name in ol.delay_ns:
        return ol.delay_ns[name]
    return ol.delay_p99_ns if PERCENTILES[name] <= 0.99 else ol.delay_max_ns  # older results


def machine_loaded(run: RunResult) -> str | None:
    """The saturation the tool detects (the headline's machine line): the load average when
    the run started at least the machine's CPUs; the reason's words, or None."""
    start = run.environment.get("load_avg_start")
    cpus = run.environment.get("logical_cpus")
    if not isinstance(start, list) or not start or not isinstance(cpus, int) or cpus < 1:
        return None
    if not isinstance(start[0], int | float) or start[0] < cpus:
        return None
    return f"machine loaded: load average {start[0]:.2f} on {cpus} CPUs when the run started"


def _engine_row(e: EngineResult) -> VerdictRow | None:
    if e.broken:
        return VerdictRow(e.engine, "engine", Outcome.FAIL, e.status_text(), e.phase, repeat=e.repeat)
    if e.status is Status.INTERRUPTED:
        return VerdictRow(e.engine, "engine", Outcome.INCONCLUSIVE, e.status_text(), e.phase, repeat=e.repeat)
    return None


def _bound_row(e: EngineResult, p: PhaseResult, bounds: dict[str, int], loaded: str | None) -> VerdictRow:
    """The phase against every bound: the worst bound decides (a FAIL over an INCONCLUSIVE)."""
    rows = []
    for name, bound in bounds.items():
        ol = p.open_loop
        response = percentile_ns(ol.response if ol is not None else p.latency, name)
        service = percentile_ns(p.latency, name)
        delay = _delay_ns(p, name)
        figures = Figures(name, bound, response, service, delay, ol.rate if ol else None, p.ops_per_s)
        if response is None:
            rows.append((Outcome.INCONCLUSIVE, f"no {name} measured", figures))
            continue
        said = f"{name} {fmt.latency(response)}"
        parts = [] if ol is None else [f"service {fmt.latency(service or 0)}", f"client delay {fmt.latency(delay or 0)}"]
        detail = f" ({', '.join(parts)})" if parts else " (closed loop: service time)"
        if response <= bound:
            rows.append((Outcome.PASS, f"{said} ≤ {ns_text(bound)}{detail}", figures))
        elif delay is not None and client_late(delay, bound):
            rows.append((
                Outcome.INCONCLUSIVE,
                f"client late: schedule delay {name} {fmt.latency(delay)} against a bound of {ns_text(bound)} "
                f"({said}, service {fmt.latency(service or 0)}); {CLIENT_ADVICE}",
                figures,
            ))
        elif loaded:
            rows.append((Outcome.INCONCLUSIVE, f"{said} > {ns_text(bound)}{detail}, but {loaded}", figures))
        else:
            rows.append((Outcome.FAIL, f"{said} > {ns_text(bound)}{detail}", figures))
    outcome, reason, figures = max(rows, key=lambda r: r[0].rank)
    return VerdictRow(e.engine, "slo", outcome, reason, p.name, p.index, e.repeat, figures=figures)


def service_capacity(e: EngineResult, p: PhaseResult, workers: int) -> float | None:
    """The rate the engine's own service time allows the phase's workers (workers over the
    mean service time, ops/s): what the engine could hold with a client that is never late."""
    if p.latency is None or not p.latency.count or p.latency.mean <= 0:
        return None
    return workers * max(1, len(e.client_processes)) * 1e9 / p.latency.mean


def _rate_row(e: EngineResult, p: PhaseResult, workers: int, gating: bool, loaded: str | None) -> VerdictRow:
    """A missed rate is the engine's when its own service time cannot carry the rate (the
    stalls of a slow tail included: the mean holds them); otherwise the client, which issues
    the operations, or the machine did not keep the pace: INCONCLUSIVE."""
    ol = p.open_loop
    assert ol is not None
    service = p.latency.p99 if p.latency is not None else None
    figures = Figures("p99", None, ol.response.p99 if ol.response else None, service, ol.delay_p99_ns, ol.rate, p.ops_per_s)
    said = f"{fmt.count(round(p.ops_per_s))}/s achieved of {fmt.count(round(ol.rate))}/s"
    allows = service_capacity(e, p, workers)
    if not p.rate_missed:
        outcome, reason = Outcome.PASS, f"rate held: {said}"
    elif allows is None or allows < ol.rate:
        carried = "" if allows is None else f"; the engine's mean service time allows {fmt.count(round(allows))}/s"
        outcome, reason = Outcome.FAIL, f"rate missed: {said}{carried}"
    else:
        why = f"; {loaded}" if loaded else f"; schedule delay p99 {fmt.latency(ol.delay_p99_ns)}"
        outcome, reason = (
            Outcome.INCONCLUSIVE,
            f"rate missed with the client late: {said}, though the engine's mean service time allows "
            f"{fmt.count(round(allows))}/s{why}; {CLIENT_ADVICE}",
        )
    return VerdictRow(e.engine, "rate", outcome, reason, p.name, p.index, e.repeat, gating, figures)


def _capacity_row(e: EngineResult, p: PhaseResult, need: float) -> VerdictRow:
    cap = p.capacity
    assert cap is not None
    figures = Figures(rate=need, achieved=cap.capacity)
    required = f"required {fmt.count(round(need))}/s"
    if cap.inconclusive is not None or cap.interrupted:  # no capacity was measured
        low = cap.lower_bound
        if low is not None and low >= need:  # what did pass already carries the requirement
            return VerdictRow(e.engine, "capacity", Outcome.PASS, f"capacity at least {fmt.count(round(low))}/s "
                              f"≥ {required} (the search stopped above it: {cap.inconclusive or 'interrupted'})",
                              p.name, p.index, e.repeat, figures=figures)  # fmt: skip
        why = cap.inconclusive or "the search was interrupted"
        return VerdictRow(e.engine, "capacity", Outcome.INCONCLUSIVE, f"capacity not measured, {required}: {why}",
                          p.name, p.index, e.repeat, figures=figures)  # fmt: skip
    if cap.capacity is not None and cap.capacity >= need:
        return VerdictRow(e.engine, "capacity", Outcome.PASS, f"capacity {fmt.count(round(cap.capacity))}/s ≥ {required}",
                          p.name, p.index, e.repeat, figures=figures)
    got = "below the searched range" if cap.capacity is None else f"{fmt.count(round(cap.capacity))}/s"
    return VerdictRow(e.engine, "capacity", Outcome.FAIL, f"capacity {got} < {required}", p.name, p.index, e.repeat,
                      figures=figures)


def durability_text(d: DurabilityRow) -> str:
    """``lost 3_212 of 50_000 acknowledged, the last 0.94 s (promise: synced about once a
    second)``: what a crash cost beside what the engine promised."""
    promise = f"promise: synced {d.promise}" if d.promise else "promise: not stated"
    if not d.opened:
        return f"the store did not open after the {d.how}: {d.open_error} ({promise})"
    said = f"lost {fmt.count(d.acknowledged_lost)} of {fmt.count(d.acknowledged)} acknowledged"
    if d.lost_seconds is not None:
        said += f", the last {d.lost_seconds:.2f} s"
    if d.torn:
        said += f"; {fmt.count(d.torn)} torn or corrupt records"
    return f"{said} ({promise})"


def durability_failed(d: DurabilityRow) -> bool:
    """A crash's verdict: a store that does not open or holds a torn record FAILs whatever
    was promised; an acknowledged write lost FAILs an engine that promised synced commits,
    and is within the promise of one that did not (the count says what it cost)."""
    return not d.opened or d.torn > 0 or (d.synced_commits and d.acknowledged_lost > 0)


def _durability_row(e: EngineResult, d: DurabilityRow) -> VerdictRow:
    text = durability_text(d)
    outcome = Outcome.FAIL if durability_failed(d) else Outcome.PASS
    return VerdictRow(e.engine, "durability", outcome, f"{d.how} crash: {text}", d.phase, repeat=e.repeat)


def _phase_rows(run: RunResult, e: EngineResult, loaded: str | None) -> Iterable[VerdictRow]:
    gates = run.gates
    for p in e.phases:
        if p.action is not Action.OPERATIONS or p.ops == 0:
            continue
        if p.capacity is not None:
            need = gates.require_rate.get(p.kind.kind)
            if need is not None:
                yield _capacity_row(e, p, need)
            continue
        bounds = gates.bounds_for(p.kind.kind)
        if bounds and searchable(p.kind):  # the phases a capacity could be searched for
            yield _bound_row(e, p, bounds, loaded)
        if p.open_loop is not None:
            yield _rate_row(e, p, run.parallelism, gates.check_rate, loaded)


def judge_run(run: RunResult) -> list[VerdictRow]:
    """Every verdict of the run: failed engines first, then the checksums, then per engine
    and phase the bounds, rates and capacities (skipped engines are not judged)."""
    engines = [e for e in run.engines if e.status is not Status.SKIPPED]
    loaded = machine_loaded(run)
    rows = [r for e in engines if (r := _engine_row(e)) is not None]
    rows.sort(key=lambda r: -r.outcome.rank)
    correctness = judge(run)
    # engines disagreeing fail the run; a difference from the published reference only under
    # --check-reference (the run command gates that itself): shown, not gated here
    rows += [
        VerdictRow(RUN, "checksums", Outcome.FAIL, line, gating=line not in correctness.published_failures)
        for line in correctness.failures
    ]
    rows += [VerdictRow(RUN, "checksums", Outcome.INCONCLUSIVE, line) for line in correctness.uncompared]
    for e in engines:
        if not e.warmup:
            rows += _phase_rows(run, e, loaded)
            rows += [_durability_row(e, d) for d in e.durability]
    return rows


def overall(rows: Sequence[VerdictRow]) -> Outcome | None:
    """The worst gating outcome; None when nothing was judged."""
    gating = [r.outcome for r in rows if r.gating]
    return max(gating, key=lambda o: o.rank) if gating else None


def exit_status(rows: Sequence[VerdictRow]) -> int:
    """1 when a gating verdict FAILs, 3 (:data:`EXIT_INCONCLUSIVE`) when none fails and one
    is INCONCLUSIVE, else 0."""
    worst = overall(rows)
    if worst is Outcome.FAIL:
        return EXIT_FAILED
    if worst is Outcome.INCONCLUSIVE:
        return EXIT_INCONCLUSIVE
    return EXIT_OK


def records(rows: Sequence[VerdictRow]) -> list[VerdictRecord]:
    """The verdicts as the result JSON carries them."""
    return [
        VerdictRecord(r.engine, r.check, r.outcome.value, r.reason, r.phase, r.index, r.repeat, r.gating) for r in rows
    ]
