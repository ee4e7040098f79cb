"""The operation plan: every id, email, query and range a run will use, drawn up front.

Drawn in the spec's fixed order from ONE .NET-compatible generator, so the plan is the
same whatever phases a TOML file keeps, drops or reorders.
"""

from __future__ import annotations

from array import array
from collections.abc import Sequence
from dataclasses import dataclass

from asyncbench.workloads.profile_store.kernels import NetRandom, created_at_many, email_many
from asyncbench.workloads.profile_store.profiles import COUNTRIES, STATUSES, seed_word

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


class Plan:
    """Named operation streams; a phase consumes one of them.

    Stored compactly (at 2_000_000 profiles a plan of Python lists and strings took about
    760 MB, all of it counted in every engine's peak memory): id streams are ``array('q')``,
    and the email and created-at streams keep only their ids and bounds, so
    :meth:`stream` builds ``email_reads``, ``post_email_reads`` and ``ranges`` when asked,
    which the runner does before a phase's clock starts.
    """

    def __init__(self, counts: Counts, seed: int) -> None:
        self.counts, self.seed = counts, seed
        self.reads = array("q")
        self.email_read_uids = array("q")
        self.queries: list[tuple[str, str]] = []
        self.range_from = array("q")
        self.range_to = array("q")
        self.updates = array("q")
        self.post_reads = array("q")
        self.post_email_read_uids = array("q")
        self.post_queries: list[tuple[str, str]] = []

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Plan) and vars(self) == vars(other)

    __hash__ = None  # type: ignore[assignment]  # mutable, compared by value

    def stream(self, name: str, count: int | None = None) -> Sequence:
        """The first ``count`` items (all by default) of stream ``name``."""
        if name in ("email_reads", "post_email_reads"):
            uids = getattr(self, name.replace("email_reads", "email_read_uids"))
            return email_many(uids if count is None else uids[:count])
        if name == "ranges":
            hi = len(self.range_from) if count is None else count
            return list(zip(self.range_from[:hi], self.range_to[:hi], strict=True))
        items = getattr(self, name)
        return items if count is None else items[:count]


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
    plan.reads = array("q", rng.int64_list(counts.reads, 1, n + 1))
    plan.email_read_uids = array("q", rng.int64_list(counts.email_reads, 1, n + 1))
    plan.queries = _country_status(rng, counts.queries)
    word = seed_word(seed)
    starts = rng.int64_list(counts.queries, 1, max(2, n - 5000))
    plan.range_from = array("q", created_at_many(starts, word))
    plan.range_to = array("q", created_at_many([min(n, sid + 5000) for sid in starts], word))
    plan.updates = array("q", rng.int64_list(counts.updates, 1, n + 1))
    plan.post_reads = array("q", rng.int64_list(counts.post_reads, 1, n + 1))
    plan.post_email_read_uids = array("q", rng.int64_list(counts.post_email_reads, 1, n + 1))
    plan.post_queries = _country_status(rng, counts.post_queries)
    return plan
