"""Issue 52 item 5: a phase name of ~200+ bytes ran the whole run, then could not save its
charts (``[Errno 36] File name too long``, exit 1), and ``report`` of that result failed
the same way; chart file names carried ``<>"'#``. Names are bounded when the plan is read,
and a chart's file name is made from a safe slug of the phase name."""

from __future__ import annotations

import re
from pathlib import Path

from conftest import ROOT

from asyncbench.cli.main import main
from asyncbench.fs import ownership
from asyncbench.limits import MAX_NAME_CHARS
from asyncbench.report.charts import MAX_SLUG_CHARS, phase_slug

QUICK = ROOT / "benchmarks" / "quick.toml"
ODD = "a <b> \\\"c\\\" 'd' #e/f@g"  # as written in TOML: a <b> "c" 'd' #e/f@g


def _plan(tmp_path: Path, name: str) -> Path:
    """quick.toml with its first read phase named ``name`` and charted over time (a chart
    per phase, named after it)."""
    named = f'kind = "read_by_id"\nname = "{name}"\nover_time = true'
    text = QUICK.read_text().replace('kind = "read_by_id"', named, 1)
    plan = tmp_path / "plan.toml"
    plan.write_text(text)
    return plan


def test_a_phase_name_past_the_bound_is_refused_before_anything_runs(tmp_path: Path, capfd) -> None:
    plan = _plan(tmp_path, "x" * 250)
    out, data = tmp_path / "out", tmp_path / "data"
    assert main([str(plan), "--engine", "memory", "--output", str(out), "--data", str(data), "--yes"]) == 2
    err = capfd.readouterr().err
    assert str(plan) in err and "name" in err and f"250 characters, at most {MAX_NAME_CHARS}" in err, err
    assert not out.exists() and not data.exists()


def test_a_slug_is_safe_and_bounded_whatever_the_name() -> None:
    for name in ('a <b> "c" \'d\' #e/f@g', "x" * 5000, "../../etc", "...", "\u00e9t\u00e9 \u2603", "a\nb\0c"):
        slug = phase_slug(name)
        assert re.fullmatch(r"[A-Za-z0-9_.()+-]+", slug) and not slug.startswith("."), (name, slug)
        assert len(slug) <= MAX_SLUG_CHARS
    assert phase_slug("post-update scan country/status index") == "post-update-scan-country-status-index"
    assert phase_slug("read by user id (2)") == "read-by-user-id-(2)"


def test_charts_of_an_odd_phase_name_have_safe_file_names_and_report_rewrites_them(tmp_path: Path, monkeypatch) -> None:
    plan = _plan(tmp_path, ODD)
    out = tmp_path / "out"
    monkeypatch.setattr(ownership, "_created", set())
    args = [str(plan), "--engine", "memory", "--profiles", "1k", "--no-isolate", "--no-progress", "--yes"]
    assert main([*args, "--output", str(out), "--data", str(tmp_path / "data")]) == 0
    svgs = sorted(p.name for p in out.rglob("*.svg"))
    assert any("a-b-c-d-e-f-g" in n for n in svgs), svgs
    assert all(re.fullmatch(r"[A-Za-z0-9_.()+-]+\.svg", n) for n in svgs), svgs
    (result,) = out.rglob("asyncbench-*.json")
    monkeypatch.setattr(ownership, "_created", set())
    assert main(["report", str(result)]) == 0
