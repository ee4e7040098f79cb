"""A run on a store built by an earlier run (``--reuse-data``): what it checks and runs.

Building a 2M-profile store takes most of a run; reading it is what one often wants to
repeat. A run that finishes every phase with ``--keep-data`` leaves its store with a
*fingerprint* beside the ownership marker (:func:`fingerprint`: the engine, seed and
profile count, the plan counts that shaped the store, the write phases it ran, and
:data:`FORMAT`). A reuse run then, per engine:

1. reads that fingerprint before opening anything and refuses a store built by another
   engine, seed, profile count or format, or (when the build updated profiles) with other
   counts or other write phases (:func:`check`); a store without one (a run that failed,
   was not kept, or never closed cleanly) is refused too;
2. opens the store keeping its data, which checks it is intact (the record of its last
   clean close, SQLite's schema and ``quick_check``: ``engines/store_dir.py``);
3. runs the plan's phases that do not write (:func:`skip_reason`): never ``insert`` or
   ``update``; and a phase that reads only when the store holds what it expects, i.e.
   post-update phases on a store whose build ran the updates, the others on one whose
   build did not. Those reproduce the reference checksums of a full run with the same
   seed and counts, and each must: the build records its phase checksums in the
   fingerprint, and a phase that reads another checksum fails the engine
   (``asyncbench.run.reuse.reuse_proof``); the others are reported as skipped, with the reason
   in the notes. stabilize, settle and reopen run as usual.

The store is never deleted by a reuse run (``--clean-data`` does not apply to it).
"""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import Any

from asyncbench.config import BenchConfig, PhaseSpec
from asyncbench.result import PhaseResult
from asyncbench.workload import Action, Group, PhaseKind, PlanCounts, Workload
from asyncbench.workload_capabilities import stream_count

__all__ = ["FORMAT", "StoreMismatch", "check", "fingerprint", "proof_problem", "rewrites", "skip_reason"]

#: Version of the fingerprint and of what a store holds for a given fingerprint. 2: the
#: build's phase checksums (``checksums``) and the limit, so a reuse run proves its data
#: (``asyncbench.run.reuse.reuse_proof``); a format-1 store is refused (rebuild it). A format-2
#: fingerprint must carry that list, well formed and with the verify checksum, or the store
#: is refused: a proof that can be removed proves nothing (issue 52: a fingerprint stripped
#: of its ``checksums`` and given another seed passed every check).
FORMAT = 2

#: The fields every entry of a fingerprint's ``checksums`` holds, and their types.
ENTRY_FIELDS: dict[str, type | tuple[type, ...]] = {
    "kind": str,
    "stream": (str, type(None)),
    "count": (int, type(None)),
    "workers": int,
    "checksum": str,
}

def _update_counts(wl: Workload) -> tuple[str, ...]:
    """The counts whose streams are drawn before (and including) the updates: they decide
    which profiles an update phase changed, so they shaped an updated store. Asked of the
    plan's workload ``wl``, not at import (a process that imported this module while YCSB
    was selected, as a test session did, got YCSB's one size and a KeyError). The size is
    compared on its own (:func:`check`), never here: YCSB sizes every stream by it, and
    :func:`plan_counts` records no size (a KeyError that failed every reused YCSB store)."""
    names = (stream_count(wl, s) for s in ("reads", "email_reads", "queries", "updates"))
    return tuple(n for n in dict.fromkeys(names) if n not in ("profiles", "limit"))


class StoreMismatch(RuntimeError):
    """The store was built by another engine, seed, count or plan than this run's."""


def writes(phases: list[PhaseSpec], wl: Workload) -> list[list[Any]]:
    """The write phases of a plan of workload ``wl`` (a mixed phase writes too), as [kind, stream, count]."""
    return [[p.kind, p.stream, p.count] for p in phases if _writes(wl.phases[p.kind])]


def _writes(kind: PhaseKind) -> bool:
    return kind.group is Group.WRITE or kind.mixes


def fingerprint(
    cfg: BenchConfig,
    engine: str,
    counts: PlanCounts,
    workers: int = 1,
    phases: list[PhaseResult] | None = None,
    plan_verify: str | None = None,
) -> dict[str, Any]:
    """What a run that completed every phase of ``cfg`` (with ``workers`` workers, giving
    ``phases``) leaves in ``engine``'s store; without ``phases``, what this run expects
    of a store (no checksums). ``plan_verify``: the verify checksum the plan gives
    (``ReuseProof.verify_expected``), recorded when the build ran no verify phase after its
    last write, so every reusable store's fingerprint carries one (:func:`proof_problem`)."""
    checksums = final_checksums(cfg.phases, workers, phases or [], cfg.workload_impl)
    if plan_verify is not None and not any(e["kind"] == "verify" for e in checksums):
        checksums.append({"kind": "verify", "stream": None, "count": None, "workers": workers, "checksum": plan_verify})
    return {
        "format": FORMAT,
        "engine": engine,
        "seed": cfg.seed,
        "profiles": counts.profiles,
        "counts": plan_counts(counts),
        "limit": cfg.limit,  # the counts were drawn at it (Workload.counts)
        "writes": writes(cfg.phases, cfg.workload_impl),
        "checksums": checksums,
    }


