"""The checksum's fold, defined in pure Python: an FNV-style fold over 64-bit words.

These ``py_fold_*`` are the executable definition the compiled kernels are tested against
and their fallback; :mod:`.kernels` picks one or the other and :mod:`.checksum` folds
through it. Kept apart from checksum.py so the kernels module can import the definitions
without checksum.py importing it back (no import cycle).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

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


def _profile_fields(record: Any) -> Sequence[Any]:
    if isinstance(record, (bytes, bytearray, memoryview)):
        record = bytes(record).decode()
    if isinstance(record, str):
        f = record.split("|", 7)
        return (int(f[0]), f[1], f[2], f[3], int(f[4]), int(f[5]), int(f[6]))
    row: Sequence[Any] = record  # a profile tuple or row: (uid, email, country, status, created, login, rep, ...)
    return row


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
