"""Crash recovery for key/value adapters that keep the profile indexes in separate stores.

The key/value adapters (rocksdb: five databases; lsm: five trees) write one profile as
five separate puts, with no batch across stores, as the reference does. A process killed
between those puts leaves the profile in flight with some index entries and not others;
an update in flight can leave old and new index keys side by side. The adapter marks a
clean shutdown (:class:`CleanShutdownMarker`), and an open that finds no mark runs
:func:`repair`, which makes the four indexes agree with the profiles store, the source of
truth, in sequential walks only (no point reads, which dominated a first version):

1. walk the profiles once; per index, remember a 64-bit digest of the key each profile
   should have there, in an array indexed by user id (:class:`Digests`).
2. per index, walk its entries in key order: an entry is kept if its user id has a
   profile, its key's digest is that profile's expected one and its value is the expected
   value; any other entry (orphan of a profile never written, stale key of an update,
   unreadable) is deleted. Kept user ids are set in a bitmap.
3. only if some index kept fewer entries than there are profiles, walk the profiles again
   and write the entries of the profiles missing from that index's bitmap.

A digest is Python's ``hash`` of the key (64 bits, stable within the process), so a stale
key is mistaken for the expected one with probability 2**-63; a mismatch is always real.
Memory: 8 bytes per user id per index (64 MB at 2_000_000 profiles), plus the fixes.

Write order (the adapter's job, see ``engines/rocksdb.py``): an insert writes the four
index entries first and the profile last; an update writes the new index keys, then the
profile, then deletes the old keys. A crash then leaves only *extra* entries, which step 2
removes, and step 3 is skipped: the cheapest repair, and readers never meet a profile
without its entries. (An update whose country/status key does not change deletes and
re-writes that same key, as the reference does; a crash between those two leaves the one
missing entry step 3 restores.)

Everything here is plain functions over :class:`KvView` (four callables), so the same
code serves rocksdict databases, LSM trees and, in tests, dicts.
"""

from __future__ import annotations

import time
from array import array
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from asyncbench.workloads.profile_store.profiles import (
    Profile,
    country_status_key,
    created_at_key,
    decode,
    encode,
    primary_key,
    reputation_key,
    uid_of_index_key,
)

#: The five stores of a key/value adapter, in the reference's names and order.
STORE_NAMES = ("profiles", "email-index", "country-status-index", "created-at-index", "reputation-index")

Put = Callable[[bytes, bytes], object]
Delete = Callable[[bytes], object]


def write_update(
    old: Profile,
    new: Profile,
    pk: bytes,
    index_value: bytes,
    put_profile: Put,
    put_cs: Put,
    delete_cs: Delete,
    put_rep: Put,
    delete_rep: Delete,
) -> None:
    """The reference's update writes (delete the old key, put the new one, per index)
    in the crash-safe order: new keys, then the profile, then the old keys go. A key that
    does not change is deleted and put back after the profile, as the reference does."""
    old_cs, new_cs = country_status_key(old), country_status_key(new)
    old_rep, new_rep = reputation_key(old), reputation_key(new)
    if new_cs != old_cs:
        put_cs(new_cs, index_value)
    if new_rep != old_rep:
        put_rep(new_rep, index_value)
    put_profile(pk, encode(new))
    delete_cs(old_cs)
    if new_cs == old_cs:
        put_cs(new_cs, index_value)
    delete_rep(old_rep)
    if new_rep == old_rep:
        put_rep(new_rep, index_value)


@dataclass(frozen=True)
class KvView:
    """What recovery needs from one store: ordered iteration, get, put, delete.

    ``items`` must yield ``(key, value)`` pairs in key order and must stay valid while
    the caller does nothing but ``get`` (recovery collects its fixes and writes after the
    walk, so stores whose iterators do not survive writes are fine).
    """

    items: Callable[[], Iterable[tuple[bytes, bytes]]]
    get: Callable[[bytes], bytes | None]
    put: Callable[[bytes, bytes], None]
    delete: Callable[[bytes], None]


