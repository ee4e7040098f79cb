"""An engine's data directory is the engine's own: a reset removes only the store it can
prove it made (its marker, its named stores, the files its library names), and an open
that keeps the data finds every store the marker lists or says which one is missing.

Issue items 1 (a symlinked engine directory is emptied), 2 (a reset deletes files the
engine never wrote) and 9 (a deleted store reopens as an empty one)."""

from __future__ import annotations

import os
from pathlib import Path

import anyio
import pytest
from conftest import ROOT, status_line, store_of

from asyncbench.engine import EngineConfig, opened
from asyncbench.engines import engine_class
from asyncbench.engines.store_dir import MARKER, StoreDirError, StoreMissing
from asyncbench.workloads.profile_store.generate import create_many
from asyncbench.workloads.profile_store.kv_store import STORE_NAMES as PROFILE_STORES

QUICK = str(ROOT / "benchmarks" / "quick.toml")
SEED = 570123434
FILE_ENGINES = ["lsm", "rocksdb", "sqlite"]
#: A store each engine creates, and where a file inside it goes (None: the store is a file).
STORE = {"lsm": "email-index", "rocksdb": "email-index", "sqlite": "store.db"}


def make(name: str, directory: Path):  # noqa: ANN201 - an engine of the named kind
    return engine_class(name)(EngineConfig(name, directory, {}, 50, SEED, stores=PROFILE_STORES))


async def _create(name: str, directory: Path, n: int = 50) -> None:
    async with opened(make(name, directory), reset=True) as engine:
        await store_of(engine).insert(create_many(1, n, SEED), [])


async def _count(name: str, directory: Path) -> int:
    async with opened(make(name, directory), reset=False) as engine:
        return await store_of(engine).count()


def run(fn, *args):  # noqa: ANN001, ANN201 - anyio.run, with a lone error out of its task groups
    try:
        return anyio.run(fn, *args)
    except BaseExceptionGroup as group:
        exc: BaseException = group
        while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
            exc = exc.exceptions[0]
        raise exc from None


def _tree(path: Path) -> dict[str, bytes | str]:
    """Every entry under ``path`` (not following symlinks): file bytes, or a link's target."""
    out: dict[str, bytes | str] = {}
    for root, dirs, files in os.walk(path):
        for name in dirs + files:
            p = Path(root) / name
            rel = str(p.relative_to(path))
            if p.is_symlink():
                out[rel] = "-> " + os.readlink(p)
            elif p.is_file():
                out[rel] = p.read_bytes()
    return out


# --- item 1: a symlink in place of the engine directory ---------------------------------


@pytest.mark.parametrize("engine", FILE_ENGINES)
def test_symlinked_engine_dir_is_refused_and_its_target_untouched(tmp_path: Path, run_cli, engine: str) -> None:
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "keep").write_text("precious")
    (victim / STORE[engine]).write_text("looks like a store, is not one")
    link = tmp_path / "data" / "profiles-200" / engine
    link.parent.mkdir(parents=True)
    link.symlink_to(victim)
    before = _tree(victim)
    code, results, output = run_cli(QUICK, "--engine", f"{engine},memory", "--profiles", "200", "--no-isolate")
    assert code == 1, output
    row, memory = results[0]["engines"]
    assert "is a symlink" in status_line(row) and status_line(row).startswith("Failed: setup: ")
    assert status_line(memory) == "ok"  # the other engines still run
    assert _tree(victim) == before and link.is_symlink()


def test_symlink_refused_by_the_engine_itself(tmp_path: Path) -> None:
    """The engine's own check, for callers that bypass the runner (scripts, tests)."""
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "keep").write_text("precious")
    (tmp_path / "rocks").symlink_to(victim)
    with pytest.raises(StoreDirError, match="is a symlink"):
        run(_create, "rocksdb", tmp_path / "rocks")
    assert sorted(os.listdir(victim)) == ["keep"]


# --- item 2: a reset removes only the engine's own store ---------------------------------


def _seed_foreign(engine: str, directory: Path, outside: Path) -> dict[str, str]:
    """Files the engine never wrote, at the top of its directory, inside one of its
    stores (for directory stores), and a symlink to a file outside. Returns what each
    holds."""
    outside.mkdir(exist_ok=True)
    (outside / "target").write_text("outside")
    seeded = {"mine.txt": "plain", "notes/deep.txt": "nested"}
    (directory / "notes").mkdir()
    if (directory / STORE[engine]).is_dir():
        seeded[f"{STORE[engine]}/keep.txt"] = "inside a store"
    for rel, text in seeded.items():
        (directory / rel).write_text(text)
    (directory / "link").symlink_to(outside / "target")
    return seeded


