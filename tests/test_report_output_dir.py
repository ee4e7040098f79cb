"""``report --output DIR`` and the report command's own usage on a bad flag (issue 39)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from asyncbench.cli.main import main

FIXTURE = Path(__file__).parent / "fixtures" / "result-sample.json"


def _result(tmp_path: Path) -> Path:
    src = tmp_path / "results"
    src.mkdir()
    path = src / "asyncbench-20260101T000000.000Z.json"
    shutil.copyfile(FIXTURE, path)
    return path


def test_report_writes_into_the_output_directory(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _result(tmp_path)
    out = tmp_path / "rendered" / "here"
    code = main(["report", str(path), "--output", str(out)])
    assert code in (0, 1), capsys.readouterr().err
    assert (out / "asyncbench-20260101T000000.000Z.md").is_file()
    assert list(out.glob("asyncbench-20260101T000000.000Z-*.svg"))
    assert sorted(p.name for p in path.parent.iterdir()) == [path.name]  # nothing beside the JSON
    assert f"report: {out / 'asyncbench-20260101T000000.000Z.md'}" in capsys.readouterr().out


def test_an_output_that_is_a_file_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _result(tmp_path)
    blocker = tmp_path / "file"
    blocker.write_text("mine")
    assert main(["report", str(path), "--output", str(blocker)]) == 2
    err = capsys.readouterr().err
    assert "command line: --output" in err and "not a directory" in err
    assert blocker.read_text() == "mine"
    assert sorted(p.name for p in path.parent.iterdir()) == [path.name]


def test_a_bad_flag_prints_the_report_usage(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["report", str(tmp_path / "x.json"), "--bogus"])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert "usage: python -m asyncbench report" in err and "unrecognized arguments: --bogus" in err
    assert "PLAN.toml" not in err  # not the top-level (run) usage