def plan_counts(counts: PlanCounts) -> dict[str, int]:
    """The counts of the plan's streams (the profile count and limit are recorded apart)."""
    return {k: v for k, v in asdict(counts).items() if k not in ("profiles", "limit")}


def final_checksums(specs: list[PhaseSpec], workers: int, phases: list[PhaseResult], wl: Workload) -> list[dict[str, Any]]:
    """The checksums of the phases that read the store as it was left: those after the
    last write phase (earlier ones read a store the later writes changed), each with what
    decides it besides the seed and the counts (kind, stream, count, workers)."""
    last_write = max((i for i, s in enumerate(specs) if _writes(wl.phases[s.kind])), default=-1)
    out: list[dict[str, Any]] = []
    for p in phases:
        if p.index > last_write and not p.skipped and p.checksum and p.index < len(specs):
            spec = specs[p.index]
            entry = {"kind": spec.kind, "stream": spec.stream, "count": spec.count, "workers": workers}
            if all(e | {"checksum": None} != entry | {"checksum": None} for e in out):  # a sweep repeats a phase
                out.append(entry | {"checksum": p.checksum})
    return out


def rewrites(writes: Any, wl: Workload) -> list[tuple[str, int | None]]:
    """The (stream, count) of the phases among ``writes`` (of workload ``wl``) that rewrote
    stored profiles: what the verify checksum of the store depends on besides the seed and the count."""
    phases = wl.phases
    return [(w[1], w[2]) for w in writes or [] if w and w[0] in phases and phases[w[0]].rewrites]


def proof_problem(found: dict[str, Any]) -> str | None:
    """What is wrong with the fingerprint's ``checksums`` (None: it carries its proof): it
    must be a list of entries with every field of :data:`ENTRY_FIELDS`, one of them the
    verify checksum, which ties the fingerprint's seed, count and writes to the plan."""
    raw = found.get("checksums")
    if not isinstance(raw, list):
        return "carries no list of checksums (key 'checksums')"
    for i, entry in enumerate(raw):
        if not isinstance(entry, dict) or set(entry) != set(ENTRY_FIELDS):
            return f"has checksums entry #{i + 1} of another shape (keys: {', '.join(ENTRY_FIELDS)})"
        for key, typ in ENTRY_FIELDS.items():
            if not isinstance(entry[key], typ) or isinstance(entry[key], bool):
                return f"has checksums entry #{i + 1} whose {key!r} is {entry[key]!r}"
    if not any(e["kind"] == "verify" for e in raw):
        return (
            "carries no verify checksum (its checksums list was edited, it predates this check, or its "
            "workload keeps no verify proof: a YCSB store is not reused)"
        )
    return None


def updated(found: dict[str, Any], wl: Workload) -> bool:
    """Whether the build ran a phase of ``wl`` that rewrote stored profiles (an update, a mixed phase)."""
    phases = wl.phases
    return any(phases[w[0]].rewrites or phases[w[0]].mixes for w in found.get("writes", []) if w and w[0] in phases)


def check(found: Any, expected: dict[str, Any], where: Path, wl: Workload) -> bool:
    """StoreMismatch naming every field in which ``found`` (the store's fingerprint)
    differs from what this run (of workload ``wl``) needs; returns whether the store holds
    updated profiles."""
    if not isinstance(found, dict) or found.get("format") != FORMAT:
        version = found.get("format") if isinstance(found, dict) else None
        raise StoreMismatch(
            f"{where}: the store's fingerprint has format {version!r}, this asyncbench reads format {FORMAT}; rebuild it"
        )
    problem = proof_problem(found)
    if problem is not None:
        raise StoreMismatch(
            f"{where}: the store's fingerprint {problem}: nothing proves what the store holds; "
            "it is left as it is (rebuild it with --keep-data)"
        )
    diffs = [
        f"{key} {found.get(key)!r} (this run: {expected[key]!r})"
        for key in ("engine", "seed", "profiles")
        if found.get(key) != expected[key]
    ]
    is_updated = updated(found, wl)
    if is_updated:
        have, want = found.get("counts") or {}, expected["counts"]
        diffs += [
            f"counts.{key} {have.get(key)!r} (this run: {want[key]!r})"
            for key in _update_counts(wl)
            if have.get(key) != want[key]
        ]
        if found.get("writes") != expected["writes"]:
            diffs.append(f"write phases {found.get('writes')!r} (this run's plan: {expected['writes']!r})")
    if diffs:
        raise StoreMismatch(
            f"{where}: the store was built with {'; '.join(diffs)}; it is not this run's store and is left as it is"
        )
    return is_updated


def skip_reason(spec: PhaseSpec, store_updated: bool, wl: Workload) -> str | None:
    """Why a reuse run does not run this phase of workload ``wl`` (None: it runs)."""
    kind = wl.phases[spec.kind]
    if _writes(kind):
        return "the store is reused, never written"
    if kind.action in (Action.OPERATIONS, Action.VERIFY) and spec.post_update != store_updated:
        if store_updated:
            return "the store holds the profiles after the updates; this phase reads them before"
        return "the store's build ran no updates; this phase reads the profiles after them"
    return None
