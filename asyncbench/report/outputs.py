"""Where a run's files go and how they are written (atomically, after every engine).

Every file goes through :func:`asyncbench.fs.ownership.write_atomic` or, for a result with
its report and charts, :func:`~asyncbench.fs.ownership.write_set` (all or none): a run
creates its own files and replaces only those; ``report`` replaces a Markdown report or
chart beside the JSON only if it is provably an asyncbench output (its marker, and the
directory's ledger: :mod:`asyncbench.fs.ledger`), and never the JSON.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from asyncbench.dirs.paths import result_dir as result_dir  # re-exported: where a level's outputs go
from asyncbench.fs.ownership import (
    Proof,
    is_own_html_report,
    is_own_report,
    is_own_result,
    is_own_svg,
    is_own_traceback,
    write_atomic,
    write_set,
)
from asyncbench.report import html_report, tracebacks
from asyncbench.report import markdown_report as report
from asyncbench.result import RunResult


def write_run(
    run: RunResult,
    directory: Path,
    stamp: str,
    charts: bool = True,
    write_json: bool = True,
    undrawn: bool = False,
) -> tuple[Path, Path]:
    """Write ``asyncbench-<stamp>.json``, ``.md`` and ``.html`` (the same report as one
    self-contained page, :mod:`asyncbench.report.html_report`), ``.traceback`` when an engine
    failed (:mod:`asyncbench.report.tracebacks`), with the charts unless ``charts`` is off:
    all drawn first, then put in place together (:func:`~asyncbench.fs.ownership.write_set`),
    so the report never links a chart of another rendering and a failure keeps the old set.

    The runner saves after every engine without charts (matplotlib would load into the
    benchmark process between engines and inflate the next engine's memory), then once
    more with charts when the run ends or is interrupted. ``undrawn``: the run was told not
    to draw them (``--no-charts``), and the report says so and how to draw them.
    """
    directory.mkdir(parents=True, exist_ok=True)
    json_path = directory / f"asyncbench-{stamp}.json"
    md_path = directory / f"asyncbench-{stamp}.md"
    files: list[tuple[Path, bytes, Proof | None]] = []
    if write_json:  # `report` re-renders from a JSON it must never modify
        files.append((json_path, run.to_json(), None))
    charts_drawn = chart_files(run, directory, stamp) if charts else []
    files += [(path, data, own) for _, path, data, own in charts_drawn]
    linked = [(title, path.name) for title, path, _, _ in charts_drawn]
    markdown = report.render(run, linked, undrawn=json_path.name if undrawn else None)
    files.append((md_path, markdown.encode(), is_own_report))
    svgs = {path.name: data for _, path, data, _ in charts_drawn}  # the page carries its charts
    page = html_report.render(markdown, report.title(run), svgs)
    files.append((html_path(md_path), page.encode(), is_own_html_report))
    traced = tracebacks.render(run)  # only when an engine failed: its whole traceback
    if traced is not None:
        files.append((tracebacks.traceback_path(md_path), traced.encode(), is_own_traceback))
    write_set(files)
    return json_path, md_path


def html_path(md_path: Path) -> Path:
    """The HTML report beside a Markdown one (same stamp, ``.html``)."""
    return md_path.with_suffix(".html")


def chart_files(run: RunResult, directory: Path, stamp: str) -> list[tuple[str, Path, bytes, Proof]]:
    """(title, path, SVG, ownership proof) of each chart, drawn in memory.

    Imported here, not at module top, so matplotlib loads only when charts are drawn.
    """
    from asyncbench.report import charts

    return charts.chart_files(run, directory, stamp)


def latest_files(output: Path, run_dirs: Sequence[Path]) -> list[tuple[Path, Callable[[Path], bool], str]]:
    """What ``--update-latest`` replaces: (path, ownership proof, kind) of ``latest.md``,
    every ``latest-<chart>.svg`` and each level's ``latest.json``, for the path checks
    (:func:`asyncbench.dirs.paths.check_run_paths`) to prove before anything runs."""
    from asyncbench.report.charts import CHARTS  # matplotlib loads only when latest charts are asked for

    files: list[tuple[Path, Callable[[Path], bool], str]] = [
        (output / "latest.md", is_own_report, "report"),
        (output / "latest.html", is_own_html_report, "report"),
    ]
    files += [(output / f"latest-{c.slug}.svg", is_own_svg(c.title), "chart") for c in CHARTS if c.latest]
    files += [(d / "latest.json", is_own_result, "result") for d in run_dirs]
    return files


def update_latest(run: RunResult, directory: Path, stamp: str, output: Path) -> Path:
    """Copy this run's charts to ``output/latest-<slug>.svg``, write ``output/latest.md``
    linking them and ``output/latest.html`` (the same report, charts embedded), and
    ``latest.json`` (the result) in the run's own ``profiles-N-pP`` folder, as the
    reference keeps one per level."""
    from asyncbench.report import charts

    output.mkdir(parents=True, exist_ok=True)
    write_atomic(directory / "latest.json", run.to_json(), own=is_own_result)
    linked = []
    svgs: dict[str, bytes] = {}
    for chart in (c for c in charts.CHARTS if c.latest):
        src = directory / charts.chart_file(stamp, chart.slug)
        if not src.exists():
            continue
        dest = f"latest-{chart.slug}.svg"
        svgs[dest] = src.read_bytes()
        write_atomic(output / dest, svgs[dest], own=is_own_svg(chart.title))
        linked.append((chart.title, dest))
    rel = directory.relative_to(output) if directory.is_relative_to(output) else directory
    md = report.render(run, linked)
    md += f"\nFull result: [`{rel}/asyncbench-{stamp}.json`]({rel}/asyncbench-{stamp}.json)\n"
    path = output / "latest.md"
    write_atomic(path, md.encode(), own=is_own_report)
    page = html_report.render(md, report.title(run), svgs)
    write_atomic(output / "latest.html", page.encode(), own=is_own_html_report)
    return path
