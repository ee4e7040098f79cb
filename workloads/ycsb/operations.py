"""A mixed phase's operations: kind from weights, key from a request distribution, seeded.

YCSB's ``doTransaction`` draws, per operation, its kind (``DiscreteGenerator`` over
read, update, insert, scan, read-modify-write, in that order, zero weights dropped), then
its key (``nextKeynum``), fields and scan length. Here the whole phase is one seeded
sequence, drawn in fixed blocks of :data:`BLOCK` operations with numpy (40-90 ns CPU
an operation; ``benchmarks/bench_ycsb_draw.py`` measures it), so operation *i* is the
same on every run, machine and worker count whoever executes it.

The insert counter advances in operation order: operation *i*'s ``maxkey`` is the last
key inserted by an earlier operation (YCSB uses the last *acknowledged* insert, which
depends on timing; ours does not). Inserts take the next key number.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from asyncbench.workloads.common import draws
from asyncbench.workloads.common.distributions import Params, chooser, next_keys
from asyncbench.workloads.common.zipfian import Zipfian

#: operation kinds, in YCSB's DiscreteGenerator order (the codes are part of the checksum)
KINDS = ("read", "update", "insert", "scan", "readmodifywrite")
READ, UPDATE, INSERT, SCAN, READMODIFYWRITE = range(5)
#: a field choice meaning every field (readallfields / writeallfields)
ALL_FIELDS = -1
#: operations drawn per block; part of the stream's definition (changing it changes the draws)
BLOCK = 1 << 16
SCAN_LENGTH_DISTRIBUTIONS = ("uniform", "zipfian")


@dataclass(frozen=True)
class MixSpec:
    """One mixed phase: YCSB's proportions, distribution, fields and scan lengths."""

    operationcount: int
    #: weights in :data:`KINDS` order (YCSB's readproportion ... readmodifywriteproportion)
    proportions: tuple[float, float, float, float, float]
    distribution: Params
    fieldcount: int = 10
    readallfields: bool = True
    writeallfields: bool = False
    minscanlength: int = 1
    maxscanlength: int = 1000
    scanlengthdistribution: str = "uniform"

    def __post_init__(self) -> None:
        if any(p < 0 for p in self.proportions) or sum(self.proportions) <= 0:
            raise ValueError(f"proportions must be >= 0 with a positive sum, got {self.proportions}")
        if self.scanlengthdistribution not in SCAN_LENGTH_DISTRIBUTIONS:
            raise ValueError(f"scanlengthdistribution must be uniform or zipfian, got {self.scanlengthdistribution!r}")
        if not 1 <= self.minscanlength <= self.maxscanlength:
            raise ValueError(f"scan lengths need 1 <= min <= max, got {self.minscanlength}..{self.maxscanlength}")


@dataclass
class Batch:
    """Consecutive operations ``start .. start + len - 1`` of the phase, one array per attribute."""

    start: int
    kind: npt.NDArray[np.int8]
    key: npt.NDArray[np.int64]
    #: the field a read/scan (and a read-modify-write's read) returns, or ALL_FIELDS
    read_field: npt.NDArray[np.int16]
    #: the field an update/read-modify-write writes, or ALL_FIELDS
    write_field: npt.NDArray[np.int16]
    #: records a scan asks for (0 for other kinds)
    scan_length: npt.NDArray[np.int32]
    #: the value tag of what an update/read-modify-write/insert writes (record.Values)
    tag: npt.NDArray[np.uint64]

    def __len__(self) -> int:
        return len(self.kind)


class OperationStream:
    """The phase's operations in order, in :class:`Batch` blocks (``for batch in stream``)."""

    def __init__(self, spec: MixSpec, seed: int) -> None:
        self.spec = spec
        weights = np.array(spec.proportions, dtype=np.float64)
        self._kinds = np.flatnonzero(weights > 0).astype(np.int8)
        shares = weights[self._kinds] / weights.sum()
        self._edges = np.cumsum(shares)[:-1]  # u below edge j: kind j (DiscreteGenerator)
        self._kind = draws.Stream(seed, draws.KIND)
        self._field = draws.Stream(seed, draws.FIELD)
        self._scan = draws.Stream(seed, draws.SCAN_LENGTH)
        self._value = draws.Stream(seed, draws.VALUE)
        self._keys = chooser(spec.distribution, seed)
        span = spec.maxscanlength - spec.minscanlength + 1
        self._scan_zipf = Zipfian(span) if spec.scanlengthdistribution == "zipfian" else None
        self.maxkey = spec.distribution.recordcount - 1  # the last key inserted so far
        self._started = False

    def __iter__(self) -> Iterator[Batch]:
        # the draws are stateful (insert counter, sequential counter, streams): a second
        # pass would silently continue the sequence instead of repeating it
        if self._started:
            raise RuntimeError("an OperationStream is drawn once; make a new one to draw the phase again")
        self._started = True
        done = 0
        while done < self.spec.operationcount:
            yield self._block(done, min(BLOCK, self.spec.operationcount - done))
            done += BLOCK

    def _block(self, start: int, n: int) -> Batch:
        spec = self.spec
        kind = self._kinds[np.searchsorted(self._edges, self._kind.doubles(n), side="right")]
        inserting = kind == INSERT
        maxkey = self.maxkey + np.cumsum(inserting) - inserting  # inserts strictly before each op
        key = maxkey + 1  # an insert's new key
        drawn = ~inserting
        key[drawn] = next_keys(self._keys, maxkey[drawn])
        self.maxkey += int(inserting.sum())

        read_field = self._field.below(n, spec.fieldcount).astype(np.int16)
        write_field = self._field.below(n, spec.fieldcount).astype(np.int16)
        if spec.readallfields:
            read_field[:] = ALL_FIELDS
        if spec.writeallfields:
            write_field[:] = ALL_FIELDS

        if self._scan_zipf is not None:
            length = spec.minscanlength + self._scan_zipf.map(self._scan.doubles(n))
        else:
            span = spec.maxscanlength - spec.minscanlength + 1
            length = spec.minscanlength + self._scan.below(n, span)
        scan_length = np.where(kind == SCAN, length, 0).astype(np.int32)

        tag = self._value.raw(n)
        tag[inserting] = key[inserting].astype(np.uint64)  # an inserted record is its key's, as loaded
        return Batch(start, kind, key, read_field, write_field, scan_length, tag)
