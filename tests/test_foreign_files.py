"""Issue 34, foreign files: asyncbench appends to, replaces or deletes only files it can
prove it wrote, never a user's copy, edit or hard link of one of its files.

A marker inside a file (a log's first record, a report's first line, a chart's title, a
lock record) used to be the whole proof: a user's annotated copy of a log was appended to,
an annotated ``latest.md`` or report replaced, a hard link to a user's notes replaced, a
typed lock record overwritten, and a user's ``.asyncbench-store.tmp`` deleted. Each case
below plants the user's file, runs the command, and checks: exit code 2, the message
names the file, and the file is byte-identical with the same inode and link count. The
legitimate cases (the tool's own earlier log, its own ``latest.*``, its own report) still
work."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from conftest import ROOT

from asyncbench.cli.main import main
from asyncbench.engines import engine_class
from asyncbench.engines.store_dir import MARKER, StoreDir, StoreDirError
from asyncbench.fs import ownership
from asyncbench.fs.locks import acquire

QUICK = str(ROOT / "benchmarks" / "quick.toml")
RUN_DIR = "out/profiles-1000-p1"


def _run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *extra: str, isolate: bool = False) -> int:
    """One quick memory run, as a fresh process would (nothing in ``_created``)."""
    monkeypatch.setattr(ownership, "_created", set())
    args = [QUICK, "--engine", "memory", "--profiles", "1k", "--no-progress", "--yes"]
    args += ["--isolate" if isolate else "--no-isolate"]
    return main([*args, "--output", str(tmp_path / "out"), "--data", str(tmp_path / "data"), *extra])


def _state(path: Path) -> tuple[bytes, int, int, int]:
    """What must not change: the bytes, inode, link count and modification time."""
    st = os.stat(path)
    return path.read_bytes(), st.st_ino, st.st_nlink, st.st_mtime_ns


def _annotated_copy(path: Path) -> None:
    """What a user does to annotate a file with an editor: a new file (a copy with a note)
    renamed over the old name."""
    copy = path.with_name(path.name + ".edit")
    copy.write_bytes(path.read_bytes() + b"\nmy note: keep this\n")
    os.replace(copy, path)


def _verbatim_copy(path: Path) -> None:
    copy = path.with_name(path.name + ".copy")
    shutil.copyfile(path, copy)
    os.replace(copy, path)


def _in_place(path: Path) -> None:
    with open(path, "ab") as fh:
        fh.write(b"\nmy note, appended in place\n")


# --- --log-file ------------------------------------------------------------------------


@pytest.mark.parametrize("change", [_annotated_copy, _verbatim_copy, _in_place], ids=["annotated-copy", "verbatim-copy", "edited-in-place"])
def test_a_users_copy_or_edit_of_a_log_is_not_appended_to(tmp_path: Path, monkeypatch, capsys, change) -> None:
    log = tmp_path / "run.log"
    assert _run(tmp_path, monkeypatch, "--log-file", str(log)) == 0
    change(log)
    before = _state(log)
    capsys.readouterr()
    assert _run(tmp_path, monkeypatch, "--log-file", str(log)) == 2
    err = capsys.readouterr().err
    assert f"--log-file: {log} " in err
    assert _state(log) == before


def test_a_hard_link_to_a_log_is_not_appended_to_by_either_name(tmp_path: Path, monkeypatch, capsys) -> None:
    log, notes = tmp_path / "run.log", tmp_path / "notes.log"
    assert _run(tmp_path, monkeypatch, "--log-file", str(log)) == 0
    os.link(log, notes)
    before = _state(log)
    for name in (notes, log):
        capsys.readouterr()
        assert _run(tmp_path, monkeypatch, "--log-file", str(name)) == 2
        err = capsys.readouterr().err
        assert f"--log-file: {name} has 2 hard links" in err
    assert _state(log) == _state(notes) == before


def test_the_tools_own_log_is_appended_to_by_isolated_runs(tmp_path: Path, monkeypatch) -> None:
    """The legitimate case, with the engine's process appending too (it joins the parent's
    log) and the run after it appending again."""
    log = tmp_path / "run.log"
    for _ in range(2):
        assert _run(tmp_path, monkeypatch, "--log-file", str(log), isolate=True) == 0
    lines = log.read_bytes().splitlines()
    assert sum(b'"event":"run_start"' in line for line in lines) == 2
    assert sum(b'"event":"batch"' in line for line in lines) >= 2  # written by the engine processes
    assert os.stat(log).st_nlink == 1


def test_a_log_left_open_by_a_killed_run_is_not_appended_to(tmp_path: Path, monkeypatch, capsys) -> None:
    """What a run killed mid-way wrote is unproven: the ledger still says the log is open
    by a process that is gone."""
    from asyncbench.fs import ledger

    log = tmp_path / "run.log"
    assert _run(tmp_path, monkeypatch, "--log-file", str(log)) == 0
    st = os.stat(log)
    monkeypatch.setattr(os, "getpid", lambda: 2**22 + 12345)  # no such process
    ledger.record_open(log, st)
    monkeypatch.undo()
    capsys.readouterr()
    assert _run(tmp_path, monkeypatch, "--log-file", str(log)) == 2
    assert "did not finish" in capsys.readouterr().err


# --- --update-latest -------------------------------------------------------------------

LATEST = ["out/latest.md", "out/latest-execution-time.svg", f"{RUN_DIR}/latest.json"]


@pytest.mark.parametrize("name", LATEST)
@pytest.mark.parametrize("change", [_annotated_copy, _verbatim_copy, _in_place], ids=["annotated-copy", "verbatim-copy", "edited-in-place"])
def test_a_users_copy_or_edit_of_latest_is_not_replaced(tmp_path: Path, monkeypatch, capsys, name: str, change) -> None:
    assert _run(tmp_path, monkeypatch, "--update-latest") == 0
    path = tmp_path / name
    change(path)
    before = _state(path)
    capsys.readouterr()
    assert _run(tmp_path, monkeypatch, "--update-latest") == 2
    err = capsys.readouterr().err
    assert f"--update-latest: {path} " in err
    assert _state(path) == before


@pytest.mark.parametrize("name", LATEST)
def test_a_hard_link_at_latest_is_not_replaced(tmp_path: Path, monkeypatch, capsys, name: str) -> None:
    assert _run(tmp_path, monkeypatch, "--update-latest") == 0
    path = tmp_path / name
    notes = tmp_path / "my-notes"
    os.link(path, notes)
    before = _state(path)
    capsys.readouterr()
    assert _run(tmp_path, monkeypatch, "--update-latest") == 2
    assert f"--update-latest: {path} has 2 hard links" in capsys.readouterr().err
    assert _state(path) == _state(notes) == before


def test_the_tools_own_latest_is_replaced(tmp_path: Path, monkeypatch) -> None:
    assert _run(tmp_path, monkeypatch, "--update-latest") == 0
    before = {name: _state(tmp_path / name) for name in LATEST}
    assert _run(tmp_path, monkeypatch, "--update-latest") == 0
    for name in LATEST:  # rewritten: a new file each time
        assert _state(tmp_path / name)[1] != before[name][1], name


# --- report RESULT.json ----------------------------------------------------------------


def _result(tmp_path: Path) -> Path:
    (result,) = (tmp_path / RUN_DIR).glob("asyncbench-*.json")
    return result


def _report(result: Path, monkeypatch: pytest.MonkeyPatch) -> int:
    monkeypatch.setattr(ownership, "_created", set())
    return main(["report", str(result)])


@pytest.mark.parametrize("suffix", [".md", "-execution-time.svg"])
@pytest.mark.parametrize("change", [_annotated_copy, _verbatim_copy, _in_place, "hard-link"], ids=["annotated-copy", "verbatim-copy", "edited-in-place", "hard-link"])
def test_report_does_not_replace_a_users_report_or_chart(tmp_path: Path, monkeypatch, capsys, suffix: str, change) -> None:
    assert _run(tmp_path, monkeypatch) == 0
    result = _result(tmp_path)
    target = result.with_name(result.stem + suffix)
    if change == "hard-link":
        os.link(target, tmp_path / "my-notes")
    else:
        change(target)
    files = sorted(p for p in result.parent.iterdir() if p.name.startswith(result.stem))
    before = {p: _state(p) for p in files}
    capsys.readouterr()
    assert _report(result, monkeypatch) == 2
    assert str(target) in capsys.readouterr().err
    assert {p: _state(p) for p in files} == before  # all or nothing: not one file of the set rewritten


def test_report_rerenders_the_tools_own_report_twice(tmp_path: Path, monkeypatch) -> None:
    assert _run(tmp_path, monkeypatch) == 0
    md = _result(tmp_path).with_suffix(".md")
    for _ in range(2):
        ino = os.stat(md).st_ino
        assert _report(_result(tmp_path), monkeypatch) == 0
        assert os.stat(md).st_ino != ino


# --- lock files ------------------------------------------------------------------------

LOCKS = {
    "data": ("data/profiles-1000/.memory.lock", []),
    "output run dir": (f"{RUN_DIR}/.asyncbench.lock", []),
    "output (latest)": ("out/.asyncbench.lock", ["--update-latest"]),
}


@pytest.mark.parametrize("where", LOCKS)
@pytest.mark.parametrize("forged", ["typed", "copied"])
def test_a_forged_lock_record_is_refused_and_unchanged(tmp_path: Path, monkeypatch, capfd, where: str, forged: str) -> None:
    """A user's file holding exactly a lock record (typed in the old format, or a byte
    copy of a real lock file) is not a lock file asyncbench wrote."""
    rel, flags = LOCKS[where]
    lock = tmp_path / rel
    if forged == "typed":
        lock.parent.mkdir(parents=True)
        lock.write_bytes(b"asyncbench lock\npid 0000000042\n")
    else:  # a real lock file, as a stopped run leaves it (a clean run removes its own)
        lock.parent.mkdir(parents=True)
        acquire(lock.parent, lock).release()
        _verbatim_copy(lock)
    before = _state(lock)
    capfd.readouterr()
    assert _run(tmp_path, monkeypatch, *flags) == 2
    err = capfd.readouterr().err
    assert str(lock) in err and "not a lock file asyncbench wrote" in err
    assert _state(lock) == before


# --- the store marker's temporary file -------------------------------------------------

LAYOUT = engine_class("sqlite").store_layout


def test_a_users_marker_tmp_alone_in_a_store_directory_is_not_deleted(tmp_path: Path) -> None:
    store = tmp_path / "sqlite"
    store.mkdir()
    mine = store / ".asyncbench-store.tmp"
    mine.write_bytes(b"my file, whatever its name\n")
    before = _state(mine)
    with pytest.raises(StoreDirError, match=r"\.asyncbench-store\.tmp"):
        StoreDir(store, LAYOUT).reset()
    assert _state(mine) == before
    assert sorted(os.listdir(store)) == [".asyncbench-store.tmp"]


def test_a_users_marker_tmp_beside_a_store_is_neither_deleted_nor_reset_over(tmp_path: Path) -> None:
    store = tmp_path / "sqlite"
    StoreDir(store, LAYOUT).reset()  # a marked, empty store of the engine
    mine = store / ".asyncbench-store.tmp"
    mine.write_bytes(b"my file\n")
    before = _state(mine)
    StoreDir(store, LAYOUT).record_files()  # rewrites the marker: never through that name
    assert _state(mine) == before
    with pytest.raises(StoreDirError, match=r"\.asyncbench-store\.tmp"):
        StoreDir(store, LAYOUT).reset()
    with pytest.raises(StoreDirError, match=r"\.asyncbench-store\.tmp"):
        StoreDir(store, LAYOUT).delete()
    assert _state(mine) == before
    assert sorted(os.listdir(store)) == [MARKER, ".asyncbench-store.tmp"]


def test_a_hard_linked_store_marker_is_refused(tmp_path: Path) -> None:
    store = tmp_path / "sqlite"
    StoreDir(store, LAYOUT).reset()
    os.link(store / MARKER, tmp_path / "my-copy")
    before = _state(store / MARKER)
    with pytest.raises(StoreDirError, match="hard links"):
        StoreDir(store, LAYOUT).reset()
    assert _state(store / MARKER) == before


# --- the ledger itself -------------------------------------------------------------------


@pytest.mark.parametrize("where", ["out", RUN_DIR, "logs"])
def test_a_users_file_at_the_ledgers_name_is_refused_and_unchanged(tmp_path: Path, monkeypatch, capsys, where: str) -> None:
    """``.asyncbench-owned`` is where asyncbench records the files it wrote; a file of the
    user's there is never replaced, and nothing is written where nothing can be recorded."""
    from asyncbench.fs.ledger import LEDGER

    mine = tmp_path / where / LEDGER
    mine.parent.mkdir(parents=True)
    mine.write_bytes(b'{"my": "settings"}\n')
    before = _state(mine)
    assert _run(tmp_path, monkeypatch, "--log-file", str(tmp_path / "logs" / "run.log")) == 2
    assert f"{mine} is not a ledger asyncbench wrote" in capsys.readouterr().err
    assert _state(mine) == before
    assert not list((tmp_path / "out").rglob("asyncbench-*"))


