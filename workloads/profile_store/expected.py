"""The verify phase's checksum from the plan alone, without any engine.

A run on a store built earlier (``--reuse-data``) must prove that the store holds what the
plan says, not only that its files are those of the last clean close: a store whose
contents were changed and whose marker record was then recomputed passes every file
check. The verify phase reads the stored count and profiles 1, ``profiles // 2`` and the
last; what they must be follows from the workload's own definitions: every profile
``1..profiles`` is inserted as :func:`~.generate.create` makes it, and each update phase
applies :func:`~.profiles.update` once per occurrence of the id among its stream's items
(the update rule is a function of the stored profile, the id and the seed, so k updates
of an id are the rule applied k times, whatever the worker split).

Cost: the update streams are drawn once (compiled, counted with ``list.count``), three
profiles are made and updated: about 0.1 s per million update draws, measured outside
every timed phase.
"""

from __future__ import annotations

from collections.abc import Sequence

from asyncbench.workloads.profile_store.checksum import Checksum
from asyncbench.workloads.profile_store.generate import create
from asyncbench.workloads.profile_store.plan import Plan
from asyncbench.workloads.profile_store.profiles import Profile, update
from asyncbench.workloads.profile_store.streams import CHUNK

__all__ = ["verify_ids", "verify_expected"]


def verify_ids(profiles: int) -> list[int]:
    """The ids the verify phase reads (``phases.verify_checksum``)."""
    return [1, max(1, profiles // 2), profiles]


def _occurrences(plan: Plan, stream: str, count: int | None, ids: Sequence[int]) -> dict[int, int]:
    """How often each of ``ids`` is among the first ``count`` items of ``stream``."""
    items = plan.stream(stream, count)
    seen = dict.fromkeys(ids, 0)
    for start in range(0, len(items), CHUNK):
        chunk = items[start : start + CHUNK]
        for uid in seen:
            seen[uid] += chunk.count(uid)
    return seen


def verify_expected(plan: Plan, rewrites: Sequence[tuple[str, int | None]]) -> str:
    """The verify checksum of a store that holds every profile of ``plan`` after the
    update phases ``rewrites`` (their stream and count, in order) ran on it."""
    n = plan.counts.profiles
    ids = verify_ids(n)
    times = dict.fromkeys(ids, 0)
    for stream, count in rewrites:
        for uid, k in _occurrences(plan, stream, count, list(times)).items():
            times[uid] += k
    records: list[Profile] = []
    for uid in ids:
        p = create(uid, plan.seed)
        for _ in range(times[uid]):
            p = update(p, plan.seed)
        records.append(p)
    cs = Checksum()
    cs.add_int(n)
    cs.add_profiles(records)
    return cs.hex()
