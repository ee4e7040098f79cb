"""Repeat statistics: summaries, spread, the t interval, comparison verdicts and noise advice."""

from __future__ import annotations

import math
import statistics
from pathlib import Path

import pytest

from asyncbench.measure.stats import (
    BusyProcess,
    NoiseSnapshot,
    Summary,
    Verdict,
    compare,
    comparison_row,
    exit_code,
    noise_advice,
    read_governors,
    read_turbo,
    t_critical,
    t_two_sided_p,
    welch,
)


@pytest.mark.parametrize(
    ("df", "expected"),
    [(1, 12.706), (2, 4.303), (3, 3.182), (4, 2.776), (5, 2.571), (9, 2.262), (10, 2.228), (30, 2.042)],
)
def test_t_critical_values_match_the_table(df: int, expected: float) -> None:
    assert t_critical(df) == pytest.approx(expected, abs=5e-4)


def test_t_p_values() -> None:
    assert t_two_sided_p(2.0, 10) == pytest.approx(0.0734, abs=1e-4)
    assert t_two_sided_p(t_critical(7), 7) == pytest.approx(0.05, abs=1e-9)
    assert t_two_sided_p(0.0, 4) == pytest.approx(1.0)
    assert t_critical(4, 0.99) == pytest.approx(4.604, abs=5e-4)


def test_summary_of_repeats() -> None:
    xs = [10_000.0, 10_400.0, 9_800.0, 10_100.0, 10_700.0]
    s = Summary.of(xs)
    assert (s.n, s.median, s.min, s.max) == (5, 10_100.0, 9_800.0, 10_700.0)
    assert s.mean == pytest.approx(statistics.fmean(xs))
    assert s.stdev == pytest.approx(statistics.stdev(xs))
    half = 2.7764451 * s.stdev / math.sqrt(5)
    assert s.ci_low == pytest.approx(s.mean - half, rel=1e-6)
    assert s.ci_high == pytest.approx(s.mean + half, rel=1e-6)
    assert s.spread_pct == pytest.approx((10_700 - 9_800) / 2 / 10_100 * 100)
    assert s.format() == "10_100/s ± 4.5%"
    d = s.to_dict()
    assert d["n"] == 5 and d["samples"] == xs and isinstance(d["ci95_low"], float)


def test_a_single_run_has_no_spread() -> None:
    s = Summary.of([12_345.4])
    assert (s.n, s.median, s.stdev, s.ci_low, s.ci_high, s.spread_pct) == (1, 12_345.4, 0.0, None, None, None)
    assert not s.unstable()
    assert s.format() == "12_345/s"
    with pytest.raises(ValueError):
        Summary.of([])


def test_unstable_above_the_threshold() -> None:
    steady = Summary.of([100, 104, 96])  # ± 4 %
    noisy = Summary.of([100, 112, 88])  # ± 12 %
    assert not steady.unstable()
    assert noisy.unstable()
    assert not noisy.unstable(threshold=0.15)
    assert steady.unstable(threshold=0.03)


def test_compare_significantly_faster_and_slower() -> None:
    base = [100.0, 101.0, 99.0, 100.5, 99.5]
    faster = [110.0, 111.0, 109.0, 110.5, 109.5]
    c = compare(base, faster)
    assert c.verdict is Verdict.FASTER
    assert c.ratio == pytest.approx(1.10)
    assert c.change_pct == pytest.approx(10.0)
    assert c.with_spread and c.p_value is not None and c.p_value < 0.001
    assert c.describe().startswith("faster by 10.0% (p = ")
    slower = compare(faster, base)
    assert slower.verdict is Verdict.SLOWER
    assert slower.change_pct == pytest.approx((100 / 110 - 1) * 100)
    assert exit_code([c, slower]) == 1
    assert exit_code([c]) == 0
    row = comparison_row("rocksdb", "read by user id", slower)
    assert row[:5] == ("rocksdb", "read by user id", "110/s ± 0.9%", "100/s ± 1.0%", "0.909x")
    assert row[5].startswith("slower by 9.1% (p = ")


def test_overlapping_noisy_samples_six_percent_apart_are_not_significant() -> None:
    base = [100.0, 90.0, 112.0, 95.0, 108.0]
    new = [106.0, 95.0, 118.0, 101.0, 114.0]  # median +6 %, beyond the 5 % threshold
    c = compare(base, new)
    assert c.ratio == pytest.approx(1.06)
    assert c.verdict is Verdict.NOT_SIGNIFICANT
    assert c.p_value is not None and c.p_value > 0.05
    assert c.describe().startswith("not significant (+6.0%)")
    assert exit_code([compare(new, base)]) == 0  # a noisy "regression" does not fail the run


