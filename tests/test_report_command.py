"""``python -m asyncbench report RESULT.json`` never modifies its input, refuses what is
not a result with one message (exit 2, no traceback), and overwrites beside it only an
asyncbench report or chart of the same name.

Issue items 16 (tracebacks, and rewriting the input JSON) and 5 (``report myrun.json``
overwrote an existing ``asyncbench-myrun.md``; planted temporary names were followed)."""

from __future__ import annotations

import os
from pathlib import Path

import orjson
import pytest
from conftest import ROOT

from asyncbench.cli.main import main
from asyncbench.result import RunResult

FIXTURE = ROOT / "tests" / "fixtures" / "result-sample.json"


def _snapshot(path: Path) -> tuple[bytes, int, int]:
    st = path.stat()
    return path.read_bytes(), st.st_mtime_ns, st.st_ino


def _broken(name: str) -> bytes | None:
    doc = orjson.loads(FIXTURE.read_bytes())
    if name == "null":
        return b"null"
    if name == "wrong-type-profiles":
        doc["profiles"] = "many"
    elif name == "wrong-type-engine-phases":
        doc["engines"][0]["phases"] = {"a": 1}
    elif name == "wrong-type-environment":
        doc["environment"] = ["x"]
    elif name == "phase-without-name":
        del doc["phases"][0]["name"]
    elif name == "phase-index-out-of-range":
        doc["engines"][0]["phases"][0]["index"] = 999
    elif name == "status-unknown":
        doc["engines"][0]["status"] = "exploded"
    elif name == "truncated":
        return FIXTURE.read_bytes()[:500]
    return orjson.dumps(doc)


BROKEN = [
    "null",
    "wrong-type-profiles",
    "wrong-type-engine-phases",
    "wrong-type-environment",
    "phase-without-name",
    "phase-index-out-of-range",
    "status-unknown",
    "truncated",
]


@pytest.mark.parametrize("case", BROKEN)
def test_not_a_result_is_refused_and_left_unchanged(tmp_path: Path, capsys, case: str) -> None:
    path = tmp_path / "asyncbench-x.json"
    path.write_bytes(_broken(case))
    before = _snapshot(path)
    assert main(["report", str(path)]) == 2
    err = capsys.readouterr().err
    assert "not an asyncbench result" in err and "Traceback" not in err
    assert _snapshot(path) == before
    assert sorted(os.listdir(tmp_path)) == ["asyncbench-x.json"]  # nothing written beside it


def test_directory_is_refused(tmp_path: Path, capsys) -> None:
    assert main(["report", str(tmp_path)]) == 2
    assert "is a directory" in capsys.readouterr().err
    assert os.listdir(tmp_path) == []


def test_unreadable_file_is_refused(tmp_path: Path, capsys) -> None:
    # /proc/self/mem is a regular file whose read fails (EIO) even for root.
    assert main(["report", "/proc/self/mem"]) == 2
    assert "cannot be read" in capsys.readouterr().err


def test_fifo_is_refused_without_waiting(tmp_path: Path, capsys) -> None:
    fifo = tmp_path / "asyncbench-x.json"
    os.mkfifo(fifo)
    assert main(["report", str(fifo)]) == 2
    assert "is not a regular file (a FIFO)" in capsys.readouterr().err


def test_a_good_result_is_read_not_written(tmp_path: Path) -> None:
    path = tmp_path / "asyncbench-20260101T000000Z.json"
    path.write_bytes(FIXTURE.read_bytes())
    before = _snapshot(path)
    assert main(["report", str(path)]) == 0
    assert _snapshot(path) == before  # same bytes, same inode, not even rewritten
    assert (tmp_path / "asyncbench-20260101T000000Z.md").exists()
    assert main(["report", str(path)]) == 0  # its own report and charts it may rewrite
    assert _snapshot(path) == before


def test_an_existing_markdown_file_that_is_not_a_report_is_left_alone(tmp_path: Path, capsys) -> None:
    result = tmp_path / "myrun.json"
    result.write_bytes(FIXTURE.read_bytes())
    mine = tmp_path / "asyncbench-myrun.md"
    mine.write_text("# my notes about the run\n")
    assert main(["report", str(result)]) == 2
    assert "asyncbench-myrun.md exists and is not an output of this run" in capsys.readouterr().err
    assert mine.read_text() == "# my notes about the run\n"


def test_an_existing_svg_that_is_not_a_chart_is_left_alone(tmp_path: Path, capsys) -> None:
    result = tmp_path / "asyncbench-r.json"
    result.write_bytes(FIXTURE.read_bytes())
    mine = tmp_path / "asyncbench-r-execution-time.svg"
    mine.write_text("<svg>my drawing</svg>")
    assert main(["report", str(result)]) == 2
    assert mine.read_text() == "<svg>my drawing</svg>"


def test_symlink_at_an_output_name_is_not_followed(tmp_path: Path, capsys) -> None:
    result = tmp_path / "asyncbench-r.json"
    result.write_bytes(FIXTURE.read_bytes())
    target = tmp_path / "target.txt"
    target.write_text("precious")
    (tmp_path / "asyncbench-r.md").symlink_to(target)
    assert main(["report", str(result)]) == 2
    assert "is a symlink" in capsys.readouterr().err
    assert target.read_text() == "precious" and (tmp_path / "asyncbench-r.md").is_symlink()


