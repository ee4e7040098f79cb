"""The per-phase checksum: an FNV-style fold over 64-bit words.

This is the hottest code in the harness (query phases fold millions of profiles), so
:class:`Checksum` folds through :mod:`workloads.profile_store.kernels` (compiled when
built); the pure-Python ``py_fold_*`` below are the fallback and the executable definition
the compiled kernels are tested against.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

OFFSET_BASIS = 14695981039346656037
PRIME = 1099511628211
M64 = (1 << 64) - 1


def py_fold_int(state: int, value: int) -> int:
    return ((state ^ (value & M64)) * PRIME) & M64


def py_fold_ints(state: int, values: Iterable[int]) -> int:
    for v in values:
        state = ((state ^ (v & M64)) * PRIME) & M64
    return state


def py_fold_str(state: int, text: str) -> int:
    """One word per UTF-16 code unit (astral characters count as a surrogate pair)."""
    data = text.encode("utf-16-le", "surrogatepass")
    for i in range(0, len(data), 2):
        state = ((state ^ (data[i] | (data[i + 1] << 8))) * PRIME) & M64
    return state


def _profile_fields(record: object) -> Sequence:
    if isinstance(record, (bytes, bytearray, memoryview)):
        record = bytes(record).decode()
    if isinstance(record, str):
        f = record.split("|", 7)
        return (int(f[0]), f[1], f[2], f[3], int(f[4]), int(f[5]), int(f[6]))
    return record  # a profile tuple or row: (uid, email, country, status, created, login, rep, ...)


def py_fold_profiles(state: int, records: Iterable[object]) -> int:
    """Adds uid, email, country, status, created_at, last_login, reputation per record.

    A record is a profile tuple/row, or its stored ``|``-joined encoding (bytes or str).
    """
    for record in records:
        f = _profile_fields(record)
        state = py_fold_int(state, f[0])
        state = py_fold_str(state, f[1])
        state = py_fold_str(state, f[2])
        state = py_fold_str(state, f[3])
        state = py_fold_int(state, f[4])
        state = py_fold_int(state, f[5])
        state = py_fold_int(state, f[6])
    return state


# After the definitions above, which kernels.py falls back to (it imports this module).
from workloads.profile_store import kernels  # noqa: E402

#: Kept for asyncbench.environment; kernels.status_line() says more.
ACCELERATED = kernels.ACCELERATED


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