@pytest.mark.parametrize("engine", FILE_ENGINES)
def test_reset_refuses_a_directory_with_foreign_files_and_deletes_nothing(tmp_path: Path, engine: str) -> None:
    directory = tmp_path / engine
    run(_create, engine, directory)
    seeded = _seed_foreign(engine, directory, tmp_path / "outside")
    before = _tree(directory)
    with pytest.raises(StoreDirError, match="did not write") as info:
        run(_create, engine, directory)
    assert "mine.txt" in str(info.value)
    assert _tree(directory) == before  # not one file removed, the store included
    assert all((directory / rel).read_text() == text for rel, text in seeded.items())
    assert (tmp_path / "outside" / "target").read_text() == "outside"


@pytest.mark.parametrize("engine", FILE_ENGINES)
def test_each_kind_of_foreign_entry_alone_is_refused(tmp_path: Path, engine: str) -> None:
    directory = tmp_path / engine
    run(_create, engine, directory)
    extra = [directory / "mine.txt", directory / "link"]
    if (directory / STORE[engine]).is_dir():
        extra.append(directory / STORE[engine] / "keep.txt")
    for path in extra:
        if path.name == "link":
            path.symlink_to(tmp_path)
        else:
            path.write_text("not the engine's")
        with pytest.raises(StoreDirError):
            run(_create, engine, directory)
        assert os.path.lexists(path)
        path.unlink()
    run(_create, engine, directory)  # only its own store left: the reset works


@pytest.mark.parametrize("engine", FILE_ENGINES)
def test_directory_without_marker_is_not_reset(tmp_path: Path, engine: str) -> None:
    directory = tmp_path / engine
    directory.mkdir()
    (directory / STORE[engine]).mkdir() if engine != "sqlite" else (directory / STORE[engine]).write_text("x")
    with pytest.raises(StoreDirError, match=f"no {MARKER} marker"):
        run(_create, engine, directory)
    assert os.path.lexists(directory / STORE[engine])


@pytest.mark.parametrize("engine", FILE_ENGINES)
def test_regular_file_in_place_of_the_directory_is_refused(tmp_path: Path, engine: str) -> None:
    path = tmp_path / engine
    path.write_text("a file")
    with pytest.raises(StoreDirError, match="not a directory"):
        run(_create, engine, path)
    assert path.read_text() == "a file"


def test_marker_of_another_engine_is_not_reset(tmp_path: Path) -> None:
    directory = tmp_path / "store"
    run(_create, "lsm", directory)
    before = _tree(directory)
    with pytest.raises(StoreDirError, match="engine 'lsm'"):
        run(_create, "rocksdb", directory)
    assert _tree(directory) == before


@pytest.mark.parametrize("engine", FILE_ENGINES)
def test_reset_of_its_own_store_still_empties_it(tmp_path: Path, engine: str) -> None:
    directory = tmp_path / engine
    run(_create, engine, directory, 80)
    assert run(_count, engine, directory) == 80
    run(_create, engine, directory, 10)
    assert run(_count, engine, directory) == 10


def test_foreign_entries_fail_the_engine_row_in_a_run(tmp_path: Path, run_cli) -> None:
    data = tmp_path / "data" / "profiles-200"
    code, _, output = run_cli(QUICK, "--engine", "rocksdb", "--profiles", "200", "--no-isolate", "--keep-data")
    assert code == 0, output
    (data / "rocksdb" / "mine.txt").write_text("precious")
    code, results, output = run_cli(QUICK, "--engine", "rocksdb,memory", "--profiles", "200", "--no-isolate")
    assert code == 1, output
    rocks, memory = results[-1]["engines"]
    assert status_line(rocks).startswith("Failed: open: ") and "mine.txt" in status_line(rocks)
    assert status_line(memory) == "ok"
    assert (data / "rocksdb" / "mine.txt").read_text() == "precious"


# --- item 9: a deleted store is an error at open, never an empty store -------------------


@pytest.mark.parametrize("engine", FILE_ENGINES)
def test_deleted_store_is_an_error_naming_it(tmp_path: Path, engine: str) -> None:
    import shutil

    directory = tmp_path / engine
    run(_create, engine, directory)
    gone = directory / STORE[engine]
    shutil.rmtree(gone) if gone.is_dir() else gone.unlink()
    with pytest.raises(StoreMissing, match=STORE[engine]):
        run(_count, engine, directory)
    assert not gone.exists()  # nothing was created in its place


def test_rocksdb_marker_lists_the_five_databases(tmp_path: Path) -> None:
    import json

    from asyncbench.workloads.profile_store.kv_recovery import STORE_NAMES as DB_NAMES

    run(_create, "rocksdb", tmp_path / "r")
    doc = json.loads((tmp_path / "r" / MARKER).read_text())
    assert doc["engine"] == "rocksdb" and doc["stores"] == list(DB_NAMES)