def test_planted_temporary_names_are_not_followed(tmp_path: Path) -> None:
    """The old writer used ``.<name>.tmp`` and then ``.<name>.<pid>.tmp``: both can be
    planted as symlinks; the writer must neither follow them nor fail on them."""
    result = tmp_path / "asyncbench-r.json"
    result.write_bytes(FIXTURE.read_bytes())
    target = tmp_path / "target.txt"
    target.write_text("precious")
    for name in ("asyncbench-r.md", "asyncbench-r-execution-time.svg"):
        (tmp_path / f".{name}.tmp").symlink_to(target)
        (tmp_path / f".{name}.{os.getpid()}.tmp").symlink_to(target)
    assert main(["report", str(result)]) == 0
    assert target.read_text() == "precious"
    assert (tmp_path / "asyncbench-r.md").read_text().startswith("<!-- asyncbench report")


def test_compare_refuses_a_fifo_without_waiting(tmp_path: Path, capsys) -> None:
    good = tmp_path / "asyncbench-a.json"
    good.write_bytes(FIXTURE.read_bytes())
    fifo = tmp_path / "asyncbench-b.json"
    os.mkfifo(fifo)
    assert main(["compare", str(good), str(fifo)]) == 2
    assert "is not a regular file (a FIFO)" in capsys.readouterr().err


def _many_engines(n: int) -> RunResult:
    """The sample result with ``n`` engines (copies of its three, renamed e0000, e0001, ...)."""
    import copy

    run = RunResult.from_json((Path(__file__).parent / "fixtures" / "result-sample.json").read_bytes())
    engines = []
    for i in range(n):
        e = copy.deepcopy(run.engines[i % len(run.engines)])
        e.engine = f"e{i:04d}"
        engines.append(e)
    run.engines = engines
    return run


def test_charts_draw_a_bounded_number_of_engines_and_say_so(tmp_path: Path) -> None:
    """1_000 engines: every chart draws at most MAX_CHART_ENGINES of them (the first in
    report order) and says so on itself; the report says so above the charts, its tables
    list every engine, and ``report`` completes. (How long it takes is measured by
    benchmarks/bench_report_engines.py, not here.)"""
    import matplotlib
    from matplotlib.text import Text

    from asyncbench.report import chart_limit, charts
    from asyncbench.report.chart_style import RC

    run = _many_engines(1000)
    cap = chart_limit.MAX_CHART_ENGINES
    drawn = charts.drawings(run)
    assert drawn
    for slug, _title, draw in drawn:
        with matplotlib.rc_context(RC):
            fig = draw()
        texts = " ".join(t.get_text() for t in fig.findobj(Text))
        named = {f"e{i:04d}" for i in range(1000) if f"e{i:04d}" in texts}
        assert named and named <= {f"e{i:04d}" for i in range(cap)}, slug
        assert f"first {cap} of 1_000 engines" in texts, slug
    # a result may hold at most MAX_RESULT_ENGINES engine runs (issue 52): report the most
    from asyncbench.limits import MAX_RESULT_ENGINES

    path = tmp_path / "asyncbench-many.json"
    path.write_bytes(_many_engines(MAX_RESULT_ENGINES).to_json())
    assert main(["report", str(path)]) == 0
    text = path.with_suffix(".md").read_text()
    assert f"Charts show the first {cap} of {MAX_RESULT_ENGINES} engines" in text
    assert f"e{MAX_RESULT_ENGINES - 1:04d}" in text
    path.write_bytes(run.to_json())  # 1_000 engines: refused at load, exit 2
    assert main(["report", str(path)]) == 2


def test_latency_charts_draw_at_most_the_capped_engines_panels() -> None:
    """The latency charts (one panel per engine over time, one line per engine in the
    percentile distribution) are drawn from the same capped engines: 100 engines with
    latency give at most MAX_CHART_ENGINES panels per chart."""
    import copy

    import matplotlib
    from matplotlib.text import Text

    from asyncbench.report import chart_limit, charts
    from asyncbench.report.chart_style import RC

    run = RunResult.from_json((Path(__file__).parent / "fixtures" / "result-repeats-latency.json").read_bytes())
    engines = []
    for i in range(100):
        for e in run.engines:
            if e.engine == run.engines[0].engine:  # every repeat of the first engine, renamed
                e = copy.deepcopy(e)
                e.engine = f"e{i:04d}"
                engines.append(e)
    run.engines, run.throughput = engines, {}
    cap = chart_limit.MAX_CHART_ENGINES
    latency = [d for d in charts.drawings(run) if d[0].startswith("latency-")]
    assert any(slug.startswith("latency-over-time-") for slug, _, _ in latency)
    for slug, _title, draw in latency:
        with matplotlib.rc_context(RC):
            fig = draw()
        texts = " ".join(t.get_text() for t in fig.findobj(Text))
        assert f"first {cap} of 100 engines" in texts, slug
        if slug.startswith("latency-over-time-"):
            assert 0 < len([ax for ax in fig.axes if ax.has_data()]) <= cap, slug
        assert not {f"e{i:04d}" for i in range(cap, 100)} & set(texts.split()), slug
