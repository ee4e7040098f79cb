"""Latency over time that a person can read (issue 39, item 1).

A phase shorter than a second drew one per-second point: an empty panel. Every operation
phase, write phases included, is now sliced at a width chosen from its length (1 s, 100 ms,
10 ms), a slice that stands alone is drawn as a dot, and the panels share one time axis
unless the engines' phase lengths differ too much, which the chart then says."""

from __future__ import annotations

import io

import matplotlib
import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from asyncbench.config import PhaseSpec
from asyncbench.measure.latency_recorder import PhaseRecorder, slice_ns
from asyncbench.rate import Arrivals, Rate
from asyncbench.report.chart_style import RC
from asyncbench.report.latency_charts import latency_over_time_figure
from asyncbench.run.phase.phase_rows import add_figures, phase_row
from asyncbench.workloads.profile_store.phases import PHASES


def _recorder(seconds: float, ops: int, rate: bool = False) -> PhaseRecorder:
    """One worker's phase of ``ops`` operations spread evenly over ``seconds``."""
    rec = PhaseRecorder(1, None)
    stamps = np.linspace(1_000, 1_000 + seconds * 1e9, ops + 1).astype(np.int64)
    per = 100
    for b in range(ops // per):
        marks = stamps[b * per : (b + 1) * per + 1].tolist()
        intended = np.array(marks[1:], dtype=np.int64) - 500 if rate else None
        rec.add(0, per, seconds / (ops // per), marks, intended)
    return rec


def test_slice_width_follows_the_phase_length() -> None:
    assert slice_ns(300_000_000) == 10_000_000
    assert slice_ns(4_000_000_000) == 100_000_000
    assert slice_ns(60_000_000_000) == 1_000_000_000


def test_a_short_read_phase_gets_a_line_over_time() -> None:
    spec = PhaseSpec(kind="read_by_id", name="read by user id")
    pr = phase_row(1, spec, PHASES[spec.kind], 2_000, 0.3)
    rec = _recorder(0.3, 2_000)
    add_figures(pr, rec, None)
    rec.close()
    assert pr.latency_over_time is not None
    assert len(pr.latency_over_time) >= 25  # 10 ms slices of 0.3 s, not one per-second point
    assert sum(row[1] for row in pr.latency_over_time) == 2_000


def test_a_write_phase_is_sliced_by_its_length_not_in_100_parts() -> None:
    spec = PhaseSpec(kind="insert", name="insert profiles")
    pr = phase_row(0, spec, PHASES[spec.kind], 2_000, 0.05)
    rec = _recorder(0.05, 2_000)
    add_figures(pr, rec, None)
    rec.close()
    assert pr.latency_over_time is not None
    assert [round(row[0], 3) for row in pr.latency_over_time] == [0.01, 0.02, 0.03, 0.04, 0.05]


def test_a_short_phase_at_a_rate_gets_its_response_time_in_the_same_slices() -> None:
    spec = PhaseSpec(kind="read_by_id", name="read by user id", rate=10_000.0)
    pr = phase_row(1, spec, PHASES[spec.kind], 2_000, 0.2)
    rec = _recorder(0.2, 2_000, rate=True)
    add_figures(pr, rec, Rate(10_000.0, Arrivals.UNIFORM))
    rec.close()
    assert pr.open_loop is not None and pr.open_loop.response_over_time
    assert len(pr.open_loop.response_over_time) == len(pr.latency_over_time or [])


def _laid_out(fig: Figure) -> Figure:
    FigureCanvasAgg(fig)
    fig.savefig(io.BytesIO(), format="png", dpi=50)
    return fig


def _panels(fig: Figure) -> list:
    return [ax for ax in fig.axes if ax.get_title(loc="left")]


def test_a_phase_of_one_slice_is_drawn_not_an_empty_panel() -> None:
    series = {"memory": [(0.01, 1_000, 2_000, 3_000)], "sqlite": [(0.01, 9_000, 20_000, 30_000)]}
    with matplotlib.rc_context(RC):
        fig = _laid_out(latency_over_time_figure(series, "read by user id", "P1"))
    for ax in _panels(fig):
        drawn = [line for line in ax.lines if np.isfinite(np.asarray(line.get_ydata(), dtype=float)).any()]
        assert drawn, ax.get_title(loc="left")
        # a single point is invisible as a line: it needs a marker
        assert all(line.get_marker() not in (None, "None", "", " ") for line in drawn if len(line.get_xdata()) < 2)


def test_panels_share_the_time_axis_when_the_lengths_are_alike() -> None:
    a = [(0.1 * i, 1_000, 2_000, 3_000) for i in range(1, 31)]
    b = [(0.1 * i, 1_000, 2_000, 3_000) for i in range(1, 41)]
    with matplotlib.rc_context(RC):
        fig = _laid_out(latency_over_time_figure({"memory": a, "sqlite": b}, "insert profiles", "P1"))
    memory, sqlite = _panels(fig)
    assert memory.get_xlim() == sqlite.get_xlim()
    assert "x axes differ" not in "\n".join(t.get_text() for t in fig.texts)


def test_panels_say_why_their_time_axes_differ() -> None:
    a = [(0.01 * i, 1_000, 2_000, 3_000) for i in range(1, 31)]  # 0.3 s
    b = [(0.1 * i, 1_000, 2_000, 3_000) for i in range(1, 41)]  # 4 s
    with matplotlib.rc_context(RC):
        fig = _laid_out(latency_over_time_figure({"memory": a, "sqlite": b}, "insert profiles", "P1"))
    memory, sqlite = _panels(fig)
    assert memory.get_xlim() != sqlite.get_xlim()
    notes = "\n".join(t.get_text() for t in fig.texts)
    assert "x axes differ" in notes and "0.3 s" in notes and "4 s" in notes


def test_cost_axes_draw_no_line_for_a_figure_not_measured() -> None:
    """A remote server: its CPU and device bytes are not measured, so the panel draws no
    write MB/s line (the series holds 0 there, which would read as "wrote nothing") and
    says the CPU steps are the client's alone; a measured phase draws both."""
    from asyncbench.result import NO_SERVER, PhaseCost

    why = "the server at db.example:3306 is not on this machine"
    rows = [[1.0, 0.4, 0.0, 0.0, 0.0, 0.0], [2.0, 0.5, 0.0, 0.0, 0.0, 0.0]]
    remote = PhaseCost(
        client_cpu_seconds=0.9, client_write_bytes=0, series=rows, not_measured={"server_cpu": why, "server_io": why}
    )
    local = PhaseCost(
        client_cpu_seconds=0.9, client_write_bytes=4096, series=[[1.0, 0.4, 0.0, 0.0, 0.0, 4096.0]],
        not_measured={"server_cpu": NO_SERVER, "server_io": NO_SERVER},
    )  # fmt: skip
    series = {e: [(0.5, 1_000, 2_000, 3_000), (1.5, 1_000, 2_000, 3_000)] for e in ("mysql", "lsm")}
    with matplotlib.rc_context(RC):
        fig = _laid_out(latency_over_time_figure(series, "insert profiles", "P1", None, None, {"mysql": remote, "lsm": local}))
    labels = {ax.get_ylabel() for ax in fig.axes}
    assert "write MB/s" in labels  # the lsm's
    panels = {ax.get_title(loc="left"): ax for ax in _panels(fig)}
    twins = {
        name: [a for a in fig.axes if a is not ax and a.get_position().bounds == ax.get_position().bounds]
        for name, ax in panels.items()
    }
    assert [a.get_ylabel() for a in twins["mysql"]] == ["client CPU cores"]
    assert sorted(a.get_ylabel() for a in twins["lsm"]) == ["CPU cores", "write MB/s"]
    texts = [t.get_text() for t in panels["mysql"].texts]
    assert "server CPU, write MB/s not measured" in texts, texts
    assert not panels["lsm"].texts
