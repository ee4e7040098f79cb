"""Checksum agreement across engines, and against the published reference tables.

Phases are matched by identity (their position in the plan, which fixes kind, stream and
count), never by display name; the reference check asks the phase table for the
reference identity of a phase's (kind, stream) and skips phases limited by ``count``.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from asyncbench.result import EngineResult, PhaseResult, RunResult
from asyncbench.workloads import workload

__all__ = ["Verdict", "is_reference_run", "judge", "reference_identity"]


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


def is_reference_run(run: RunResult) -> bool:
    return workload().is_reference_run(run.profiles, run.seed, run.limit, run.parallelism, run.counts)


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
    compared = 0
    for index in indexes:
        by_engine = {_label(run, e): p.checksum for e in run.engines if (p := e.phase_at(index)) and p.checksum}
        if len(by_engine) < 2:
            continue
        compared += 1
        outliers = _outliers(by_engine)
        if not outliers:
            continue
        v.ok = False
        name = next(p.name for e in run.engines if (p := e.phase_at(index)))
        for engine, cs, others in outliers:
            v.failures.append(
                f"CHECKSUM MISMATCH: engine {engine}, phase {name!r} (#{index + 1}): {cs} (others: {others})"
            )
    probes = _probes(run, v)
    if is_reference_run(run):
        matched: dict[str, int] = {}
        for e in run.engines:
            matched.setdefault(e.engine, 0)
            for p in e.phases:
                want = workload().reference_checksums.get(reference_identity(p) or "")
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
            + ", ".join(f"{k} {n}/{len(workload().reference_checksums)}" for k, n in matched.items())
            + "."
        )
    _published(run, v)
    done = list(dict.fromkeys(e.engine for e in run.engines if e.phases))
    if v.ok:
        if len(done) >= 2:
            v.lines.insert(
                0,
                f"All {len(done)} engines agree on every phase checksum they completed "
                f"({compared} phases compared).",
            )
        elif done:
            v.lines.insert(0, f"Only {done[0]} ran; there was nothing to compare its checksums with.")
        if probes:
            v.lines.insert(1, f"Their capacity probes agree too ({probes} probes compared by slice of the stream).")
    return v


def _probes(run: RunResult, v: Verdict) -> int:
    """Capacity searches (asyncbench.run.capacity): probe k of a phase reads the same slice
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
    want = workload().published_checksums(run.profiles, run.parallelism, run.limit, run.seed, run.counts)
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
