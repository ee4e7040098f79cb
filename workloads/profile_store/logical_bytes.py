"""The logical bytes a plan writes: the yardstick of write and space amplification.

Write amplification is the bytes an engine makes the device write over the bytes the
workload asked it to write; space amplification its storage over the live data. Both need
one engine-independent figure for "what the workload wrote", so it is defined here, on the
stored encoding of docs/workload.md §2 (the key/value layout every engine could use), not
on any engine's format:

- a profile record is its key (``{user_id:020d}``, 20 bytes) and its value (the nine fields
  joined by ``|``); an index entry is its key, plus the email index's value (the 20-digit
  user id; the other three indexes have empty values);
- an **insert** writes the record and its four index entries;
- an **update** writes the new record and, for the country/status and reputation indexes,
  deletes the old key and puts the new one (the reference's writes, even when a key does
  not change): the new record plus the four keys;
- the **live data** after a phase is every stored profile's record and four index entries.

Computed from the plan after the engine is done (a few seconds at 2M profiles, never before or inside
a phase's time): the profiles are generated again and the updates replayed, each item
exactly as the phase will apply it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from asyncbench.workloads.profile_store.generate import create_many
from asyncbench.workloads.profile_store.phases import Group, Items, PhaseKind, phase_items
from asyncbench.workloads.profile_store.plan import Plan
from asyncbench.workloads.profile_store.profiles import Profile, update

__all__ = ["LogicalWrites", "entry_bytes", "plan_writes", "record_bytes", "update_bytes"]

_KEY = 20  # {user_id:020d}
_CHUNK = 50_000


def record_bytes(p: Profile) -> int:
    """Key and value of the profile record: 20 + the nine fields joined by ``|``."""
    return _KEY + len(f"{p[0]}|{p[1]}|{p[2]}|{p[3]}|{p[4]}|{p[5]}|{p[6]}|{p[7]}|{p[8]}".encode())


def _cs_key(p: Profile) -> int:
    return len(f"{p[2]}|{p[3]}|".encode()) + _KEY  # {country}|{status}|{uid:020d}


_CA_KEY = 20 + 1 + _KEY  # {created_at_ms:020d}|{uid:020d}
_REP_KEY = 10 + 1 + _KEY  # {1_000_000 - reputation:010d}|{uid:020d}
#: Beyond the record: the email's value (the 20-digit uid), the country/status key's two
#: ``|`` and its uid, the created-at and reputation keys.
_ENTRY_FIXED = _KEY + _KEY + 8 + _KEY + 2 + _KEY + _CA_KEY + _REP_KEY


def entry_bytes(p: Profile) -> int:
    """The record and its four index entries: what an insert writes and what stays live
    (one encoding of the variable fields: the record's, the email key, country and status)."""
    return _ENTRY_FIXED - _KEY + len(
        f"{p[0]}{p[1]}{p[2]}{p[3]}{p[4]}{p[5]}{p[6]}{p[7]}{p[8]}{p[1]}{p[2]}{p[3]}".encode()
    )


def update_bytes(old: Profile, new: Profile) -> int:
    """What one update writes: the new record, the old and new country/status keys and the
    old and new reputation keys."""
    return record_bytes(new) + _cs_key(old) + _cs_key(new) + 2 * _REP_KEY


@dataclass
class LogicalWrites:
    """The workload's state as a plan's write phases change it: ``live`` is the live data's
    logical bytes now; each call returns the phase's logical bytes written."""

    seed: int
    live: int = 0
    inserted: int = 0  # profiles 1..inserted are stored

    def __post_init__(self) -> None:
        self._current: dict[int, Profile] = {}  # updated profiles as they stand now

    def insert(self, profiles: int) -> int:
        """Profiles ``inserted + 1 .. profiles`` inserted (the insert phase's items)."""
        written = 0
        start = self.inserted + 1
        while start <= profiles:
            n = min(_CHUNK, profiles - start + 1)
            written += sum(map(entry_bytes, create_many(start, n, self.seed)))
            start += n
        self.inserted = max(self.inserted, profiles)
        self.live += written
        return written

    def update(self, uids: Iterable[int]) -> int:
        """Each uid updated in order (a uid drawn twice is updated twice, from the first
        result); uids never inserted are not stored and write nothing."""
        written = 0
        current, seed = self._current, self.seed
        for uid in uids:
            if not 1 <= uid <= self.inserted:
                continue
            old = current.get(uid)
            if old is None:
                old = create_many(uid, 1, seed)[0]
            new = update(old, seed)
            current[uid] = new
            written += update_bytes(old, new)
            self.live += entry_bytes(new) - entry_bytes(old)
        return written


def plan_writes(phases: Sequence[tuple[PhaseKind, str | None, int | None]], plan: Plan, seed: int) -> list[tuple[int | None, int]]:
    """Per plan phase (kind, stream, count): the logical bytes it writes (None: not a write
    phase) and the live data's logical bytes after it."""
    state = LogicalWrites(seed)
    out: list[tuple[int | None, int]] = []
    for kind, stream, count in phases:
        written = None
        if kind.group is Group.WRITE:
            items = phase_items(kind, stream, count, plan)
            written = state.insert(len(items)) if kind.items is Items.PROFILE_IDS else state.update(items)
        out.append((written, state.live))
    return out
