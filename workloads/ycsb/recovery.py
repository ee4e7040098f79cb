"""After a crash in a YCSB phase: what the usertable holds, record by record, against the plan.

A crashed phase's first ``acknowledged`` operations (in the phase's plan order) were
acknowledged and no later one was issued (``asyncbench.run.crash.crash``). Every record the
plan can have written is read back (every field, encoded as stored) and compared, byte for
byte, with the versions the plan's own generators give it (:func:`versions`: the same
:class:`~.record.Values` and operation stream that wrote them, never a copy of a store):

- load: operation *i* writes record *i*. Stored as the plan builds it, it is an
  acknowledged write present (``i < acknowledged``) or an unacknowledged one present
  (allowed); missing with ``i < acknowledged``, an acknowledged write lost.
- mixed (its reads write nothing; an update or read-modify-write rewrites one field or
  all, an insert makes a new record): a record's version *j* is what it holds after the
  phase's first *j* writes to it (version 0: as the load left it, or absent for a record
  the phase inserts). With *a* of its writes acknowledged, version *j < a* lost *a - j*
  acknowledged writes, *j > a* holds unacknowledged ones; a loaded record gone lost its
  load too.

A record whose bytes are no version the plan ever wrote is torn: never allowed, whatever
the engine promises. Acknowledged present + lost counts write operations: a mixed phase's
acknowledged reads wrote nothing to lose.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from asyncbench.workload import PhaseKind, RecoveryCounts
from asyncbench.workloads.ycsb import kernels
from asyncbench.workloads.ycsb.operations import ALL_FIELDS, INSERT, KINDS, READMODIFYWRITE, UPDATE
from asyncbench.workloads.ycsb.phases import Keys, MixedOps, MixedPhase, Plan
from asyncbench.workloads.ycsb.store import YcsbStore

__all__ = ["CRASH_KINDS", "WRITE_KINDS", "changes_records", "check_recovery", "crash_problem", "key_writes", "versions"]

#: The phase kinds whose writes this module can check.
CRASH_KINDS = ("load", "mixed")
#: The mixed phase's operation kinds that write a record.
WRITE_KINDS = ("update", "insert", "readmodifywrite")
#: Records read per engine round.
READ_BATCH = 1000
#: Torn records described in the result (all are counted).
TORN_EXAMPLES = 5
#: How many writes past its acknowledged ones a record is checked for (none is issued
#: after the crash point, so any found is a finding, counted as unacknowledged present).
AHEAD = 2


def changes_records(kind: PhaseKind, params: Mapping[str, Any]) -> bool:
    """Whether a phase writes records: a mixed phase with a write proportion above 0 (the
    load makes them; a crash in a later phase is checked from the store it built)."""
    return kind.kind == "mixed" and any(float(params.get(f"{k}proportion", 0)) > 0 for k in WRITE_KINDS)


def crash_problem(kind: PhaseKind, params: Mapping[str, Any]) -> str | None:
    """Why a crash cannot end a phase of ``kind`` with these params, or None (it can)."""
    if kind.kind not in CRASH_KINDS:
        return f"phase kind {kind.kind!r} cannot crash; a crash ends one of: {', '.join(CRASH_KINDS)}"
    if kind.kind == "mixed" and not changes_records(kind, params):
        return (
            "this mixed phase only reads (its updateproportion, insertproportion and readmodifywriteproportion "
            "are 0): a crash in it has no write to lose; crash the load or a mixed phase that writes"
        )
    return None


def key_writes(phase: MixedPhase) -> dict[int, list[int]]:
    """Key number -> the positions (plan order) of the phase's operations that write it."""
    writes = np.flatnonzero(np.isin(phase.kind, (UPDATE, INSERT, READMODIFYWRITE)))
    out: dict[int, list[int]] = {}
    for pos, key in zip(writes.tolist(), phase.key[writes].tolist(), strict=True):
        out.setdefault(int(key), []).append(int(pos))
    return out


def versions(phase: MixedPhase, key: int, positions: Sequence[int]) -> list[bytes | None]:
    """Record ``key``'s versions: [as the phase found it (None: absent), after its first
    write at ``positions[0]``, after the second, ...], each encoded as a store holds it.
    Derived from the plan (the operation stream's kinds, fields and tags, the plan's
    values), exactly as :mod:`.store` writes them."""
    plan = phase.plan
    values = plan.values
    record: bytes | None = values.encoded((key,))[0] if key < plan.counts.profiles else None
    out = [record]
    kind, field, tag = phase.kind, phase.columns[3], phase.columns[5]
    for pos in positions:
        k, wf, t = int(kind[pos]), int(field[pos]), int(tag[pos])
        if k == INSERT or wf == ALL_FIELDS:
            record = values.encoded((t,))[0]
        elif k in (UPDATE, READMODIFYWRITE):
            if record is None:
                raise ValueError(f"operation {pos} ({KINDS[k]}) writes record {key} before the plan made it")
            record = kernels.splice(record, wf, values.value(t, wf))
        else:
            raise ValueError(f"operation {pos} ({KINDS[k]}) writes nothing")
        out.append(record)
    return out


