"""The phase table: every phase kind of the profile-store workload, in one place.

One typed row per kind (:class:`asyncbench.workload.PhaseKind`: the framework's vocabulary)
says which plan streams it may consume (and the display name, post-update flag and
reference identity of each), which :class:`ProfileStore` call runs a
batch, what the checksum folds (ids or records), which group the report and charts put
it in, and how P workers split its items. Config validation, the runner, the report, the
charts and the correctness check all read this table, through the workload interface
(:mod:`.workload`); none of them parses display names.

Adding a phase kind is one row here plus one method of the kind's name in each store
that implements :class:`ProfileStore`, all in this package: the key/value and SQL stores
(:mod:`.kv_store`, :mod:`.sql_store`) and the in-memory one (:mod:`.memory_store`); engines
supply primitives only (docs/extending.md: "Adding a phase kind").
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from asyncbench.workload import Action, BatchCall, Fold, Group, Items, PhaseKind, Split, StreamUse
from asyncbench.workloads.profile_store.checksum import Checksum
from asyncbench.workloads.profile_store.generate import create_many
from asyncbench.workloads.profile_store.mix import MixedOps, MixedPhase, run_mixed
from asyncbench.workloads.profile_store.plan import Plan, stream_count
from asyncbench.workloads.profile_store.profiles import update
from asyncbench.workloads.profile_store.store import Marks, ProfileStore

__all__ = [
    "PHASES",
    "Action",
    "Fold",
    "Group",
    "PhaseContext",
    "PhaseKind",
    "Split",
    "StreamUse",
    "VERIFY_OPS",
    "BatchCall",
    "Items",
    "phase_items",
    "verify_checksum",
]


@dataclass(frozen=True)
class PhaseContext:
    """What a batch call needs besides the store and its items."""

    seed: int
    transform: Callable[[Any], Any]

    @classmethod
    def for_seed(cls, seed: int) -> PhaseContext:
        def transform(p: Any) -> Any:
            return update(p, seed)

        return cls(seed=seed, transform=transform)


# --- the batch calls: one ProfileStore call each (the engine stamps the start itself) -------


async def _insert(store: ProfileStore, uids: Sequence[int], ctx: PhaseContext, marks: Marks) -> Sequence[int]:
    assert isinstance(uids, range)
    profiles = create_many(uids.start, len(uids), ctx.seed)  # generated inside the phase time
    await store.insert(profiles, marks)
    return uids


async def _mixed(store: ProfileStore, ops: Sequence[Any], ctx: PhaseContext, marks: Marks) -> Sequence[Any]:
    return await run_mixed(store, ops, ctx.transform, marks)


async def _update(store: ProfileStore, uids: Sequence[int], ctx: PhaseContext, marks: Marks) -> Sequence[Any]:
    return await store.update(uids, ctx.transform, marks)


def _per_item(method: str) -> BatchCall:
    async def call(store: ProfileStore, items: Sequence[Any], ctx: PhaseContext, marks: Marks) -> Sequence[Any]:
        bound: Callable[[Sequence[Any], Marks], Awaitable[Sequence[Any]]] = getattr(store, method)
        return await bound(items, marks)

    call.__name__ = method
    return call


def _repeated(method: str) -> BatchCall:
    async def call(store: ProfileStore, items: Sequence[Any], ctx: PhaseContext, marks: Marks) -> Sequence[Any]:
        bound: Callable[[int, Marks], Awaitable[Sequence[Any]]] = getattr(store, method)
        return await bound(len(items), marks)

    call.__name__ = method
    return call


def _ops(
    kind: str,
    group: Group,
    fold: Fold,
    uses: tuple[StreamUse, ...],
    items: Items = Items.STREAM,
) -> PhaseKind:
    call = _repeated(kind) if items is Items.REPEATS else _per_item(kind)
    return PhaseKind(kind, Action.OPERATIONS, group, uses, items, call, fold)


def _use(stream: str | None, name: str, post: bool = False) -> StreamUse:
    return StreamUse(stream, name, post, reference=name)


_READS = ("reads", "post_reads")
_QUERIES = ("queries", "post_queries")


def _pre_post(streams: tuple[str, str], name: str) -> tuple[StreamUse, StreamUse]:
    return _use(streams[0], name), _use(streams[1], f"post-update {name}", post=True)


PHASES: dict[str, PhaseKind] = {
    k.kind: k
    for k in (
        PhaseKind(
            "insert",
            Action.OPERATIONS,
            Group.WRITE,
            (_use("profiles", "insert profiles"),),
            Items.PROFILE_IDS,
            _insert,
            Fold.IDS,
            needs_data=False,
        ),
        PhaseKind(
            "stabilize",
            Action.STABILIZE,
            Group.MAINTENANCE,
            (_use(None, "pre-read stabilization"), _use(None, "post-update stabilization", post=True)),
            needs_data=False,
            columns=("Pre-read stabilize", "Post-update stabilize"),
        ),
        _ops("read_by_id", Group.LOOKUP, Fold.RECORDS, _pre_post(_READS, "read by user id")),
        _ops(
            "lookup_by_email",
            Group.LOOKUP,
            Fold.RECORDS,
            _pre_post(("email_reads", "post_email_reads"), "lookup by email"),
        ),
        _ops("scan_country_status", Group.SCAN, Fold.IDS, _pre_post(_QUERIES, "scan country/status index")),
        _ops("query_country_status", Group.QUERY, Fold.RECORDS, _pre_post(_QUERIES, "query country/status")),
        _ops("scan_created_at", Group.SCAN, Fold.IDS, (_use("ranges", "scan created-at index"),)),
        _ops("query_created_at", Group.QUERY, Fold.RECORDS, (_use("ranges", "query created-at range"),)),
        _ops(
            "scan_top_reputation",
            Group.SCAN,
            Fold.IDS,
            _pre_post(_QUERIES, "scan top reputation index"),
            Items.REPEATS,
        ),
        _ops(
            "query_top_reputation",
            Group.QUERY,
            Fold.RECORDS,
            _pre_post(_QUERIES, "query top reputation"),
            Items.REPEATS,
        ),
        PhaseKind(
            "update",
            Action.OPERATIONS,
            Group.WRITE,
            (_use("updates", "update profiles"),),
            Items.STREAM,
            _update,
            Fold.RECORDS,
            Split.BY_UID,
        ),
        PhaseKind(
            "mixed",
            Action.OPERATIONS,
            Group.MIXED,
            (_use(None, "mixed"),),
            Items.NONE,
            _mixed,
            Fold.RECORDS,
            Split.BY_UID,  # user u's operations all on worker u % P (mix.py)
            repeatable=False,  # its updates change what a second run reads
            mixes=True,
        ),
        PhaseKind(
            "settle", Action.SETTLE, Group.MAINTENANCE, (_use(None, "settle"),), needs_data=False, columns=("Settle",)
        ),
        PhaseKind(
            "reopen",
            Action.REOPEN,
            Group.MAINTENANCE,
            (_use(None, "reopen"),),
            needs_data=False,
            columns=("Reopen (open)",),
        ),
        PhaseKind("verify", Action.VERIFY, Group.VERIFY, (_use(None, "final (verify)"),), columns=("Verify",)),
        PhaseKind(
            "recover",  # after a phase's crash: open the store again, check it profile by profile
            Action.RECOVER,
            Group.MAINTENANCE,
            (_use(None, "recover"),),
            columns=("Recover (open)",),
        ),
    )
}

def phase_items(
    kind: PhaseKind, stream: str | None, count: int | None, plan: Plan, params: Mapping[str, Any] | None = None
) -> Sequence[Any]:
    """The operations a phase will run: a range, or a lazy plan stream whose items are
    drawn batch by batch as the phase consumes them, inside its time (the ``uid % P``
    update buckets draw the stream once per worker, so P draws per update; what a draw
    costs: docs/results/plan-draws.md)."""
    if kind.items is Items.PROFILE_IDS:
        return range(1, plan.counts.profiles + 1)
    if kind.mixes:  # drawn whole, before the phase's clock
        phase = MixedPhase(plan.counts.profiles, plan.seed, params or {})
        return MixedOps(phase, np.arange(int(phase.kind.size), dtype=np.int64))
    if kind.items is Items.REPEATS:
        assert stream is not None
        total = getattr(plan.counts, stream_count(stream))
        return range(total if count is None else count)
    if kind.items is Items.STREAM:
        assert stream is not None
        return plan.stream(stream, count)
    return ()


#: The verify phase's operations: one count and three point reads.
VERIFY_OPS = 4


async def verify_checksum(store: ProfileStore, profiles: int) -> str:
    """The final checksum: the stored count, then profiles 1, profiles // 2 and the last."""
    cs = Checksum()
    cs.add_int(await store.count())
    marks: Marks = []
    cs.add_profiles(await store.read_by_id([1, max(1, profiles // 2), profiles], marks))
    return cs.hex()
