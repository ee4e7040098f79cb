"""The mixed phase's checksum: one digest per operation, summed, so worker order cannot matter.

The profile store folds each worker's results in order and then the workers' checksums
in worker order (:mod:`asyncbench.workloads.profile_store.checksum`), which ties its
value to P. A YCSB phase must give the same checksum at any P and K, so here each
operation yields a 64-bit digest (the profile store's FNV-style fold over the operation's
position in the sequence, its kind and a BLAKE2b digest of what it returned), and the
phase checksum is the sum of the digests mod 2**64: commutative, so the workers' and
processes' partial sums add up to the same value however the operations were shared out
and interleaved, while a missing, repeated or wrong operation still changes it.
"""

from __future__ import annotations

import hashlib
import struct
from collections.abc import Iterable, Sequence

from asyncbench.workloads.profile_store.fold import M64, OFFSET_BASIS, py_fold_int
from asyncbench.workloads.ycsb.record import encode

_FIELD = struct.Struct("<h")


def op_digest(index: int, kind: int, key: str, fields: Sequence[tuple[int, bytes]] | None = None) -> int:
    """The digest of operation ``index`` of ``kind`` on ``key``, given the fields it read.

    ``fields`` are (field index, value) pairs in field order; None for an operation that
    returns nothing (an update or insert still counts: its position and key are folded).
    """
    h = hashlib.blake2b(key.encode(), digest_size=8)
    if fields is not None:
        _hash_fields(h, fields)
    return _digest(index, kind, h)


def scan_digest(index: int, kind: int, start: str, records: Iterable[tuple[str, Sequence[tuple[int, bytes]]]]) -> int:
    """The digest of a scan: the (key, fields) records it folds, in key order."""
    h = hashlib.blake2b(start.encode(), digest_size=8)
    for key, fields in records:
        h.update(b"\0" + key.encode() + b"\0")
        _hash_fields(h, fields)
    return _digest(index, kind, h)


def _hash_fields(h: hashlib.blake2b, fields: Sequence[tuple[int, bytes]]) -> None:
    """Fold a record's (field index, value) pairs into ``h``: a read's and a scan's alike."""
    for number, value in fields:
        h.update(_FIELD.pack(number))
        h.update(encode([value]))


def _digest(index: int, kind: int, h: hashlib.blake2b) -> int:
    """The operation's 64-bit digest: its position, its kind and what it returned (``h``)."""
    state = py_fold_int(OFFSET_BASIS, index)
    state = py_fold_int(state, kind)
    return py_fold_int(state, int.from_bytes(h.digest(), "little"))


class PhaseChecksum:
    """The running sum of operation digests; partial sums (workers, processes) add."""

    __slots__ = ("operations", "total")

    def __init__(self) -> None:
        self.total = 0
        self.operations = 0

    def add(self, digest: int) -> None:
        self.total = (self.total + digest) & M64
        self.operations += 1

    def merge(self, other: PhaseChecksum) -> None:
        self.total = (self.total + other.total) & M64
        self.operations += other.operations

    def hex(self) -> str:
        return f"{self.total:016X}"
