"""Phase kinds: what each ``[[phase]]`` kind needs from the plan and how it runs.

A phase runs its plan stream in operation batches through one engine batch call each,
folding the batch's results into the phase checksum; the runner times the whole loop,
checksum included, exactly as the reference does.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from time import perf_counter
from typing import Any

import anyio

from asyncbench.engine import Engine
from workloads.profile_store.checksum import Checksum, combine
from workloads.profile_store.plan import Plan
from workloads.profile_store.profiles import create_many, update


@dataclass(frozen=True)
class KindInfo:
    """Static facts of a phase kind, used by the config validator and the runner."""

    streams: tuple[str, ...]  # allowed plan streams; the first is the default; () = none
    names: tuple[str, ...]  # default display names, one per stream (or one)
    role: str  # "ops" (timed operation phase), "stabilize", "settle", "reopen", "verify"


KINDS: dict[str, KindInfo] = {
    "insert": KindInfo(("profiles",), ("insert profiles",), "ops"),
    "stabilize": KindInfo((), ("stabilization",), "stabilize"),
    "read_by_id": KindInfo(
        ("reads", "post_reads"), ("read by user id", "post-update read by user id"), "ops"
    ),
    "lookup_by_email": KindInfo(
        ("email_reads", "post_email_reads"), ("lookup by email", "post-update lookup by email"), "ops"
    ),
    "scan_country_status": KindInfo(
        ("queries", "post_queries"),
        ("scan country/status index", "post-update scan country/status index"),
        "ops",
    ),
    "query_country_status": KindInfo(
        ("queries", "post_queries"), ("query country/status", "post-update query country/status"), "ops"
    ),
    "scan_created_at": KindInfo(("ranges",), ("scan created-at index",), "ops"),
    "query_created_at": KindInfo(("ranges",), ("query created-at range",), "ops"),
    "scan_top_reputation": KindInfo(
        ("queries", "post_queries"),
        ("scan top reputation index", "post-update scan top reputation index"),
        "ops",
    ),
    "query_top_reputation": KindInfo(
        ("queries", "post_queries"), ("query top reputation", "post-update query top reputation"), "ops"
    ),
    "update": KindInfo(("updates",), ("update profiles",), "ops"),
    "settle": KindInfo((), ("settle",), "settle"),
    "reopen": KindInfo((), ("reopen",), "reopen"),
    "verify": KindInfo((), ("final (verify)",), "verify"),
}

#: Phase kinds that need stored profiles, so must follow an insert phase.
NEEDS_DATA = frozenset(k for k, info in KINDS.items() if info.role in ("ops", "verify")) - {"insert"}

#: Stream name -> the count that sizes it (``ranges`` is sized by ``queries``).
STREAM_COUNT = {
    "profiles": "profiles",
    "reads": "reads",
    "email_reads": "email_reads",
    "queries": "queries",
    "ranges": "queries",
    "updates": "updates",
    "post_reads": "post_reads",
    "post_email_reads": "post_email_reads",
    "post_queries": "post_queries",
}

BatchHook = Callable[[int, int, float], None]
"""Called after every batch with (batch index, ops in batch, batch seconds)."""


@dataclass
class PhaseOutcome:
    ops: int
    checksum: str | None
    seconds: float | None = None  # set when the phase timed itself (from the start gate)


def stream_items(kind: str, stream: str | None, count: int | None, plan: Plan) -> Sequence[Any]:
    """The operations a phase will run: plan items, or a ``range`` for insert / top-N repeats."""
    n = plan.counts.profiles
    if kind == "insert":
        return range(1, n + 1)
    assert stream is not None
    if kind in ("scan_top_reputation", "query_top_reputation"):
        total = getattr(plan.counts, STREAM_COUNT[stream])
        return range(total if count is None else count)
    return plan.stream(stream, count)


async def drive(
    items: Sequence[Any],
    batch_size: int,
    step: Callable[[Sequence[Any]], Awaitable[None]],
    on_batch: BatchHook,
) -> int:
    """Run ``step`` over consecutive batches of ``items``; returns the operation count."""
    clock = perf_counter
    t0 = clock()
    total = len(items)
    for index, start in enumerate(range(0, total, batch_size)):
        chunk = items[start : start + batch_size]
        await step(chunk)
        t1 = clock()
        on_batch(index, len(chunk), t1 - t0)
        t0 = t1
    return total


def make_step(
    kind: str, engine: Engine, cs: Checksum, seed: int
) -> Callable[[Sequence[Any]], Awaitable[None]]:
    """The per-batch coroutine of an operation phase: one engine batch call + one fold."""
    add_ints, add_profiles = cs.add_ints, cs.add_profiles

    if kind == "insert":

        async def step(chunk: range) -> None:
            await engine.insert(create_many(chunk.start, len(chunk), seed))
            add_ints(chunk)

        return step

    if kind == "update":

        def transform(p: Any) -> Any:
            return update(p, seed)

        async def step(chunk: Sequence[int]) -> None:
            add_profiles(await engine.update(chunk, transform))

        return step

    method = getattr(engine, kind)
    fold = add_ints if kind.startswith("scan_") else add_profiles
    if kind.endswith("_top_reputation"):

        async def step(chunk: range) -> None:
            fold(await method(len(chunk)))

        return step

    async def step(chunk: Sequence[Any]) -> None:
        fold(await method(chunk))

    return step


def partition(items: Sequence[Any], workers: int) -> list[Sequence[Any]]:
    """Contiguous partitions: ``len // P`` each, the first ``len % P`` workers one more."""
    base, extra = divmod(len(items), workers)
    parts, start = [], 0
    for w in range(workers):
        size = base + (1 if w < extra else 0)
        parts.append(items[start : start + size])
        start += size
    return parts


