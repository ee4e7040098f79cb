"""The per-phase checksum: an FNV-style fold over 64-bit words.

This is the hottest code in the harness (query phases fold millions of profiles), so
:class:`Checksum` folds through :mod:`asyncbench.workloads.profile_store.kernels` (compiled when
built); the pure-Python ``py_fold_*`` in :mod:`.fold` are the fallback and the executable
definition the compiled kernels are tested against.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from asyncbench.workloads.profile_store import kernels
from asyncbench.workloads.profile_store.fold import (
    M64,
    OFFSET_BASIS,
    PRIME,
    py_fold_int,
    py_fold_ints,
    py_fold_profiles,
    py_fold_str,
)

# The fold's definitions live in fold.py; re-exported as the checksum's own.
__all__ = [
    "M64",
    "OFFSET_BASIS",
    "PRIME",
    "Checksum",
    "combine",
    "py_fold_int",
    "py_fold_ints",
    "py_fold_profiles",
    "py_fold_str",
    "to_hex",
]

def to_hex(state: int) -> str:
    return f"{state:016X}"


class Checksum:
    """A running checksum; add whole operation batches at once to keep calls few."""

    __slots__ = ("state",)

    def __init__(self, state: int = OFFSET_BASIS) -> None:
        self.state = state

    def add_int(self, value: int) -> None:
        self.state = ((self.state ^ (value & M64)) * PRIME) & M64

    def add_ints(self, values: Iterable[int]) -> None:
        self.state = kernels.fold_ints(self.state, values)

    def add_str(self, text: str) -> None:
        self.state = py_fold_str(self.state, text)  # only combine() folds text

    def add_profiles(self, records: Iterable[object]) -> None:
        self.state = kernels.fold_profiles(self.state, records)

    def hex(self) -> str:
        return to_hex(self.state)


def combine(worker_hexes: Sequence[str]) -> str:
    """P > 1: the fold of the workers' hex strings in worker order; one worker is itself."""
    if len(worker_hexes) == 1:
        return worker_hexes[0]
    c = Checksum()
    for h in worker_hexes:
        c.add_str(h)
    return c.hex()
