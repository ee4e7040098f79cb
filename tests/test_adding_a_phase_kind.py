"""Adding a phase kind is one phase-table row plus one method in each of the three stores
(the key/value store, the SQL store and the in-memory store, all in the workload's own
package: no engine file changes, engines hand out primitives): this test adds a kind
through exactly those places and runs it through the real runner on memory, lsm, rocksdb
and sqlite, whose checksums of the new phase must agree (README: "Adding a phase kind")."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from time import perf_counter_ns

import orjson
import pytest
from conftest import ROOT

from asyncbench.workloads.profile_store import phases
from asyncbench.workloads.profile_store.kv_store import KvProfileStore
from asyncbench.workloads.profile_store.memory_store import MemoryProfileStore
from asyncbench.workloads.profile_store.profiles import primary_key
from asyncbench.workloads.profile_store.sql_store import SqlProfileStore
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


async def memory_exists_by_id(self: MemoryProfileStore, uids: Sequence[int], marks: Marks) -> list[int]:
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
    monkeypatch.setattr(MemoryProfileStore, KIND, memory_exists_by_id, raising=False)


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


# --- the same, as a change to a copy of the source, through the default child-process path ----
#
# The test above patches this process. This one makes the change a contributor makes: it
# copies the package's source, edits the copy's files (a new plan stream, then a new kind
# that consumes it), runs the real CLI on the copy (isolated: every engine in its own child
# process, which imports the copy's files) and names every file the change touched. If the
# framework needed another edit for a new kind or stream (a dispatch table, a stream list,
# a report table), the run here would fail or the list of files would have to grow past
# the bounds below: both fail the test.

STREAM = "spot_reads"  # a new plan stream: user ids, sized by the reads count
COPY_KIND = "id_exists"
CHILD_ENGINES = ("memory", "lsm", "sqlite")  # the in-memory store, a key/value engine, a SQL engine
KIND_FILE_BOUND, STREAM_FILE_BOUND = 4, 2

CHILD_PLAN = f"""
[run]
profiles = 1_000
seed = 570123434
batch_size = 100

[[phase]]
kind = "insert"

[[phase]]
kind = "{COPY_KIND}"
stream = "{STREAM}"

[[phase]]
kind = "read_by_id"
stream = "reads"

[[phase]]
kind = "verify"
"""

#: The new kind: one table row and one method of its name in each of the three stores.
KIND_EDITS = {
    "workloads/profile_store/phases.py": f'''
PHASES["{COPY_KIND}"] = _ops("{COPY_KIND}", Group.LOOKUP, Fold.IDS, (_use("{STREAM}", "id exists"),))
''',
    "workloads/profile_store/kv_store.py": f'''

async def _{COPY_KIND}(self: KvProfileStore, uids: Sequence[int], marks: Marks) -> list[int]:
    def body(uids: Sequence[int], marks: Marks) -> list[int]:
        from time import perf_counter_ns

        from asyncbench.workloads.profile_store.profiles import primary_key

        get, mark = self.profiles.get, marks.append
        mark(perf_counter_ns())
        out = []
        for uid in uids:
            if get(primary_key(uid)) is not None:
                out.append(uid)
            mark(perf_counter_ns())
        return out

    return await self.place.reads(body, uids, marks)


KvProfileStore.{COPY_KIND} = _{COPY_KIND}  # type: ignore[attr-defined]
''',
    "workloads/profile_store/sql_store.py": f'''

async def _{COPY_KIND}(self: SqlProfileStore, uids: Sequence[int], marks: Marks) -> list[int]:
    async def body(uids: Sequence[int], marks: Marks) -> list[int]:
        from time import perf_counter_ns

        fetch_one, mark = self.session.fetch_one, marks.append
        mark(perf_counter_ns())
        out = []
        for uid in uids:
            if await fetch_one(self.sql.by_id, (uid,)) is not None:
                out.append(uid)
            mark(perf_counter_ns())
        return out

    return await self._reading(body, uids, marks)


SqlProfileStore.{COPY_KIND} = _{COPY_KIND}  # type: ignore[attr-defined]
''',
    "workloads/profile_store/memory_store.py": f'''

async def _{COPY_KIND}(self: MemoryProfileStore, uids: Sequence[int], marks: Marks) -> list[int]:
    marks.append(perf_counter_ns())
    out = []
    for uid in uids:
        if uid in self.profiles:
            out.append(uid)
        marks.append(perf_counter_ns())
    return out


MemoryProfileStore.{COPY_KIND} = _{COPY_KIND}  # type: ignore[attr-defined]
''',
}


def _copy_source(dest: Path) -> Path:
    """The package's source as the repository lays it out, importable from ``dest``:
    ``asyncbench/engines`` and ``asyncbench/workloads`` are links to the top-level folders
    (what setup.py's package_dir maps), compiled kernels included."""
    ignore = shutil.ignore_patterns("__pycache__")
    for folder in ("asyncbench", "engines", "workloads"):
        shutil.copytree(ROOT / folder, dest / folder, ignore=ignore)
    for folder in ("engines", "workloads"):
        (dest / "asyncbench" / folder).symlink_to(dest / folder, target_is_directory=True)
    return dest


def _fingerprints(root: Path) -> dict[str, str]:
    out = {}
    for folder in ("asyncbench", "engines", "workloads"):
        for path in sorted((root / folder).rglob("*")):
            if path.is_file() and not any(p.is_symlink() for p in [path, *path.parents] if p != root):
                out[str(path.relative_to(root))] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


def _changed(before: dict[str, str], root: Path) -> list[str]:
    after = _fingerprints(root)
    return sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))