def bucket_by_uid(uids: Sequence[int], workers: int) -> list[list[int]]:
    """Updates go to worker ``uid % P`` in plan order, so each id's updates stay ordered."""
    buckets: list[list[int]] = [[] for _ in range(workers)]
    for uid in uids:
        buckets[uid % workers].append(uid)
    return buckets


async def run_ops_phase(
    kind: str,
    items: Sequence[Any],
    engines: Sequence[Engine],
    seed: int,
    batch_size: int,
    on_batch: BatchHook,
) -> PhaseOutcome:
    """One worker per engine handle in ``engines``; P > 1 workers start together behind a gate.

    Each worker folds its own partition; the phase checksum is the fold of the active
    workers' hex checksums in worker order (one active worker: its own checksum).
    """
    workers = len(engines)
    if workers == 1:
        cs = Checksum()
        t0 = perf_counter()
        ops = await drive(items, batch_size, make_step(kind, engines[0], cs, seed), on_batch)
        return PhaseOutcome(ops=ops, checksum=cs.hex(), seconds=perf_counter() - t0)
    parts = bucket_by_uid(items, workers) if kind == "update" else partition(items, workers)
    sums = [Checksum() for _ in range(workers)]
    gate = anyio.Event()
    ready = 0

    async def worker(w: int) -> None:
        nonlocal ready
        ready += 1
        await gate.wait()
        await drive(parts[w], batch_size, make_step(kind, engines[w], sums[w], seed), on_batch)

    async with anyio.create_task_group() as tg:
        for w in range(workers):
            tg.start_soon(worker, w)
        while ready < workers:  # every worker is parked at the gate before the clock starts
            await anyio.sleep(0)
        t0 = perf_counter()
        gate.set()
    seconds = perf_counter() - t0
    active = [sums[w].hex() for w in range(workers) if len(parts[w])]
    return PhaseOutcome(
        ops=len(items), checksum=combine(active) if active else Checksum().hex(), seconds=seconds
    )


async def run_verify(engine: Engine, profiles: int) -> PhaseOutcome:
    """The final checksum: the profile count, then profiles 1, profiles // 2 and the last."""
    cs = Checksum()
    cs.add_int(await engine.count())
    cs.add_profiles(await engine.read_by_id([1, max(1, profiles // 2), profiles]))
    return PhaseOutcome(ops=4, checksum=cs.hex())
