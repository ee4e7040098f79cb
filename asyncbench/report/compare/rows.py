"""Which of the engines' phases ``compare`` compares: a :class:`Row` per engine and phase
both sides ran paced alike; a :class:`PacedApart` per one both ran paced differently (its
ops/s are a rate's on one side: named, not compared); and :class:`OneSided`, what only
one side has (never compared, never silently dropped).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from asyncbench.measure.correctness import common_prefix
from asyncbench.measure.stats import Comparison, compare
from asyncbench.report.compare.side import PhaseKey, Side, engines_of
from asyncbench.result import PhaseResult

__all__ = ["PACED_APART_WHY", "OneSided", "PacedApart", "Row", "compare_sides", "one_sided", "paced_apart"]


@dataclass
class Row:
    """One engine's phase, compared: the verdict on its ops/s and whether its checksums
    agree (None: nothing to compare them on)."""

    engine: str
    phase: str
    comparison: Comparison
    checksums_equal: bool | None
    key: PhaseKey | None = None


PACED_APART_WHY = "a phase at a target rate is compared only with one at the same rate"


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


def one_sided(base: Side, new: Side) -> OneSided:
    """What each side has that the other has not."""
    out = OneSided()
    sides = {"base": (base, new), "new": (new, base)}
    for label, (this, other) in sides.items():
        engines = [e for e in engines_of(this) if e not in engines_of(other)]
        keys = [k for k in this.names if k not in other.names]
        pairs = [
            f"{engine} {this.names[key]}"
            for engine, key in this.samples
            if (engine, key) not in other.samples and engine not in engines and key not in keys
            and engine in engines_of(other)
        ]
        out.engines[label], out.phases[label] = engines, [this.names[k] for k in keys]
        out.pairs[label] = pairs
    return out
