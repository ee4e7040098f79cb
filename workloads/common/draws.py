"""Seeded random numbers for the mixed phases' draws (YCSB's and the profile store's):
one independent stream per purpose.

Determinism on any machine is the contract (a plan's seed gives the same operations
everywhere), so the numbers come from numpy's PCG64 bit generator seeded through a
``SeedSequence`` of ``(seed, purpose)``, and only its raw 64-bit outputs are used: numpy
keeps PCG64 and ``SeedSequence`` stable across versions, while its distribution methods
may change. Doubles and bounded integers are derived here, in one visible place.
Separate purposes (operation kind, key, field, scan length, values) keep one choice from
shifting another: a plan that changes scan lengths draws the same keys.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

#: the purposes, each its own stream (the numbers are part of the plan's meaning: never renumber)
KIND, KEY, FIELD, SCAN_LENGTH, VALUE, POOL = 1, 2, 3, 4, 5, 6

_TWO_POW_M53 = 2.0**-53


class Stream:
    """Raw 64-bit draws of one purpose, and the doubles and integers made from them."""

    __slots__ = ("_bits",)

    def __init__(self, seed: int, purpose: int) -> None:
        if seed < 0:
            raise ValueError(f"seed must be >= 0, got {seed}")
        self._bits = np.random.PCG64(np.random.SeedSequence([seed, purpose]))

    def raw(self, n: int) -> npt.NDArray[np.uint64]:
        return self._bits.random_raw(n)

    def doubles(self, n: int) -> npt.NDArray[np.float64]:
        """n uniform doubles in [0, 1), 53 random bits each (as Java's ``nextDouble``)."""
        return (self.raw(n) >> np.uint64(11)).astype(np.float64) * _TWO_POW_M53

    def below(self, n: int, bound: int) -> npt.NDArray[np.int64]:
        """n integers uniform in [0, bound): the raw word mod bound (bias < bound / 2**64)."""
        if bound <= 0:
            raise ValueError(f"bound must be > 0, got {bound}")
        return (self.raw(n) % np.uint64(bound)).astype(np.int64)
