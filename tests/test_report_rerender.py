"""``report`` re-renders a result the tool wrote, as often as asked, all files or none.

Issue 22, item 2: the second ``python -m asyncbench report RESULT.json`` (and the first, on
a run's own output) failed with "...-latency-percentiles.svg exists and is not an output
of this run" after rewriting 6 of the 9 SVGs, leaving report and charts out of step."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest
from conftest import ROOT, copy_result_set, run_result

from asyncbench.cli.main import main
from asyncbench.fs import ledger, ownership

QUICK = str(ROOT / "benchmarks" / "quick.toml")


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The JSON of a real run (with latency, so every kind of chart is drawn)."""
    tmp = tmp_path_factory.mktemp("run")
    return run_result(tmp, QUICK, "--engine", "memory,sqlite", "--profiles", "2k", "--no-isolate", profiles=2_000, charts=True)


def _outputs(result: Path) -> dict[str, tuple[bytes, int]]:
    """Every file of the result's set but the JSON: name -> (bytes, inode)."""
    stem = result.stem
    return {
        f.name: (f.read_bytes(), f.stat().st_ino)
        for f in sorted(result.parent.iterdir())
        if f.name.startswith(stem) and f.suffix in (".md", ".svg")
    }


def _report(result: Path, monkeypatch: pytest.MonkeyPatch) -> int:
    monkeypatch.setattr(ownership, "_created", set())  # as a fresh process: nothing created here
    return main(["report", str(result)])


def _leftovers(directory: Path) -> list[str]:
    return sorted(f.name for f in directory.iterdir() if f.name.startswith(".") and f.name != ledger.LEDGER)


def test_report_rerenders_its_own_output_twice(written: Path, tmp_path: Path, monkeypatch) -> None:
    result = copy_result_set(written, tmp_path)
    before = _outputs(result)
    svgs = [n for n in before if n.endswith(".svg")]
    assert len(svgs) >= 9 and any("latency-percentiles" in n for n in svgs)  # every kind of chart
    json_before = result.read_bytes()

    assert _report(result, monkeypatch) == 0
    first = _outputs(result)
    assert _report(result, monkeypatch) == 0
    second = _outputs(result)

    assert first.keys() == second.keys() == before.keys()  # the same set, nothing left out
    for name in before:  # every file rewritten each time (a new inode), the same rendering
        assert before[name][1] != first[name][1] != second[name][1], name
        assert first[name][0] == second[name][0], name
    (md,) = [n for n in second if n.endswith(".md")]
    text = second[md][0].decode()
    assert all(f"({n})" in text for n in svgs)  # the report links every chart written
    assert result.read_bytes() == json_before
    assert _leftovers(tmp_path) == []


@pytest.mark.parametrize("fault", ["writing", "swapping"])
def test_a_fault_mid_report_leaves_the_old_set(written: Path, tmp_path: Path, monkeypatch, fault: str) -> None:
    result = copy_result_set(written, tmp_path)
    before = _outputs(result)
    calls = 0
    if fault == "writing":  # the disk fills while the new files are written beside the old
        real = ownership.tempfile.mkstemp

        def mkstemp(*args, **kwargs):  # type: ignore[no-untyped-def]
            nonlocal calls
            calls += 1
            if calls == 5:
                raise OSError(errno.ENOSPC, "No space left on device")
            return real(*args, **kwargs)

        monkeypatch.setattr(ownership.tempfile, "mkstemp", mkstemp)
    else:  # a rename fails after some files are already in place
        real_replace = os.replace

        def replace(src, dst):  # type: ignore[no-untyped-def]
            nonlocal calls
            if str(src).endswith(".tmp"):
                calls += 1
                if calls == 4:
                    raise OSError(errno.EIO, "Input/output error")
            return real_replace(src, dst)

        monkeypatch.setattr(ownership.os, "replace", replace)
    assert _report(result, monkeypatch) == 1
    assert calls >= 4
    assert _outputs(result) == before  # same bytes, same inodes: the old set, whole
    assert _leftovers(tmp_path) == []
