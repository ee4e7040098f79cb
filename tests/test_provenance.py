"""Provenance: every fact present, numbers kept as numbers, and no failure without git."""

from __future__ import annotations

import hashlib
import subprocess
from collections import namedtuple
from pathlib import Path

import orjson
import pytest

import asyncbench
from asyncbench.measure import provenance
from asyncbench.measure.provenance import (
    collect,
    filesystem_of,
    format_rows,
    git_state,
    mark_end,
    python_build_flags,
)

ROOT = Path(__file__).resolve().parent.parent

INT_FIELDS = ("logical_cpus", "memory_total_bytes", "data_free_bytes", "data_total_bytes")


@pytest.fixture
def plan(tmp_path: Path) -> Path:
    p = tmp_path / "plan.toml"
    p.write_text("[run]\nprofiles = 1000\n")
    return p


def test_collect_keeps_numbers_as_numbers(plan: Path, tmp_path: Path) -> None:
    env = collect(
        ["asyncbench", str(plan), "--engine", "rocksdb,sqlite", "--output", "out dir"],
        plan,
        tmp_path / "data" / "not-yet-created",
        {"rocksdict": "0.3.29", "RocksDB": "9.10.0"},
    )
    mark_end(env)
    for key in INT_FIELDS:
        assert type(env[key]) is int, key
    assert env["data_free_bytes"] > 0 and env["data_total_bytes"] >= env["data_free_bytes"]
    assert env["memory_total_bytes"] > 2**20
    for key in ("load_avg_start", "load_avg_end"):
        values = env[key]
        assert values is not None and len(values) == 3 and all(type(v) is float for v in values)
    for key in ("cpu_freq_current_hz", "cpu_freq_min_hz", "cpu_freq_max_hz"):
        assert env[key] is None or (type(env[key]) is float and env[key] > 1e6), key  # Hz, not MHz
    assert env["python_sys_flags"] and all(type(v) is int for v in env["python_sys_flags"].values())
    assert "optimize" in env["python_sys_flags"]
    assert env["plan_sha256"] == hashlib.sha256(plan.read_bytes()).hexdigest()
    assert env["command"] == f"asyncbench {plan} --engine rocksdb,sqlite --output 'out dir'"
    assert env["engine_versions"] == {"rocksdict": "0.3.29", "RocksDB": "9.10.0"}
    assert env["library_versions"]["hdrhistogram"] != "not installed"
    assert env["data_fs_type"] and env["data_mountpoint"]
    assert env["hostname"] and env["kernel"] and env["cpu_model"]
    assert orjson.loads(orjson.dumps(env)) == env  # JSON keeps every type


def test_collect_without_a_git_checkout_or_a_plan(tmp_path: Path) -> None:
    env = collect(["asyncbench"], None, tmp_path, {}, repo=tmp_path)
    assert env["git_commit"] is None and env["git_dirty"] is None
    assert env["plan_path"] is None and env["plan_sha256"] is None
    rows = dict(format_rows(env))
    assert rows["asyncbench"].endswith("(not a git checkout)")
    assert rows["Plan"] == "-"


def test_no_git_binary_is_tolerated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # no git on PATH
    assert git_state(ROOT) == (None, None)


def test_git_commit_and_dirty_flag(tmp_path: Path) -> None:
    def git(*args: str) -> str:
        return subprocess.run(
            ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", "-C", str(tmp_path), *args],
            check=True,
            capture_output=True,
            text=True,
        ).stdout.strip()

    git("init", "-q")
    (tmp_path / "a.txt").write_text("one\n")
    git("add", "a.txt")
    git("commit", "-qm", "first")
    head = git("rev-parse", "HEAD")
    (tmp_path / "untracked.txt").write_text("new\n")
    assert git_state(tmp_path) == (head, False)  # untracked files do not make it dirty
    (tmp_path / "a.txt").write_text("two\n")
    assert git_state(tmp_path) == (head, True)
    env = collect(["asyncbench"], None, tmp_path, {}, repo=tmp_path)
    assert (env["git_commit"], env["git_dirty"]) == (head, True)
    assert dict(format_rows(env))["asyncbench"].endswith(f"git {head[:12]}, uncommitted changes")


Part = namedtuple("Part", "device mountpoint fstype opts")


