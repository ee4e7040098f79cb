"""A run never deletes or overwrites a file it did not create.

Sentinel files (plain, nested, symlinks to a file and to a directory outside, a file
named like an asyncbench output, planted temporary names, a neighbour's store) are seeded
in the data and output trees, around and inside every engine's directory; then each
engine runs normally (twice: the second run resets the first one's store), fails, times
out and is interrupted. Every sentinel, and everything the symlinks point at, must be
exactly as it was. (The "Done when" of the safety issue.)"""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest
from cli_process import QUICK, TEST_ENGINES, BackgroundRun, kill_quietly

from asyncbench import engines
from asyncbench.cli.main import main

ENGINES = ["memory", "lsm", "rocksdb", "sqlite"]
PROFILES = "1000"


def _snapshot(root: Path) -> dict[str, bytes | str]:
    """Every entry under ``root`` (symlinks not followed): bytes of files, targets of links."""
    out: dict[str, bytes | str] = {}
    for base, dirs, files in os.walk(root):
        for name in dirs + files:
            p = Path(base) / name
            rel = str(p.relative_to(root))
            if p.is_symlink():
                out[rel] = "-> " + os.readlink(p)
            elif p.is_file():
                out[rel] = p.read_bytes()
            else:
                out[rel] = "dir"
    return out


def _seed(tree: Path, outside: Path) -> None:
    """Sentinels in ``tree``: a plain file, a nested one, symlinks out to a file and a dir."""
    (tree / "nested" / "deeper").mkdir(parents=True, exist_ok=True)
    (tree / "sentinel.txt").write_text(f"plain sentinel in {tree}")
    (tree / "nested" / "deeper" / "sentinel.txt").write_text(f"nested sentinel in {tree}")
    (tree / "link-to-file").symlink_to(outside / "target.txt")
    (tree / "link-to-dir").symlink_to(outside)


def _seed_all(root: Path) -> tuple[Path, dict[str, bytes | str], dict[str, bytes | str]]:
    outside = root / "outside"
    outside.mkdir()
    (outside / "target.txt").write_text("outside the trees")
    (outside / "inner").mkdir()
    (outside / "inner" / "keep.txt").write_text("outside, nested")
    data, out = root / "data", root / "out"
    for tree in (data, data / f"profiles-{PROFILES}", out, out / f"profiles-{PROFILES}-p1"):
        tree.mkdir(parents=True, exist_ok=True)
        _seed(tree, outside)
    neighbour = data / f"profiles-{PROFILES}" / "pgdata"  # another tool's store
    neighbour.mkdir()
    (neighbour / "base.dat").write_bytes(b"\0" * 64)
    run_dir = out / f"profiles-{PROFILES}-p1"
    (run_dir / "asyncbench-mine.md").write_text("# my notes, named like a report\n")
    (run_dir / "asyncbench-mine.json").write_text('{"mine": true}\n')
    # temporary names earlier writers used: ".<name>.tmp", then ".<name>.<pid>.tmp" (the
    # runs below are in this process, so its pid is the one they would use)
    for name in ("latest.md", "latest-execution-time.svg", "asyncbench-x.json", "asyncbench-x.md"):
        for tmp in (f".{name}.tmp", f".{name}.{os.getpid()}.tmp"):
            (out / tmp).symlink_to(outside / "target.txt")
            (run_dir / tmp).symlink_to(outside / "target.txt")
    sentinels = {k: v for k, v in _snapshot(root).items() if not k.startswith("outside")}
    return outside, sentinels, _snapshot(outside)


def _check(root: Path, sentinels: dict[str, bytes | str], outside: Path, outside_before: dict) -> None:
    now = _snapshot(root)
    changed = [k for k, v in sentinels.items() if now.get(k) != v]
    assert not changed, f"sentinels changed or gone: {changed}"
    assert _snapshot(outside) == outside_before, "something outside the trees changed"


@pytest.fixture
def test_engines(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, target in TEST_ENGINES.items():
        monkeypatch.setitem(engines.REGISTRY, name, target)


def _cli(root: Path, *args: str) -> int:
    base = [QUICK, "--profiles", PROFILES, "--output", str(root / "out"), "--data", str(root / "data")]
    return main([*base, "--no-progress", *args])


def _interrupted(root: Path, engine: str) -> int:
    log = root / "out" / "interrupted.log"
    run = BackgroundRun(
        [QUICK, "--profiles", PROFILES, "--engine", engine, "--output", str(root / "out")]
        + ["--data", str(root / "data"), "--isolate"],
        log,
    )
    try:
        run.wait_for_log()
        run.send(signal.SIGINT)
        return run.finish()
    finally:
        kill_quietly(run)


@pytest.mark.parametrize("engine", ENGINES)
def test_sentinels_survive_normal_failed_timed_out_and_interrupted_runs(
    tmp_path: Path, test_engines, engine: str
) -> None:
    outside, sentinels, outside_before = _seed_all(tmp_path)
    assert _cli(tmp_path, "--engine", engine, "--update-latest") == 0
    _check(tmp_path, sentinels, outside, outside_before)
    assert _cli(tmp_path, "--engine", engine, "--update-latest", "--no-isolate") == 0  # resets the store
    _check(tmp_path, sentinels, outside, outside_before)
    assert _cli(tmp_path, "--engine", f"failing-{engine}", "--no-isolate") == 1
    _check(tmp_path, sentinels, outside, outside_before)
    assert _cli(tmp_path, "--engine", f"slow-{engine}", "--no-isolate", "--timeout-seconds", "1") == 1
    _check(tmp_path, sentinels, outside, outside_before)
    assert _interrupted(tmp_path, f"slow-{engine}") == 130
    _check(tmp_path, sentinels, outside, outside_before)
    # and the runs did write their results, with the sentinels all around them
    assert len(list((tmp_path / "out" / f"profiles-{PROFILES}-p1").glob("asyncbench-2*.json"))) == 5


@pytest.mark.parametrize("engine", ["lsm", "rocksdb", "sqlite"])
def test_sentinels_inside_an_engine_directory_make_it_refuse_and_survive(
    tmp_path: Path, test_engines, engine: str
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "target.txt").write_text("outside the trees")
    names = [engine, f"failing-{engine}", f"slow-{engine}"]
    timeout = {name: ["--timeout-seconds", "1"] if name.startswith("slow-") else [] for name in names}
    for name in names:  # a store of the engine's own first, then sentinels in it
        assert _cli(tmp_path, "--engine", name, "--no-isolate", *timeout[name]) == (0 if name == engine else 1)
        _seed(tmp_path / "data" / f"profiles-{PROFILES}" / name, outside)
    def stores() -> dict[str, bytes | str]:  # the lock files are the runs' own (they hold a pid)
        return {k: v for k, v in _snapshot(tmp_path / "data").items() if not k.endswith(".lock")}

    before, outside_before = stores(), _snapshot(outside)
    for name in names:
        assert _cli(tmp_path, "--engine", name, "--no-isolate", *timeout[name]) == 1  # refused at open
    assert stores() == before  # nothing in any engine directory changed
    assert _snapshot(outside) == outside_before
