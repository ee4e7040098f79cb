"""``--no-charts`` (``run.charts = false``): a run that writes its JSON, Markdown and HTML
without drawing the charts (seconds a run, for a gate that reads only the verdict), says so
in its report, and leaves them to ``report``, which draws them from the JSON later."""

from __future__ import annotations

from pathlib import Path

from conftest import ROOT

from asyncbench.cli.main import main
from asyncbench.fs import ownership

QUICK = str(ROOT / "benchmarks" / "quick.toml")


def _run(tmp_path: Path, *args: str) -> int:
    return main([QUICK, "--engine", "memory", "--profiles", "1k", "--no-isolate", "--no-progress", "--quiet",
                 "--output", str(tmp_path / "out"), "--data", str(tmp_path / "data"), *args])  # fmt: skip


def _folder(tmp_path: Path) -> Path:
    (folder,) = (tmp_path / "out").glob("profiles-1000-p1")
    return folder


def test_no_charts_writes_the_reports_without_charts_and_report_draws_them_later(tmp_path: Path, monkeypatch) -> None:
    assert _run(tmp_path, "--no-charts") == 0
    folder = _folder(tmp_path)
    assert not list(folder.glob("*.svg"))
    (md,) = folder.glob("asyncbench-*.md")
    (result,) = folder.glob("asyncbench-*.json")
    text = md.read_text()
    assert "![" not in text
    assert f"Charts not drawn (--no-charts): `asyncbench report {result.name}` draws them." in text
    (page,) = folder.glob("asyncbench-*.html")
    assert "data:image/svg+xml" not in page.read_text() and "Charts not drawn" in page.read_text()

    monkeypatch.setattr(ownership, "_created", set())  # as a fresh process
    assert main(["report", str(result)]) == 0
    svgs = list(folder.glob("*.svg"))
    assert len(svgs) >= 5
    text = md.read_text()
    assert "Charts not drawn" not in text and text.count("![") == len(svgs)


def test_the_plan_key_turns_them_off_and_the_flag_back_on(tmp_path: Path) -> None:
    plan = tmp_path / "plan.toml"
    plan.write_text(Path(QUICK).read_text().replace("[run]\n", "[run]\ncharts = false\n", 1))
    main([str(plan), "--engine", "memory", "--profiles", "1k", "--no-isolate", "--no-progress", "--quiet",
          "--output", str(tmp_path / "off" / "out"), "--data", str(tmp_path / "off" / "data")])  # fmt: skip
    assert not list(_folder(tmp_path / "off").glob("*.svg"))
    main([str(plan), "--charts", "--engine", "memory", "--profiles", "1k", "--no-isolate", "--no-progress", "--quiet",
          "--output", str(tmp_path / "on" / "out"), "--data", str(tmp_path / "on" / "data")])  # fmt: skip
    assert list(_folder(tmp_path / "on").glob("*.svg"))


def test_update_latest_without_charts_is_refused_before_anything_is_made(tmp_path: Path, capsys) -> None:
    assert _run(tmp_path, "--no-charts", "--update-latest") == 2
    err = capsys.readouterr().err
    assert "--update-latest: copies the run's charts, which --no-charts (or run.charts = false) leaves undrawn" in err
    assert not (tmp_path / "out").exists() and not (tmp_path / "data").exists()


def test_a_charts_value_that_is_not_a_boolean_is_refused_naming_the_key(tmp_path: Path, capsys) -> None:
    plan = tmp_path / "plan.toml"
    plan.write_text(Path(QUICK).read_text().replace("[run]\n", '[run]\ncharts = "no"\n', 1))
    assert main([str(plan), "--output", str(tmp_path / "out"), "--data", str(tmp_path / "data")]) == 2
    err = capsys.readouterr().err
    assert "run.charts" in err and str(plan) in err
    assert not (tmp_path / "out").exists()
