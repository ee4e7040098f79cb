"""Adding a phase kind is one phase-table row plus one method in each of the three stores
(the key/value store, the SQL store and the in-memory engine): this test adds a kind
through exactly those places and runs it through the real runner on memory, lsm, rocksdb
and sqlite, whose checksums of the new phase must agree (README: "Adding a phase kind")."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from time import perf_counter_ns

import pytest

from asyncbench.engines.kv_profile_store import KvProfileStore
from asyncbench.engines.memory import MemoryEngine
from asyncbench.engines.sql_profile_store import SqlProfileStore
from asyncbench.workloads.profile_store import phases
from asyncbench.workloads.profile_store.profiles import primary_key
from asyncbench.workloads.profile_store.store import Marks

KIND = "exists_by_id"  # per requested id: the id when a profile is stored under it
ENGINES = ("memory", "lsm", "rocksdb", "sqlite")

PLAN = """
[run]
profiles = 2_000
seed = 570123434
batch_size = 100
isolate = false  # the new kind is patched into this process only

[[phase]]
kind = "insert"

[[phase]]
kind = "stabilize"

[[phase]]
kind = "exists_by_id"
stream = "reads"

[[phase]]
kind = "update"
stream = "updates"

[[phase]]
kind = "exists_by_id"
stream = "post_reads"

[[phase]]
kind = "verify"
"""


# --- the one method in each store -------------------------------------------------------------


async def kv_exists_by_id(self: KvProfileStore, uids: Sequence[int], marks: Marks) -> list[int]:
    def body(uids: Sequence[int], marks: Marks) -> list[int]:
        get, mark = self.profiles.get, marks.append
        mark(perf_counter_ns())
        out = []
        for uid in uids:
            if get(primary_key(uid)) is not None:
                out.append(uid)
            mark(perf_counter_ns())
        return out

    return await self.place.reads(body, uids, marks)


async def sql_exists_by_id(self: SqlProfileStore, uids: Sequence[int], marks: Marks) -> list[int]:
    async def body(uids: Sequence[int], marks: Marks) -> list[int]:
        fetch_one, mark = self.session.fetch_one, marks.append
        mark(perf_counter_ns())
        out = []
        for uid in uids:
            if await fetch_one(self.sql.by_id, (uid,)) is not None:
                out.append(uid)
            mark(perf_counter_ns())
        return out

    return await self._reading(body, uids, marks)


async def memory_exists_by_id(self: MemoryEngine, uids: Sequence[int], marks: Marks) -> list[int]:
    marks.append(perf_counter_ns())
    out = []
    for uid in uids:
        if uid in self.profiles:
            out.append(uid)
        marks.append(perf_counter_ns())
    return out


@pytest.fixture
def new_kind(monkeypatch: pytest.MonkeyPatch) -> None:
    row = phases._ops(
        KIND,
        phases.Group.LOOKUP,
        phases.Fold.IDS,
        (phases._use("reads", "exists by id"), phases._use("post_reads", "post-update exists by id", post=True)),
    )
    monkeypatch.setitem(phases.PHASES, KIND, row)
    monkeypatch.setattr(KvProfileStore, KIND, kv_exists_by_id, raising=False)
    monkeypatch.setattr(SqlProfileStore, KIND, sql_exists_by_id, raising=False)
    monkeypatch.setattr(MemoryEngine, KIND, memory_exists_by_id, raising=False)


def test_a_new_kind_runs_on_every_engine_with_one_checksum(new_kind: None, tmp_path: Path, run_cli) -> None:
    plan = tmp_path / "plan.toml"
    plan.write_text(PLAN)
    code, results, output = run_cli(str(plan), "--engine", ",".join(ENGINES), "--no-progress")
    assert code == 0, output
    (run,) = results
    assert [e["engine"] for e in run["engines"]] == list(ENGINES)
    sums: dict[str, list[tuple[int, str]]] = {}
    for engine in run["engines"]:
        new = [p for p in engine["phases"] if p["kind"] == KIND]
        assert [p["name"] for p in new] == ["exists by id", "post-update exists by id"]
        assert all(p["ops"] == 2_000 and p["checksum"] for p in new), new
        sums[engine["engine"]] = [(p["index"], p["checksum"]) for p in new]
    assert len({tuple(v) for v in sums.values()}) == 1, sums  # every engine folds the same ids
