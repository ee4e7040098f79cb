"""Latency charts render from plain data: titles, the nines axis, engines, determinism."""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET
from functools import partial

import numpy as np
import pytest

from asyncbench.measure.latency import PhaseLatency
from asyncbench.report import latency_charts
from asyncbench.report.chart_style import FALLBACK_COLOURS, svg
from asyncbench.report.latency_charts import (
    DISTRIBUTION_TITLE,
    latency_over_time_figure,
    nines,
    nines_label,
    percentile_distribution_figure,
)

SVG_NS = "{http://www.w3.org/2000/svg}"


def percentile_distribution(series, subtitle, colours=None) -> str:  # type: ignore[no-untyped-def]
    """The chart's SVG text, through the one renderer every chart the tool writes uses."""
    return svg(partial(percentile_distribution_figure, series, subtitle, colours), DISTRIBUTION_TITLE).decode()


def latency_over_time(series, phase, subtitle) -> str:  # type: ignore[no-untyped-def]
    return svg(partial(latency_over_time_figure, series, phase, subtitle), f"Latency Over Time: {phase}").decode()



def _points(buckets):  # type: ignore[no-untyped-def]
    """What charts.py draws from a result's ``latency_over_time`` rows."""
    return [(b.t_s, b.p50_ns, b.p99_ns, b.max_ns) for b in buckets]

def parse(svg: str) -> tuple[str, list[str]]:
    """(the <title> text, every drawn string): matplotlib draws text as paths and precedes
    each with an XML comment holding the string."""
    parser = ET.XMLParser(target=ET.TreeBuilder(insert_comments=True))
    root = ET.fromstring(svg.encode(), parser=parser)
    title = root.find(f"{SVG_NS}title")
    drawn = [(el.text or "").strip() for el in root.iter() if el.tag is ET.Comment]
    return (title.text if title is not None else ""), drawn


def phase(ops: int, median_ns: float, seed: int, stall_ns: int | None = None) -> PhaseLatency:
    rng = np.random.default_rng(seed)
    c = PhaseLatency()
    t = 10**9
    for b in range(ops // 1000):
        d = rng.lognormal(math.log(median_ns), 0.4, 1000).astype(np.int64)
        if stall_ns and b == ops // 2000:
            d[0] = stall_ns
        marks = [t, *(t + np.cumsum(d)).tolist()]
        c.add(marks)
        t = marks[-1] + 30_000
    return c


@pytest.fixture(scope="module")
def series() -> dict[str, dict[str, str]]:
    return {
        "rocksdb": {
            "read by user id": phase(20_000, 3_000, 1).encoded(),
            "insert profiles": phase(5_000, 9_000, 2).encoded(),
        },
        "sqlite": {"read by user id": phase(20_000, 6_000, 3).encoded()},
        "mine": {"insert profiles": phase(5_000, 20_000, 4).encoded()},  # an engine without a fixed colour
    }


def test_nines_scale() -> None:
    assert [nines(p) for p in (0, 90, 99, 99.9)] == pytest.approx([0, 1, 2, 3])
    assert nines(100) == math.inf
    assert [nines_label(n) for n in range(6)] == ["0", "90", "99", "99.9", "99.99", "99.999"]


COLOURS = {"rocksdb": "#d1495b", "sqlite": "#2f6fb0"}


def test_percentile_distribution_svg(series: dict[str, dict[str, str]]) -> None:
    svg = percentile_distribution(series, "20_000 profiles · P1 · batch 1_000", COLOURS)
    title, drawn = parse(svg)
    assert title == "Latency Percentiles"
    for text in (
        "Latency Percentiles",
        "20_000 profiles · P1 · batch 1_000",
        "read by user id",
        "insert profiles",
    ):
        assert text in drawn
    for tick in ("0", "90", "99", "99.9", "99.99"):
        assert tick in drawn
    assert "99.999" not in drawn  # 20_000 operations: the axis stops at 99.99
    assert "percentile (%)" in drawn and "latency (µs)" in drawn
    for engine in series:
        assert engine in drawn
    assert "#d1495b" in svg and "#2f6fb0" in svg  # the colours the caller gives
    assert any(c in svg for c in FALLBACK_COLOURS)  # "mine" has none given: a stable fallback
    assert "<dc:date>" not in svg  # deterministic: no date
    assert percentile_distribution(series, "20_000 profiles · P1 · batch 1_000", COLOURS) == svg


def test_the_axis_reaches_further_nines_with_more_operations() -> None:
    svg = percentile_distribution(
        {"lsm": {"insert profiles": phase(200_000, 5_000, 5).encoded()}}, "200_000 ops"
    )
    _, drawn = parse(svg)
    assert "99.999" in drawn  # the line ends at log10(200_000) = 5.3 nines
    assert "99.9999" not in drawn


def test_latency_over_time_svg() -> None:
    rocks = phase(100_000, 4_000, 6, stall_ns=250_000_000)
    series = {
        "rocksdb": _points(rocks.over_time(60)),
        "lsm": _points(phase(50_000, 15_000, 7).over_time(60)),
    }
    svg = latency_over_time(series, "insert profiles", "20_000 profiles · P1")
    title, drawn = parse(svg)
    assert title == "Latency Over Time: insert profiles"
    for text in ("rocksdb", "lsm", "p50", "p99", "max", "seconds since the phase start", "latency (µs)"):
        assert text in drawn
    assert "100_000" in drawn  # the 250 ms stall lifts the log axis to 100_000 µs and beyond
    assert latency_over_time(series, "insert profiles", "20_000 profiles · P1") == svg


def test_gaps_break_the_lines() -> None:
    points = [
        (0.1, 1_000, 2_000, 3_000),
        (0.2, 1_000, 2_000, 3_000),
        (0.5, 1_000, 90_000, 300_000_000),
        (0.6, 1_000, 2_000, 3_000),
    ]
    t, p50, p99, mx = latency_charts._with_gaps(points)
    assert t.tolist() == pytest.approx([0.1, 0.2, 0.3, 0.5, 0.6])
    assert math.isnan(p99[2]) and math.isnan(mx[2])
    assert mx[3] == pytest.approx(300_000.0)  # µs


def test_empty_inputs_render() -> None:
    _, drawn = parse(percentile_distribution({}, "nothing"))
    assert "no latency data" in drawn
    _, drawn = parse(latency_over_time({"rocksdb": []}, "insert profiles", "nothing"))
    assert "no latency data" in drawn
