"""Plan text (run name, phase names, paths, settings, errors) reaches the Markdown report
as text: no heading, HTML, link, math or extra table cell can come out of it.

Issue item 19. The report is checked structurally: every table row has as many cells as
its header, no raw HTML tag survives, and the title stays one heading line."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from asyncbench.report import markdown as md

#: A control character (the newline this name once carried) is refused by the plan's
#: validation now (test_strict_inputs); the Markdown hazards stay.
HOSTILE_NAME = "x | <script>alert(1)</script> # Owned [link](http://evil) *bold* $math$ `tick` &amp;"
PHASE_NAME = "read | by <b>id</b> ## injected"

#: TOML basic strings take JSON's escapes, so json.dumps quotes any name safely.
PLAN = f"""
[run]
name = {json.dumps(HOSTILE_NAME)}
profiles = 500
[[phase]]
kind = "insert"
name = {json.dumps("insert | all <i>of</i> them")}
[[phase]]
kind = "read_by_id"
name = {json.dumps(PHASE_NAME)}
[[phase]]
kind = "verify"
"""


def _cells(row: str) -> int:
    """Cells of a GitHub table row: split on | not escaped by a backslash."""
    return len(re.split(r"(?<!\\)\|", row.strip().strip("|")))


def _check_tables(text: str) -> None:
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if line.startswith("| ---") or line.startswith("| ---:"):
            header = _cells(lines[i - 1])
            j = i + 1
            while j < len(lines) and lines[j].startswith("|"):
                assert _cells(lines[j]) == header, f"row {lines[j]!r} does not match header {lines[i - 1]!r}"
                j += 1


@pytest.fixture
def report_text(tmp_path: Path, run_cli) -> str:
    plan = tmp_path / "hostile.toml"
    plan.write_text(PLAN)
    code, _, output = run_cli(str(plan), "--engine", "memory,sqlite", "--no-isolate")
    assert code == 0, output
    (md_file,) = (tmp_path / "out" / "profiles-500-p1").glob("asyncbench-*.md")
    return md_file.read_text()


def test_plan_text_cannot_break_the_report(report_text: str) -> None:
    lines = report_text.splitlines()
    headings = [line for line in lines if line.startswith("#")]
    assert headings[0].startswith("# Benchmark ")  # still the title line
    (byline,) = [line for line in lines if line.startswith("asyncbench · ")]  # the run name's line
    assert "Owned" in byline
    assert not any(h.startswith("# Owned") or h.startswith("## injected") for h in headings)
    assert "<script>" not in report_text and "<b>" not in report_text and "<i>" not in report_text
    assert not re.search(r"(?<!\\)\]\(http://evil\)", report_text)  # no unescaped ]( : no link
    _check_tables(report_text)


def test_escaped_text_is_still_the_plan_text(report_text: str) -> None:
    """Unescaping the backslashes gives the names back (newlines as spaces)."""
    unescaped = re.sub(r"\\(.)", r"\1", report_text)
    assert PHASE_NAME.replace("\n", " ") in unescaped
    assert HOSTILE_NAME.replace("\n", " ") in unescaped


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("plain text", "plain text"),
        ("a|b", "a\\|b"),
        ("<img src=x>", "\\<img src=x\\>"),
        ("- item", "\\- item"),
        ("1. item", "1\\. item"),
        ("two\nlines", "two lines"),
        ("$x$", "\\$x\\$"),
        # issue 39: numbers and words read raw: no escape where Markdown has nothing to take
        ("0.2.0", "0.2.0"),
        ("5_000", "5_000"),
        ("Linux 6.1 (x86_64)", "Linux 6.1 (x86_64)"),
        ("23.5 GB", "23.5 GB"),
        ("_emph_ and a_b", "\\_emph\\_ and a_b"),
        ("2) item", "2\\) item"),
        ("---", "--\\-"),
        ("asyncio + uvloop, 21:36:41+00:00", "asyncio + uvloop, 21:36:41+00:00"),
        ("+ item", "\\+ item"),
    ],
)
def test_text_escaping(value: str, expected: str) -> None:
    assert md.text(value) == expected


@pytest.mark.parametrize(
    ("value", "expected"),
    [("a.toml", "`a.toml`"), ("a`b", "``a`b``"), ("`x", "`` `x ``"), ("a|b", "`a\\|b`")],
)
def test_code_spans_survive_backticks_and_pipes(value: str, expected: str) -> None:
    assert md.code(value) == expected
