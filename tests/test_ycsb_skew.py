"""The skew a phase ran: shares of operations on the hottest 0.1 %, 1 % and 10 % of keys."""

from __future__ import annotations

import numpy as np
import pytest

from asyncbench.workloads.common import distributions as d
from asyncbench.workloads.common.skew import KeyCounts
from asyncbench.workloads.common.zipfian import Zipfian


def test_one_hot_key_takes_every_share() -> None:
    c = KeyCounts()
    c.add(np.full(100, 7, dtype=np.int64))
    assert c.hot_shares(1000) == {0.001: 1.0, 0.01: 1.0, 0.1: 1.0}


def test_sequential_keys_are_flat() -> None:
    c = KeyCounts()
    c.add(np.arange(10_000, dtype=np.int64) % 1000)
    assert c.hot_shares(1000) == pytest.approx({0.001: 0.001, 0.01: 0.01, 0.1: 0.1})


def test_zipfian_shares_follow_its_pmf_and_workers_add_up() -> None:
    keys = d.next_keys(d.chooser(d.Params("clustered_zipfian", 10_000), 3), np.full(10**6, 9_999, dtype=np.int64))
    whole = KeyCounts()
    whole.add(keys)
    parts = [KeyCounts() for _ in range(4)]
    for w in range(4):
        parts[w].add(keys[keys % 4 == w])
    merged = KeyCounts()
    for p in parts:
        merged.merge(p)
    assert merged.hot_shares(10_000) == whole.hot_shares(10_000)
    pmf = np.sort(Zipfian(10_000).pmf())[::-1]
    expected = {0.001: pmf[:10].sum(), 0.01: pmf[:100].sum(), 0.1: pmf[:1000].sum()}
    assert whole.hot_shares(10_000) == pytest.approx(expected, abs=0.003)


def test_a_key_past_the_key_space_is_refused() -> None:
    c = KeyCounts()
    c.add(np.array([5], dtype=np.int64))
    with pytest.raises(ValueError, match="touched key 5, past a key space of 3"):
        c.hot_shares(3)