def test_filesystem_is_the_longest_matching_mountpoint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    base = str(tmp_path)
    parts = [
        Part("/dev/sda1", "/", "ext4", ""),
        Part("tmpfs", base, "tmpfs", ""),
        Part("/dev/nvme0", base + "/da", "xfs", ""),  # a prefix of "data" as text, not as a path
        Part("/dev/nvme1", base + "/data", "btrfs", ""),
        Part("/dev/nvme2", base + "/data", "zfs", ""),  # mounted later over the same point
    ]
    monkeypatch.setattr(provenance.psutil, "disk_partitions", lambda all=True: parts)
    (tmp_path / "data").mkdir()
    assert filesystem_of(tmp_path / "data" / "engine" / "missing") == ("zfs", base + "/data")
    assert filesystem_of(tmp_path / "dat") == ("tmpfs", base)
    assert filesystem_of(Path("/somewhere/else")) == ("ext4", "/")


def test_python_build_flags_short_form() -> None:
    flags = python_build_flags(
        "'--prefix=/opt/py' '--enable-optimizations' '--with-lto=full' '--enable-shared'",
        "-g -O2 -fwrapv -O3 -march=native -fno-omit-frame-pointer",
        {},
    )
    assert flags == ["PGO", "LTO", "shared", "-O3", "-march=native", "-fno-omit-frame-pointer"]
    assert python_build_flags("", "", {"Py_DEBUG": 1, "Py_GIL_DISABLED": 1}) == ["debug", "free-threaded"]
    assert python_build_flags("'--with-pydebug'", "-O0", {"Py_DEBUG": 1}) == ["debug", "-O0"]


def test_format_rows_formats_numbers_for_the_report(plan: Path, tmp_path: Path) -> None:
    env = collect(["asyncbench", str(plan)], plan, tmp_path, {"rocksdict": "0.3.29"})
    env.update(
        load_avg_start=[0.5, 0.25, 0.125],
        load_avg_end=[1.5, 1.0, 0.75],
        cpu_governor="performance",
        cpu_freq_current_hz=3.1e9,
        cpu_freq_min_hz=1.5e9,
        cpu_freq_max_hz=3.5e9,
        data_free_bytes=123_400_000_000,
        data_total_bytes=500_000_000_000,
        memory_total_bytes=16_000_000_000,
        python_sys_flags={"optimize": 1, "hash_randomization": 1, "dev_mode": 0},
    )
    rows = dict(format_rows(env))
    assert all(isinstance(v, str) for v in rows.values())
    assert rows["Load average (1/5/15 min)"] == "start 0.50 / 0.25 / 0.12, end 1.50 / 1.00 / 0.75"
    assert rows["CPU frequency"] == "governor performance; 3.10 GHz (min 1.50 GHz, max 3.50 GHz)"
    assert rows["Data directory"].endswith("114.9 GB free of 465.7 GB")  # binary units, as the reference
    assert rows["Memory"] == "14.9 GB"
    assert rows["Python"].endswith("sys.flags optimize=1")  # defaults are not listed
    assert rows["Engine libraries"] == "rocksdict 0.3.29"
    assert rows["Plan"].endswith(f"(sha256 {env['plan_sha256']})")


def test_the_command_is_what_was_typed_not_the_module_path(tmp_path: Path) -> None:
    """Issue 39: ``python -m asyncbench`` put ``sys.argv[0]``, the path of ``__main__.py``,
    in the report's Command line; a person typed ``python -m asyncbench``."""
    main_py = str(Path(asyncbench.__file__).parent / "__main__.py")
    env = collect([main_py, "plan.toml", "--engine", "a b"], None, tmp_path, {}, repo=tmp_path)
    assert env["command"] == "python -m asyncbench plan.toml --engine 'a b'"
    assert env["argv"][0] == main_py  # the record keeps the raw argv
    env = collect(["/usr/local/bin/asyncbench", "plan.toml"], None, tmp_path, {}, repo=tmp_path)
    assert env["command"] == "asyncbench plan.toml"


def test_an_earlier_results_command_row_reads_as_typed(tmp_path: Path) -> None:
    """A result recorded before the fix kept ``__main__.py``'s path in ``command``; its
    report, re-rendered, shows the typed command from the recorded argv."""
    main_py = str(Path(asyncbench.__file__).parent / "__main__.py")
    env = collect([main_py, "plan.toml"], None, tmp_path, {}, repo=tmp_path)
    env["command"] = f"{main_py} plan.toml"  # as an earlier version recorded it
    rows = dict(provenance.format_rows(env))
    assert rows["Command"] == "python -m asyncbench plan.toml"