def test_report_refuses_to_write_where_the_ledger_name_is_a_users_file(tmp_path: Path, monkeypatch, capsys) -> None:
    from asyncbench.fs.ledger import LEDGER

    assert _run(tmp_path, monkeypatch) == 0
    result = _result(tmp_path)
    copy = tmp_path / "mine" / result.name  # the JSON alone, in a directory of the user's
    copy.parent.mkdir()
    copy.write_bytes(result.read_bytes())
    mine = copy.parent / LEDGER
    mine.write_bytes(b"not a ledger\n")
    before = _state(mine)
    capsys.readouterr()
    assert _report(copy, monkeypatch) == 2
    assert f"{mine} is not a ledger asyncbench wrote" in capsys.readouterr().err
    assert _state(mine) == before
    assert sorted(os.listdir(copy.parent)) == [LEDGER, copy.name]


def test_a_store_file_with_a_second_hard_link_is_not_deleted(tmp_path: Path) -> None:
    """A store file the user hard-linked elsewhere (to keep it) is not unlinked by a reset."""
    store = tmp_path / "sqlite"
    StoreDir(store, LAYOUT).reset()
    (store / "store.db").write_bytes(b"the engine's database")
    os.link(store / "store.db", tmp_path / "kept.db")
    before = _state(store / "store.db")
    with pytest.raises(StoreDirError, match="store.db"):
        StoreDir(store, LAYOUT).reset()
    assert _state(store / "store.db") == before