@dataclass(frozen=True)
class IndexSpec:
    """One secondary index: which key a profile has in it and what the entry stores."""

    name: str
    key_of: Callable[[Profile], bytes]
    #: primary key -> the value stored under the profile's key
    value_of: Callable[[bytes], bytes]
    #: (key, value) of an entry -> the user id it points at (ValueError if unreadable)
    uid_of: Callable[[bytes, bytes], int]


def _email_key(p: Profile) -> bytes:
    return p[1].encode()


def _uid_from_value(key: bytes, value: bytes) -> int:
    return int(value)


def _uid_from_key(key: bytes, value: bytes) -> int:
    return uid_of_index_key(key)


def _same(pk: bytes) -> bytes:
    return pk


def _empty(pk: bytes) -> bytes:
    return b""


def profile_indexes(values_are_pks: bool = True) -> tuple[IndexSpec, ...]:
    """The workload's four indexes, in the adapters' store order.

    The email index always maps email -> primary key. ``values_are_pks`` says what the
    other three store: the primary key (rocksdb) or an empty value (lsm, whose keys
    already end with the user id).
    """
    ordered_value = _same if values_are_pks else _empty
    return (
        IndexSpec("email-index", _email_key, _same, _uid_from_value),
        IndexSpec("country-status-index", country_status_key, ordered_value, _uid_from_key),
        IndexSpec("created-at-index", created_at_key, ordered_value, _uid_from_key),
        IndexSpec("reputation-index", reputation_key, ordered_value, _uid_from_key),
    )


class UidSet:
    """A set of user ids: a bitmap for ids below ``dense_limit``, a set for the rest.

    The workload's ids are 1..N, so 2_000_000 profiles take 250 KB instead of ~100 MB of
    Python ints.
    """

    __slots__ = ("_bits", "_sparse", "dense_limit")

    def __init__(self, dense_limit: int = 1 << 28) -> None:
        self.dense_limit = dense_limit
        self._bits = bytearray()
        self._sparse: set[int] = set()

    def add(self, uid: int) -> None:
        if 0 <= uid < self.dense_limit:
            byte = uid >> 3
            bits = self._bits
            if byte >= len(bits):
                bits.extend(bytes(max(byte + 1 - len(bits), len(bits))))
            bits[byte] |= 1 << (uid & 7)
        else:
            self._sparse.add(uid)

    def __contains__(self, uid: int) -> bool:
        if 0 <= uid < self.dense_limit:
            byte = uid >> 3
            return byte < len(self._bits) and bool(self._bits[byte] >> (uid & 7) & 1)
        return uid in self._sparse


class Digests:
    """user id -> 64-bit digest of an expected index key (0: no profile), in an array for
    ids below ``dense_limit`` and a dict for the rest."""

    __slots__ = ("_dense", "_sparse", "dense_limit")

    def __init__(self, dense_limit: int = 1 << 28) -> None:
        self.dense_limit = dense_limit
        self._dense = array("q")
        self._sparse: dict[int, int] = {}

    def set(self, uid: int, digest: int) -> None:
        if 0 <= uid < self.dense_limit:
            dense = self._dense
            if uid >= len(dense):
                dense.extend(array("q", bytes(8 * max(uid + 1 - len(dense), len(dense)))))
            dense[uid] = digest
        else:
            self._sparse[uid] = digest

    def get(self, uid: int) -> int:
        if 0 <= uid < self.dense_limit:
            return self._dense[uid] if uid < len(self._dense) else 0
        return self._sparse.get(uid, 0)