class _Counter:
    """The counts as records are compared, and the earliest acknowledged write lost."""

    def __init__(self) -> None:
        self.out = RecoveryCounts()

    def torn(self, text: str) -> None:
        self.out.torn += 1
        if len(self.out.torn_examples) < TORN_EXAMPLES:
            self.out.torn_examples.append(text)

    def lost(self, ops: int, first: int | None) -> None:
        self.out.acknowledged_lost += ops
        if first is not None:
            self.out.first_lost = first if self.out.first_lost is None else min(self.out.first_lost, first)


async def _read(store: YcsbStore, plan: Plan, keys: Sequence[int]) -> list[tuple[int, bytes, bytes | None]]:
    """(key, its name, its stored record or None) for each key: one round of reads."""
    names = plan.names(keys)
    got = await store.records(names, plan.counts.fieldcount)
    return list(zip(keys, names, (None if g is None else bytes(g) for g in got), strict=True))


async def check_recovery(store: YcsbStore, items: Sequence[Any], acknowledged: int) -> RecoveryCounts:
    """Read every record the phase (its ``items``) can have written and count it (see the
    module docstring)."""
    if isinstance(items, Keys):
        return await _check_load(store, items, acknowledged)
    if isinstance(items, MixedOps):
        return await _check_mixed(store, items.phase, acknowledged)
    raise ValueError(f"a crash in this phase cannot be checked ({type(items).__name__}); only in {', '.join(CRASH_KINDS)}")


async def _check_load(store: YcsbStore, items: Keys, acknowledged: int) -> RecoveryCounts:
    plan, count = items.plan, _Counter()
    out = count.out
    keys = items.keys
    for start in range(0, len(keys), READ_BATCH):
        chunk = keys[start : start + READ_BATCH]
        expected = plan.values.encoded(chunk)
        for (key, name, got), want in zip(await _read(store, plan, chunk), expected, strict=True):
            out.checked += got is not None
            position = keys.index(key)  # load operation i writes record keys[i]
            if got is None:
                if position < acknowledged:
                    count.lost(1, position)
            elif got != want:
                count.torn(f"record {name.decode()} is no version the plan wrote: {got!r:.80}")
            elif position < acknowledged:
                out.acknowledged_present += 1
            else:
                out.unacknowledged_present += 1
    return out


async def _check_mixed(store: YcsbStore, phase: MixedPhase, acknowledged: int) -> RecoveryCounts:
    plan, count = phase.plan, _Counter()
    out = count.out
    writes = key_writes(phase)
    records = plan.counts.profiles
    inserted = sorted(k for k in writes if k >= records)
    keys: list[int] = [*range(records), *inserted]
    for start in range(0, len(keys), READ_BATCH):  # a round at a time: never every record in memory
        for key, name, got in await _read(store, plan, keys[start : start + READ_BATCH]):
            out.checked += got is not None
            positions = writes.get(key, [])
            acked = sum(1 for p in positions if p < acknowledged)
            seen = versions(phase, key, positions[: acked + AHEAD])
            _compare(count, name, got, seen, positions, acked)
    return out


def _compare(
    count: _Counter, name: bytes, got: bytes | None, seen: list[bytes | None], positions: list[int], acked: int
) -> None:
    """One record against its versions ``seen``; the acknowledged one (``acked``) and later
    ones first, so bytes that equal it are never counted as a loss."""
    out = count.out
    order = [*range(acked, len(seen)), *range(min(acked, len(seen)) - 1, -1, -1)]
    for j in order:
        if got == seen[j]:
            if j < acked:
                count.lost(acked - j, positions[j])
            out.acknowledged_present += min(j, acked)
            out.unacknowledged_present += max(0, j - acked)
            return
    if got is None:  # a loaded record gone: its load (before this phase) and every write to it
        count.lost(acked + 1, positions[0] if positions and acked else None)
        return
    count.torn(f"record {name.decode()} is no version the plan wrote ({acked} acknowledged writes): {got!r:.80}")
