"""A time-bounded mixed phase's checksums at the prefixes of its stream (``BoundedPhases.prefix_checksums``).

A mixed phase stopped by its ``duration`` ran, in each worker, a prefix of that worker's
share (key k's operations, in sequence order, on worker k mod P): the set that ran is no
prefix of the stream, and differs with P and with the engine's speed. But every operation's
digest depends only on the operations before it on the same keys, which ran before it in
the same worker (:mod:`.phases`), and the phase checksum is the digests' sum mod 2**64. So
the sum over the stream's first N operations is the same on every engine and P wherever
all of them ran: it is computed here for the longest such prefix (``complete``) and at
every multiple of ``every`` up to it, the checkpoints at which engines that stopped at
different points are compared (:mod:`asyncbench.measure.correctness`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from asyncbench.workload import Prefix

__all__ = ["MAX_CHECKPOINTS", "checkpoint_every", "prefix_checksums"]

#: The most checkpoints a phase records: a result holds at most this many 16-digit sums
#: per engine and phase (about 18 KB), whatever the phase's operation count.
MAX_CHECKPOINTS = 1024


def checkpoint_every(operations: int) -> int:
    """The checkpoint spacing of a stream of ``operations``: a function of the plan alone,
    so every engine's checkpoints fall at the same counts; the least 1, 2 or 5 times a
    power of ten that keeps them at most :data:`MAX_CHECKPOINTS` (round counts to read)."""
    needed = max(1, -(-operations // MAX_CHECKPOINTS))
    power = 1
    while True:
        for step in (power, 2 * power, 5 * power):
            if step >= needed:
                return step
        power *= 10


def prefix_checksums(
    positions_of: Any, operations: int, ran: Sequence[tuple[Sequence[Any], Sequence[Any]]]
) -> tuple[Prefix, npt.NDArray[np.int64]]:
    """The :class:`Prefix` of a stream of ``operations`` from the batches that ran ((the
    batch's operations, their digests) each; ``positions_of(batch)``: each operation's
    position in the stream), and the positions that ran, sorted."""
    if ran:
        positions = np.concatenate([np.asarray(positions_of(chunk), dtype=np.int64) for chunk, _ in ran])
        digests = np.concatenate([np.asarray(list(d), dtype=np.uint64) for _, d in ran])
    else:
        positions, digests = np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.uint64)
    seen = np.zeros(operations, dtype=bool)
    seen[positions] = True
    if len(np.unique(positions)) != len(positions):
        raise AssertionError("an operation of the stream ran twice")
    complete = operations if seen.all() else int(np.argmin(seen))
    by_position = np.zeros(operations, dtype=np.uint64)
    by_position[positions] = digests
    sums = np.cumsum(by_position[:complete], dtype=np.uint64)  # uint64 wraps: the sum mod 2**64
    every = checkpoint_every(operations)
    prefix = Prefix(
        ran=len(positions),
        complete=complete,
        checksum=f"{int(sums[-1]) if complete else 0:016X}",
        every=every,
        checkpoints=tuple(f"{int(sums[n - 1]):016X}" for n in range(every, complete + 1, every)),
    )
    return prefix, np.sort(positions)
