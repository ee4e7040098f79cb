"""YCSB's ``usertable`` record: ``fieldcount`` fields field0.. of ``fieldlength`` bytes, seeded.

YCSB fills fields with random printable bytes and never checks them; here every value is
a function of the plan's seed and a 64-bit *tag* (the record's key number for a loaded or
inserted record, a drawn number for an update), so a read's result is known in advance and
its checksum is exact. A value is a window of a seeded pool of printable ASCII (as YCSB's
``RandomByteIterator``, characters ' '..'~') at an offset hashed from (tag, field): cheap
(one slice) yet different per record and field.

:func:`encode` / :func:`decode` (:mod:`.codec`) are the canonical encoding for key/value
engines and for the checksum: the record as one value, fields in index order, each
length-prefixed. Records are built encoded, once per operation, by the compiled kernels
(:mod:`.kernels`).
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from asyncbench.workloads.common import draws
from asyncbench.workloads.ycsb import kernels
from asyncbench.workloads.ycsb.codec import POOL_WINDOWS, decode, encode

__all__ = ["Values", "decode", "encode", "field_names"]

_POOL_WINDOWS = POOL_WINDOWS


def field_names(fieldcount: int, prefix: str = "field") -> list[str]:
    return [f"{prefix}{i}" for i in range(fieldcount)]


class Values:
    """The field values of a plan: ``value(tag, field)`` is fixed by the seed."""

    __slots__ = ("fieldcount", "fieldlength", "pool")

    def __init__(self, seed: int, fieldcount: int, fieldlength: int) -> None:
        if fieldcount < 1:
            raise ValueError(f"fieldcount must be >= 1, got {fieldcount}")
        if fieldlength < 1:
            raise ValueError(f"fieldlength must be >= 1, got {fieldlength}")
        self.fieldcount = fieldcount
        self.fieldlength = fieldlength
        raw = draws.Stream(seed, draws.POOL).raw((_POOL_WINDOWS + fieldlength + 7) // 8 + 1)
        printable = np.frombuffer(raw.tobytes(), dtype=np.uint8) % 95 + 32
        self.pool = printable[: _POOL_WINDOWS + fieldlength].tobytes()

    def value(self, tag: int, field: int) -> bytes:
        return kernels.value(self.pool, tag, self.fieldcount, self.fieldlength, field)

    def record(self, tag: int) -> list[bytes]:
        """All fields of the record written with ``tag`` (loaded/inserted: tag = key number)."""
        return [self.value(tag, f) for f in range(self.fieldcount)]

    def encoded(self, tags: Iterable[int]) -> list[bytes]:
        """The record written with each tag, in the canonical encoding, built in one kernel
        call (a load phase builds millions of records: per-field Python would cost
        microseconds each)."""
        return kernels.records(self.pool, tags, self.fieldcount, self.fieldlength)
