"""Golden console output at 80 columns (issue 22, "Done when"): a run and a ``compare``.
(The ``--repeat`` closing table has its golden in test_repeat_summary.)

Goldens must not depend on timing. ``compare`` renders fixed, hand-made results, so its
golden is exact, alignment included. The run is real (the memory engine, in process, no
terminal): what is deterministic in it stays as is (phase names and order, checksums,
the header, the verdict, which figures are shown where); every number that depends on
the clock or the machine is masked to ``#``, paths to ``<tmp>`` and the stamp to
``<stamp>``, and the width is checked on the raw output.

``ASYNCBENCH_UPDATE_GOLDEN=1 pytest tests/test_console_golden.py`` rewrites the files.
"""

from __future__ import annotations

import copy
import os
import re
from pathlib import Path

import pytest
from conftest import ROOT

from asyncbench.cli.main import main
from asyncbench.report.compare.inputs import load_side
from asyncbench.report.compare.rows import compare_sides, one_sided
from asyncbench.report.compare.text import render_text
from asyncbench.result import RunResult

GOLDEN = Path(__file__).parent / "golden"
FIXTURE = Path(__file__).parent / "fixtures" / "result-sample.json"


def check_golden(name: str, text: str) -> None:
    path = GOLDEN / name
    if os.environ.get("ASYNCBENCH_UPDATE_GOLDEN"):
        path.parent.mkdir(exist_ok=True)
        path.write_text(text)
    assert text == path.read_text(), f"differs from {path} (ASYNCBENCH_UPDATE_GOLDEN=1 rewrites it)"


# -- a run ------------------------------------------------------------------------------------

#: Numbers the clock or the machine decides: times, rates, latencies, sizes, load.
NUMBER = re.compile(r"(?<![0-9A-Za-z])\d[\d_]*(\.\d+)?(µs|ms|s(?![a-z]))?")  # a latency's unit varies too
STAMP = re.compile(r"\d{8}T\d{6}\.\d{3}Z")


def mask(line: str, tmp: str) -> str:
    """``line`` with its clock- and machine-made numbers masked and, since their widths
    vary, runs of spaces after the indent made one (alignment is checked elsewhere, on
    fixed figures: test_console_width)."""
    line = STAMP.sub("<stamp>", line.replace(tmp, "<tmp>").replace(str(ROOT), "<repo>"))
    checksum = ""
    if re.search(r" [0-9A-F]{16}$", line):  # a phase line's checksum stays as it is
        line, checksum = line[:-16], line[-16:]
    line = NUMBER.sub("#", line)
    indent = line[: len(line) - len(line.lstrip(" "))]
    return indent + re.sub(" +", " ", line.lstrip(" ")) + checksum


def test_golden_run_console(tmp_path: Path, capfd: pytest.CaptureFixture[str], monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from asyncbench.cli import run as run_command
    from asyncbench.run.observe.progress import NO_PROGRESS_ENV
    from asyncbench.run.observe.status import QUIET_ENV

    monkeypatch.setenv("COLUMNS", "80")
    # the golden must not depend on the machine's load (tests/test_load_warning.py has the warning)
    monkeypatch.setattr(run_command, "loaded_machine_warning", lambda snap, load_at_start: None)
    for name in (NO_PROGRESS_ENV, QUIET_ENV):  # the run sets them; restored after the test
        monkeypatch.setenv(name, "1")
    monkeypatch.chdir(tmp_path)
    code = main(
        [
            str(ROOT / "benchmarks" / "quick.toml"),
            "--engine", "memory",
            "--profiles", "2k",
            "--no-isolate",
            "--no-progress",
            "--quiet",
            "--csv",
            "--output", "out",
            "--data", "data",
        ]
    )  # fmt: skip
    out = capfd.readouterr().out
    assert code == 0, out
    lines = out.splitlines()
    assert [line for line in lines if len(line) > 80] == []
    # the headline's limit lines (last) depend on the machine's load and CPU: test_headline has them
    limits = next((i for i, line in enumerate(lines) if line.startswith("  limit, ")), len(lines))
    lines = lines[:limits]
    kept = [
        mask(line, str(tmp_path))
        for line in lines
        if not line.startswith("asyncbench: WARNING")  # compiled kernels missing: the machine's
    ]
    check_golden("run-80.txt", "\n".join(kept) + "\n")


# -- compare ----------------------------------------------------------------------------------


def _scaled(
    run: RunResult, factors: dict[str, list[float]], drop: set[str] = frozenset(), vary: float = 0.0
) -> RunResult:
    """``run`` with each engine of ``factors`` repeated once per factor, every phase taking
    ``factor`` times as long (slower: ops/s divided by it), and ``vary`` more or less by
    phase; engines in ``drop`` left out."""
    out = copy.deepcopy(run)
    engines = []
    for e in out.engines:
        if e.engine in drop:
            continue
        for i, f in enumerate(factors.get(e.engine, [1.0])):
            r = copy.deepcopy(e)
            r.repeat = i
            for p in r.phases:
                p.seconds *= f * (1.0 + vary * (p.index % 3 - 1))  # phases differ a little
            engines.append(r)
    out.engines = engines
    out.repeat = max(len(v) for v in factors.values())
    return out


def _compare_text(tmp_path: Path, columns: int) -> str:
    sample = RunResult.from_json(FIXTURE.read_bytes())
    base = _scaled(sample, {"sqlite": [1.0, 1.02, 0.98], "memory": [1.0, 1.01, 0.99]}, drop={"rocksdb"})
    new = _scaled(sample, {"sqlite": [1.2, 1.22, 1.18], "rocksdb": [1.0]}, drop={"memory"}, vary=0.1)
    # a phase the new side's sqlite did not complete: named, not compared
    sqlite = [e for e in new.engines if e.engine == "sqlite"]
    for e in sqlite:
        e.phases = [p for p in e.phases if p.name != "query top reputation"]
    (tmp_path / "a").mkdir(exist_ok=True)
    (tmp_path / "b").mkdir(exist_ok=True)
    (tmp_path / "a" / "asyncbench-a.json").write_bytes(base.to_json())
    (tmp_path / "b" / "asyncbench-b.json").write_bytes(new.to_json())
    b, n = load_side(str(tmp_path / "a"), None), load_side(str(tmp_path / "b"), None)
    return render_text(compare_sides(b, n, 0.05), [], 0.05, one_sided(b, n), width=columns)


def test_golden_compare_console(tmp_path: Path) -> None:
    text = _compare_text(tmp_path, 80)
    assert max(len(line) for line in text.splitlines()) <= 80
    check_golden("compare-80.txt", text + "\n")


def test_compare_names_what_one_side_lacks_and_ends_with_a_line_per_engine(tmp_path: Path) -> None:
    lines = _compare_text(tmp_path, 80).splitlines()
    assert "only in base, not compared: engine memory" in lines
    assert "only in new, not compared: engine rocksdb" in lines
    assert "only in base, not compared: engine's phase sqlite query top reputation" in lines
    last = lines[-1].split()
    assert last[0] == "sqlite" and last[1].endswith("x")
    assert float(last[1][:-1]) == pytest.approx(1 / 1.2, rel=0.02)  # the geometric mean of the ratios
    low, high = float(last[2].strip("[,")), float(last[3].strip("]"))
    assert low < float(last[1][:-1]) < high


def test_compare_uses_a_wider_terminal(tmp_path: Path) -> None:
    wide = _compare_text(tmp_path, 120).splitlines()
    assert max(len(line) for line in wide) <= 120
    assert any(len(line) > 80 for line in wide)  # names are cut less, not padded to 80
