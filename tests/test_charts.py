"""Charts render from a saved result: six valid SVGs with their titles and every engine named."""

from __future__ import annotations

import copy
import xml.etree.ElementTree as ET
from functools import partial
from pathlib import Path

import pytest

from asyncbench.cli.main import main
from asyncbench.engine import EngineConfig
from asyncbench.facts import MemoryScope
from asyncbench.report import chart_style, charts, outputs
from asyncbench.result import RunResult, Status
from asyncbench.workloads.profile_store.kv_store import STORE_NAMES as PROFILE_STORES

FIXTURE = Path(__file__).parent / "fixtures" / "result-sample.json"
SVG_NS = "{http://www.w3.org/2000/svg}"
TITLES = [
    "Execution Time",
    "Write Throughput",
    "Lookup Throughput",
    "Index Scan Throughput",
    "Query Throughput",
    "Resource Footprint",
]


@pytest.fixture(scope="module")
def sample() -> RunResult:
    return RunResult.from_json(FIXTURE.read_bytes())


@pytest.fixture(scope="module")
def rendered(sample: RunResult, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """The sample's six charts, rendered once for the module: (directory, title -> file name)."""
    directory = tmp_path_factory.mktemp("charts") / "profiles-2000-p1"
    written = charts.write_charts(sample, directory, "20260101T000000Z")
    assert [t for t, _ in written] == TITLES
    return directory, dict(written)


def svg_texts(path: Path) -> tuple[ET.Element, str, str]:
    """(root, the <title> text, all drawn text) of an SVG; matplotlib draws text as paths and
    precedes each with an XML comment holding the string, so comments are the drawn text."""
    parser = ET.XMLParser(target=ET.TreeBuilder(insert_comments=True))
    root = ET.fromstring(path.read_bytes(), parser=parser)
    title = root.find(f"{SVG_NS}title")
    drawn = "\n".join(el.text or "" for el in root.iter() if el.tag is ET.Comment)
    return root, (title.text if title is not None else ""), drawn


def fail_engine(run: RunResult, engine: str, keep: int) -> RunResult:
    """A copy of ``run`` where ``engine`` failed after its first ``keep`` phases."""
    run = copy.deepcopy(run)
    e = next(x for x in run.engines if x.engine == engine)
    stopped = e.phases[keep].name
    e.phases = e.phases[:keep]
    e.set_status(Status.FAILED, stopped, "RuntimeError: disk on fire")
    e.storage_bytes = None
    return run


def test_fixture_is_a_real_three_engine_run(sample: RunResult) -> None:
    assert [e.engine for e in sample.engines] == ["memory", "sqlite", "rocksdb"]
    assert all(e.ok for e in sample.engines)


def test_six_valid_svgs_with_titles_and_engines(rendered: tuple[Path, dict[str, str]]) -> None:
    directory, written = rendered
    for title, rel in written.items():
        path = directory / rel
        slug = next(c.slug for c in charts.CHARTS if c.title == title)
        assert rel == f"asyncbench-20260101T000000Z-{slug}.svg"
        assert path.stat().st_size > 1000
        root, svg_title, drawn = svg_texts(path)
        assert root.tag == f"{SVG_NS}svg"
        assert svg_title == title
        assert title in drawn
        for engine in ("memory", "sqlite", "rocksdb"):
            assert engine in drawn, (title, engine)


def test_charts_carry_phase_names_and_numbers(
    sample: RunResult, rendered: tuple[Path, dict[str, str]]
) -> None:
    directory, written = rendered
    _, _, lookups = svg_texts(directory / written["Lookup Throughput"])
    for name in (
        "read by user id",
        "lookup by email",
        "post-update read by user id",
        "post-update lookup by email",
    ):
        assert name in lookups
    _, _, scans = svg_texts(directory / written["Index Scan Throughput"])
    scan_names = [p.name for p in sample.phases if p.kind.kind.startswith("scan_")]
    assert len(scan_names) == 5 and all(n in scans for n in scan_names)
    assert "query country/status" not in scans
    _, _, queries = svg_texts(directory / written["Query Throughput"])
    assert all(p.name in queries for p in sample.phases if p.kind.kind.startswith("query_"))
    _, _, writes = svg_texts(directory / written["Write Throughput"])
    assert "insert profiles" in writes and "update profiles" in writes
    assert "(+ pre-read stabilization)" in writes and "(+ post-update stabilization)" in writes
    # the fastest real engine of a phase is 100%, and every bar label shows its ops/s
    insert = {e.engine: e.phase_at(0) for e in sample.engines if not e.facts.harness_floor}
    best = max(insert.values(), key=lambda p: p.ops_per_s)
    assert f"{round(best.ops_per_s):_d}/s · 100%" in writes
    _, _, exec_time = svg_texts(directory / written["Execution Time"])
    assert "1.00x" in exec_time


def test_same_input_gives_identical_svgs(sample: RunResult, rendered: tuple[Path, dict[str, str]]) -> None:
    directory, written = rendered
    for chart in charts.CHARTS[:2]:
        drawn = chart_style.svg(partial(chart.draw, sample), chart.title)
        assert drawn == (directory / written[chart.title]).read_bytes()


def test_failed_engine_missing_phases_still_renders(sample: RunResult, tmp_path: Path) -> None:
    run = fail_engine(sample, "sqlite", keep=3)  # insert, stabilize, read by user id
    written = dict(charts.write_charts(run, tmp_path, "s"))
    assert len(written) == 6
    _, _, queries = svg_texts(tmp_path / written["Query Throughput"])
    assert "sqlite: not run" in queries
    assert "disk on fire" in queries
    _, _, lookups = svg_texts(tmp_path / written["Lookup Throughput"])
    assert "sqlite  " in lookups  # its read by user id bar is still there
    _, _, footprint = svg_texts(tmp_path / written["Resource Footprint"])
    assert "not measured" in footprint
    _, _, exec_time = svg_texts(tmp_path / written["Execution Time"])
    # issue 51: a failed engine's completed phases are less work; its short bar read as the
    # fastest engine's (0.35x): it is drawn without a bar, not ranked
    assert "FAILED in" in exec_time and "not ranked" in exec_time, exec_time
    assert "sqlite (no bar, not ranked)" in exec_time and "(hatched)" not in exec_time, exec_time
    assert not any(x.startswith("0.") and "sqlite" in x for x in exec_time.split("  ")), exec_time


def test_a_run_whose_every_phase_ran_at_a_rate_draws_no_execution_time(sample: RunResult) -> None:
    """The rate, not the engine, sets a paced phase's time: ranking those times ranks nothing."""
    from asyncbench.rate import Arrivals
    from asyncbench.result import OpenLoop

    paced = copy.deepcopy(sample)
    for e in paced.engines:
        for p in e.phases:
            if p.ops:
                p.open_loop = OpenLoop(rate=max(p.ops_per_s, 1.0), arrivals=Arrivals.UNIFORM)
    execution = next(c for c in charts.CHARTS if c.slug == "execution-time")
    assert execution.wanted(sample) and not execution.wanted(paced)


def test_engine_without_any_phase_and_empty_run(sample: RunResult, tmp_path: Path) -> None:
    run = fail_engine(sample, "rocksdb", keep=0)
    run.engines[2].peak_rss_bytes = None
    assert len(charts.write_charts(run, tmp_path / "one", "s")) == 6
    empty = copy.deepcopy(sample)
    empty.engines = []
    assert len(charts.write_charts(empty, tmp_path / "none", "s")) == 6


def test_client_only_memory_is_labelled(sample: RunResult, tmp_path: Path) -> None:
    """A client/server engine states it (a fact), whatever its name: the chart says so."""
    run = copy.deepcopy(sample)
    run.engines[1].facts.memory_scope = MemoryScope.CLIENT_ONLY
    chart = next(c for c in charts.CHARTS if c.slug == "resource-footprint")
    path = tmp_path / "footprint.svg"
    path.write_bytes(chart_style.svg(partial(chart.draw, run), chart.title))
    _, _, footprint = svg_texts(path)
    assert "(client only)" in footprint
    assert "server's memory is not included" in footprint


def test_colours_are_fixed_per_engine(sample: RunResult) -> None:
    """Each engine states its colour; an engine that states none gets a stable fallback."""
    from asyncbench.engines import ALL_ENGINES, engine_class

    stated = {
        engine_class(n)(EngineConfig(n, Path("unused"), stores=PROFILE_STORES)).facts().colour for n in ("memory", *ALL_ENGINES)
    }
    assert None not in stated and len(stated) == len(ALL_ENGINES) + 1  # one distinct colour each
    e = copy.deepcopy(sample.engines[0])
    assert chart_style.engine_colour(e) == e.facts.colour
    e.engine, e.facts.colour = "newdb", None
    colour = chart_style.engine_colour(e)
    assert colour == chart_style.engine_colour(copy.deepcopy(e)) in chart_style.FALLBACK_COLOURS


def test_report_subcommand_rerenders_charts_and_embeds_them(tmp_path: Path) -> None:
    result = tmp_path / "asyncbench-20260101T000000Z.json"
    result.write_bytes(FIXTURE.read_bytes())
    assert main(["report", str(result)]) == 0
    svgs = sorted(p.name for p in tmp_path.glob("*.svg"))
    assert len(svgs) == 6 and all(n.startswith("asyncbench-20260101T000000Z-") for n in svgs)
    text = (tmp_path / "asyncbench-20260101T000000Z.md").read_text()
    links = [line.split("(", 1)[1].rstrip(")") for line in text.splitlines() if line.startswith("![")]
    assert [line.split("]", 1)[0][2:] for line in text.splitlines() if line.startswith("![")] == TITLES
    assert sorted(links) == svgs


def test_update_latest_copies_charts_and_links_them(
    sample: RunResult, rendered: tuple[Path, dict[str, str]]
) -> None:
    directory, _ = rendered
    out = directory.parent
    md = outputs.update_latest(sample, directory, "20260101T000000Z", out)
    assert md == out / "latest.md"
    text = md.read_text()
    for chart in (c for c in charts.CHARTS if c.latest and c.wanted(sample)):  # (the cost chart: results that measured cost)
        latest = out / f"latest-{chart.slug}.svg"
        assert (
            latest.read_bytes() == (directory / f"asyncbench-20260101T000000Z-{chart.slug}.svg").read_bytes()
        )
        assert f"![{chart.title}](latest-{chart.slug}.svg)" in text
    assert "(profiles-2000-p1/asyncbench-20260101T000000Z.json)" in text


def test_png_conversion_when_a_rasterizer_is_present(rendered: tuple[Path, dict[str, str]]) -> None:
    cairosvg = pytest.importorskip("cairosvg")
    directory, written = rendered
    png = cairosvg.svg2png(url=str(directory / written["Write Throughput"]))
    assert png[:8] == b"\x89PNG\r\n\x1a\n"


def test_harness_floor_is_a_marker_and_subtitles_explain_the_run(
    sample: RunResult, rendered: tuple[Path, dict[str, str]]
) -> None:
    directory, written = rendered
    floor = next(e for e in sample.engines if e.facts.harness_floor)
    real = [e for e in sample.engines if not e.facts.harness_floor]
    _, _, writes = svg_texts(directory / written["Write Throughput"])
    insert_rate = round(floor.phase_at(0).ops_per_s)
    assert f"harness floor: {floor.engine} {insert_rate:_d}/s" in writes
    assert f"{floor.engine}  {insert_rate:_d}/s" not in writes  # no bar label of its own
    assert "100% is the fastest real engine" in writes
    fastest_real = max(real, key=lambda e: e.phase_at(0).ops_per_s)
    assert f"{fastest_real.engine}  {round(fastest_real.phase_at(0).ops_per_s):_d}/s · 100%" in writes
    _, _, exec_time = svg_texts(directory / written["Execution Time"])
    assert f"harness floor ({floor.engine})" in exec_time
    for title, name in written.items():
        _, _, drawn = svg_texts(directory / name)
        assert f"{sample.profiles:_d} profiles · P{sample.parallelism}" in drawn, title


def test_subtitle_names_the_machine(sample: RunResult, tmp_path: Path) -> None:
    run = copy.deepcopy(sample)
    run.environment.update(cpu_model="Test CPU 9000", logical_cpus=2, os="Linux")
    written = dict(charts.write_charts(run, tmp_path, "m"))
    for name in written.values():
        _, _, drawn = svg_texts(tmp_path / name)
        assert "Test CPU 9000, 2 CPUs, Linux" in drawn, name


def test_an_engine_that_never_started_reads_not_started(sample: RunResult, tmp_path: Path) -> None:
    """Issue 39: Ctrl-C before an engine started left its Execution Time row reading
    "0.00x   0 ms phases · 0 ms run"; it says "not started", with no ratio."""
    from asyncbench.result import NOT_STARTED

    run = copy.deepcopy(sample)
    e = run.engines[2]
    e.phases, e.run_seconds, e.storage_bytes, e.peak_rss_bytes = [], 0.0, None, None
    e.set_status(Status.INTERRUPTED, None, NOT_STARTED)
    written = dict(charts.write_charts(run, tmp_path, "s"))
    _, _, exec_time = svg_texts(tmp_path / written["Execution Time"])
    row = [line for line in exec_time.splitlines() if "phases" in line and "run" in line or "not started" in line]
    assert any("not started" in line for line in row), exec_time
    assert "0.00x" not in exec_time, exec_time
    stopped = run.engines[1]  # stopped in its first phase: a run time, no phase time, no ratio
    stopped.phases, stopped.run_seconds = [], 2.5
    stopped.set_status(Status.INTERRUPTED, "insert profiles", "interrupted by SIGINT")
    written = dict(charts.write_charts(run, tmp_path / "first", "s"))
    _, _, exec_time = svg_texts(tmp_path / "first" / written["Execution Time"])
    assert "no operation phase completed · 2_500 ms run" in exec_time and "0.00x" not in exec_time, exec_time
