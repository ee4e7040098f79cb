"""A mixed phase's operations: kind proportions, determinism, and checksums independent of P and K.

The drawn operations run against a dict-backed reference store, split among P workers by
:func:`partition.split` and interleaved in a seeded random schedule (any timing a real run
could have); the phase checksum must be the same for P = 1, 4, 16, for K = 2 processes
(partial sums merged) and for different schedules. A naive split (operation i to worker
i % P) must give a different checksum: the test sees what the rule protects.
"""

from __future__ import annotations

import bisect
import math
import random
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from asyncbench.workloads.common.distributions import Params
from asyncbench.workloads.profile_store.kv_store import STORE_NAMES as PROFILE_STORES
from asyncbench.workloads.ycsb import partition
from asyncbench.workloads.ycsb.checksum import PhaseChecksum, op_digest, scan_digest
from asyncbench.workloads.ycsb.keys import key_name
from asyncbench.workloads.ycsb.operations import (
    ALL_FIELDS,
    INSERT,
    KINDS,
    READ,
    READMODIFYWRITE,
    SCAN,
    UPDATE,
    Batch,
    MixSpec,
    OperationStream,
)
from asyncbench.workloads.ycsb.plan import Layout, layout, mix_spec
from asyncbench.workloads.ycsb.record import Values, encode
from asyncbench.workloads.ycsb.scans import scan_range

ROOT = Path(__file__).resolve().parent.parent
SEED = 570123434
Op = tuple[int, int, int, int, int, int, int]  # index, kind, key, read field, write field, scan length, tag


class ReferenceStore:
    """The usertable in a dict (names kept sorted for scans), executing one operation at a time."""

    def __init__(self, lay: Layout, values: Values, written: set[bytes], stable_scans: bool = True) -> None:
        self.lay, self.values, self.written = lay, values, written
        self.stable_scans = stable_scans
        self.records = {self.name(k): values.record(k) for k in range(lay.recordcount)}
        self.initial = sorted(self.records)
        self.names = list(self.initial)

    def name(self, key: int) -> bytes:
        return key_name(key, hashed=self.lay.hashed, zeropadding=self.lay.zeropadding).encode()

    def read(self, name: bytes, field: int) -> bytes:
        """What a read returns to the checksum: the fields read, in the canonical encoding."""
        record = self.records[name]
        return encode(record) if field == ALL_FIELDS else encode([record[field]])

    def write(self, name: bytes, field: int, tag: int) -> None:
        record = self.records[name]
        for f in range(len(record)) if field == ALL_FIELDS else [field]:
            record[f] = self.values.value(tag, f)

    def execute(self, op: Op) -> int:
        index, kind, key, rf, wf, length, tag = op
        name = self.name(key)
        if kind == READ:
            return op_digest(index, kind, name, self.read(name, rf))
        if kind == UPDATE:
            self.write(name, wf, tag)
            return op_digest(index, kind, name)
        if kind == INSERT:
            assert name not in self.records
            self.records[name] = self.values.record(tag)
            bisect.insort(self.names, name)
            return op_digest(index, kind, name)
        if kind == READMODIFYWRITE:
            digest = op_digest(index, kind, name, self.read(name, rf))
            self.write(name, wf, tag)
            return digest
        assert kind == SCAN
        bounds = scan_range(self.initial, name, length)
        if bounds is None:
            return scan_digest(index, kind, name, [])
        lo, hi = bisect.bisect_left(self.names, bounds[0]), bisect.bisect_right(self.names, bounds[1])
        stable = [n for n in self.names[lo:hi] if n not in self.written or not self.stable_scans]
        return scan_digest(index, kind, name, [(n, self.read(n, rf)) for n in stable])


def operations(spec: MixSpec) -> list[Batch]:
    return list(OperationStream(spec, SEED))


def ops_of(batch: Batch, positions: np.ndarray) -> list[Op]:
    cols = (batch.kind, batch.key, batch.read_field, batch.write_field, batch.scan_length, batch.tag)
    return [(batch.start + int(i), *(int(c[i]) for c in cols)) for i in positions]  # type: ignore[misc]


def owner_split(batch: Batch, workers: int) -> list[np.ndarray]:
    return partition.split(batch, workers)


def round_robin(batch: Batch, workers: int) -> list[np.ndarray]:
    index = np.arange(len(batch))
    return [index[(batch.start + index) % workers == w] for w in range(workers)]


