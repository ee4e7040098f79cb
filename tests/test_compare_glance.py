"""``compare`` a person can trust at a glance (issue 39, item 2).

* Runs that measured different things (a target rate, P, K client processes, a reused
  store, the limit, the counts, an engine setting) are named, setting by setting, before
  any table.
* An engine's summary follows its phases' verdicts: every phase "n.s." or "same" gives no
  geometric mean with an interval that reads like a finding.
* A side with a single run: said, and a change beyond the threshold is not called faster
  or slower (no spread to test it against), nor a regression (exit 0).
"""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
from test_compare import READ, compare_json, sample, verdict, with_repeats, write

from asyncbench.cli.main import main
from asyncbench.rate import Arrivals
from asyncbench.result import OpenLoop


def _text(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    code = main(["compare", *args])
    return code, capsys.readouterr().out


def test_a_single_run_is_not_called_a_winner(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base = write(tmp_path, "a", sample())
    new = write(tmp_path, "b", with_repeats(sample(), "sqlite", [1.30]))
    code, doc = compare_json(capsys, str(base), str(new), "--engine", "sqlite")
    assert verdict(doc, "sqlite", "read by user id") == "one run" and code == 0
    code, text = _text(capsys, str(base), str(new), "--engine", "sqlite")
    assert "one run -23.1%" in text
    assert "1 phase: not called: a side has one run" in text or "phases: not called: a side has one run" in text
    flat = " ".join(text.split())
    assert "a side has a single run" in flat and "not called faster or slower" in flat


def test_differing_settings_are_named_before_the_tables(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a = with_repeats(sample(), "sqlite", [1.0, 1.01])
    b = copy.deepcopy(a)
    b.parallelism = 4
    for e in b.engines:
        if e.engine == "sqlite":
            e.phase_at(READ).open_loop = OpenLoop(rate=8_000.0, arrivals=Arrivals.UNIFORM)
            e.facts.settings[0].configured = "DELETE"  # journal_mode
    b.environment["argv"] = ["asyncbench", "plan.toml", "--reuse-data"]
    code, text = _text(capsys, str(write(tmp_path, "a", a)), str(write(tmp_path, "b", b)), "--engine", "sqlite")
    head = text.split("\n== ", 1)[0]
    flat = " ".join(head.split())
    assert "measured differently" in flat
    assert "parallelism: base 1; new 4" in flat
    assert "target rate: read by user id: base closed loop; new 8_000/s" in flat
    assert "reused store (--reuse-data): base no; new yes" in flat
    assert "sqlite journal_mode: base WAL; new DELETE" in flat
    code, doc = compare_json(capsys, str(tmp_path / "asyncbench-a.json"), str(tmp_path / "asyncbench-b.json"))
    assert any(d.startswith("sqlite journal_mode") for d in doc["differences"])


def test_the_summary_follows_the_phases_verdicts(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # medians 6% apart, repeats overlapping widely: every changed phase is n.s.
    base = write(tmp_path, "a", with_repeats(sample(), "sqlite", [0.80, 1.00, 1.25]))
    new = write(tmp_path, "b", with_repeats(sample(), "sqlite", [0.85, 1.06, 1.35]))
    code, text = _text(capsys, str(base), str(new), "--engine", "sqlite")
    tail = text.rsplit("geometric mean", 1)[-1]
    line = next(ln for ln in text.splitlines() if ln.strip().startswith("sqlite ") and "phases" in ln)
    assert "[" not in line, line  # no interval beside verdicts that found nothing
    assert "no significant change" in line, line
    assert tail
    code, doc = compare_json(capsys, str(base), str(new), "--engine", "sqlite")
    s = doc["engines"][0]
    assert s["verdict"] == "no significant change" and s["ci95_low"] is None


def test_the_stability_section_is_a_line_per_engine() -> None:
    """Issue 39 (report): 48 bullets, one per unstable phase, became one line per engine
    naming how many phases and the worst few."""
    from asyncbench.report.markdown_report import stability

    run = sample()
    engines = []
    for e in run.engines:
        for i, f in enumerate([1.0, 1.6, 0.7]):
            r = copy.deepcopy(e)
            r.repeat = i
            for p in r.phases:
                p.seconds *= f
            engines.append(r)
    run.engines, run.repeat = engines, 3
    run.environment["noise_advice"] = ["load average 3.2 on 2 CPUs: close other programs"]
    lines = stability(run)
    names = sorted({e.engine for e in run.engines})
    assert len(lines) == len(names) + 1, lines
    for name, line in zip(names, sorted(lines[: len(names)]), strict=True):
        assert line.startswith(f"- **{name}**: ") and " of " in line and "worst:" in line, line
        assert line.count("±") <= 3, line


def test_the_markdown_counts_single_run_phases_apart(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base = write(tmp_path, "a", sample())
    new = write(tmp_path, "b", with_repeats(sample(), "sqlite", [1.30]))
    _code, text = _text(capsys, str(base), str(new), "--engine", "sqlite", "--markdown")
    assert "1 one run (not called)" in text, text
