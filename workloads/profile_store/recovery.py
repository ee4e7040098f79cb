"""After a crash: what the store holds, profile by profile, against what the plan wrote.

A crashed phase's first ``acknowledged`` operations (in the phase's plan order) were
acknowledged and no later one was issued (``asyncbench.run.crash.crash``). Every profile the
plan knows is read back and compared with the versions the plan can have written:

- insert: profile ``uid`` is operation ``uid - 1``; stored as created, it is an
  acknowledged write present (``uid <= acknowledged``) or an unacknowledged one present;
  missing with ``uid <= acknowledged``, an acknowledged write lost.
- update (the first update phase, on the whole inserted store): profile ``uid``'s version
  ``j`` is its creation followed by ``j`` updates; with ``a`` acknowledged updates of it,
  version ``j < a`` lost ``a - j`` acknowledged updates, ``j > a`` holds unacknowledged
  ones, and a missing profile lost its insert and all ``a``.

A record that is no version the plan ever wrote (or that does not decode) is torn: never
allowed, whatever the engine promises. Reads go in batches; a batch that fails to decode
is read again one profile at a time, so the torn record is named.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from asyncbench.workload import Items, PhaseKind, RecoveryCounts
from asyncbench.workloads.profile_store.generate import create_many
from asyncbench.workloads.profile_store.plan import Plan
from asyncbench.workloads.profile_store.profiles import Profile, Record, decode, update
from asyncbench.workloads.profile_store.store import ProfileStore

__all__ = ["CRASH_KINDS", "check_recovery"]

#: The phase kinds whose writes this module can check.
CRASH_KINDS = ("insert", "update")
#: Profiles read per call.
READ_BATCH = 1000
#: Torn records described in the result (all are counted).
TORN_EXAMPLES = 5


def _profile(record: Record) -> Profile:
    if isinstance(record, (bytes, bytearray, memoryview, str)):
        return decode(record)
    p = tuple(record)
    if len(p) != 9:
        raise ValueError(f"{len(p)} fields, expected 9")
    return p  # type: ignore[return-value]


async def _read(store: ProfileStore, uids: Sequence[int]) -> dict[int, Profile | str]:
    """uid -> the stored profile, or a description of why it is no profile (torn)."""
    found: dict[int, Profile | str] = {}
    records = await store.read_by_id(uids, [])
    try:
        for record in records:
            p = _profile(record)
            found[p[0]] = p
        return found
    except (ValueError, IndexError, UnicodeDecodeError):
        found.clear()
    for uid in uids:  # one at a time: which one is torn
        for record in await store.read_by_id([uid], []):
            try:
                p = _profile(record)
            except (ValueError, IndexError, UnicodeDecodeError) as exc:
                found[uid] = f"profile {uid} does not decode ({type(exc).__name__}: {exc}): {record!r:.80}"
            else:
                found[uid] = p if p[0] == uid else f"profile {uid} read back as profile {p[0]}"
    return found


def _torn(out: RecoveryCounts, text: str) -> None:
    out.torn += 1
    if len(out.torn_examples) < TORN_EXAMPLES:
        out.torn_examples.append(text)


async def check_recovery(
    store: ProfileStore, plan: Plan, kind: PhaseKind, items: Sequence[Any], acknowledged: int
) -> RecoveryCounts:
    """Read every profile back and count it (see the module docstring)."""
    if kind.kind not in CRASH_KINDS:
        raise ValueError(f"a crash in a {kind.kind!r} phase cannot be checked; only in {', '.join(CRASH_KINDS)}")
    profiles, seed = plan.counts.profiles, plan.seed
    out = RecoveryCounts()
    # per uid: the plan positions of its acknowledged operations, and how many the phase holds
    acked: dict[int, list[int]] = {}
    inserting = kind.items is Items.PROFILE_IDS
    if not inserting:
        for start in range(0, acknowledged, READ_BATCH):
            for pos, uid in enumerate(items[start : min(acknowledged, start + READ_BATCH)], start):
                acked.setdefault(int(uid), []).append(pos)
    for start in range(1, profiles + 1, READ_BATCH):
        uids = list(range(start, min(profiles, start + READ_BATCH - 1) + 1))
        found = await _read(store, uids)
        out.checked += len(found)
        for p in create_many(start, len(uids), seed):
            uid = p[0]
            got = found.get(uid)
            if isinstance(got, str):
                _torn(out, got)
            elif inserting:
                _insert_one(out, uid, p, got, acknowledged)
            else:
                _update_one(out, uid, p, got, acked.get(uid, []), seed)
        extra = sorted(set(found) - set(uids))
        for uid in extra:  # a read of one id answered with another: no version of anything
            _torn(out, f"a read of profiles {uids[0]}..{uids[-1]} returned profile {uid}")
    return out


def _lost(out: RecoveryCounts, ops: int, first: int) -> None:
    out.acknowledged_lost += ops
    out.first_lost = first if out.first_lost is None else min(out.first_lost, first)


def _insert_one(out: RecoveryCounts, uid: int, created: Profile, got: Profile | None, acknowledged: int) -> None:
    position = uid - 1  # insert operation uid - 1 creates profile uid
    if got is None:
        if position < acknowledged:
            _lost(out, 1, position)
    elif got != created:
        _torn(out, f"profile {uid} is no version the plan wrote: {got!r:.120}")
    elif position < acknowledged:
        out.acknowledged_present += 1
    else:
        out.unacknowledged_present += 1


#: How many updates past its acknowledged ones a profile is checked for (an unacknowledged
#: update found; none is issued after the crash point, so any is a finding).
_AHEAD = 2


def _update_one(
    out: RecoveryCounts, uid: int, created: Profile, got: Profile | None, positions: list[int], seed: int
) -> None:
    a = len(positions)
    if got is None:  # even its insert, complete before this phase, is gone
        if positions:
            _lost(out, a + 1, positions[0])
        else:  # no operation of this phase lost, so no time in it
            out.acknowledged_lost += 1
        return
    version = created
    for j in range(a + _AHEAD + 1):
        if got == version:
            if j < a:
                _lost(out, a - j, positions[j])
            out.acknowledged_present += min(j, a)
            out.unacknowledged_present += max(0, j - a)
            return
        version = update(version, seed)
    _torn(out, f"profile {uid} is no version the plan wrote ({a} acknowledged updates): {got!r:.120}")
