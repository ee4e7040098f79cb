"""The console's closing table of a ``--repeat`` run (issue 22, item 3): each repeat is
labelled as it runs, and the run ends with one table per engine, median and spread per
phase, unstable phases marked with one legend line, in 80 columns."""

from __future__ import annotations

import copy

from conftest import ROOT

from asyncbench.cli.repeat_summary import repeat_summary
from asyncbench.result import RunResult

FIXTURE = ROOT / "tests" / "fixtures" / "result-sample.json"
QUICK = str(ROOT / "benchmarks" / "quick.toml")

GOLDEN = """\
== rocksdb · median of 3 repeats
  phase                                                        median   spread
  insert profiles                                            63_541/s   ±14.4% *
  pre-read stabilization                                      0.024 s    ±1.0%
  read by user id                                           478_340/s    ±1.0%
  lookup by email                                           244_346/s   ±14.4% *
  scan country/status index                                  42_895/s    ±1.0%
  query country/status                                       15_031/s    ±1.0%
  scan created-at index                                      21_588/s   ±14.4% *
  query created-at range                                      6_165/s    ±1.0%
  scan top reputation index                                  23_656/s    ±1.0%
  query top reputation                                        5_984/s   ±14.4% *
  update profiles                                            17_971/s    ±1.0%
  post-update stabilization                                   0.030 s    ±1.0%
  post-update read by user id                               220_047/s   ±14.4% *
  post-update lookup by email                               192_094/s    ±1.0%
  post-update scan country/status index                      48_640/s    ±1.0%
  post-update query country/status                           17_171/s   ±14.4% *
  post-update scan top reputation index                      19_399/s    ±1.0%
  post-update query top reputation                            5_847/s    ±1.0%
  settle                                                      0.004 s   ±12.0%
  reopen                                                      0.102 s    ±1.0%
  final (verify)                                              0.004 s    ±1.0%
* unstable: throughput spread (± half the range) over 10% of the median
"""


def _repeated(factors: list[float]) -> RunResult:
    """The sample's rocksdb run repeated: every third phase scaled by ``factors`` (a spread
    of 14.4 %: unstable), the others by 1 %, 2 %, ... (stable)."""
    run = RunResult.from_json(FIXTURE.read_bytes())
    base = [e for e in run.engines if e.engine == "rocksdb"]
    run.engines = []
    for r, f in enumerate(factors):
        for e in base:
            c = copy.deepcopy(e)
            c.repeat = r
            for p in c.phases:
                p.seconds = p.seconds * (f if p.index % 3 == 0 else 1 + r * 0.01)
            run.engines.append(c)
    return run


def test_golden_repeat_summary_at_80_columns() -> None:
    lines = repeat_summary(_repeated([1.0, 1.04, 0.8]))
    assert "\n".join(lines)[1:] + "\n" == GOLDEN
    assert max(len(line) for line in lines) <= 80
    assert sum("unstable" in line for line in lines) == 1  # one legend line, not one per phase


def test_no_summary_without_repeats() -> None:
    assert repeat_summary(_repeated([1.0])) == []


def test_a_repeated_run_labels_each_repeat_and_ends_with_the_table(run_cli) -> None:
    code, _, out = run_cli(QUICK, "--engine", "memory", "--profiles", "1k", "--repeat", "2", "--no-isolate")
    assert code == 0, out
    lines = out.splitlines()
    assert lines.index("-- repeat 1/2") < lines.index("-- repeat 2/2") < lines.index("== memory · median of 2 repeats")
    table = lines[lines.index("== memory · median of 2 repeats") :]
    assert table[1].split() == ["phase", "median", "spread"]
    assert any(line.startswith("  read by user id ") and line.rstrip(" *").endswith("%") for line in table)
    assert [line for line in lines if len(line) > 80 and "/tmp" not in line] == []
