"""A reset deletes only the files the engine wrote, by exact name, never by a pattern.

Issue 23 item 9: a reset removed user files inside a store directory whose names matched
what an engine's library writes (``*.tmp``, ``*.trash``, ``*.dbtmp``, ``LOG.old.N``,
``NNN.log``, ``store.db-journal``). Now the engine records, after a clean close, each
file it left (name, inode, size, mtime) in its marker, and a reset or delete removes
exactly those; anything else, whatever its name, is refused and left as it was."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import ROOT, status_line
from test_store_dir import _count, _create, _delete, _tree, run

from asyncbench.engines.store_dir import MARKER, StoreDirError

QUICK = str(ROOT / "benchmarks" / "quick.toml")
#: Names a user's file may have that the engine's library could also write, per engine.
LOOKALIKES = {
    "rocksdb": [
        "email-index/notes.tmp",
        "email-index/backup.trash",
        "email-index/copy.dbtmp",
        "email-index/LOG.old.1700000000",
        "email-index/000999.log",
        "email-index/000998.sst",
    ],
    "lsm": ["email-index/notes.tmp", "email-index/wal-999.log", "email-index/seg-999.sst"],
    "sqlite": ["store.db-journal", "store.db-wal", "store.db-shm"],
}
CASES = [(engine, rel) for engine, names in LOOKALIKES.items() for rel in names]


@pytest.mark.parametrize(("engine", "rel"), CASES, ids=[f"{e}:{r}" for e, r in CASES])
def test_a_users_file_named_like_a_library_file_is_never_deleted(
    tmp_path: Path, engine: str, rel: str
) -> None:
    directory = tmp_path / engine
    run(_create, engine, directory)
    (directory / rel).write_text("the user's, not the engine's")
    before = _tree(directory)
    with pytest.raises(StoreDirError, match="did not write") as info:
        run(_create, engine, directory)
    assert rel in str(info.value)
    assert _tree(directory) == before
    with pytest.raises(StoreDirError, match="did not write"):
        run(_delete, engine, directory)
    assert _tree(directory) == before
    (directory / rel).unlink()
    run(_create, engine, directory, 7)  # the engine's own files alone: the reset works
    assert run(_count, engine, directory) == 7


@pytest.mark.parametrize("engine", ["rocksdb", "lsm"])
def test_a_recorded_name_holding_another_file_is_not_deleted(tmp_path: Path, engine: str) -> None:
    """The record is by identity, not name: a user's file put in place of a recorded one
    (same name) is not the file the engine left."""
    directory = tmp_path / engine
    run(_create, engine, directory)
    recorded = json.loads((directory / MARKER).read_text())["files"]
    rel = next(r for r in sorted(recorded) if r.startswith("email-index/"))
    (directory / rel).unlink()
    (directory / rel).write_text("mine now")
    with pytest.raises(StoreDirError, match="did not write"):
        run(_create, engine, directory)
    assert (directory / rel).read_text() == "mine now"


@pytest.mark.parametrize("engine", ["rocksdb", "lsm", "sqlite"])
def test_without_a_record_library_names_are_not_proof(tmp_path: Path, engine: str) -> None:
    """After an unclean stop there is no record of the files written since: the reset says
    so and deletes nothing."""
    directory = tmp_path / engine
    run(_create, engine, directory)
    doc = json.loads((directory / MARKER).read_text())
    del doc["files"]
    (directory / MARKER).write_text(json.dumps(doc))
    rel = LOOKALIKES[engine][0]
    (directory / rel).write_text("unproven")
    before = _tree(directory)
    with pytest.raises(StoreDirError, match="not closed cleanly"):
        run(_create, engine, directory)
    assert _tree(directory) == before


def test_lookalike_names_survive_a_run_through_the_cli(tmp_path: Path, run_cli) -> None:
    data = tmp_path / "data" / "profiles-200"
    args = [QUICK, "--profiles", "200", "--no-isolate", "--no-progress", "--yes"]
    code, _, output = run_cli(*args, "--engine", "rocksdb,lsm,sqlite", "--keep-data")
    assert code == 0, output
    planted = {f"{engine}/{rel}": f"user file {i}" for i, (engine, rel) in enumerate(CASES)}
    for rel, text in planted.items():
        (data / rel).write_text(text)
    code, results, output = run_cli(*args, "--engine", "rocksdb,lsm,sqlite,memory")
    assert code == 1, output
    rows = {e["engine"]: status_line(e) for e in results[-1]["engines"]}
    assert all(rows[e].startswith("Failed: open: ") for e in ("rocksdb", "lsm", "sqlite")), rows
    assert rows["memory"] == "ok"
    assert {rel: (data / rel).read_text() for rel in planted} == planted
    for engine in ("rocksdb", "lsm", "sqlite"):
        assert (data / engine / MARKER).exists()  # the stores are left as they were, too