def test_significant_but_within_the_threshold_is_same() -> None:
    base = [100.0, 100.1, 99.9, 100.0]
    new = [102.0, 102.1, 101.9, 102.0]  # +2 %, very significant, below 5 %
    c = compare(base, new)
    assert c.p_value is not None and c.p_value < 0.001
    assert c.verdict is Verdict.SAME
    assert compare(base, new, threshold=0.01).verdict is Verdict.FASTER


def test_one_run_calls_no_winner() -> None:
    """Issue 39: a single run on either side has no spread; beyond the threshold the change
    is reported, not called faster or slower."""
    c = compare([100.0], [93.0])
    assert c.verdict is Verdict.ONE_RUN
    assert not c.with_spread and c.p_value is None
    assert c.describe() == "not called (-7.0%) (one run: without spread)"
    assert compare([100.0], [96.0]).verdict is Verdict.SAME
    assert compare([100.0, 90.0, 110.0], [120.0]).verdict is Verdict.ONE_RUN  # N = 1 on one side
    assert not compare([100.0, 90.0, 110.0], [120.0]).with_spread
    assert exit_code([c]) == 0


def test_times_compare_with_lower_is_better() -> None:
    c = compare([2.0, 2.01, 1.99], [2.4, 2.41, 2.39], higher_is_better=False)
    assert c.verdict is Verdict.SLOWER
    assert c.change_pct == pytest.approx((2.0 / 2.4 - 1) * 100)


def test_welch_on_identical_and_constant_samples() -> None:
    a = Summary.of([5.0, 6.0, 7.0])
    t, df, p = welch(a, a)
    assert (t, p) == (0.0, pytest.approx(1.0))
    assert df >= 1
    const = Summary.of([5.0, 5.0, 5.0])
    assert welch(const, const)[2] == 1.0
    assert welch(const, Summary.of([6.0, 6.0, 6.0]))[2] == 0.0
    with pytest.raises(ValueError):
        welch(Summary.of([1.0]), a)


IDLE = NoiseSnapshot(
    cpu_count=8,
    load_avg=(0.3, 0.4, 0.5),
    governors={f"cpu{i}": "performance" for i in range(8)},
    turbo=False,
    busy=(BusyProcess(10, "sshd", 0.5),),
)


def test_an_idle_tuned_machine_gets_no_advice() -> None:
    assert noise_advice(IDLE) == []


def test_advice_names_load_governor_turbo_and_busy_processes() -> None:
    snap = NoiseSnapshot(
        cpu_count=2,
        load_avg=(2.7, 1.2, 0.8),
        governors={"cpu0": "powersave", "cpu1": "performance"},
        turbo=True,
        busy=(
            BusyProcess(4242, "cc1plus", 97.0),
            BusyProcess(7, "chrome", 35.5),
            BusyProcess(9, "quietd", 2.0),
        ),
    )
    advice = noise_advice(snap)
    text = "\n".join(advice)
    assert "Load average 2.70 (1 min) on 2 CPUs" in advice[0]
    assert "'powersave' on cpu0:" in text and "performance" in text
    assert "Turbo boost is enabled" in text
    assert "cc1plus (pid 4242) 97%, chrome (pid 7) 36%" in text
    assert "quietd" not in text
    assert advice[-1].startswith("More repeats")


def test_no_cpufreq_is_reported_as_a_likely_virtual_machine() -> None:
    snap = NoiseSnapshot(cpu_count=2, load_avg=(0.1, 0.1, 0.1), governors={}, turbo=None)
    advice = noise_advice(snap)
    assert len(advice) == 2 and "virtual machine" in advice[0]


def test_governors_and_turbo_are_read_from_sysfs(tmp_path: Path) -> None:
    for cpu, gov in (("cpu0", "schedutil"), ("cpu1", "performance")):
        d = tmp_path / cpu / "cpufreq"
        d.mkdir(parents=True)
        (d / "scaling_governor").write_text(gov + "\n")
    (tmp_path / "cpufreq").mkdir()
    (tmp_path / "cpufreq" / "boost").write_text("1\n")
    assert read_governors(str(tmp_path)) == {"cpu0": "schedutil", "cpu1": "performance"}
    assert read_turbo(str(tmp_path)) is True
    (tmp_path / "intel_pstate").mkdir()
    (tmp_path / "intel_pstate" / "no_turbo").write_text("1\n")
    assert read_turbo(str(tmp_path)) is False
    assert read_governors(str(tmp_path / "absent")) == {}
    assert read_turbo(str(tmp_path / "absent")) is None

