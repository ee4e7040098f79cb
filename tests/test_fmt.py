from __future__ import annotations

import pytest

from asyncbench import fmt


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("20k", 20_000),
        ("2M", 2_000_000),
        ("2_000_000", 2_000_000),
        ("1.5M", 1_500_000),
        ("7", 7),
        ("3K", 3000),
    ],
)
def test_parse_count(text: str, value: int) -> None:
    assert fmt.parse_count(text) == value


@pytest.mark.parametrize("text", ["", "k", "abc", "1.0001k", "2G"])
def test_parse_count_rejects(text: str) -> None:
    with pytest.raises((ValueError, IndexError)):
        fmt.parse_count(text)


def test_reference_number_style() -> None:
    assert fmt.count(2_000_000) == "2_000_000"
    assert fmt.ms(7.752) == "7_752 ms"
    assert fmt.rate(258_006, 1.0) == "258_006/s"
    # binary units, as the reference prints sizes (its 1M-profile ZoneTree store: 73.4 MB)
    assert fmt.size(147_500_000) == "140.7 MB"
    assert fmt.size(round(73.4 * 1024 * 1024)) == "73.4 MB"
    assert fmt.size(1023) == "1023 B" and fmt.size(1024) == "1.0 KB"
    assert fmt.size(3 * 1024**3) == "3.0 GB"


def test_report_states_the_size_unit_once() -> None:
    from conftest import ROOT

    from asyncbench.report import markdown_report as report
    from asyncbench.result import RunResult

    run = RunResult.from_json((ROOT / "tests" / "fixtures" / "result-sample.json").read_bytes())
    assert report.render(run).count(fmt.SIZE_UNIT_NOTE) == 1
