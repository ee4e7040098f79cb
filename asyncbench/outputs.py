"""Where a run's files go and how they are written (atomically, after every engine)."""

from __future__ import annotations

from pathlib import Path

from asyncbench import report
from asyncbench.result import RunResult, write_atomic


def result_dir(output: Path, profiles: int) -> Path:
    return output / f"profiles-{profiles}"


def write_run(run: RunResult, directory: Path, stamp: str) -> tuple[Path, Path]:
    """Write ``asyncbench-<stamp>.json`` and ``.md`` (and charts, when available)."""
    directory.mkdir(parents=True, exist_ok=True)
    json_path = directory / f"asyncbench-{stamp}.json"
    md_path = directory / f"asyncbench-{stamp}.md"
    write_atomic(json_path, run.to_json())
    charts = render_charts(run, directory, stamp)
    write_atomic(md_path, report.render(run, charts).encode())
    return json_path, md_path


def render_charts(run: RunResult, directory: Path, stamp: str) -> list[tuple[str, str]]:
    """(title, relative path) of each chart written; none until the charts module is present."""
    try:
        from asyncbench import charts
    except ImportError:
        return []
    return charts.write_charts(run, directory, stamp)
