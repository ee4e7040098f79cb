"""SLO bounds and rate requirements: what is accepted, and every refusal names its problem."""

from __future__ import annotations

import pytest

from asyncbench.slo import make_slo, parse_bound_ns, parse_requirement, parse_slo_text


@pytest.mark.parametrize(
    ("text", "ns"), [("2ms", 2_000_000), ("500us", 500_000), ("500µs", 500_000), ("0.5s", 500_000_000), ("1_000us", 1_000_000)]
)
def test_bounds_with_units(text: str, ns: int) -> None:
    assert parse_bound_ns(text) == ns


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("2", "no unit"),
        ("ms", "no unit"),
        ("-2ms", "positive"),
        ("0ms", "positive"),
        ("2 ms", "not a number"),
        ("+2ms", "not a number"),
        ("2h", "no unit"),
        ("infs", "over an hour"),
        ("nanms", "positive"),
    ],
)
def test_bad_bounds_refused(text: str, says: str) -> None:
    with pytest.raises(ValueError, match=says):
        parse_bound_ns(text)


def test_slo_list_sorted_and_tightest() -> None:
    slo = parse_slo_text("p999=10ms,p99=2ms")
    assert [b.name for b in slo.bounds] == ["p99", "p999"]
    assert slo.tightest_q == 0.999
    assert slo.text() == "p99 ≤ 2 ms, p999 ≤ 10 ms"


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("p98=2ms", "not a percentile"),
        ("p99", "not PERCENTILE=BOUND"),
        ("p99=2ms,p99=3ms", "twice"),
        ("p99=10ms,p999=2ms", "look swapped"),
        ("p99=2", "p99: '2' has no unit"),
    ],
)
def test_bad_slo_refused(text: str, says: str) -> None:
    with pytest.raises(ValueError, match=says):
        parse_slo_text(text)


def test_empty_slo_refused() -> None:
    with pytest.raises(ValueError, match="at least one"):
        make_slo({})


def test_requirement() -> None:
    assert parse_requirement("read_by_id=5k") == ("read_by_id", 5000.0)
    for bad in ("read_by_id", "=5k", "read_by_id=0", "read_by_id=-1", "read_by_id=5 k"):
        with pytest.raises(ValueError):
            parse_requirement(bad)
