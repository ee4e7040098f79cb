"""The one dispatcher (asyncbench.run.phase.dispatch): a workload's phase kind may bring its own
partition of a phase's items among the P workers (YCSB's key-owner rule: each worker owns
the keys it writes), and the dispatcher uses it wherever the phase runs, with no edit of
the framework; without one, the kind's ``Split`` decides."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import anyio

from asyncbench.run.phase.dispatch import run_operations, split
from asyncbench.workload import Action, Fold, Group, Items, PhaseKind, StreamUse
from asyncbench.workloads import workload


async def _echo(store: Any, items: Sequence[Any], ctx: Any, marks: list[int]) -> Sequence[Any]:
    return list(items)


def _odd_first(items: Sequence[Any], workers: int) -> list[Sequence[Any]]:
    """Every item to the worker of its residue, the odd ones reversed: not a built-in split."""
    return [[x for x in items if x % workers == w][:: -1 if w % 2 else 1] for w in range(workers)]


def _kind(partition: Any = None) -> PhaseKind:
    use = (StreamUse("reads", "echo", False, "echo"),)
    return PhaseKind("echo", Action.OPERATIONS, Group.LOOKUP, use, Items.STREAM, _echo, Fold.IDS, partition=partition)


def test_a_kind_with_its_own_partition_is_split_by_it() -> None:
    items = list(range(1, 11))
    assert split(_kind(_odd_first), items, 2) == [[2, 4, 6, 8, 10], [9, 7, 5, 3, 1]]
    assert split(_kind(), items, 2) == [[1, 2, 3, 4, 5], [6, 7, 8, 9, 10]]  # the kind's Split


def test_the_dispatcher_runs_each_worker_on_its_own_part() -> None:
    seen: dict[int, list[int]] = {}

    def on_batch(worker: int, index: int, ops: int, *rest: Any) -> None:
        seen.setdefault(worker, []).append(ops)

    async def main() -> str | None:
        out = await run_operations(_kind(_odd_first), list(range(1, 11)), [object(), object()], None, 2, on_batch, wl=workload("profile_store"))
        assert out.ops == 10
        return out.checksum

    checksum = anyio.run(main)
    assert seen == {0: [2, 2, 1], 1: [2, 2, 1]}
    parts = [[2, 4, 6, 8, 10], [9, 7, 5, 3, 1]]
    sums = []
    for part in parts:
        c = workload("profile_store").checksum()
        for start in range(0, len(part), 2):
            c.add_ints(part[start : start + 2])
        sums.append(c.hex())
    assert checksum == workload("profile_store").combine(sums)
