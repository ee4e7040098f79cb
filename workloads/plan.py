"""The operation plan: every id, email, query and range a run will use, drawn up front.

Drawn in the spec's fixed order from ONE .NET-compatible generator, so the plan is the
same whatever phases a TOML file keeps, drops or reorders.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from workloads.profiles import COUNTRIES, STATUSES, created_at_of, email_of, seed_word

try:
    from asyncbench._speedups import NetRandom, created_at_many, email_many
except ImportError:  # pragma: no cover - exercised when the extension is absent
    from workloads.dotnet_random import PyNetRandom as NetRandom

    def email_many(uids: list[int]) -> list[str]:
        return [email_of(u) for u in uids]

    def created_at_many(uids: list[int], word: int) -> list[int]:
        return [created_at_of(u, word) for u in uids]


#: Count names of the plan, in drawing order.
COUNT_NAMES = (
    "reads",
    "email_reads",
    "queries",
    "updates",
    "post_reads",
    "post_email_reads",
    "post_queries",
)


def default_counts(profiles: int) -> dict[str, int]:
    """The spec's defaults: every count = profiles, queries = profiles // 4 above 10_000."""
    queries = profiles if profiles <= 10_000 else max(1, profiles // 4)
    counts = {name: profiles for name in COUNT_NAMES}
    counts["queries"] = counts["post_queries"] = queries
    return counts


@dataclass(frozen=True)
class Counts:
    profiles: int
    reads: int
    email_reads: int
    queries: int
    updates: int
    post_reads: int
    post_email_reads: int
    post_queries: int
    limit: int = 50

    @classmethod
    def for_profiles(cls, profiles: int, limit: int = 50, **overrides: int) -> Counts:
        counts = default_counts(profiles)
        counts.update(overrides)
        return cls(profiles=profiles, limit=limit, **counts)


@dataclass
class Plan:
    """Named operation streams; a phase consumes one of them."""

    counts: Counts
    seed: int
    reads: list[int] = field(default_factory=list)
    email_reads: list[str] = field(default_factory=list)
    queries: list[tuple[str, str]] = field(default_factory=list)
    ranges: list[tuple[int, int]] = field(default_factory=list)
    updates: list[int] = field(default_factory=list)
    post_reads: list[int] = field(default_factory=list)
    post_email_reads: list[str] = field(default_factory=list)
    post_queries: list[tuple[str, str]] = field(default_factory=list)

    def stream(self, name: str) -> list:
        return getattr(self, name)


def _country_status(rng: NetRandom, count: int) -> list[tuple[str, str]]:
    out = []
    for _ in range(count):
        country = COUNTRIES[rng.next(0, 32)]
        out.append((country, STATUSES[rng.next(0, 4)]))
    return out


def draw_plan(counts: Counts, seed: int) -> Plan:
    n = counts.profiles
    rng = NetRandom(seed)
    plan = Plan(counts=counts, seed=seed)
    plan.reads = rng.int64_list(counts.reads, 1, n + 1)
    plan.email_reads = email_many(rng.int64_list(counts.email_reads, 1, n + 1))
    plan.queries = _country_status(rng, counts.queries)
    word = seed_word(seed)
    starts = rng.int64_list(counts.queries, 1, max(2, n - 5000))
    ends = [min(n, sid + 5000) for sid in starts]
    plan.ranges = list(zip(created_at_many(starts, word), created_at_many(ends, word), strict=True))
    plan.updates = rng.int64_list(counts.updates, 1, n + 1)
    plan.post_reads = rng.int64_list(counts.post_reads, 1, n + 1)
    plan.post_email_reads = email_many(rng.int64_list(counts.post_email_reads, 1, n + 1))
    plan.post_queries = _country_status(rng, counts.post_queries)
    return plan
