"""Which earlier runs an estimate may scale from: those paced as this run will be.

A phase at a target rate takes its operations at that rate, whatever the engine could do;
a closed-loop phase takes what the engine needs. A rate sweep's time per operation says
nothing about a closed-loop run of the same plan, nor the other way round (issue 51: a
closed-loop ``--repeat 3`` was estimated "about 5 min (scaled from the last runs of plan
'profile-store-quick')" from a ``--rate 2k,8k,32k`` sweep; it took 1 min 54 s). So an
earlier engine run is used only when every operation phase kind both runs have ran at
the same target rates (closed loop counting as one "rate": none).

A phase kind's pacing is the set of its phases' rates: a sweep's levels are one kind at
several rates, and a level the sweep skipped (its rate dipped) still had its rate asked
for. Capacity searches are left out on both sides (their time is their probes', which
the estimate counts from their own rates), as are phases a reuse run skips.
"""

from __future__ import annotations

from collections.abc import Iterable

from asyncbench.config import PhaseSpec
from asyncbench.result import EngineResult
from asyncbench.workload import Action, Workload

__all__ = ["Pacing", "describe", "engine_pacing", "plan_pacing", "same_pacing"]

Pacing = dict[str, frozenset[float | None]]
"""Per operation phase kind: the target rates its phases ran at (None: closed loop)."""


def _key(rate: float | None) -> float | None:
    return None if rate is None else round(rate, 6)  # a result's JSON float, read back


def _collect(pairs: Iterable[tuple[str, float | None]]) -> Pacing:
    found: dict[str, set[float | None]] = {}
    for kind, rate in pairs:
        found.setdefault(kind, set()).add(_key(rate))
    return {k: frozenset(v) for k, v in found.items()}


def plan_pacing(phases: Iterable[PhaseSpec], wl: Workload) -> Pacing:
    """The pacing of the phases (of workload ``wl``) a run will run (after ``--rate`` was applied)."""
    return _collect(
        (s.kind, s.rate)
        for s in phases
        if wl.phases[s.kind].action is Action.OPERATIONS and not s.capacity
    )


def engine_pacing(e: EngineResult) -> Pacing:
    """The pacing an earlier engine run had: its operation phases that ran, or that a
    sweep skipped above a dipped level (they keep their target rate)."""
    return _collect(
        (p.kind.kind, p.open_loop.rate if p.open_loop is not None else None)
        for p in e.phases
        if p.action is Action.OPERATIONS and p.capacity is None and (not p.skipped or p.open_loop is not None)
    )


def same_pacing(planned: Pacing, earlier: Pacing) -> bool:
    """Every operation phase kind both have ran at the same rates, and they share one."""
    common = planned.keys() & earlier.keys()
    return bool(common) and all(planned[k] == earlier[k] for k in common)


def describe(planned: Pacing) -> str:
    """How the matched runs were paced, for the estimate's basis line."""
    return "at the same target rates" if any(r is not None for rates in planned.values() for r in rates) else "closed loop"
