"""What an engine must implement to run the profile-store workload.

Each method takes a whole operation *batch* so that event-loop and thread hops are paid
once per batch, yet each item is still exactly one engine operation (no multi-get, no
write batch, no ``IN (...)``). The engine appends ``time.perf_counter_ns()`` to ``marks``
once before its first operation and once after each operation (``ops + 1`` stamps), so
the differences are per-operation latencies measured where the operations ran: inside
the worker thread for thread-offloaded engines, never across a thread hop.

Reads return records in request order, skipping ids that are not found; a record is a
profile tuple or its stored ``|``-joined encoding, which the checksum folds without
decoding. Scans return the matching user ids, concatenated over the batch's queries.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol, runtime_checkable

from asyncbench.workloads.profile_store.profiles import Profile, Record

__all__ = ["Marks", "ProfileStore", "Transform"]

#: Per-operation completion stamps (``perf_counter_ns``), after the batch's start stamp.
Marks = list[int]
#: The update rule: current profile -> updated profile.
Transform = Callable[[Profile], Profile]


@runtime_checkable
class ProfileStore(Protocol):
    """The ten workload operations plus ``count``; ``limit`` is rows per scan/query."""

    limit: int

    async def insert(self, profiles: Sequence[Profile], marks: Marks) -> None:
        """Insert each profile (and its four index entries) as its own operation."""

    async def read_by_id(self, uids: Sequence[int], marks: Marks) -> Sequence[Record]: ...

    async def lookup_by_email(self, emails: Sequence[str], marks: Marks) -> Sequence[Record]: ...

    async def scan_country_status(self, queries: Sequence[tuple[str, str]], marks: Marks) -> list[int]:
        """Per query, the first ``limit`` user ids of that country/status, by user id."""

    async def query_country_status(
        self, queries: Sequence[tuple[str, str]], marks: Marks
    ) -> Sequence[Record]: ...

    async def scan_created_at(self, ranges: Sequence[tuple[int, int]], marks: Marks) -> list[int]:
        """Per inclusive ``(from_ms, to_ms)`` range, the first ``limit`` ids by (created_at, id)."""

    async def query_created_at(self, ranges: Sequence[tuple[int, int]], marks: Marks) -> Sequence[Record]: ...

    async def scan_top_reputation(self, times: int, marks: Marks) -> list[int]:
        """Run the top-``limit`` reputation scan ``times`` times (reputation desc, id asc)."""

    async def query_top_reputation(self, times: int, marks: Marks) -> Sequence[Record]: ...

    async def update(self, uids: Sequence[int], transform: Transform, marks: Marks) -> list[Profile]:
        """Per id: read the current profile, ``transform`` it, write it back with its
        indexes moved, and return the updated profiles in order (skip missing ids)."""

    async def count(self) -> int:
        """Number of stored profiles (the verify phase's first word)."""
