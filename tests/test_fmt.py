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
    assert fmt.size(147_500_000) == "147.5 MB"
