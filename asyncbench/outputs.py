"""Where a run's files go and how they are written (atomically, after every engine).

Every file goes through :func:`asyncbench.ownership.write_atomic`: a run creates its own
files and replaces only those; ``report`` replaces a Markdown report or chart beside the
JSON only if it is provably an asyncbench output (its marker), and never the JSON.
"""

from __future__ import annotations

from pathlib import Path

from asyncbench import report
from asyncbench.ownership import is_own_report, write_atomic
from asyncbench.paths import result_dir  # noqa: F401  (re-exported: where a level's outputs go)
from asyncbench.result import RunResult


def write_run(
    run: RunResult, directory: Path, stamp: str, charts: bool = True, write_json: bool = True
) -> tuple[Path, Path]:
    """Write ``asyncbench-<stamp>.json`` and ``.md``, with the charts unless ``charts`` is off.

    The runner saves after every engine without charts (matplotlib would load into the
    benchmark process between engines and inflate the next engine's memory), then once
    more with charts when the run ends or is interrupted.
    """
    directory.mkdir(parents=True, exist_ok=True)
    json_path = directory / f"asyncbench-{stamp}.json"
    md_path = directory / f"asyncbench-{stamp}.md"
    if write_json:  # `report` re-renders from a JSON it must never modify
        write_atomic(json_path, run.to_json())
    chart_files = render_charts(run, directory, stamp) if charts else []
    write_atomic(md_path, report.render(run, chart_files).encode(), own=is_own_report)
    return json_path, md_path


def render_charts(run: RunResult, directory: Path, stamp: str) -> list[tuple[str, str]]:
    """(title, relative path) of each chart written.

    Imported here, not at module top, so matplotlib loads only when charts are drawn.
    """
    from asyncbench import charts

    return charts.write_charts(run, directory, stamp)