def expected_digests(
    profiles: Iterable[tuple[bytes, bytes]], specs: Sequence[IndexSpec]
) -> tuple[list[Digests], int]:
    """Per index, the digest of the key each stored profile should have; and the count."""
    out = [Digests() for _ in specs]
    pairs = [(d.set, spec.key_of) for d, spec in zip(out, specs, strict=True)]
    count = 0
    for pk, raw in profiles:
        count += 1
        uid = int(pk)
        p = decode(raw)
        for put, key_of in pairs:
            put(uid, hash(key_of(p)) | 1)  # never 0, which marks "no profile"
    return out, count


def stale_entries(
    entries: Iterable[tuple[bytes, bytes]], spec: IndexSpec, expected: Digests
) -> tuple[list[bytes], UidSet, int]:
    """Keys of the entries that do not match their profile, the user ids whose entry is
    right, and how many entries there were.

    An entry is right only if the profile it points at exists, the profile's current
    fields give this key (by digest, see the module doc), and the value is the expected
    one.
    """
    stale: list[bytes] = []
    valid = UidSet()
    add = valid.add
    get = expected.get
    seen = 0
    value_of, uid_of = spec.value_of, spec.uid_of
    for key, value in entries:
        seen += 1
        try:
            uid = uid_of(key, value)
        except ValueError:
            stale.append(key)
            continue
        if get(uid) != hash(key) | 1 or value != value_of(primary_key(uid)):
            stale.append(key)
        else:
            add(uid)
    return stale, valid, seen


def missing_entries(
    profiles: Iterable[tuple[bytes, bytes]],
    specs: Sequence[IndexSpec],
    valid: Sequence[UidSet],
) -> list[list[tuple[bytes, bytes]]]:
    """Per index, the ``(key, value)`` entries stored profiles lack.

    ``valid[i]`` holds the user ids that already have their right entry in index ``i``
    (from :func:`stale_entries`); only profiles missing from it are decoded.
    """
    missing: list[list[tuple[bytes, bytes]]] = [[] for _ in specs]
    for pk, raw in profiles:
        uid = int(pk)
        profile: Profile | None = None
        for i, spec in enumerate(specs):
            if uid not in valid[i]:
                if profile is None:
                    profile = decode(raw)
                missing[i].append((spec.key_of(profile), spec.value_of(pk)))
    return missing


@dataclass
class IndexRepair:
    name: str
    entries: int = 0
    deleted: int = 0
    added: int = 0


@dataclass
class RepairReport:
    """What a repair found and fixed (all zeros: the store was already consistent)."""

    profiles: int = 0
    indexes: list[IndexRepair] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def changed(self) -> int:
        return sum(ix.deleted + ix.added for ix in self.indexes)

    def summary(self) -> str:
        parts = ", ".join(f"{ix.name} -{ix.deleted} +{ix.added}" for ix in self.indexes)
        return f"repaired {self.profiles} profiles in {self.seconds:.1f} s: {parts}"


def repair(profiles: KvView, indexes: Sequence[tuple[IndexSpec, KvView]]) -> RepairReport:
    """Make every index agree with ``profiles``: delete wrong entries, add missing ones.

    Cost: one walk of the profiles (decoding each), one walk of each index, and a second
    profile walk only when entries are missing; see the module doc.
    """
    t0 = time.perf_counter()
    specs = [spec for spec, _ in indexes]
    digests, count = expected_digests(profiles.items(), specs)
    report = RepairReport(profiles=count)
    valid: list[UidSet] = []
    for (spec, view), expected in zip(indexes, digests, strict=True):
        stale, ok, seen = stale_entries(view.items(), spec, expected)
        for key in stale:
            view.delete(key)
        valid.append(ok)
        report.indexes.append(IndexRepair(spec.name, entries=seen, deleted=len(stale)))
    del digests
    kept = [ix.entries - ix.deleted for ix in report.indexes]
    if any(n < count for n in kept):
        missing = missing_entries(profiles.items(), specs, valid)
        for (_, view), fixes, ix in zip(indexes, missing, report.indexes, strict=True):
            for key, value in fixes:
                view.put(key, value)
            ix.added = len(fixes)
    report.seconds = time.perf_counter() - t0
    return report
