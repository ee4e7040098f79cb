"""What every phase of a reuse run must read: a reused store proves its data, not only its files.

The record of a clean close (``engines/store_dir.py``) proves a store's files are those the
last close left, and the fingerprint (``asyncbench.run.reuse.reuse``) says what built it; both
live in the marker, which a person copying or repairing stores may recompute or edit. A
store whose contents were changed and whose record was then recomputed, or whose
fingerprint's seed was edited, passed both checks and gave wrong checksums with exit 0.

So before a reuse run opens the store, :func:`expectations` fixes the checksum each phase
it will run must give (computed outside every timed phase):

- ``verify``: from the plan alone (``workloads/profile_store/expected.py``: the count and
  three profiles after the store's update phases; 0.1 s per million update draws), so
  also for a store whose build recorded no verify result;
- the operation phases: the build's own checksum of the same phase (kind, stream, count)
  at the same worker count, which the build recorded in the fingerprint for the phases
  that read the store as it was left (after its last write). Every engine gives the same
  checksum for the same plan, so the build's result is the expectation. A fingerprint
  whose recorded verify checksum is not the plan's is refused at once (its seed or
  writes were edited, or it is another store's).

A phase whose checksum differs makes the engine Failed, naming the phase
(:class:`StoreContentMismatch`). A phase for which the build recorded nothing comparable
(another worker count, other counts) cannot be proven: it runs and the result's notes say
so, by name.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from asyncbench.config import BenchConfig, PhaseSpec
from asyncbench.run.reuse import reuse
from asyncbench.run.reuse.reuse import StoreMismatch, plan_counts, skip_reason
from asyncbench.workload import Action, DrawnPlan
from asyncbench.workload_capabilities import verify_expected

__all__ = ["Proof", "StoreContentMismatch", "build_verify", "expectations"]

FROM_PLAN = "computed from the plan"
FROM_BUILD = "recorded by the store's build"


class StoreContentMismatch(StoreMismatch):
    """A phase of a reuse run read other data than the store's build left."""


@dataclass
class Proof:
    """The expected checksum of each phase a reuse run runs, by plan index."""

    where: Path
    expected: dict[int, tuple[str, str]] = field(default_factory=dict)  # index -> (checksum, whence)
    unchecked: list[str] = field(default_factory=list)  # phases nothing proves, with the reason

    def check(self, index: int, spec: PhaseSpec, checksum: str) -> None:
        """StoreContentMismatch if phase ``index`` gave another checksum than expected."""
        want = self.expected.get(index)
        if want is not None and checksum != want[0]:
            raise StoreContentMismatch(
                f"{self.where}: phase {spec.name!r} (#{index + 1}) read checksum {checksum}, expected {want[0]} "
                f"({want[1]}): the store does not hold what its marker says it was built with (its contents "
                "changed after the build, or its marker was edited or recomputed); it is left as it is"
            )


def _entries(found: dict[str, Any]) -> list[dict[str, Any]]:
    """The fingerprint's recorded phase checksums (entries of another shape are ignored)."""
    raw = found.get("checksums")
    if not isinstance(raw, list):
        return []
    return [e for e in raw if isinstance(e, dict) and isinstance(e.get("checksum"), str)]


def build_verify(cfg: BenchConfig, plan: DrawnPlan) -> str | None:
    """The verify checksum ``plan`` gives for the store a build of ``cfg`` leaves, recorded
    in the fingerprint of a build that ran no verify phase after its last write (so every
    reusable store carries one: ``reuse.proof_problem``); None for a workload whose stores
    are not reused (YCSB)."""
    wl = cfg.workload_impl
    found = {"writes": reuse.writes(cfg.phases, wl)}
    try:
        return verify_expected(cfg.workload_impl, plan, reuse.rewrites(found["writes"], wl) if reuse.updated(found, wl) else [])
    except NotImplementedError:
        return None


def expectations(
    cfg: BenchConfig, found: dict[str, Any], plan: DrawnPlan, workers: int, store_updated: bool, where: Path
) -> Proof:
    """The checksum each phase of this reuse run must give (``found``: the store's
    fingerprint, already matched by ``reuse.check``); StoreMismatch if the fingerprint's
    own recorded verify checksum contradicts the plan."""
    proof = Proof(where)
    comparable = found.get("counts") == plan_counts(plan.counts) and found.get("limit") == cfg.limit
    # the store's update phases (reuse.check matched them with this plan's when it updated)
    rewrites = reuse.rewrites(found.get("writes"), cfg.workload_impl) if store_updated else []
    recorded = _entries(found)
    runs = [(i, s) for i, s in enumerate(cfg.phases) if skip_reason(s, store_updated, cfg.workload_impl) is None]
    need_verify = any(cfg.workload_impl.phases[s.kind].action is Action.VERIFY for _, s in runs) or any(
        e.get("kind") == "verify" for e in recorded
    )
    verify = verify_expected(cfg.workload_impl, plan, rewrites) if need_verify else None
    for e in recorded:
        if e.get("kind") == "verify" and e["checksum"] != verify:
            raise StoreMismatch(
                f"{where}: the fingerprint records verify checksum {e['checksum']} for this store, but its plan "
                f"(seed {cfg.seed}, {plan.counts.profiles:_d} {cfg.workload_impl.unit}, its write phases) gives {verify}: the "
                "marker was edited or belongs to another store; it is left as it is"
            )
    for index, spec in runs:
        action = cfg.workload_impl.phases[spec.kind].action
        if action is Action.VERIFY:
            assert verify is not None
            proof.expected[index] = (verify, FROM_PLAN)
        elif action is Action.OPERATIONS:
            phase = (spec.kind, spec.stream, spec.count)
            same = [e for e in recorded if (e.get("kind"), e.get("stream"), e.get("count")) == phase]
            match = [e for e in same if e.get("workers") == workers]
            if comparable and match:
                proof.expected[index] = (match[0]["checksum"], FROM_BUILD)
            elif not comparable:
                proof.unchecked.append(f"{spec.name} (the build ran other counts)")
            elif same:
                proof.unchecked.append(
                    f"{spec.name} (the build ran it with {same[0].get('workers')} worker(s), this run {workers})"
                )
            else:
                proof.unchecked.append(f"{spec.name} (the build did not run it)")
    return proof
