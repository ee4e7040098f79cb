"""The eager reference plan: every stream drawn up front, as ``draw_plan`` did before its
streams became lazy (issue 24). Tests hold the lazy streams equal to it, item for item.

Kept deliberately simple and independent of ``workloads.profile_store.streams``: one
generator, the spec's drawing order, plain lists.
"""

from __future__ import annotations

from typing import Any

from asyncbench.workloads.profile_store.kernels import NetRandom, created_at_many, email_many
from asyncbench.workloads.profile_store.plan import Counts
from asyncbench.workloads.profile_store.profiles import COUNTRIES, STATUSES, seed_word


def _country_status(rng: Any, count: int) -> list[tuple[str, str]]:
    out = []
    for _ in range(count):
        country = COUNTRIES[rng.next(0, 32)]
        out.append((country, STATUSES[rng.next(0, 4)]))
    return out


def eager_streams(counts: Counts, seed: int, rng_class: Any = NetRandom) -> dict[str, list[Any]]:
    """Every stream of the plan for (counts, seed), as lists, drawn in the spec's order."""
    n = counts.profiles
    rng = rng_class(seed)
    out: dict[str, list[Any]] = {}
    out["reads"] = rng.int64_list(counts.reads, 1, n + 1)
    out["email_reads"] = email_many(rng.int64_list(counts.email_reads, 1, n + 1))
    out["queries"] = _country_status(rng, counts.queries)
    word = seed_word(seed)
    starts = rng.int64_list(counts.queries, 1, max(2, n - 5000))
    lows = created_at_many(starts, word)
    highs = created_at_many([min(n, sid + 5000) for sid in starts], word)
    out["ranges"] = list(zip(lows, highs, strict=True))
    out["updates"] = rng.int64_list(counts.updates, 1, n + 1)
    out["post_reads"] = rng.int64_list(counts.post_reads, 1, n + 1)
    out["post_email_reads"] = email_many(rng.int64_list(counts.post_email_reads, 1, n + 1))
    out["post_queries"] = _country_status(rng, counts.post_queries)
    return out
