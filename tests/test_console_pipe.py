"""``asyncbench run PLAN | head``: the reader closing the console costs the run its console,
never its work (it ended with a BrokenPipeError traceback, exit 1 and no result)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from conftest import ROOT


def test_a_run_whose_console_reader_goes_away_still_writes_its_result(tmp_path: Path) -> None:
    cmd = [sys.executable, "-m", "asyncbench", str(ROOT / "benchmarks" / "quick.toml"), "--profiles", "2k",
           "--engine", "memory", "--yes", "--output", str(tmp_path / "out"), "--data", str(tmp_path / "data")]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=tmp_path)
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.readline()
    proc.stdout.close()  # as `| head -1` does
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=300) == 0, err
    assert "Traceback" not in err and "BrokenPipe" not in err, err
    (result,) = (tmp_path / "out").glob("profiles-*/asyncbench-*.json")
    assert result.with_suffix(".md").exists()


def test_the_guard_passes_writes_through_until_the_pipe_breaks() -> None:
    import io

    from asyncbench.cli.console_pipe import PipeSafeStream

    class Closing(io.StringIO):
        def write(self, text: str) -> int:
            if "break" in text:
                raise BrokenPipeError(32, "Broken pipe")
            return super().write(text)

    inner = Closing()
    guarded = PipeSafeStream(inner)  # type: ignore[arg-type]
    assert guarded.write("one\n") == 4 and inner.getvalue() == "one\n"
    assert guarded.write("break\n") == 6 and guarded.broken
    guarded.write("two\n")
    guarded.flush()
    assert inner.getvalue() == "one\n"
