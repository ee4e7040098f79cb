"""Checksum agreement across engines, and against the published reference tables.

Phases are matched by identity (their position in the plan, which fixes kind, stream and
count), never by display name; the reference check asks the phase table for the
reference identity of a phase's (kind, stream) and skips phases limited by ``count``.

A phase that ran for a ``duration`` (:class:`~asyncbench.result.PhasePrefix`) may have run
a different number of operations on each engine: its engines are compared at the common
prefix of its stream, the first N operations where N is the shortest engine's whole
prefix (or, when an engine has no checksum at exactly N, the last checkpoint below it),
and the verdict says at which N; a common prefix of no operation is compared nowhere and
said so (:attr:`Verdict.uncompared`), never counted as an agreement.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from asyncbench.result import EngineResult, PhaseResult, RunResult
from asyncbench.workload_capabilities import reference_tables

__all__ = ["Verdict", "common_prefix", "is_reference_run", "judge", "reference_identity"]


@dataclass
class Verdict:
    ok: bool
    lines: list[str] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)  # loud lines naming engine and phase
    #: Engines whose checksums differ from the published reference (fails the run only
    #: under ``--check-reference``); None when no published reference applies.
    published_mismatch: list[str] | None = None
    #: Those engines' lines of ``failures`` (they fail the run only under ``--check-reference``).
    published_failures: list[str] = field(default_factory=list)
    #: Phases run for a duration whose engines share no checkpoint to compare at (one of
    #: them stopped before the first): neither an agreement nor a mismatch.
    uncompared: list[str] = field(default_factory=list)


def is_reference_run(run: RunResult) -> bool:
    tables = reference_tables(run.workload_impl)
    return tables is not None and tables.is_reference_run(run.profiles, run.seed, run.limit, run.parallelism, run.counts)


def reference_identity(p: PhaseResult) -> str | None:
    """The reference table's name for this phase, or None when no table value applies."""
    if p.count is not None:
        return None
    return p.kind.use(p.stream, p.post_update).reference


def _label(run: RunResult, e: EngineResult) -> str:
    """The engine, with its repeat number when a run repeats engines."""
    return f"{e.engine} (repeat {e.repeat + 1})" if run.repeat > 1 else e.engine


def judge(run: RunResult) -> Verdict:
    """Every phase checksum must agree across the engines, and across every repeat of each
    engine, that completed it."""
    v = Verdict(ok=True)
    indexes = sorted({p.index for e in run.engines for p in e.phases if p.checksum})
    compared = at_prefix = 0
    for index in indexes:
        phases = {_label(run, e): p for e in run.engines if (p := e.phase_at(index)) and p.checksum}
        if len(phases) < 2:
            continue
        name = next(iter(phases.values())).name
        where = ""
        if any(p.prefix is not None for p in phases.values()):
            common = common_prefix(phases)
            if common is None:
                v.uncompared.append(_uncompared_line(name, index, phases))
                continue
            by_engine, count = common
            if any(p.prefix is not None and p.prefix.stopped for p in phases.values()):
                at_prefix += 1
                where = f" at its first {count:_d} operations"
                v.lines.append(_prefix_line(name, index, phases, count))
        else:
            by_engine = {label: p.checksum for label, p in phases.items() if p.checksum}
        compared += 1
        outliers = _outliers(by_engine)
        if not outliers:
            continue
        v.ok = False
        for engine, cs, others in outliers:
            v.failures.append(
                f"CHECKSUM MISMATCH: engine {engine}, phase {name!r} (#{index + 1}){where}: {cs} (others: {others})"
            )
    probes = _probes(run, v)
    tables = reference_tables(run.workload_impl)
    if tables is not None and is_reference_run(run):
        matched: dict[str, int] = {}
        for e in run.engines:
            matched.setdefault(e.engine, 0)
            for p in e.phases:
                want = tables.reference_checksums.get(reference_identity(p) or "")
                if not want or not p.checksum:
                    continue
                if p.checksum == want:
                    matched[e.engine] += e.repeat == 0  # counted once per engine
                else:
                    v.ok = False
                    v.failures.append(
                        f"CHECKSUM MISMATCH: engine {_label(run, e)}, phase {p.name!r}: {p.checksum}, "
                        f"spec says {want}"
                    )
        v.lines.append(
            "This run uses the spec's reference configuration; phases matching the spec's checksums: "
            + ", ".join(f"{k} {n}/{len(tables.reference_checksums)}" for k, n in matched.items())
            + "."
        )
    _published(run, v)
    done = list(dict.fromkeys(e.engine for e in run.engines if e.phases))
    if v.ok:
        if len(done) >= 2:
            prefixes = f", {at_prefix} of them at the common prefix of a phase run for a duration" if at_prefix else ""
            v.lines.insert(
                0,
                f"All {len(done)} engines agree on every phase checksum they completed "
                f"({compared} phases compared{prefixes}).",
            )
        elif done:
            v.lines.insert(0, f"Only {done[0]} ran; there was nothing to compare its checksums with.")
        if probes:
            v.lines.insert(1, f"Their capacity probes agree too ({probes} probes compared by slice of the stream).")
    return v