def run(
    plan: dict[str, Any],
    workers: int,
    schedule: int,
    processes: int = 1,
    split: Callable[[Batch, int], list[np.ndarray]] = owner_split,
    stable_scans: bool = True,
) -> tuple[str, int]:
    """The phase checksum and operation count with ``workers`` workers in ``processes`` processes."""
    lay = layout(plan)
    spec = mix_spec(plan, plan["phase"][1])
    batches = operations(spec)
    written = set()
    store_names = ReferenceStore.name
    values = Values(SEED, lay.fieldcount, lay.fieldlength)
    store = ReferenceStore(lay, values, written, stable_scans)
    for b in batches:
        writes = np.isin(b.kind, (UPDATE, INSERT, READMODIFYWRITE))
        written.update(store_names(store, int(k)) for k in b.key[writes])
    queues: list[list[Op]] = [[] for _ in range(workers)]
    for b in batches:
        for w, positions in enumerate(split(b, workers)):
            queues[w] += ops_of(b, positions)
    sums = [PhaseChecksum() for _ in range(workers)]
    cursor = [0] * workers
    rng = random.Random(schedule)
    live = [w for w in range(workers) if queues[w]]
    while live:  # any interleaving a real run could have: a random ready worker does its next op
        w = rng.choice(live)
        sums[w].add(store.execute(queues[w][cursor[w]]))
        cursor[w] += 1
        if cursor[w] == len(queues[w]):
            live.remove(w)
    per_process = [PhaseChecksum() for _ in range(processes)]
    for w, s in enumerate(sums):
        per_process[w * processes // workers].merge(s)
    total = PhaseChecksum()
    for p in per_process:
        total.merge(p)
    return total.hex(), total.operations


def shipped(letter: str, records: int, ops: int, **mixed: Any) -> dict[str, Any]:
    plan = tomllib.loads((ROOT / "benchmarks" / "ycsb" / f"workload{letter}-smoke.toml").read_text())
    plan["ycsb"]["recordcount"] = records
    plan["phase"][1]["operations"] = ops
    plan["phase"][1].update(mixed)
    return plan


CASES = {
    "a": shipped("a", 2000, 8_000),
    "b": shipped("b", 2000, 8_000, readallfields=False),
    "d": shipped("d", 2000, 8_000),
    "e": shipped("e", 2000, 3_000, maxscanlength=20),
    "f": shipped("f", 2000, 8_000, writeallfields=True),
    "e-ordered-hotspot": {
        **shipped("e", 2000, 5_000, maxscanlength=20, requestdistribution="hotspot", updateproportion=0.2,
                  scanproportion=0.75),
        "ycsb": {"recordcount": 2000, "fieldcount": 4, "fieldlength": 16, "insertorder": "ordered", "zeropadding": 6},
    },
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_checksum_is_independent_of_workers_processes_and_timing(case: str) -> None:
    plan = CASES[case]
    one = run(plan, 1, schedule=0)
    assert one[1] == plan["phase"][1]["operations"]
    assert run(plan, 4, schedule=1) == one
    assert run(plan, 16, schedule=2) == one
    assert run(plan, 16, schedule=3, processes=2) == one
    assert run(plan, 4, schedule=4, processes=2) == one


def test_a_naive_split_gives_a_timing_dependent_checksum() -> None:
    """Without key ownership, reads race updates of hot keys: the checksum changes."""
    plan = CASES["a"]
    one = run(plan, 1, schedule=0)
    assert run(plan, 4, schedule=1, split=round_robin) != one


def test_scans_folding_written_records_would_depend_on_timing() -> None:
    """The scan rule has teeth: folding the inserted records of a range races the inserts."""
    plan = CASES["e"]
    one = run(plan, 1, schedule=0, stable_scans=False)
    assert run(plan, 16, schedule=2, stable_scans=False) != one


def test_each_worker_gets_only_its_keys_in_order() -> None:
    batch = operations(mix_spec(CASES["a"], CASES["a"]["phase"][1]))[0]
    parts = partition.split(batch, 4)
    assert sorted(np.concatenate(parts).tolist()) == list(range(len(batch)))
    for w, positions in enumerate(parts):
        assert (batch.key[positions] % 4 == w).all()
        assert (np.diff(positions) > 0).all()


def binomial_ok(count: int, n: int, p: float) -> bool:
    """Within 5 standard deviations of n*p (exact zero for p = 0)."""
    return abs(count - n * p) <= 5 * math.sqrt(n * p * (1 - p)) if 0 < p < 1 else count == n * p


@pytest.mark.parametrize("letter", "abcdef")
def test_operation_kinds_within_binomial_bounds(letter: str) -> None:
    plan = shipped(letter, 100_000, 1_000_000)
    phase = plan["phase"][1]
    kinds = np.concatenate([b.kind for b in operations(mix_spec(plan, phase))])
    counts = np.bincount(kinds, minlength=len(KINDS))
    for code, kind in enumerate(KINDS):
        assert binomial_ok(int(counts[code]), len(kinds), phase[f"{kind}proportion"]), (kind, counts)


def test_wrong_proportions_fail_the_binomial_bound() -> None:
    """The bound has teeth: workload B's draws do not pass for 0.94/0.06."""
    plan = shipped("b", 100_000, 1_000_000)
    kinds = np.concatenate([b.kind for b in operations(mix_spec(plan, plan["phase"][1]))])
    assert not binomial_ok(int((kinds == READ).sum()), len(kinds), 0.94)


def test_the_stream_is_the_same_every_time_and_inserts_append() -> None:
    plan = shipped("d", 1000, 200_000)
    spec = mix_spec(plan, plan["phase"][1])
    first, again = operations(spec), operations(spec)
    for a, b in zip(first, again, strict=True):
        assert a.kind.tolist() == b.kind.tolist() and a.key.tolist() == b.key.tolist()
        assert a.tag.tolist() == b.tag.tolist()
    kinds = np.concatenate([b.kind for b in first])
    keys = np.concatenate([b.key for b in first])
    assert keys[kinds == INSERT].tolist() == list(range(1000, 1000 + int((kinds == INSERT).sum())))
    inserted_before = np.cumsum(kinds == INSERT) - (kinds == INSERT)
    reads = kinds == READ
    assert (keys[reads] <= 999 + inserted_before[reads]).all()  # never a key not inserted yet
    assert len(first) == math.ceil(200_000 / 65536)


def test_a_stream_is_drawn_once() -> None:
    stream = OperationStream(mix_spec(CASES["a"], CASES["a"]["phase"][1]), SEED)
    list(stream)
    with pytest.raises(RuntimeError, match="drawn once"):
        list(stream)


def test_spec_refuses_bad_proportions_and_scan_lengths() -> None:
    params = Params("uniform", 10)
    with pytest.raises(ValueError, match="proportions must be >= 0"):
        MixSpec(10, (1.5, -0.5, 0, 0, 0), params)
    with pytest.raises(ValueError, match="scan lengths"):
        MixSpec(10, (0, 0, 0, 1, 0), params, minscanlength=5, maxscanlength=2)


def test_the_first_operations_are_pinned() -> None:
    """Seed 1's first operations of workloads A and E, written down: any change to the
    streams, the kind draw or the key draw shows here (the sequence is the plan's meaning)."""
    got = {}
    for letter in "ae":
        plan = shipped(letter, 1000, 10)
        b = next(iter(OperationStream(mix_spec(plan, plan["phase"][1]), 1)))
        got[letter] = (b.kind.tolist(), b.key.tolist(), b.scan_length.tolist(), [int(t) % 1000 for t in b.tag])
    assert got == {
        "a": (
            [0, 1, 1, 0, 1, 0, 0, 0, 1, 1],
            [918, 881, 854, 849, 139, 610, 545, 137, 487, 240],
            [0] * 10,
            [875, 348, 935, 776, 992, 446, 98, 403, 755, 842],
        ),
        "e": (
            [3, 3, 3, 3, 3, 2, 3, 3, 3, 3],
            [739, 66, 542, 813, 829, 1000, 640, 512, 197, 45],  # the insert takes key 1000
            [75, 83, 12, 10, 55, 0, 37, 38, 60, 56],
            [875, 348, 935, 776, 992, 0, 98, 403, 755, 842],  # the insert's tag is its key
        ),
    }


async def _engine_checksums(plan: dict[str, Any], workers: int, tmp: Path) -> tuple[str, str]:
    """The load's and the mixed phase's checksums of the real path: the memory engine's
    usertable through the framework's phase loop (compiled kernels, KV table, digests)."""
    from asyncbench.engine import EngineConfig
    from asyncbench.engines.memory import MemoryEngine
    from asyncbench.run.phase.dispatch import run_operations
    from asyncbench.workloads.ycsb.workload import WORKLOAD as ycsb

    settings = ycsb.settings(plan["ycsb"])
    records = plan["ycsb"]["recordcount"]
    ycsb_plan = ycsb.draw_plan(ycsb.counts(records, 50, {}, settings), SEED)
    engine = MemoryEngine(EngineConfig("memory", tmp, stores=PROFILE_STORES))
    await engine.open(True)
    stores = [ycsb.store(engine.worker(w), 50) for w in range(workers)]
    load, mixed = ycsb.phases["load"], ycsb.phases["mixed"]
    hook = lambda *_: None  # noqa: E731
    loaded = await run_operations(load, ycsb.phase_items(load, None, None, ycsb_plan, {}), stores, None, 100, hook, wl=ycsb)
    table = {k: v for k, v in plan["phase"][1].items() if k != "kind"}
    params = ycsb.phase_params(mixed, table, settings)
    items = ycsb.phase_items(mixed, None, None, ycsb_plan, params)
    ran = await run_operations(mixed, items, stores, ycsb.context(SEED), 100, hook, wl=ycsb)
    await engine.close()
    return loaded.checksum, ran.checksum


@pytest.mark.parametrize("case", ["a", "b", "e", "f", "e-ordered-hotspot"])
def test_the_engine_path_gives_the_reference_stores_checksums(case: str, tmp_path: Path) -> None:
    """The compiled fold over the bytes an engine returned (no decode) gives exactly what the
    reference store's fields, encoded, give: load and mixed phase, at P = 1 and 4."""
    import anyio

    plan = CASES[case]
    lay = layout(plan)
    names = [key_name(k, hashed=lay.hashed, zeropadding=lay.zeropadding).encode() for k in range(lay.recordcount)]
    loaded = PhaseChecksum()
    for k, name in enumerate(names):
        loaded.add(op_digest(k, INSERT, name))
    for workers in (1, 4):
        got = anyio.run(_engine_checksums, plan, workers, tmp_path)
        assert got == (loaded.hex(), run(plan, 1, schedule=0)[0]), workers
