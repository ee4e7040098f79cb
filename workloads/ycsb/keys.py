"""YCSB's key names: ``user`` + the key number, hashed or in order, zero padded.

As ``CoreWorkload.buildKeyName``: with ``insertorder=hashed`` (YCSB's default) the
number is first replaced by its FNV-64 hash, so consecutive inserts scatter over the
key space (and scans start anywhere); ``ordered`` keeps the number. ``zeropadding`` pads
the decimal digits with zeros to that width (default 1: no padding).
"""

from __future__ import annotations

from collections.abc import Iterable

from asyncbench.workloads.common.fnv import fnvhash64

PREFIX = "user"
INSERT_ORDERS = ("hashed", "ordered")


def key_name(keynum: int, *, hashed: bool = True, zeropadding: int = 1) -> str:
    """The key of record number ``keynum`` (``buildKeyName(keynum, zeropadding, !hashed)``)."""
    value = str(fnvhash64(keynum) if hashed else keynum)
    return PREFIX + "0" * (zeropadding - len(value)) + value


def py_key_names(keys: Iterable[int], hashed: bool, zeropadding: int) -> list[bytes]:
    """:func:`key_name` of each key number, as the ASCII bytes an engine stores (the
    definition the compiled ``key_names`` kernel is tested against, and its fallback)."""
    return [key_name(k, hashed=hashed, zeropadding=zeropadding).encode() for k in keys]
