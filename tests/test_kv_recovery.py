"""Unit tests of the key/value crash repair on hand-built inconsistent states (dict stores)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from asyncbench.engines.clean_shutdown import CleanShutdownMarker
from asyncbench.workloads.profile_store.generate import create_many
from asyncbench.workloads.profile_store.kv_recovery import (
    Digests,
    KvView,
    UidSet,
    expected_digests,
    missing_entries,
    profile_indexes,
    repair,
    stale_entries,
)
from asyncbench.workloads.profile_store.profiles import (
    country_status_key,
    created_at_key,
    decode,
    encode,
    primary_key,
    reputation_key,
    update,
)

SEED = 570123434
N = 40
EMAIL, CS, CA, REP = range(4)


def view(d: dict[bytes, bytes]) -> KvView:
    return KvView(
        items=lambda: sorted(d.items()),
        get=d.get,
        put=d.__setitem__,
        delete=lambda k: d.pop(k, None),
    )


class Stores:
    """A profiles dict and four index dicts, built consistent from the profiles."""

    def __init__(self, profiles: list, values_are_pks: bool = True) -> None:
        self.specs = profile_indexes(values_are_pks)
        self.profiles: dict[bytes, bytes] = {}
        self.indexes: list[dict[bytes, bytes]] = [{} for _ in self.specs]
        for p in profiles:
            self.put_profile(p)

    def put_profile(self, p, indexes: bool = True) -> None:  # type: ignore[no-untyped-def]
        pk = primary_key(p[0])
        self.profiles[pk] = encode(p)
        if indexes:
            for spec, ix in zip(self.specs, self.indexes, strict=True):
                ix[spec.key_of(p)] = spec.value_of(pk)

    def expected(self) -> list[dict[bytes, bytes]]:
        out: list[dict[bytes, bytes]] = [{} for _ in self.specs]
        for pk, raw in self.profiles.items():
            p = decode(raw)
            for spec, ix in zip(self.specs, out, strict=True):
                ix[spec.key_of(p)] = spec.value_of(pk)
        return out

    def repair(self):  # type: ignore[no-untyped-def]
        return repair(
            view(self.profiles), [(s, view(ix)) for s, ix in zip(self.specs, self.indexes, strict=True)]
        )


def profiles(n: int = N) -> list:
    return create_many(1, n, SEED)


@pytest.mark.parametrize("values_are_pks", [True, False], ids=["rocksdb-values", "lsm-values"])
def test_consistent_store_is_left_alone(values_are_pks: bool) -> None:
    s = Stores(profiles(), values_are_pks)
    before = [dict(ix) for ix in s.indexes]
    report = s.repair()
    assert report.changed == 0 and report.profiles == N
    assert [ix.entries for ix in report.indexes] == [N] * 4
    assert s.indexes == before


@pytest.mark.parametrize(
    "index", [EMAIL, CS, CA, REP], ids=["email", "country-status", "created-at", "reputation"]
)
@pytest.mark.parametrize("values_are_pks", [True, False], ids=["rocksdb-values", "lsm-values"])
def test_orphan_entry_of_a_profile_never_written_is_deleted(index: int, values_are_pks: bool) -> None:
    """The crash state of an insert that wrote some index entries but not the profile."""
    ps = profiles(N + 1)
    s = Stores(ps[:N], values_are_pks)
    spec = s.specs[index]
    orphan = ps[N]
    s.indexes[index][spec.key_of(orphan)] = spec.value_of(primary_key(orphan[0]))
    report = s.repair()
    assert s.indexes == s.expected()
    assert spec.key_of(orphan) not in s.indexes[index]
    assert [ix.deleted for ix in report.indexes] == [int(i == index) for i in range(4)]
    assert report.changed == 1


@pytest.mark.parametrize(
    "index", [EMAIL, CS, CA, REP], ids=["email", "country-status", "created-at", "reputation"]
)
def test_missing_entry_of_a_stored_profile_is_added(index: int) -> None:
    """The crash state of a profile written before all its index entries."""
    ps = profiles()
    s = Stores(ps)
    spec = s.specs[index]
    del s.indexes[index][spec.key_of(ps[7])]
    report = s.repair()
    assert s.indexes == s.expected()
    assert [ix.added for ix in report.indexes] == [int(i == index) for i in range(4)]
    assert report.changed == 1


def test_stale_update_keys_are_deleted_and_new_keys_added() -> None:
    """Updates cut at each point: old and new keys side by side, or only the old ones."""
    ps = profiles()
    s = Stores(ps)
    moved = [p for p in ps if p[0] % 4 == 0][:3]  # status changes: new country/status key
    both, old_only, new_profile_old_keys = moved
    # both: new keys written, profile not yet rewritten (profile is still the old one)
    new = update(both, SEED)
    s.indexes[CS][country_status_key(new)] = primary_key(new[0])
    s.indexes[REP][reputation_key(new)] = primary_key(new[0])
    # profile rewritten, old keys still there, new ones not yet written
    new2 = update(old_only, SEED)
    s.put_profile(new2, indexes=False)
    # profile rewritten, new keys written, old ones not yet deleted
    new3 = update(new_profile_old_keys, SEED)
    s.put_profile(new3, indexes=False)
    s.indexes[CS][country_status_key(new3)] = primary_key(new3[0])
    s.indexes[REP][reputation_key(new3)] = primary_key(new3[0])
    assert country_status_key(new3) != country_status_key(new_profile_old_keys)

    report = s.repair()
    assert s.indexes == s.expected()
    assert country_status_key(new) not in s.indexes[CS]  # profile still old: new key is stale
    assert country_status_key(new2) in s.indexes[CS] and country_status_key(old_only) not in s.indexes[CS]
    assert country_status_key(new_profile_old_keys) not in s.indexes[CS]
    assert report.indexes[CS].deleted == 3 and report.indexes[CS].added == 1
    assert report.indexes[REP].deleted == 3 and report.indexes[REP].added == 1
    assert report.indexes[EMAIL].deleted == report.indexes[CA].deleted == 0


def test_entry_pointing_at_the_wrong_profile_or_unreadable_is_replaced() -> None:
    ps = profiles()
    s = Stores(ps)
    s.indexes[EMAIL][ps[3][1].encode()] = primary_key(ps[4][0])  # email of 4 -> uid 5
    s.indexes[EMAIL][ps[5][1].encode()] = b"not a number"
    s.indexes[CS][country_status_key(ps[6])] = primary_key(ps[8][0])  # right key, wrong value
    s.indexes[CA][b"garbage"] = b""
    report = s.repair()
    assert s.indexes == s.expected()
    assert report.indexes[EMAIL].deleted == 2 and report.indexes[EMAIL].added == 2
    assert report.indexes[CS].deleted == 1 and report.indexes[CS].added == 1
    assert report.indexes[CA].deleted == 1 and report.indexes[CA].added == 0


def test_repair_is_idempotent_and_reports() -> None:
    ps = profiles()
    s = Stores(ps)
    for ix in s.indexes:
        ix.clear()
    first = s.repair()
    assert [ix.added for ix in first.indexes] == [N] * 4
    assert "email-index -0 +40" in first.summary()
    assert s.repair().changed == 0


@settings(max_examples=60, deadline=None)
@given(
    n=st.integers(0, 25),
    drop=st.sets(st.tuples(st.integers(0, 3), st.integers(1, 30)), max_size=20),
    orphans=st.sets(st.tuples(st.integers(0, 3), st.integers(26, 40)), max_size=10),
    updated=st.sets(st.integers(1, 25), max_size=8),
    values_are_pks=st.booleans(),
)
def test_any_mix_of_missing_orphan_and_stale_entries_is_repaired(
    n: int, drop: set, orphans: set, updated: set, values_are_pks: bool
) -> None:
    everyone = profiles(40)
    s = Stores(everyone[:n], values_are_pks)
    for uid in updated:  # profile rewritten without touching the indexes: stale keys remain
        if uid <= n:
            s.put_profile(update(everyone[uid - 1], SEED), indexes=False)
    for index, uid in drop:
        if uid <= n:
            s.indexes[index].pop(s.specs[index].key_of(everyone[uid - 1]), None)
    for index, uid in orphans:
        spec = s.specs[index]
        s.indexes[index][spec.key_of(everyone[uid - 1])] = spec.value_of(primary_key(uid))
    s.repair()
    assert s.indexes == s.expected()


def test_pure_steps_directly() -> None:
    ps = profiles(5)
    s = Stores(ps[:4])
    spec = s.specs[CA]
    digests, count = expected_digests(sorted(s.profiles.items()), [spec])
    assert count == 4
    assert [digests[0].get(uid) != 0 for uid in range(0, 6)] == [False, True, True, True, True, False]
    entries = sorted([*s.indexes[CA].items(), (created_at_key(ps[4]), primary_key(5))])
    stale, valid, seen = stale_entries(entries, spec, digests[0])
    assert stale == [created_at_key(ps[4])] and seen == 5
    assert [uid in valid for uid in range(1, 6)] == [True, True, True, True, False]
    # uid 3 has no right entry in the second index
    other = UidSet()
    for uid in (1, 2, 4):
        other.add(uid)
    missing = missing_entries(sorted(s.profiles.items()), [spec, spec], [valid, other])
    assert missing == [[], [(created_at_key(ps[2]), primary_key(3))]]


def test_digests_dense_and_sparse() -> None:
    d = Digests(dense_limit=100)
    for uid in (0, 7, 99, 100, 10**15, -1):
        d.set(uid, uid * 2 + 1)
    assert [d.get(uid) for uid in (0, 7, 99, 100, 10**15, -1)] == [1, 15, 199, 201, 2 * 10**15 + 1, -1]
    assert [d.get(uid) for uid in (1, 98, 101, 10**6)] == [0, 0, 0, 0]


def test_no_second_profile_walk_when_nothing_is_missing() -> None:
    """Orphans only (the crash state the write order leaves): one profile walk."""
    ps = profiles(N + 1)
    s = Stores(ps[:N])
    for spec, ix in zip(s.specs, s.indexes, strict=True):
        ix[spec.key_of(ps[N])] = spec.value_of(primary_key(ps[N][0]))
    walks = 0
    inner = view(s.profiles)

    def items():  # type: ignore[no-untyped-def]
        nonlocal walks
        walks += 1
        return inner.items()

    counted = KvView(items=items, get=inner.get, put=inner.put, delete=inner.delete)
    report = repair(counted, [(sp, view(ix)) for sp, ix in zip(s.specs, s.indexes, strict=True)])
    assert [ix.deleted for ix in report.indexes] == [1, 1, 1, 1] and walks == 1
    assert s.indexes == s.expected()
    del s.indexes[REP][reputation_key(ps[0])]
    walks = 0
    repair(counted, [(sp, view(ix)) for sp, ix in zip(s.specs, s.indexes, strict=True)])
    assert walks == 2 and s.indexes == s.expected()


def test_uid_set_dense_and_sparse() -> None:
    u = UidSet(dense_limit=100)
    for uid in (0, 7, 8, 99, 100, 10**15, -1):
        u.add(uid)
    assert all(uid in u for uid in (0, 7, 8, 99, 100, 10**15, -1))
    assert not any(uid in u for uid in (1, 9, 98, 101, 10**6, 10**15 + 1))
    big = UidSet()
    big.add(2_000_000)
    assert 2_000_000 in big and 1_999_999 not in big and 2_000_001 not in big


def test_clean_shutdown_marker(tmp_path: Path) -> None:
    m = CleanShutdownMarker(tmp_path)
    assert m.take() is False  # never closed: unclean
    m.set()
    assert (tmp_path / CleanShutdownMarker.NAME).exists()
    assert m.take() is True
    assert m.take() is False  # taken at open: a crash before the next close is unclean
