"""YCSB's 64-bit FNV hash of a number (``site.ycsb.Utils.fnvhash64``), scalar and vectorised.

YCSB hashes key numbers with it twice: ``insertorder=hashed`` key names
(``CoreWorkload.buildKeyName``) and the scrambled zipfian generator's spread of popular
items over the key space. Both must match YCSB bit for bit, or "user6284781860667377211"
names a different record than YCSB's and the hot keys land elsewhere.

The hash folds the eight low-order bytes of the (two's complement) number, FNV-1 style
(xor then multiply), and returns the absolute value of the signed 64-bit result.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

FNV_OFFSET_BASIS_64 = 0xCBF29CE484222325
FNV_PRIME_64 = 1099511628211
_M64 = (1 << 64) - 1


def fnvhash64(value: int) -> int:
    """YCSB's ``Utils.fnvhash64(value)`` for one number (a non-negative result).

    Java's ``Math.abs(Long.MIN_VALUE)`` stays negative; here that single hash value
    reads as 2**63 (no key number in any practical range hashes to it).
    """
    h = FNV_OFFSET_BASIS_64
    v = value & _M64
    for _ in range(8):
        h = ((h ^ (v & 0xFF)) * FNV_PRIME_64) & _M64
        v >>= 8
    return (-h) & _M64 if h >> 63 else h


def fnvhash64_array(values: npt.NDArray[np.int64] | npt.NDArray[np.uint64]) -> npt.NDArray[np.uint64]:
    """:func:`fnvhash64` over an array (uint64 results; numpy's uint64 arithmetic wraps mod 2**64)."""
    v = np.asarray(values).astype(np.uint64, copy=True)
    h = np.full(v.shape, FNV_OFFSET_BASIS_64, dtype=np.uint64)
    prime = np.uint64(FNV_PRIME_64)
    low = np.uint64(0xFF)
    eight = np.uint64(8)
    for _ in range(8):
        h ^= v & low
        h *= prime
        v >>= eight
    negative = h >= np.uint64(1 << 63)
    h[negative] = np.uint64(0) - h[negative]
    return h
