"""The skew a phase really ran: the share of its operations on its hottest 0.1 %, 1 % and 10 % of keys.

A plan names a distribution and a constant; what reached the engine is what matters when
results are compared (issue 36 item 6), so a phase counts operations per key and reports
these shares. Counts are per key number over the phase's key space (the records present
at its end, inserted ones included); workers' counts add, so the shares do not depend on P.
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

#: the hot fractions of the key space reported
FRACTIONS = (0.001, 0.01, 0.1)


class KeyCounts:
    """Operations per key number; :meth:`merge` adds another worker's."""

    __slots__ = ("counts",)

    def __init__(self) -> None:
        self.counts: npt.NDArray[np.int64] = np.zeros(0, dtype=np.int64)

    def add(self, keys: npt.NDArray[np.int64]) -> None:
        if len(keys) == 0:
            return
        more = np.bincount(keys, minlength=len(self.counts))
        more[: len(self.counts)] += self.counts
        self.counts = more

    def merge(self, other: KeyCounts) -> None:
        size = max(len(self.counts), len(other.counts))
        total = np.zeros(size, dtype=np.int64)
        total[: len(self.counts)] += self.counts
        total[: len(other.counts)] += other.counts
        self.counts = total

    def hot_shares(self, keyspace: int) -> dict[float, float]:
        """For each of :data:`FRACTIONS`, the share of operations on the ceil(fraction x keyspace)
        most-operated keys (at least one key)."""
        if keyspace < len(self.counts):
            raise ValueError(f"operations touched key {len(self.counts) - 1}, past a key space of {keyspace}")
        total = int(self.counts.sum())
        ranked = np.sort(self.counts)[::-1]
        shares = {}
        for fraction in FRACTIONS:
            hot = max(1, math.ceil(fraction * keyspace))
            shares[fraction] = float(ranked[:hot].sum()) / total if total else 0.0
        return shares