# --- a user's save landing between the check and the replace (issue 52 item 2) ------------


def _save_while_writing(monkeypatch: pytest.MonkeyPatch, target: Path, change) -> list[tuple[bytes, int, int, int]]:
    """Force the window: when asyncbench creates its temporary file for ``target`` (after
    checking the target is its own, before putting the new file in place), the user saves
    ``target`` (``change``). Returns, once the save happened, the state it left."""
    real = ownership.tempfile.mkstemp
    saved: list[tuple[bytes, int, int, int]] = []

    def mkstemp(*args, **kwargs):
        if not saved and kwargs.get("prefix") == f".{target.name}.":
            change(target)
            saved.append(_state(target))
        return real(*args, **kwargs)

    monkeypatch.setattr(ownership.tempfile, "mkstemp", mkstemp)
    return saved


@pytest.mark.parametrize("change", [_annotated_copy, _in_place], ids=["saved-as-new-file", "written-in-place"])
def test_report_keeps_a_users_save_landing_between_its_check_and_its_replace(tmp_path: Path, monkeypatch, capsys, change) -> None:
    assert _run(tmp_path, monkeypatch) == 0
    result = _result(tmp_path)
    target = result.with_suffix(".md")
    saved = _save_while_writing(monkeypatch, target, change)
    capsys.readouterr()
    assert _report(result, monkeypatch) == 2
    assert saved and _state(target) == saved[0]  # the user's save, untouched
    assert f"{target} changed after asyncbench checked it" in capsys.readouterr().err
    assert not [p for p in target.parent.iterdir() if p.name.endswith((".tmp", ".old"))]


