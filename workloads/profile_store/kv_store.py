"""The profile store over five ordered key/value stores, written once for every KV engine.

:class:`KvProfileStore` is a complete :class:`~asyncbench.workloads.profile_store.store.ProfileStore`
over a key/value engine's primitives (:class:`asyncbench.store.KvPrimitives`): the engine
supplies only its stores (get, put, delete and a scan from a key) and where a batch runs
(a worker thread, the event loop followed by a turn for background work: a
:class:`~asyncbench.store.Placement`), and knows nothing of profiles. Adding a phase kind
adds one method here, not one per engine. The mapping of the workload onto keys and
values is the spec's and lives here: profiles under the 20-digit primary key, the email
index mapping email -> primary key, and three ordered indexes whose keys end with the user
id. Writes follow the crash-safe order of :mod:`.kv_recovery` (index entries before the
profile on insert; new keys, profile, old keys on update), so a crash leaves only extra
entries for the repair to remove; the repair runs when the engine says its last close was
not clean (``KvPrimitives.unclean``), before the first batch.

Every batch body (the ``_``-prefixed methods) is synchronous and does one store operation
per item (no multi-get, no write batch); after each *workload* operation it appends
``perf_counter_ns()`` to ``marks`` (see :mod:`asyncbench.workloads.profile_store.store`).
The public methods hand a whole body to the engine's placement in one call, so a thread
hop (RocksDB) is paid once per batch. The primitives are synchronous on purpose: an
``await`` per get would cost more than a RocksDB get itself.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from time import perf_counter_ns
from typing import Any

from asyncbench.store import KvPrimitives, KvStore
from asyncbench.workloads.profile_store.kv_recovery import (
    STORE_NAMES,
    KvView,
    RepairReport,
    profile_indexes,
    repair,
    write_update,
)
from asyncbench.workloads.profile_store.profiles import (
    Profile,
    country_status_key,
    country_status_prefix,
    created_at_bounds,
    created_at_key,
    decode,
    encode,
    primary_key,
    reputation_key,
)
from asyncbench.workloads.profile_store.store import Marks, Transform

__all__ = ["STORE_NAMES", "KvProfileStore"]

#: Index keys are ASCII; a key that continues a prefix sorts before ``prefix + 0xFF``.
_PREFIX_END = b"\xff"

class KvProfileStore:
    """The workload's operations over the engine's five stores named :data:`STORE_NAMES`,
    placed by its placement. Built once per set of primitives (``Workload.store``); when
    the engine's last close was not clean, the indexes are repaired here first."""

    def __init__(self, primitives: KvPrimitives, limit: int) -> None:
        stores = []
        for name in STORE_NAMES:  # each by its own name: five stores, never one for another
            try:
                stores.append(primitives.stores[name])
            except KeyError:
                raise RuntimeError(
                    f"the engine holds no key/value store named {name!r} "
                    f"(it has {', '.join(map(repr, primitives.stores)) or 'none'})"
                ) from None
        self.profiles, self.emails, self.country_status, self.created_at, self.reputation = stores
        self.stores = stores
        self.limit = limit
        self.place = primitives.place
        index_values_are_pks = not primitives.empty_index_values
        self.values_are_pks = index_values_are_pks
        self._index_value: Callable[[bytes], bytes] = (
            (lambda pk: pk) if index_values_are_pks else (lambda pk: b"")
        )
        if primitives.unclean:  # a profile is five puts: a crash may have left some
            primitives.repaired = self.repair()
            primitives.unclean = False

    # --- writes -----------------------------------------------------------------------
    def _insert(self, profiles: Sequence[Profile], marks: Marks) -> None:
        put_profile, put_email = self.profiles.put, self.emails.put
        put_cs, put_ca, put_rep = self.country_status.put, self.created_at.put, self.reputation.put
        ordered = b"" if not self.values_are_pks else None
        mark, clock = marks.append, perf_counter_ns
        mark(clock())  # the batch's start stamp, taken where the operations run
        for p in profiles:
            pk = primary_key(p[0])
            value = pk if ordered is None else ordered
            # Indexes first, the profile last: a crash in between leaves only extra entries.
            put_email(p[1].encode(), pk)
            put_cs(country_status_key(p), value)
            put_ca(created_at_key(p), value)
            put_rep(reputation_key(p), value)
            put_profile(pk, encode(p))
            mark(clock())

    def _update(self, uids: Sequence[int], transform: Transform, marks: Marks) -> list[Profile]:
        get, put_profile = self.profiles.get, self.profiles.put
        cs, rep = self.country_status, self.reputation
        index_value = self._index_value
        mark, clock = marks.append, perf_counter_ns
        mark(clock())  # the batch's start stamp, taken where the operations run
        out = []
        for uid in uids:
            pk = b"%020d" % uid  # primary_key(uid), inlined
            raw = get(pk)
            if raw is not None:
                old = decode(raw)
                new = transform(old)
                write_update(
                    old, new, pk, index_value(pk), put_profile, cs.put, cs.delete, rep.put, rep.delete
                )
                out.append(new)
            mark(clock())
        return out

    # --- point reads ------------------------------------------------------------------
    def _read_by_id(self, uids: Sequence[int], marks: Marks) -> list[bytes]:
        get = self.profiles.get
        mark, clock = marks.append, perf_counter_ns
        mark(clock())  # the batch's start stamp, taken where the operations run
        out: list[bytes] = []
        append = out.append
        for uid in uids:
            value = get(b"%020d" % uid)  # primary_key(uid), inlined: one call fewer per read
            if value is not None:
                append(value)
            mark(clock())
        return out

    def _lookup_by_email(self, emails: Sequence[str], marks: Marks) -> list[bytes]:
        get_pk, get = self.emails.get, self.profiles.get
        mark, clock = marks.append, perf_counter_ns
        mark(clock())  # the batch's start stamp, taken where the operations run
        out: list[bytes] = []
        for email in emails:
            pk = get_pk(email.encode())
            if pk is not None:
                value = get(pk)
                if value is not None:
                    out.append(value)
            mark(clock())
        return out

    # --- scans and queries: one iteration per query; an index key's last 20 bytes are
    # the profile's primary key, so a query fetches with it directly -------------------
    def _ids(self, keys: list[bytes], out: list[int]) -> None:
        out += [int(k[-20:]) for k in keys]

    def _profiles_of(self, keys: list[bytes], out: list[bytes]) -> None:
        """One primary-key get per index entry. An entry whose profile is missing counts
        toward ``limit`` and returns nothing (the scan's ids, then a get per id)."""
        get = self.profiles.get
        for k in keys:
            value = get(k[-20:])
            if value is not None:
                out.append(value)

    def _country_status(self, queries: Sequence[tuple[str, str]], marks: Marks, take: Callable[[list[bytes], list[Any]], None]) -> list[Any]:
        scan, limit = self.country_status.scan, self.limit
        mark, clock = marks.append, perf_counter_ns
        mark(clock())  # the batch's start stamp, taken where the operations run
        out: list[Any] = []
        for country, status in queries:
            prefix = country_status_prefix(country, status)
            take(scan(prefix, prefix + _PREFIX_END, limit), out)
            mark(clock())
        return out

    def _created_at(self, ranges: Sequence[tuple[int, int]], marks: Marks, take: Callable[[list[bytes], list[Any]], None]) -> list[Any]:
        scan, limit = self.created_at.scan, self.limit
        mark, clock = marks.append, perf_counter_ns
        mark(clock())  # the batch's start stamp, taken where the operations run
        out: list[Any] = []
        for lo, hi in ranges:
            start, last = created_at_bounds(lo, hi)
            take(scan(start, last, limit), out)
            mark(clock())
        return out

    def _top(self, times: int, marks: Marks, take: Callable[[list[bytes], list[Any]], None]) -> list[Any]:
        scan, limit = self.reputation.scan, self.limit
        mark, clock = marks.append, perf_counter_ns
        mark(clock())  # the batch's start stamp, taken where the operations run
        out: list[Any] = []
        for _ in range(times):
            take(scan(b"", None, limit), out)
            mark(clock())
        return out

    def _scan_country_status(self, queries: Sequence[tuple[str, str]], marks: Marks) -> list[int]:
        return self._country_status(queries, marks, self._ids)

    def _query_country_status(self, queries: Sequence[tuple[str, str]], marks: Marks) -> list[bytes]:
        return self._country_status(queries, marks, self._profiles_of)

    def _scan_created_at(self, ranges: Sequence[tuple[int, int]], marks: Marks) -> list[int]:
        return self._created_at(ranges, marks, self._ids)

    def _query_created_at(self, ranges: Sequence[tuple[int, int]], marks: Marks) -> list[bytes]:
        return self._created_at(ranges, marks, self._profiles_of)

    def _scan_top_reputation(self, times: int, marks: Marks) -> list[int]:
        return self._top(times, marks, self._ids)

    def _query_top_reputation(self, times: int, marks: Marks) -> list[bytes]:
        return self._top(times, marks, self._profiles_of)

    def _count(self) -> int:
        return self.profiles.count()

    # --- the ProfileStore: one placed call per batch ------------------------------------
    async def insert(self, profiles: Sequence[Profile], marks: Marks) -> None:
        await self.place.writes(self._insert, profiles, marks)

    async def update(self, uids: Sequence[int], transform: Transform, marks: Marks) -> list[Profile]:
        return await self.place.writes(self._update, uids, transform, marks)

    async def read_by_id(self, uids: Sequence[int], marks: Marks) -> list[bytes]:
        return await self.place.reads(self._read_by_id, uids, marks)

    async def lookup_by_email(self, emails: Sequence[str], marks: Marks) -> list[bytes]:
        return await self.place.reads(self._lookup_by_email, emails, marks)

    async def scan_country_status(self, queries: Sequence[tuple[str, str]], marks: Marks) -> list[int]:
        return await self.place.scans(self._scan_country_status, queries, marks)

    async def query_country_status(self, queries: Sequence[tuple[str, str]], marks: Marks) -> list[bytes]:
        return await self.place.scans(self._query_country_status, queries, marks)

    async def scan_created_at(self, ranges: Sequence[tuple[int, int]], marks: Marks) -> list[int]:
        return await self.place.scans(self._scan_created_at, ranges, marks)

    async def query_created_at(self, ranges: Sequence[tuple[int, int]], marks: Marks) -> list[bytes]:
        return await self.place.scans(self._query_created_at, ranges, marks)

    async def scan_top_reputation(self, times: int, marks: Marks) -> list[int]:
        return await self.place.scans(self._scan_top_reputation, times, marks)

    async def query_top_reputation(self, times: int, marks: Marks) -> list[bytes]:
        return await self.place.scans(self._query_top_reputation, times, marks)

    async def count(self) -> int:
        return await self.place.scans(self._count)

    # --- crash repair -------------------------------------------------------------------
    def repair(self) -> RepairReport:
        """Make the four indexes agree with the profiles store (after an unclean stop)."""

        def view(s: KvStore) -> KvView:
            return KvView(items=s.items, get=s.get, put=s.put, delete=s.delete)

        specs = profile_indexes(values_are_pks=self.values_are_pks)
        return repair(view(self.profiles), list(zip(specs, map(view, self.stores[1:]), strict=True)))
