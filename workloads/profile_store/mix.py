"""The profile store's mixed phase: reads by id, email lookups and updates of hot users.

Each operation's kind is drawn from the phase's weights over :data:`KINDS` (YCSB's
``DiscreteGenerator``: a uniform double against the cumulative shares, zero weights
dropped) and its user from a request distribution over the profiles
(:mod:`asyncbench.workloads.common.distributions`, YCSB's key choosers: key k is user
k + 1). The whole sequence is drawn from the plan's seed before the phase's clock, so
operation i is the same on every run, engine, P and K.

The concurrency rule (docs/workloads.md): user u belongs to worker u % P, the update
phase's owner; every operation on u (a read by id, an email lookup of u's email, an
update) runs on its owner, in sequence order. So a read sees exactly the updates before
it in the sequence, whatever the timing, and each worker's checksum (the records its
operations return, folded in order) is the same on every engine and K; the phase
checksum folds the workers' in worker order, as every profile-store phase.

A batch runs each run of consecutive operations of one kind as one store call (each
item still one engine operation) and keeps one stamp per operation: the first call's
start stamp, then every operation's end, so an operation's latency after a change of
kind includes the hop into the next store call.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any, overload

import numpy as np
import numpy.typing as npt

from asyncbench.workload import MixFigures, SettingError
from asyncbench.workloads.common import draws, params
from asyncbench.workloads.common.distributions import NAMES, Params, chooser, next_keys
from asyncbench.workloads.common.mix import Done, OwnedOps, figures
from asyncbench.workloads.profile_store import kernels
from asyncbench.workloads.profile_store.fold import M64
from asyncbench.workloads.profile_store.store import Marks, ProfileStore

__all__ = ["KINDS", "MIX_KEYS", "MixedOps", "MixedPhase", "mixed_params", "run_mixed", "mix_figures"]

#: the operation kinds a mixed phase draws from, in drawing order (the codes are part of the draw)
KINDS = ("read_by_id", "lookup_by_email", "update")
READ, EMAIL, UPDATE = range(3)
PROPORTIONS = tuple(f"{kind}_proportion" for kind in KINDS)
#: A mixed phase's keys: key -> (kind, default); operations is required.
MIX_KEYS: dict[str, tuple[str, Any]] = {
    "operations": ("int", None),
    **{p: ("fraction", 0.0) for p in PROPORTIONS},
    "requestdistribution": ("choice", "zipfian"),
    "zipfianconstant": ("number", 0.99),
    "hotspotdatafraction": ("fraction", 0.2),
    "hotspotopnfraction": ("fraction", 0.8),
    "exponential_percentile": ("number", 95.0),
    "exponential_frac": ("number", 0.8571428571),
}
_CHOICES = {"requestdistribution": NAMES}


def mixed_params(table: Mapping[str, Any]) -> dict[str, Any]:
    """A mixed phase's keys, typed, defaults filled in; the proportions must sum to 1
    (SettingError naming the key). The checks against the profile count run when the
    phase is drawn (the count is known per level)."""
    v = params.read(table, MIX_KEYS, "a mixed phase", _CHOICES)
    total = sum(v[p] for p in PROPORTIONS)
    if abs(total - 1.0) > 1e-9:
        raise SettingError(PROPORTIONS[0], f"the proportions ({', '.join(PROPORTIONS)}) sum to {total:g}, not 1")
    return v


class MixedPhase:
    """One mixed phase's whole sequence (kind code and user id per operation), drawn
    once, and the (positions, marks) of every batch run in this process."""

    def __init__(self, profiles: int, seed: int, p: Mapping[str, Any]) -> None:
        params.check_distribution(p, profiles, lambda key, problem: ValueError(f"{key}: {problem}"))
        n = int(p["operations"])
        seed &= M64  # a plan's seed may be negative; the streams take a non-negative one
        weights = np.array([p[k] for k in PROPORTIONS], dtype=np.float64)
        present = np.flatnonzero(weights > 0).astype(np.int8)
        edges = np.cumsum(weights[present] / weights.sum())[:-1]
        self.kind = present[np.searchsorted(edges, draws.Stream(seed, draws.KIND).doubles(n), side="right")]
        dist = Params(
            name=p["requestdistribution"],
            recordcount=profiles,
            zipfianconstant=p["zipfianconstant"],
            hotspotdatafraction=p["hotspotdatafraction"],
            hotspotopnfraction=p["hotspotopnfraction"],
            exponential_percentile=p["exponential_percentile"],
            exponential_frac=p["exponential_frac"],
        )
        last = np.full(n, profiles - 1, dtype=np.int64)  # no inserts: every profile exists
        self.uid = next_keys(chooser(dist, seed), last) + 1
        self.profiles = profiles
        self.done = Done()


class MixedOps(OwnedOps, Sequence[tuple[int, int]]):
    """Positions of a mixed phase's operations (a worker's share, or a batch of it), in
    sequence order; item i is (kind code, user id). User u's operations go to worker
    u % P, the update phase's owner (:class:`~asyncbench.workloads.common.mix.OwnedOps`)."""

    phase: MixedPhase

    def owner_keys(self) -> npt.NDArray[np.int64]:
        return self.phase.uid[self.positions]

    @overload
    def __getitem__(self, i: int) -> tuple[int, int]: ...
    @overload
    def __getitem__(self, i: slice) -> MixedOps: ...
    def __getitem__(self, i: int | slice) -> tuple[int, int] | MixedOps:
        if isinstance(i, slice):
            return self.part(self.positions[i])
        p = int(self.positions[i])
        return int(self.phase.kind[p]), int(self.phase.uid[p])

    def __iter__(self) -> Iterator[tuple[int, int]]:
        return iter(zip(self.phase.kind[self.positions].tolist(), self.phase.uid[self.positions].tolist(), strict=True))


async def run_mixed(store: ProfileStore, ops: Sequence[Any], transform: Any, marks: Marks) -> list[Any]:
    """One batch: each run of one kind as one store call, the records in operation order."""
    assert isinstance(ops, MixedOps)
    kinds = ops.phase.kind[ops.positions]
    uids = ops.phase.uid[ops.positions].tolist()
    cuts = [0, *(np.flatnonzero(np.diff(kinds)) + 1).tolist(), len(kinds)]
    records: list[Any] = []
    for a, b in zip(cuts, cuts[1:], strict=False):
        own: Marks = []
        kind = int(kinds[a])
        if kind == READ:
            records.extend(await store.read_by_id(uids[a:b], own))
        elif kind == EMAIL:
            records.extend(await store.lookup_by_email(kernels.email_many(uids[a:b]), own))
        else:
            records.extend(await store.update(uids[a:b], transform, own))
        marks.extend(own if a == 0 else own[1:])  # one start stamp, then one per operation
    ops.phase.done.append(ops.positions, marks)
    return records


def mix_figures(ops: MixedOps) -> MixFigures:
    """Operations per kind, each kind's latencies (from the marks of the batches this
    process ran) and the share of the operations on the hottest 0.1/1/10 % of the users."""
    phase = ops.phase
    return figures(KINDS, phase.kind, ops.positions, phase.done, phase.uid[ops.positions] - 1, phase.profiles)
