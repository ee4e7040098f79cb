"""Two runs never share a data or output directory: the second stops before it changes
anything (exit 2) and names the first one's pid.

Issue item 3: two runs on one --data deleted each other's files and both reported ok."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest
from cli_process import QUICK, TEST_ENGINES, BackgroundRun, kill_quietly

from asyncbench import engines
from asyncbench.cli.main import main
from asyncbench.fs.locks import Locked, NotOurLock, acquire, lock_record


@pytest.fixture
def first_run(tmp_path: Path):  # noqa: ANN201 - a BackgroundRun holding its directories
    run = BackgroundRun(
        [QUICK, "--engine", "slow", "--profiles", "2k", "--no-isolate", "--output", str(tmp_path / "out1")]
        + ["--data", str(tmp_path / "data")],
        tmp_path / "first.log",
    )
    try:
        run.wait_for_log()
        yield run
    finally:
        kill_quietly(run)


def _second(tmp_path: Path, output: str, data: str, engine: str = "slow") -> int:
    # --timeout-seconds: were the lock missing, the second run would time out (exit 1)
    # instead of sleeping through the slow engine's reads
    args = [QUICK, "--engine", engine, "--profiles", "2k", "--no-isolate", "--timeout-seconds", "2"]
    return main([*args, "--output", str(tmp_path / output), "--data", str(tmp_path / data)])


def test_second_run_on_the_same_data_is_refused_naming_the_holder(
    tmp_path: Path, first_run: BackgroundRun, capfd, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(engines.REGISTRY, "slow", TEST_ENGINES["slow"])
    before = sorted(os.listdir(tmp_path / "data" / "profiles-2000"))
    assert _second(tmp_path, "out2", "data") == 2
    err = capfd.readouterr().err
    assert f"locked by pid {first_run.proc.pid}" in err and "profiles-2000/slow" in err
    assert sorted(os.listdir(tmp_path / "data" / "profiles-2000")) == before
    assert not (tmp_path / "out2").exists() or not any((tmp_path / "out2").rglob("*.json"))
    first_run.send(signal.SIGTERM)
    assert first_run.finish() == 130, first_run.output  # the first run is unharmed
    assert list((tmp_path / "out1").glob("profiles-2000-p1/asyncbench-*.json"))


def test_second_run_into_the_same_output_is_refused(tmp_path: Path, first_run: BackgroundRun, capfd) -> None:
    assert _second(tmp_path, "out1", "other-data", engine="memory") == 2
    err = capfd.readouterr().err
    assert f"locked by pid {first_run.proc.pid}" in err and "out1/profiles-2000-p1" in err
    assert not (tmp_path / "other-data" / "profiles-2000" / "memory").exists()


def test_a_lock_names_its_holder_and_is_free_after_release(tmp_path: Path) -> None:
    lock = acquire(tmp_path, tmp_path / ".lock")
    with pytest.raises(Locked, match=f"locked by pid {os.getpid()}"):
        acquire(tmp_path, tmp_path / ".lock")
    lock.release()
    acquire(tmp_path, tmp_path / ".lock").release()


def test_a_symlinked_lock_file_is_not_followed(tmp_path: Path) -> None:
    target = tmp_path / "target"
    target.write_text("precious")
    (tmp_path / ".lock").symlink_to(target)
    with pytest.raises(OSError):
        acquire(tmp_path, tmp_path / ".lock")
    assert target.read_text() == "precious"


# --- issue 23 item 6: a lock file that is not provably ours is refused, never written ---

#: Where a run puts its lock files (relative to the test's tmp_path), with the flags that
#: make it take that lock.
LOCK_PLACES = {
    "data": ("data/profiles-1000/.memory.lock", []),
    "output run dir": ("out/profiles-1000-p1/.asyncbench.lock", []),
    "output (latest)": ("out/.asyncbench.lock", ["--update-latest"]),
}


def _run_memory(tmp_path: Path, *extra: str) -> int:
    args = [QUICK, "--engine", "memory", "--profiles", "1k", "--no-isolate", "--no-progress", "--yes"]
    return main([*args, "--output", str(tmp_path / "out"), "--data", str(tmp_path / "data"), *extra])


def _plant(tmp_path: Path, where: str) -> tuple[Path, list[str]]:
    rel, flags = LOCK_PLACES[where]
    lock = tmp_path / rel
    lock.parent.mkdir(parents=True, exist_ok=True)
    return lock, flags


@pytest.mark.parametrize("where", LOCK_PLACES)
def test_a_users_file_hard_linked_at_a_lock_name_is_refused_and_unchanged(
    tmp_path: Path, where: str, capfd
) -> None:
    user = tmp_path / "elsewhere" / "thesis.txt"  # outside --data and --output
    user.parent.mkdir()
    user.write_bytes(b"my thesis, 3 years of work\n")
    lock, flags = _plant(tmp_path, where)
    os.link(user, lock)
    assert _run_memory(tmp_path, *flags) == 2
    err = capfd.readouterr().err
    assert str(lock) in err and "hard links" in err and "nothing was run" in err
    assert user.read_bytes() == b"my thesis, 3 years of work\n"
    assert os.stat(user).st_nlink == 2  # neither written nor unlinked
    assert not list((tmp_path / "out").rglob("*.json"))


@pytest.mark.parametrize("where", LOCK_PLACES)
@pytest.mark.parametrize(
    "content",
    [b"", b"my notes\n", b"12345\n", b"asyncbench lock\n", b"asyncbench lock\npid 0000000042\nmore\n"],
    ids=["empty", "text", "bare-pid", "magic-only", "record-plus-more"],
)
def test_a_users_file_placed_at_a_lock_name_is_refused_and_unchanged(
    tmp_path: Path, where: str, content: bytes, capfd
) -> None:
    lock, flags = _plant(tmp_path, where)
    lock.write_bytes(content)
    before = os.stat(lock)
    assert _run_memory(tmp_path, *flags) == 2
    assert str(lock) in capfd.readouterr().err
    assert lock.read_bytes() == content
    assert os.stat(lock).st_mtime_ns == before.st_mtime_ns


def test_a_lock_record_owned_by_another_user_is_refused(tmp_path: Path, capfd) -> None:
    if os.geteuid() != 0:
        pytest.skip("needs root to give the file to another user")
    lock, flags = _plant(tmp_path, "data")
    lock.write_bytes(b"asyncbench lock\npid 0000000042\n")
    os.chown(lock, 65534, 65534)
    assert _run_memory(tmp_path, *flags) == 2
    assert "belongs to uid 65534" in capfd.readouterr().err
    assert lock.read_bytes() == b"asyncbench lock\npid 0000000042\n"


def test_a_fifo_or_directory_at_a_lock_name_is_refused_without_waiting(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "fifo.lock")
    (tmp_path / "dir.lock").mkdir()
    for name in ("fifo.lock", "dir.lock"):
        with pytest.raises(NotOurLock, match="not a regular file"):
            acquire(tmp_path, tmp_path / name)


def test_lock_files_an_earlier_run_left_are_reused_by_the_next_run(tmp_path: Path) -> None:
    """An interrupted run leaves its lock files (a clean one removes those it created:
    tests/test_lock_cleanup.py); the next run takes them over and keeps them."""
    locks = [tmp_path / rel for rel, _ in LOCK_PLACES.values()]
    for lock in locks:
        lock.parent.mkdir(parents=True, exist_ok=True)
        acquire(lock.parent, lock).release()  # as a stopped run leaves it
    assert _run_memory(tmp_path, "--update-latest") == 0
    for lock in locks:
        assert lock.read_bytes() == lock_record(os.getpid(), os.stat(lock).st_ino)
        assert os.stat(lock).st_nlink == 1
    assert _run_memory(tmp_path, "--update-latest") == 0
    assert not [p for p in tmp_path.rglob("*.tmp")]  # no temporary lock names left behind


def test_a_lock_is_created_whole(tmp_path: Path) -> None:
    lock = acquire(tmp_path, tmp_path / ".lock")
    try:
        assert (tmp_path / ".lock").read_bytes() == lock_record(os.getpid(), os.stat(tmp_path / ".lock").st_ino)
        assert sorted(os.listdir(tmp_path)) == [".lock"]
    finally:
        lock.release()