@pytest.mark.parametrize("change", [_annotated_copy, _in_place], ids=["saved-as-new-file", "written-in-place"])
def test_update_latest_keeps_a_users_save_landing_between_its_check_and_its_replace(tmp_path: Path, monkeypatch, capsys, change) -> None:
    assert _run(tmp_path, monkeypatch, "--update-latest") == 0
    target = tmp_path / "out/latest.md"
    saved = _save_while_writing(monkeypatch, target, change)
    capsys.readouterr()
    assert _run(tmp_path, monkeypatch, "--update-latest") == 1  # checked at the start; the save fails
    assert saved and _state(target) == saved[0]
    out, err = capsys.readouterr()
    assert f"could not save the results in {tmp_path / RUN_DIR}: [Errno 17] {target} changed after" in out + err
    assert not [p for p in target.parent.iterdir() if p.name.endswith((".tmp", ".old"))]


def test_a_file_written_into_during_the_rename_is_put_back(tmp_path: Path, monkeypatch) -> None:
    """The narrower window: the old file written into after it was held, before the rename
    (forced by a hook on ``os.replace``): it goes back to its name."""
    target = tmp_path / "report.md"
    monkeypatch.setattr(ownership, "_created", set())
    ownership.write_atomic(target, b"first\n")
    real = ownership.os.replace
    done: list[bool] = []

    def replace(src, dst, *args, **kwargs):
        if not done and str(dst) == str(target):
            done.append(True)
            _in_place(target)
        return real(src, dst, *args, **kwargs)

    monkeypatch.setattr(ownership.os, "replace", replace)
    with pytest.raises(ownership.NotOwned, match="changed after asyncbench checked it"):
        ownership.write_atomic(target, b"second\n")
    assert target.read_bytes() == b"first\n\nmy note, appended in place\n"
    assert not [p for p in tmp_path.iterdir() if p.name.endswith((".tmp", ".old"))]
