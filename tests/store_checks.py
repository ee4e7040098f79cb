"""Consistency checks of a reopened store, through the adapter API (shared by the
durability and disk-full tests).

The engine must be built with a huge ``limit`` (``EngineConfig(limit=10**9)``) so every
scan returns all its matches.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from conftest import store_of

from asyncbench.engine import Engine
from asyncbench.workloads.profile_store.generate import create_many
from asyncbench.workloads.profile_store.kv_recovery import profile_indexes
from asyncbench.workloads.profile_store.profiles import (
    COUNTRIES,
    INT63_MAX,
    STATUSES,
    Profile,
    Record,
    decode,
    email_of,
    primary_key,
    update,
)

HUGE_LIMIT = 10**9

def as_profile(record: Record) -> Profile:
    """A read result as a profile tuple, whatever form the engine returned it in."""
    if isinstance(record, (bytes, bytearray, memoryview, str)):
        return decode(record)
    return tuple(record)  # type: ignore[return-value]


def created_or_updated(seed: int) -> Callable[[int], set[Profile]]:
    """Allowed stored versions of uid: as created, or created then updated once."""

    def allowed(uid: int) -> set[Profile]:
        p = create_many(uid, 1, seed)[0]
        return {p, update(p, seed)}

    return allowed


@dataclass
class StoreState:
    count: int
    profiles: dict[int, Profile]


async def check_store(
    engine: Engine,
    n: int,
    seed: int,
    allowed: Callable[[int], Iterable[Profile]] | None = None,
    batch: int = 1000,
) -> StoreState:
    """Assert the store holds profiles 1..k exactly (k = its count) and that all four
    indexes hold exactly the entries those stored profiles imply. Returns what it found.

    ``allowed(uid)`` lists the acceptable stored versions of a profile (default: the one
    the generator creates); index expectations come from what is actually stored.
    """
    assert engine.limit >= HUGE_LIMIT, "build the engine with EngineConfig(limit=10**9)"
    count = await store_of(engine).count()
    stored: dict[int, Profile] = {}
    for start in range(1, n + 1, batch):
        uids = list(range(start, min(n, start + batch - 1) + 1))
        for record in await store_of(engine).read_by_id(uids, []):
            p = as_profile(record)
            assert p[0] not in stored, f"uid {p[0]} returned twice"
            stored[p[0]] = p
    k = len(stored)
    assert count == k, f"count() says {count} but {k} profiles of 1..{n} are readable"
    assert sorted(stored) == list(range(1, k + 1)), f"stored uids are not a prefix 1..{k}: {_gaps(stored, k)}"
    generated = create_many(1, k, seed) if k else []
    for p in generated:
        ok = set(allowed(p[0])) if allowed is not None else {p}
        assert stored[p[0]] in ok, f"profile {p[0]} is {stored[p[0]]}, expected one of {ok}"

    profiles = [stored[uid] for uid in range(1, k + 1)]
    # country/status: all 128 pairs in one batch; ids concatenate pair by pair, each sorted
    pairs = [(c, s) for c in COUNTRIES for s in STATUSES]
    by_pair: dict[tuple[str, str], list[int]] = {pair: [] for pair in pairs}
    for p in profiles:
        by_pair[(p[2], p[3])].append(p[0])
    got = await store_of(engine).scan_country_status(pairs, [])
    want = [uid for pair in pairs for uid in by_pair[pair]]
    _same_ids("country/status index", got, want)
    # created-at: one range over everything, in (created_at, uid) order
    got = await store_of(engine).scan_created_at([(0, INT63_MAX)], [])
    want = [p[0] for p in sorted(profiles, key=lambda p: (p[4], p[0]))]
    _same_ids("created-at index", got, want)
    # reputation: the top-"everything" scan, by reputation desc then uid
    got = await store_of(engine).scan_top_reputation(1, [])
    want = [p[0] for p in sorted(profiles, key=lambda p: (-p[6], p[0]))]
    _same_ids("reputation index", got, want)
    # email: every planned uid's email; only the stored ones answer, in request order
    found: list[Profile] = []
    for start in range(1, n + 1, batch):
        emails = [email_of(uid) for uid in range(start, min(n, start + batch - 1) + 1)]
        found += [as_profile(r) for r in await store_of(engine).lookup_by_email(emails, [])]
    assert found == profiles, f"email lookups of 1..{n} returned {len(found)} profiles, expected {k}"
    check_raw_indexes(engine, profiles)
    return StoreState(count=count, profiles=stored)


def raw_index_stores(engine: Engine) -> list[dict[bytes, bytes]] | None:
    """The four index stores of a key/value engine as dicts, read past the adapter API
    (which cannot see an orphan email entry: its lookup finds no profile and returns
    nothing); None for other engines."""
    if engine.name == "rocksdb":
        return [dict(db.items()) for db in engine._dbs[1:]]  # type: ignore[attr-defined]
    if engine.name == "lsm":
        return [dict(tree.iter()) for tree in engine._trees[1:]]  # type: ignore[attr-defined]
    return None


def check_raw_indexes(engine: Engine, profiles: list[Profile]) -> None:
    """Each index store holds exactly the entries (keys and values) of ``profiles``."""
    stores = raw_index_stores(engine)
    if stores is None:
        return
    for spec, store in zip(profile_indexes(values_are_pks=engine.name == "rocksdb"), stores, strict=True):
        want = {spec.key_of(p): spec.value_of(primary_key(p[0])) for p in profiles}
        if store != want:
            extra = sorted(set(store) - set(want))[:5]
            absent = sorted(set(want) - set(store))[:5]
            wrong = sorted(k for k in set(store) & set(want) if store[k] != want[k])[:5]
            raise AssertionError(f"{spec.name}: extra {extra}, missing {absent}, wrong values {wrong}")


def _gaps(stored: dict[int, Profile], k: int) -> str:
    missing = sorted(set(range(1, k + 1)) - set(stored))[:10]
    extra = sorted(set(stored) - set(range(1, k + 1)))[:10]
    return f"missing {missing}, beyond {extra}"


def _same_ids(what: str, got: list[int], want: list[int]) -> None:
    if got == want:
        return
    orphans = sorted(set(got) - set(want))[:10]
    absent = sorted(set(want) - set(got))[:10]
    raise AssertionError(
        f"{what} disagrees with the profiles: {len(got)} ids vs {len(want)} expected; "
        f"ids without a matching profile {orphans}, profiles without an entry {absent}"
        + ("" if orphans or absent else "; same ids, wrong order or duplicates")
    )
