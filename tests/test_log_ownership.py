"""``--log-file`` appends only to a log asyncbench started, never inside a store directory.

Issue 23 item 7: the log was appended to any empty file or to a file whose first line
looked like one of its events (an empty RocksDB WAL and another store's LOCK were
appended to). A log now starts with an identifying record (format, random id, a check
over them) that an append verifies, before the run (exit 2) and again on the open file."""

from __future__ import annotations

import os
from pathlib import Path

import orjson
import pytest
from conftest import ROOT

from asyncbench.cli.main import main
from asyncbench.fs.ownership import is_own_log_head, log_first_record
from asyncbench.run.observe.logs import LogFile

QUICK = str(ROOT / "benchmarks" / "quick.toml")
OLD_STYLE_FIRST_LINE = b'{"event":"run_start","timestamp":"2026-01-01T00:00:00Z"}\n'


def _run(tmp_path: Path, log: Path, *extra: str) -> int:
    args = [QUICK, "--engine", "memory", "--profiles", "1k", "--no-isolate", "--no-progress", "--yes"]
    return main(
        [
            *args,
            "--output",
            str(tmp_path / "out"),
            "--data",
            str(tmp_path / "data"),
            "--log-file",
            str(log),
            *extra,
        ]
    )


def _forged() -> bytes:
    doc = orjson.loads(log_first_record())
    doc["id"] = "0" * 32  # the check no longer matches
    return orjson.dumps(doc) + b"\n"


@pytest.mark.parametrize(
    "content",
    [b"", OLD_STYLE_FIRST_LINE, OLD_STYLE_FIRST_LINE + b"my own lines\n", b"\x00" * 32, _forged()],
    ids=["empty", "looks-like-an-event", "event-then-user-lines", "binary", "forged-record"],
)
def test_a_file_asyncbench_did_not_start_is_not_appended_to(tmp_path: Path, capsys, content: bytes) -> None:
    log = tmp_path / "mine.log"
    log.write_bytes(content)
    assert _run(tmp_path, log) == 2
    err = capsys.readouterr().err
    assert f"--log-file: {log} exists and is not an asyncbench log" in err
    assert log.read_bytes() == content
    assert not (tmp_path / "out").exists() and not (tmp_path / "data").exists()


def _other_store(tmp_path: Path) -> Path:
    """A RocksDB store of another run (another profile count) with its empty WAL and LOCK."""
    other = tmp_path / "data" / "profiles-5000" / "rocksdb"
    (other / "profiles").mkdir(parents=True)
    (other / ".asyncbench-store").write_text('{"format": 1, "engine": "rocksdb", "stores": ["profiles"]}\n')
    for name in ("000012.log", "LOCK"):
        (other / "profiles" / name).write_bytes(b"")
    return other


@pytest.mark.parametrize("name", ["profiles/000012.log", "profiles/LOCK", "profiles/new.log", "new.log"])
def test_no_log_inside_any_store_directory(tmp_path: Path, capsys, name: str) -> None:
    other = _other_store(tmp_path)
    before = {p: p.read_bytes() for p in other.rglob("*") if p.is_file()}
    log = other / name
    assert _run(tmp_path, log) == 2
    err = capsys.readouterr().err
    assert f"is inside the engine store directory {other}" in err
    assert {p: p.read_bytes() for p in other.rglob("*") if p.is_file()} == before
    assert not (tmp_path / "out").exists()


def test_a_log_asyncbench_started_is_appended_to_and_keeps_its_first_record(tmp_path: Path) -> None:
    log = tmp_path / "run.log"
    assert _run(tmp_path, log) == 0
    first = log.read_bytes().split(b"\n", 1)[0] + b"\n"
    assert is_own_log_head(first)
    assert _run(tmp_path, log) == 0
    lines = log.read_bytes().splitlines()
    assert lines[0] + b"\n" == first
    assert sum(b'"event":"run_start"' in line for line in lines) == 2
    assert sum(b'"event":"log_start"' in line for line in lines) == 1


def test_the_open_itself_refuses_a_file_that_changed_after_the_check(tmp_path: Path) -> None:
    log = tmp_path / "run.log"
    log.write_bytes(b"")  # appeared between the path check and the open
    with pytest.raises(OSError, match="not a log asyncbench started"):
        LogFile(log)
    assert log.read_bytes() == b""
    assert os.listdir(tmp_path) == ["run.log"]
