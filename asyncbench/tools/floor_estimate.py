"""What a ``floor`` run will cost before it starts, and the bounds of its flags.

``floor --profiles 2000000000`` or ``--repeats 100000`` used to start without a word and
run for days. The floor's work is known from its flags alone: each engine builds a store
of ``--profiles`` profiles, then runs every phase kind's items ``--repeats`` + 1 times
(the untimed check round) through A and through B. Its cost per item is taken from the
measured run written up in docs/results/floor-200k.md (this project's 2-vCPU machine,
200_000 profiles: A's and B's µs/op added, the store's build time per profile), scaled
linearly; the estimate is printed, and on a terminal a run over ten minutes asks first,
as ``run`` does (``--yes`` skips the question).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

__all__ = ["BUILD_US", "FLAG_MAXIMA", "ITEM_US", "floor_seconds"]

#: The largest value of each count flag. ``--profiles``: five times the reference plan's
#: 2_000_000 (the store is built through the engine first, and copied for the updates);
#: ``--repeats``: rounds enough for any median; the per-round item counts: ten million,
#: beyond any stream the reference plan draws; ``--batch``: as ``run``'s ``batch_size``.
FLAG_MAXIMA: Mapping[str, int] = {
    "profiles": 10_000_000,
    "batch": 10_000_000,
    "repeats": 100,
    "slices": 1_000,
    "point_ops": 10_000_000,
    "update_ops": 10_000_000,
    "query_ops": 10_000_000,
    "insert_profiles": 10_000_000,
}

#: Microseconds to build the store, per profile (docs/results/floor-200k.md: 4.4 s and
#: 17.3 s for 200_000 profiles).
BUILD_US: Mapping[str, float] = {"rocksdb": 22.0, "sqlite": 87.0}
#: Microseconds per item of each phase kind, A and B together (the same document).
ITEM_US: Mapping[str, Mapping[str, float]] = {
    "rocksdb": {
        "insert": 33.4, "read_by_id": 7.5, "lookup_by_email": 12.7, "scan_country_status": 41.7,
        "query_country_status": 246.8, "scan_created_at": 61.5, "query_created_at": 258.2,
        "scan_top_reputation": 58.2, "query_top_reputation": 239.0, "update": 77.5,
    },
    "sqlite": {
        "insert": 132.9, "read_by_id": 17.5, "lookup_by_email": 23.7, "scan_country_status": 42.4,
        "query_country_status": 236.6, "scan_created_at": 44.8, "query_created_at": 229.0,
        "scan_top_reputation": 51.3, "query_top_reputation": 245.6, "update": 210.2,
    },
}  # fmt: skip


def floor_seconds(
    engines: Sequence[str], profiles: int, items: Sequence[tuple[str, int]], repeats: int, a_only: bool
) -> float:
    """About how long ``floor`` runs: per engine, the store's build, then each (kind,
    items per round) of ``items`` over ``repeats`` timed rounds and the check round (A
    alone: half, no check round). An engine or kind without a figure costs the dearest."""
    dearest_build = max(BUILD_US.values())
    total_us = 0.0
    for engine in engines:
        costs = ITEM_US.get(engine, {})
        fallback = max(max(c.values()) for c in ITEM_US.values())
        total_us += profiles * BUILD_US.get(engine, dearest_build)
        rounds = repeats if a_only else repeats + 1
        share = 0.5 if a_only else 1.0
        for kind, n in items:
            total_us += rounds * n * costs.get(kind, fallback) * share
    return total_us / 1e6
