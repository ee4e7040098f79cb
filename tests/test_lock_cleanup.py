"""A run that ends cleanly removes the lock files it created, and only those (issue 39):
they stayed behind after every run. Removal happens while the lock is held, and a run that
locks a file just removed notices and locks a fresh one, so two runs never hold "the"
lock on two different files."""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

import pytest
from conftest import ROOT

from asyncbench.fs import locks
from asyncbench.fs.locks import Locked, acquire


def _locks(*roots: Path) -> list[Path]:
    return sorted(p for root in roots for p in root.rglob("*.lock"))


@pytest.mark.parametrize("isolate", ["--isolate", "--no-isolate"])
def test_a_clean_run_leaves_no_lock_file_it_created(tmp_path: Path, isolate: str) -> None:
    from asyncbench.cli.main import main

    out, data = tmp_path / "out", tmp_path / "data"
    code = main(
        [
            str(ROOT / "benchmarks" / "quick.toml"), "--engine", "memory,sqlite", "--profiles", "2k", isolate,
            "--no-progress", "--quiet", "--output", str(out), "--data", str(data), "--update-latest",
        ]
    )  # fmt: skip
    assert code == 0
    assert _locks(out, data) == []
    assert list(out.glob("profiles-2000-p1/asyncbench-*.json"))  # what it wrote is kept


def test_a_lock_file_the_run_did_not_create_is_kept(tmp_path: Path) -> None:
    from asyncbench.cli.main import main

    out, data = tmp_path / "out", tmp_path / "data"
    (data / "profiles-2000").mkdir(parents=True)
    earlier = data / "profiles-2000" / ".memory.lock"
    acquire(data / "profiles-2000" / "memory", earlier).release()  # an interrupted run's lock file
    code = main(
        [
            str(ROOT / "benchmarks" / "quick.toml"), "--engine", "memory", "--profiles", "2k", "--no-isolate",
            "--no-progress", "--quiet", "--output", str(out), "--data", str(data),
        ]
    )  # fmt: skip
    assert code == 0
    assert _locks(out, data) == [earlier]


def test_remove_deletes_only_a_file_that_is_still_this_lock(tmp_path: Path) -> None:
    what, path = tmp_path / "d", tmp_path / ".d.lock"
    lock = acquire(what, path)
    os.unlink(path)
    path.write_text("a user's file now has the name")
    lock.remove()
    assert path.read_text() == "a user's file now has the name" and lock.fd == -1


def test_a_lock_taken_on_a_file_removed_meanwhile_is_taken_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """B opens the lock file, A removes it and lets go, B locks the removed file: B must
    see the name no longer leads to it and lock a new file, which a third run then finds held."""
    what, path = tmp_path / "d", tmp_path / ".d.lock"
    acquire(what, path).release()  # exists, not held
    holder = acquire(what, path)
    holder.created = True  # as if this run had made it
    real_flock = fcntl.flock
    calls = []

    def flock_after_removal(fd: int, op: int) -> None:
        if not calls:  # B has the old file open: A removes it now, then B's flock succeeds
            calls.append(fd)
            holder.remove()
        real_flock(fd, op)

    monkeypatch.setattr(locks.fcntl, "flock", flock_after_removal)
    b = acquire(what, path)
    monkeypatch.setattr(locks.fcntl, "flock", real_flock)
    assert path.exists() and os.fstat(b.fd).st_ino == os.stat(path).st_ino
    with pytest.raises(Locked):
        acquire(what, path)
    b.release()
