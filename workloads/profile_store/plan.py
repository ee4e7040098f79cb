"""The operation plan: every id, email, query and range a run will use, drawn as it is used.

Drawn in the spec's fixed order from ONE .NET-compatible generator, so the plan is the
same whatever phases a TOML file keeps, drops or reorders. :func:`draw_plan` makes one
skip pass through every stream's draws (compiled, no Python objects: about 0.1 s per
million draws) and keeps only the generator's state where each stream starts; a phase's
items are then drawn batch by batch as it consumes them (:mod:`.streams`), so the plan
holds a few kilobytes at any profile count instead of every stream (173 MiB at 2_000_000
profiles, 1.6 GiB at 10_000_000).
"""

from __future__ import annotations

from dataclasses import dataclass

from .kernels import NetRandom
from .profiles import seed_word
from .streams import EmailSource, IdSource, LazyStream, QuerySource, RangeSource, Rng, Source

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


#: The plan's streams in drawing order, and the count that sizes each.
STREAM_SIZES = {
    "reads": "reads",
    "email_reads": "email_reads",
    "queries": "queries",
    "ranges": "queries",
    "updates": "updates",
    "post_reads": "post_reads",
    "post_email_reads": "post_email_reads",
    "post_queries": "post_queries",
}


#: The stream the insert phase names: the profiles themselves, sized by their own count.
PROFILES_STREAM = "profiles"


def stream_count(stream: str) -> str:
    """The count that sizes a phase's stream: a plan stream's (:data:`STREAM_SIZES`), or
    ``profiles`` for the insert phase's own. The one table of stream sizes."""
    if stream == PROFILES_STREAM:
        return PROFILES_STREAM
    return STREAM_SIZES[stream]


def sources(counts: Counts, seed: int) -> dict[str, Source]:
    """How each stream's items are drawn (in drawing order)."""
    n = counts.profiles
    return {
        "reads": IdSource(1, n + 1),
        "email_reads": EmailSource(1, n + 1),
        "queries": QuerySource(),
        "ranges": RangeSource(n, seed_word(seed)),
        "updates": IdSource(1, n + 1),
        "post_reads": IdSource(1, n + 1),
        "post_email_reads": EmailSource(1, n + 1),
        "post_queries": QuerySource(),
    }


class Plan:
    """Named operation streams; a phase consumes one of them.

    A pure function of (counts, seed): two plans with the same counts and seed are equal
    and give the same items. :meth:`stream` returns a :class:`~.streams.LazyStream` whose
    items are drawn when sliced or iterated, never held.
    """

    def __init__(self, counts: Counts, seed: int, starts: dict[str, Rng], drawn_by: dict[str, Source]) -> None:
        self.counts, self.seed = counts, seed
        self._starts, self._sources = starts, drawn_by

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Plan) and (self.counts, self.seed) == (other.counts, other.seed)

    __hash__ = None  # type: ignore[assignment]  # compared by value, like the eager plan was

    def __repr__(self) -> str:
        return f"Plan({self.counts!r}, seed={self.seed})"

    def size(self, name: str) -> int:
        """How many items stream ``name`` holds."""
        size: int = getattr(self.counts, STREAM_SIZES[name])  # a Counts field, by name
        return size

    def stream(self, name: str, count: int | None = None) -> LazyStream:
        """The first ``count`` items (all by default) of stream ``name``, drawn lazily."""
        if name not in STREAM_SIZES:
            raise KeyError(f"no plan stream {name!r}; streams: {', '.join(STREAM_SIZES)}")
        size = self.size(name)
        n = size if count is None else max(0, min(count, size))
        return LazyStream(self._sources[name], self._starts[name], n)


def draw_plan(counts: Counts, seed: int) -> Plan:
    """The plan: one skip pass through the draws, keeping each stream's start state."""
    rng = NetRandom(seed)
    drawn_by = sources(counts, seed)
    starts: dict[str, Rng] = {}
    names = list(STREAM_SIZES)
    for i, name in enumerate(names):
        starts[name] = rng.copy()
        if i + 1 < len(names):  # nothing is drawn after the last stream
            drawn_by[name].skip(rng, getattr(counts, STREAM_SIZES[name]))
    return Plan(counts, seed, starts, drawn_by)