def test_rocksdb_emptied_database_is_not_recreated(tmp_path: Path) -> None:
    """A database directory that is still there but emptied: RocksDB's own
    create_if_missing(False) refuses it, and the error names the database."""
    directory = tmp_path / "r"
    run(_create, "rocksdb", directory)
    for f in (directory / "reputation-index").iterdir():
        f.unlink()
    with pytest.raises(StoreDirError, match="reputation-index"):  # (the record of the close: StoreDamaged)
        run(_count, "rocksdb", directory)
    assert not (directory / "reputation-index" / "CURRENT").exists()  # no empty database made


def test_open_without_reset_on_an_unmarked_directory_is_refused(tmp_path: Path) -> None:
    (tmp_path / "r").mkdir()
    with pytest.raises(StoreDirError, match="no rocksdb store"):
        run(_count, "rocksdb", tmp_path / "r")
    assert list((tmp_path / "r").iterdir()) == []


@pytest.mark.parametrize("engine", ["lsm", "rocksdb"])
def test_clean_shutdown_mark_is_not_written_through_a_symlink(tmp_path: Path, engine: str) -> None:
    target = tmp_path / "target"
    target.write_text("precious")

    async def main() -> None:
        async with opened(make(engine, tmp_path / engine), reset=True):
            (tmp_path / engine / "CLEAN_SHUTDOWN").symlink_to(target)  # planted while open

    with pytest.raises(OSError):
        run(main)
    assert target.read_text() == "precious"


# --- --clean-data: deleting a store after the run -------------------------------------------


async def _delete(name: str, directory: Path) -> bool:
    engine = make(name, directory)
    return await engine.delete_store()


@pytest.mark.parametrize("engine", FILE_ENGINES)
def test_delete_store_removes_its_own_store_and_directory(tmp_path: Path, engine: str) -> None:
    directory = tmp_path / engine
    run(_create, engine, directory)
    assert run(_delete, engine, directory) is True
    assert not directory.exists()


@pytest.mark.parametrize("engine", FILE_ENGINES)
def test_delete_store_refuses_foreign_entries_and_deletes_nothing(tmp_path: Path, engine: str) -> None:
    """Before: the adapters removed their named stores whatever else the directory held,
    and followed nothing but proved nothing either (a store of another engine under the
    same names went too)."""
    directory = tmp_path / engine
    run(_create, engine, directory)
    seeded = _seed_foreign(engine, directory, tmp_path / "outside")
    before = _tree(directory)
    with pytest.raises(StoreDirError, match="did not write"):
        run(_delete, engine, directory)
    assert _tree(directory) == before
    assert all((directory / rel).read_text() == text for rel, text in seeded.items())


@pytest.mark.parametrize("engine", FILE_ENGINES)
def test_delete_store_refuses_an_unmarked_directory(tmp_path: Path, engine: str) -> None:
    directory = tmp_path / engine
    directory.mkdir()
    (directory / STORE[engine]).mkdir() if engine != "sqlite" else (directory / STORE[engine]).write_text("x")
    with pytest.raises(StoreDirError, match="no .asyncbench-store marker"):
        run(_delete, engine, directory)
    assert (directory / STORE[engine]).exists()


@pytest.mark.parametrize("name", ["lsm", "rocksdb"])
def test_the_engine_keeps_the_stores_the_workload_declares(name: str, tmp_path: Path) -> None:
    """A key/value engine names no workload's stores: it opens those the run's workload
    declares (EngineConfig.stores). A reset for another workload removes the stores the
    marker lists (ours, whatever workload made them), and an open keeping the data of
    another workload's stores is refused, naming both sets, with nothing touched."""
    from asyncbench.workloads.ycsb.record import encode
    from asyncbench.workloads.ycsb.sql_store import USERTABLE
    from asyncbench.workloads.ycsb.stores import ycsb_store

    d = tmp_path / name
    run(_create, name, d)
    assert {p.name for p in d.iterdir() if p.is_dir()} == set(PROFILE_STORES)

    def ycsb(directory: Path):  # noqa: ANN202
        return engine_class(name)(EngineConfig(name, directory, {}, 50, SEED, stores=(USERTABLE,)))

    before = _tree(d)
    with pytest.raises(StoreDirError, match=r"holds the .* stores \[.*'email-index'.*\], not the stores \['usertable'\]"):
        run(lambda: _open_keep(ycsb(d)))
    assert _tree(d) == before

    async def load() -> None:
        async with opened(ycsb(d), reset=True) as engine:
            await ycsb_store(engine.worker(0)).load([(b"user1", encode([b"a"]))], [])

    run(load)
    assert {p.name for p in d.iterdir() if p.is_dir()} == {USERTABLE}
    with pytest.raises(RuntimeError, match="holds no key/value store 'profiles'"):
        engine = ycsb(d)

        async def wrong() -> None:
            async with opened(engine, reset=False):
                engine.worker(0).store("profiles")

        run(wrong)


async def _open_keep(engine) -> None:  # noqa: ANN001
    async with opened(engine, reset=False):
        pass
