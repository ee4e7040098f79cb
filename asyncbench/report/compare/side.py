"""One side of a comparison: every run it names, pooled per engine and phase.

Phases are keyed by identity (kind, stream, count, post-update, and which occurrence of
that in the plan), never by display name, so renamed phases still compare.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from asyncbench import fmt
from asyncbench.report import latency_compare
from asyncbench.result import PhaseResult, RunResult
from asyncbench.slo import bounds_text
from asyncbench.workload import Action

__all__ = ["PhaseKey", "Side", "engines_of", "pacing", "phase_keys", "pool"]

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


def phase_keys(run: RunResult) -> list[PhaseKey]:
    """The identity of each of ``run``'s planned phases, in plan order."""
    seen: dict[tuple[object, ...], int] = defaultdict(int)
    keys = []
    for spec in run.phases:
        ident = (spec.kind.kind, spec.stream, spec.count, spec.post_update)
        keys.append((*ident, seen[ident]))
        seen[ident] += 1
    return keys


def pool(side: Side, path: Path, run: RunResult, engines: set[str] | None) -> None:
    """``run`` (read from ``path``) into ``side``: its measured engines' phases (only
    ``engines`` when given; warm-up repeats never)."""
    side.files.append(path)
    side.runs.append(run)
    keys = phase_keys(run)
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
                side.pacing[(e.engine, key)].add(pacing(p))
                latency_compare.add_phase(side.latency, e.engine, key, p)


def pacing(p: PhaseResult) -> str:
    """How a phase was paced: ``2_000/s`` (its target rate) or ``closed loop``."""
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


def engines_of(side: Side) -> list[str]:
    """The engines a side measured, in the order first met."""
    out: list[str] = []
    for engine, _key in side.samples:
        if engine not in out:
            out.append(engine)
    return out
