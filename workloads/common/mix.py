"""A mixed phase's figures for its result, the same for every workload's mixed phase:
operations per kind, each kind's latencies and the skew the phase ran.

A workload's mixed phase keeps its drawn kind codes (one per operation of the sequence)
and, per batch run in this process, its positions and marks (the batch's start stamp, then
one after each operation); this turns them into :class:`~asyncbench.workload.MixFigures`.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Self

import numpy as np
import numpy.typing as npt

from asyncbench.workload import MixFigures
from asyncbench.workloads.common.skew import KeyCounts

__all__ = ["Done", "OwnedOps", "figures"]

class Done:
    """The positions and marks of every batch of a mixed phase this process ran, kept for
    :func:`figures` after the phase.

    Kept where the garbage collector does not look: a batch's marks as an int64 numpy array
    (not a list of ints, nor an ``array('q')``, which the collector tracks), no tuple per
    batch, so a phase of a million batches adds two
    tracked lists, not two million tracked objects. Kept as (positions, list) tuples, they
    were what every full collection inside a paced phase walked (26_000 of each after a
    50_000-operation YCSB phase at 5_000/s), 10-70 ms a collection, each one a burst of
    operations issued late (the harness's own schedule delay).
    """

    __slots__ = ("_positions", "_marks")

    def __init__(self) -> None:
        self._positions: list[npt.NDArray[np.int64]] = []
        self._marks: list[npt.NDArray[np.int64]] = []

    def append(self, positions: npt.NDArray[np.int64], marks: Sequence[int]) -> None:
        """Keep one batch: its operations' positions and its marks (start, then one per op)."""
        self._positions.append(positions)
        self._marks.append(np.array(marks, dtype=np.int64))  # ~0.4 µs for a batch of one

    def __len__(self) -> int:
        return len(self._positions)

    def __iter__(self) -> Iterator[tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]]:
        return zip(self._positions, self._marks, strict=True)


class OwnedOps:
    """Positions of a mixed phase's operations (a worker's share, or a batch of it), in
    sequence order, and the split both workloads' mixed phases use: the operations on key
    k go to worker k mod P (its owner), so every operation on one key runs in one worker,
    in sequence order. A workload's subclass says which key each operation is on
    (:meth:`owner_keys`) and what an item is (``__getitem__``)."""

    def __init__(self, phase: Any, positions: npt.NDArray[np.int64]) -> None:
        self.phase, self.positions = phase, positions

    def __len__(self) -> int:
        return len(self.positions)

    def owner_keys(self) -> npt.NDArray[np.int64]:
        """The key number each of these operations is on (what decides its owner)."""
        raise NotImplementedError

    def part(self, positions: npt.NDArray[np.int64]) -> Self:
        return type(self)(self.phase, positions)

    # the framework's lazy split (asyncbench.workload.LazyItems)
    def window(self, start: int, stop: int) -> Self:
        return self.part(self.positions[start:stop])

    def by_residue(self, workers: int) -> list[Self]:
        """Worker w's share: the operations on the keys it owns (key % P == w), in order."""
        owners = self.owner_keys() % workers
        return [self.part(self.positions[owners == w]) for w in range(workers)]


def figures(
    names: Sequence[str],
    kind: npt.NDArray[np.integer],
    positions: npt.NDArray[np.int64],
    done: Done,
    keys: npt.NDArray[np.int64],
    keyspace: int,
    also_counted: Mapping[str, Sequence[str]] | None = None,
) -> MixFigures:
    """``kind``: every operation's kind code (an index of ``names``); ``positions``: the
    phase's operations; ``keys``: their key numbers (0-based) in a key space of ``keyspace``.

    ``also_counted``: a kind whose operations also count under other kinds, as YCSB counts
    a read-modify-write under READ and UPDATE too (``{"readmodifywrite": ("read",
    "update")}``); only the counts: each kind's latencies stay its own operations' (a
    read-modify-write is timed whole, under its own kind)."""
    own = np.bincount(kind[positions], minlength=len(names))
    counts = own.copy()
    for composite, parts in (also_counted or {}).items():
        for part in parts:
            counts[names.index(part)] += own[names.index(composite)]
    latencies: dict[str, list[npt.NDArray[np.int64]]] = {k: [] for k in names}
    for ran, marks in done:
        stamps = marks
        if len(stamps) != len(ran) + 1:
            continue  # an engine that stamped otherwise: its kinds' latencies are not told apart
        took = np.diff(stamps)
        batch_kinds = kind[ran]
        for code, name in enumerate(names):
            latencies[name].append(took[batch_kinds == code])
    seen = KeyCounts()
    seen.add(keys)
    return MixFigures(
        counts={name: int(counts[code]) for code, name in enumerate(names) if counts[code]},
        latencies_ns={
            name: np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)
            for code, (name, parts) in enumerate(latencies.items())
            if own[code]
        },
        hot_shares=seen.hot_shares(keyspace),
    )