def _add_stream(root: Path) -> None:
    plan = root / "workloads/profile_store/plan.py"
    text = plan.read_text()
    sizes_end = '    "post_queries": "post_queries",\n}\n'
    sources_end = '        "post_queries": QuerySource(),\n    }\n'
    assert text.count(sizes_end) == 1 and text.count(sources_end) == 1
    text = text.replace(sizes_end, f'    "post_queries": "post_queries",\n    "{STREAM}": "reads",\n}}\n')
    text = text.replace(sources_end, f'        "post_queries": QuerySource(),\n        "{STREAM}": IdSource(1, n + 1),\n    }}\n')
    plan.write_text(text)


def _add_kind(root: Path) -> None:
    for rel, text in KIND_EDITS.items():
        path = root / rel
        path.write_text(path.read_text() + text)


def _run(src: Path, tmp: Path, name: str) -> tuple[int, list[dict], str]:
    plan = tmp / f"{name}.toml"
    plan.write_text(CHILD_PLAN)
    out, data = tmp / f"{name}-out", tmp / f"{name}-data"
    env = {k: v for k, v in os.environ.items() if k not in ("ASYNCBENCH_ENGINES", "PYTHONPATH")}
    env["PYTHONPATH"] = str(src)  # before the installed package: the copy is what runs
    cmd = [sys.executable, "-m", "asyncbench", str(plan), "--engine", ",".join(CHILD_ENGINES)]
    cmd += ["--no-progress", "--yes", "--output", str(out), "--data", str(data)]
    proc = subprocess.run(cmd, env=env, cwd=tmp, capture_output=True, text=True, timeout=600)
    results = [orjson.loads(p.read_bytes()) for p in sorted(out.glob("profiles-*/asyncbench-*.json"))]
    return proc.returncode, results, proc.stdout + proc.stderr


def test_a_new_kind_with_a_new_stream_runs_in_child_processes_touching_few_files(tmp_path: Path) -> None:
    src = _copy_source(tmp_path / "src")
    pristine = _fingerprints(src)

    code, _, output = _run(src, tmp_path, "before")  # the copy runs: it knows no such kind yet
    assert code == 2 and f"unknown phase kind {COPY_KIND!r}" in output, output

    _add_stream(src)
    stream_files = _changed(pristine, src)
    assert stream_files == ["workloads/profile_store/plan.py"]
    assert len(stream_files) <= STREAM_FILE_BOUND

    with_stream = _fingerprints(src)
    _add_kind(src)
    kind_files = _changed(with_stream, src)
    assert kind_files == sorted(KIND_EDITS), kind_files
    assert all(f.startswith("workloads/") for f in kind_files)  # no engine file: engines know no kind
    assert len(kind_files) <= KIND_FILE_BOUND

    code, results, output = _run(src, tmp_path, "after")
    assert code == 0, output
    (run,) = results
    assert run["isolated"] is True  # the default path: each engine in its own child process
    assert [e["engine"] for e in run["engines"]] == list(CHILD_ENGINES)
    by_engine = {}
    for engine in run["engines"]:
        assert engine["status"] == "ok", engine
        (new,) = [p for p in engine["phases"] if p["kind"] == COPY_KIND]
        assert new["name"] == "id exists" and new["ops"] == 1_000 and new["checksum"], new
        by_engine[engine["engine"]] = [p["checksum"] for p in engine["phases"]]
    assert len({tuple(v) for v in by_engine.values()}) == 1, by_engine  # one checksum per phase