def common_prefix(phases: dict[str, PhaseResult]) -> tuple[dict[str, str], int] | None:
    """The engines' checksums of a phase run for a duration at the longest prefix of its
    stream that every one of them ran whole and has a checksum for (its whole prefix, or a
    checkpoint), and that prefix's length; None when they share none (the shortest ran no
    checkpoint's worth). An engine without a prefix (it ran the phase to its end, in a
    result written without one) is taken at its whole stream."""
    spans = [p.prefix for p in phases.values() if p.prefix is not None]
    shortest = min(pre.complete for pre in spans)
    every = spans[0].every
    for count in (shortest, shortest - shortest % every):
        if count <= 0:
            break
        got = {label: _at(p, count) for label, p in phases.items()}
        if all(got.values()):
            return {label: cs for label, cs in got.items() if cs}, count
    return None


def _at(p: PhaseResult, count: int) -> str | None:
    if p.prefix is None:
        return None  # ran to the end with no checkpoints: comparable only with one that did too
    return p.prefix.at(count, p.checksum)


def _prefix_line(name: str, index: int, phases: dict[str, PhaseResult], count: int) -> str:
    ran = ", ".join(f"{label} {p.prefix.complete:_d}" for label, p in phases.items() if p.prefix is not None)
    duration = next(p.prefix.duration_seconds for p in phases.values() if p.prefix is not None)
    return (
        f"Phase {name!r} (#{index + 1}) ran for a duration ({duration:g} s): each engine ran a different part of "
        f"its stream, so checksums are compared at the common prefix, its first {count:_d} operations "
        f"(whole prefix run: {ran})."
    )


def _uncompared_line(name: str, index: int, phases: dict[str, PhaseResult]) -> str:
    spans = [(label, p.prefix) for label, p in phases.items() if p.prefix is not None]
    label, short = min(spans, key=lambda s: s[1].complete)
    return (
        f"Phase {name!r} (#{index + 1}) ran for a duration and its checksums were not compared: {label} ran only "
        f"the first {short.complete:_d} operations of its stream whole, short of the first checkpoint "
        f"({short.every:_d} operations) the engines share; give the phase a longer duration"
    )


def _probes(run: RunResult, v: Verdict) -> int:
    """Capacity searches (asyncbench.run.capacity.capacity): probe k of a phase reads the same slice
    of its stream on every engine, whatever its rate, so its checksum must agree across
    the engines that ran it. Returns how many probes were compared."""
    sums: dict[tuple[int, int], dict[str, str]] = {}
    names: dict[int, str] = {}
    for e in run.engines:
        for p in e.phases:
            if p.capacity is None:
                continue
            names[p.index] = p.name
            for q in p.capacity.probes:  # slice by slice (a probe may span several)
                for i, cs in enumerate(q.checksums):
                    if cs:
                        sums.setdefault((p.index, q.number + i), {})[_label(run, e)] = cs
    compared = 0
    for (index, number), by_engine in sorted(sums.items()):
        if len(by_engine) < 2:
            continue
        compared += 1
        outliers = _outliers(by_engine)
        if not outliers:
            continue
        v.ok = False
        for engine, cs, others in outliers:
            v.failures.append(
                f"CHECKSUM MISMATCH: engine {engine}, phase {names[index]!r} (#{index + 1}) probe {number}: "
                f"{cs} (others: {others})"
            )
    return compared


def _outliers(by_engine: dict[str, str]) -> list[tuple[str, str, str]]:
    """The engines whose checksum is not the one most engines agree on (every engine when
    the most common is tied), each with its checksum and the others' as one text; empty
    when all agree. A phase's and a capacity probe's comparison share it."""
    tally = Counter(by_engine.values())
    if len(tally) == 1:
        return []
    top, top_n = tally.most_common(1)[0]
    tie = sum(1 for n in tally.values() if n == top_n) > 1
    return [
        (engine, cs, ", ".join(f"{e}={c}" for e, c in by_engine.items() if e != engine))
        for engine, cs in by_engine.items()
        if tie or cs != top
    ]


def _published(run: RunResult, v: Verdict) -> None:
    """Compare every engine with the published reference of this configuration, if any."""
    tables = reference_tables(run.workload_impl)
    want = None if tables is None else tables.published_checksums(run.profiles, run.parallelism, run.limit, run.seed, run.counts)
    if want is None:
        return
    v.published_mismatch = []
    for e in run.engines:
        if not e.phases:
            continue
        matched, differ = 0, []
        for p in e.phases:
            expected = want.get(reference_identity(p) or "")
            if expected is None or p.checksum is None:
                continue
            if p.checksum == expected:
                matched += 1
            else:
                differ.append(p.name)
        who = _label(run, e)
        if differ:
            v.published_mismatch.append(who)
            line = (
                f"{who} differs from the published reference in {len(differ)} phase(s): "
                f"{', '.join(differ)} ({matched}/{len(want)} match)"
            )
            v.failures.append(line)
            v.published_failures.append(line)
        elif matched == len(want):
            v.lines.append(f"{who} matches the published reference ({matched}/{len(want)}).")
        else:
            v.lines.append(
                f"{who} matches the published reference in every phase it ran ({matched}/{len(want)}; "
                "the others did not run)."
            )
