"""The mixed phase's checksum: one digest per operation, summed, so worker order cannot matter.

The profile store folds each worker's results in order and then the workers' checksums
in worker order (:mod:`asyncbench.workloads.profile_store.checksum`), which ties its
value to P. A YCSB phase must give the same checksum at any P and K, so here each
operation yields a 64-bit digest (:mod:`.digest`: one fold over its position in the
sequence, its kind, its key and the bytes it read, as the engine returned them in the
canonical record encoding), and the phase checksum is the sum of the digests mod 2**64:
commutative, so the workers' and processes' partial sums add up to the same value however
the operations were shared out and interleaved, while a missing, repeated or wrong
operation still changes it.
"""

from __future__ import annotations

from collections.abc import Iterable

from asyncbench.workloads.profile_store.fold import M64, OFFSET_BASIS, PRIME
from asyncbench.workloads.ycsb import kernels

__all__ = ["PhaseChecksum", "op_digest", "scan_digest"]


def op_digest(index: int, kind: int, key: bytes, read: bytes | None = None) -> int:
    """The digest of operation ``index`` of ``kind`` on ``key``, given the record bytes it read.

    ``read`` is what the engine returned in the canonical encoding (a whole record for a
    read of every field, a one-field record for a read of one); None for an operation that
    returns nothing (an update or insert still counts: its position and key are folded).
    """
    return kernels.digest(index, kind, key, read)


def scan_digest(index: int, kind: int, start: bytes, records: Iterable[tuple[bytes, bytes]]) -> int:
    """The digest of a scan: the (key, record bytes) pairs it folds, in key order."""
    state = ((OFFSET_BASIS ^ (index & M64)) * PRIME) & M64
    state = ((state ^ kind) * PRIME) & M64
    fold = kernels.fold_bytes
    state = fold(state, start)
    for key, record in records:
        state = fold(fold(state, key), record)
    return kernels.mix(state)


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
