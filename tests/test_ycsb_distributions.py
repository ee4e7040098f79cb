"""Each YCSB request distribution against its exact probability mass function.

10**6 seeded draws per distribution, binned per key (tail bins merged until each expects
at least 20 draws), Pearson's chi-square against the PMF of YCSB's generator; the bound
is the chi-square quantile at p = 1e-4 (Wilson-Hilferty). Each test also computes the
same statistic against a *wrong* PMF (zipfian constant 0.9 instead of 0.99, hotspot
fraction 0.7 instead of 0.8, ...) and requires it rejected: the test can fail.
The draws are seeded, so the statistics are the same on every run.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from asyncbench.workloads.common import distributions as d
from asyncbench.workloads.common.fnv import fnvhash64_array
from asyncbench.workloads.common.zipfian import Zipfian, zeta

DRAWS = 1_000_000
RECORDS = 1000
SEED = 20261204
Z_1E4 = 3.719  # standard normal quantile at 1 - 1e-4


def chi2_bound(df: int) -> float:
    """The chi-square quantile at 1 - 1e-4 for df degrees of freedom (Wilson-Hilferty)."""
    a = 2.0 / (9.0 * df)
    return df * (1 - a + Z_1E4 * math.sqrt(a)) ** 3


def chi2(counts: np.ndarray, pmf: np.ndarray) -> tuple[float, int]:
    """Pearson's statistic and degrees of freedom, bins sorted by expectation and small ones merged."""
    assert abs(pmf.sum() - 1) < 1e-9
    expected = pmf * counts.sum()
    order = np.argsort(expected)[::-1]
    e, c = expected[order], counts[order].astype(np.float64)
    keep = int(np.searchsorted(-e, -20.0, side="right"))  # bins expecting >= 20
    e = np.append(e[:keep], e[keep:].sum())
    c = np.append(c[:keep], c[keep:].sum())
    if e[-1] == 0:
        e, c = e[:-1], c[:-1]
    return float(((c - e) ** 2 / e).sum()), len(e) - 1


def draw(params: d.Params, maxkey: int = RECORDS - 1) -> np.ndarray:
    choice = d.chooser(params, SEED)
    keys = d.next_keys(choice, np.full(DRAWS, maxkey, dtype=np.int64))
    return np.bincount(keys, minlength=maxkey + 1)


def check(counts: np.ndarray, right: np.ndarray, wrong: np.ndarray) -> None:
    stat, df = chi2(counts, right)
    assert stat < chi2_bound(df), f"chi2 {stat:.1f} over bound {chi2_bound(df):.1f} (df {df})"
    bad, bad_df = chi2(counts, wrong)
    assert bad > chi2_bound(bad_df), f"a wrong PMF passed: chi2 {bad:.1f} (df {bad_df})"


def test_uniform() -> None:
    counts = draw(d.Params("uniform", RECORDS))
    right = np.full(RECORDS, 1 / RECORDS)
    wrong = np.full(RECORDS, 1 / RECORDS)
    wrong[:10] *= 1.5  # ten keys half again as likely
    check(counts, right, wrong / wrong.sum())


def test_zeta_matches_ycsbs_shipped_constant() -> None:
    """ScrambledZipfianGenerator.ZETAN is zeta(10**10, 0.99); ours (Euler-Maclaurin) agrees."""
    assert zeta(10**10, 0.99) == pytest.approx(d.SCRAMBLED_ZETAN, rel=1e-11)
    assert zeta(1000, 0.99) == pytest.approx(math.fsum(i**-0.99 for i in range(1, 1001)), rel=1e-13)


def test_zipfian_pmf_first_items_are_ycsbs() -> None:
    z = Zipfian(RECORDS)
    p = z.pmf()
    assert p.sum() == pytest.approx(1, abs=1e-12)
    assert p[0] == pytest.approx(1 / z.zetan)
    assert p[1] == pytest.approx(0.5**0.99 / z.zetan)


@pytest.mark.parametrize("theta, wrong_theta", [(0.99, 0.9), (0.9, 0.99), (0.5, 0.6)])
def test_clustered_zipfian(theta: float, wrong_theta: float) -> None:
    counts = draw(d.Params("clustered_zipfian", RECORDS, zipfianconstant=theta))
    check(counts, Zipfian(RECORDS, theta).pmf(), Zipfian(RECORDS, wrong_theta).pmf())


def scrambled_pmf(theta: float, itemcount: int, head: int = 1_000_000) -> np.ndarray:
    """Keys of the scrambled zipfian: the first 10**6 items exactly (hashed to their key), the
    rest (a smooth tail of 10**10 items, some 10**7 per key) spread evenly."""
    zetan = d.SCRAMBLED_ZETAN if theta == 0.99 else None
    z = Zipfian(d.SCRAMBLED_ITEM_COUNT + 1, theta, zetan)
    p_head = z.pmf(first=head)
    keys = (fnvhash64_array(np.arange(head, dtype=np.int64)) % np.uint64(itemcount)).astype(np.int64)
    pmf = np.bincount(keys, weights=p_head, minlength=itemcount)
    pmf += (1 - p_head.sum()) / itemcount
    return pmf


@pytest.mark.parametrize("theta, wrong_theta", [(0.99, 0.9), (0.9, 0.99)])
def test_scrambled_zipfian(theta: float, wrong_theta: float) -> None:
    # YCSB's key range is recordcount + 1 keys (both ends inclusive); key 1000 is drawn again
    counts = draw(d.Params("zipfian", RECORDS, zipfianconstant=theta))
    right = scrambled_pmf(theta, RECORDS + 1)[:RECORDS]
    wrong = scrambled_pmf(wrong_theta, RECORDS + 1)[:RECORDS]
    check(counts, right / right.sum(), wrong / wrong.sum())


def test_scrambled_zipfian_spreads_its_hot_keys() -> None:
    """The hottest key is item 0's hash, not key 0 (YCSB's point of scrambling)."""
    counts = draw(d.Params("zipfian", RECORDS))
    assert int(np.argmax(counts)) == 6284781860667377211 % (RECORDS + 1)


def latest_pmf(theta: float, maxkey: int) -> np.ndarray:
    z = Zipfian(RECORDS - 1, theta).pmf(maxkey)  # value v means key maxkey - v
    pmf = np.zeros(maxkey + 1)
    pmf[maxkey - np.arange(maxkey)] = z
    return pmf


@pytest.mark.parametrize("theta, wrong_theta", [(0.99, 0.9)])
def test_latest(theta: float, wrong_theta: float) -> None:
    counts = draw(d.Params("latest", RECORDS, zipfianconstant=theta))
    assert counts[0] == 0  # YCSB's latest never draws key 0
    check(counts, latest_pmf(theta, RECORDS - 1), latest_pmf(wrong_theta, RECORDS - 1))


def gray_pmf(n: int, zetan: float, eta: float, theta: float) -> np.ndarray:
    """P(item k), k < n, of Gray's closed form as YCSB's ``nextLong(n)`` applies it with the
    given zeta and eta, written out here on its own (not the library's pmf): 0 for u*zetan < 1,
    1 below 1 + 0.5**theta, else floor(n * (eta*u - eta + 1)**(1/(1-theta)))."""
    k = np.arange(n + 1, dtype=np.float64)
    edge = ((k / n) ** (1 - theta) - 1 + eta) / eta  # the u where the closed form reaches k
    u1, u2 = 1 / zetan, (1 + 0.5**theta) / zetan
    p = np.clip(np.minimum(edge[1:], 1.0) - np.maximum(edge[:-1], u2), 0.0, None)
    p[0] += u1
    p[1] += u2 - u1
    return p


def ycsb_latest_pmf(maxkey: int, eta_recomputed: bool, theta: float = 0.99) -> np.ndarray:
    """Keys of YCSB's SkewedLatestGenerator at ``maxkey`` (built at RECORDS - 1 items).

    YCSB's ``nextLong(itemcount)`` extends zeta to the grown count and recomputes
    eta = (1 - (2/items)**(1-theta)) / (1 - zeta(2)/zeta(itemcount)), ``items`` the built
    count; ``eta_recomputed=False`` is the wrong law that keeps the built eta.
    """
    items = RECORDS - 1
    zeta2 = 1 + 0.5**theta
    zeta_built = math.fsum(i**-theta for i in range(1, items + 1))
    zetan = math.fsum(i**-theta for i in range(1, maxkey + 1))
    eta_built = (1 - (2 / items) ** (1 - theta)) / (1 - zeta2 / zeta_built)
    eta_grown = (1 - (2 / items) ** (1 - theta)) / (1 - zeta2 / zetan)
    values = gray_pmf(maxkey, zetan, eta_grown if eta_recomputed else eta_built, theta)
    pmf = np.zeros(maxkey + 1)
    pmf[maxkey - np.arange(maxkey)] = values  # value v is key maxkey - v
    return pmf


def test_latest_follows_inserts() -> None:
    """After 500 inserts the newest key is the hottest under YCSB's law: zeta extended to the
    grown count and eta recomputed from it; the law that keeps the built eta is rejected."""
    maxkey = RECORDS - 1 + 500
    counts = draw(d.Params("latest", RECORDS), maxkey)
    check(counts, ycsb_latest_pmf(maxkey, True), ycsb_latest_pmf(maxkey, False))


def test_latest_as_keys_are_inserted_is_ycsbs_law() -> None:
    """Workload D's situation: the key set grows draw by draw (RECORDS - 1 to 6 x that).
    Counted by age (maxkey - key, the zipfian's value, which YCSB's law gives), the expected
    count of each age is the sum of YCSB's law at each draw's maxkey; the chi-square accepts
    the recomputed eta and rejects the kept one (as YCSB's own draws do)."""
    top = 6 * (RECORDS - 1)
    maxkey = np.sort(np.linspace(RECORDS - 1, top, DRAWS).astype(np.int64))
    keys = d.next_keys(d.chooser(d.Params("latest", RECORDS), SEED), maxkey)
    counts = np.bincount(maxkey - keys, minlength=top)
    steps, per_step = np.unique(maxkey, return_counts=True)
    right, wrong = np.zeros(top), np.zeros(top)
    for m, c in zip(steps.tolist(), per_step.tolist(), strict=True):
        right[:m] += c * ycsb_latest_pmf(m, True)[m:0:-1]  # age v is key m - v
        wrong[:m] += c * ycsb_latest_pmf(m, False)[m:0:-1]
    check(counts, right / DRAWS, wrong / DRAWS)


def hotspot_pmf(datafraction: float, opnfraction: float) -> np.ndarray:
    hot = int(RECORDS * datafraction)
    pmf = np.full(RECORDS, (1 - opnfraction) / (RECORDS - hot))
    pmf[:hot] = opnfraction / hot
    return pmf


@pytest.mark.parametrize(
    "data, opn, wrong_data, wrong_opn", [(0.2, 0.8, 0.2, 0.7), (0.2, 0.8, 0.1, 0.8), (0.05, 0.95, 0.05, 0.9)]
)
def test_hotspot(data: float, opn: float, wrong_data: float, wrong_opn: float) -> None:
    counts = draw(d.Params("hotspot", RECORDS, hotspotdatafraction=data, hotspotopnfraction=opn))
    check(counts, hotspot_pmf(data, opn), hotspot_pmf(wrong_data, wrong_opn))


def exponential_pmf(percentile: float, frac: float, maxkey: int) -> np.ndarray:
    gamma = -math.log(1 - percentile / 100) / (RECORDS * frac)
    j = np.arange(maxkey + 1)  # key maxkey - j: floor(X) = j, X ~ Exp(gamma), truncated at maxkey
    p = np.exp(-gamma * j) * (1 - math.exp(-gamma))
    pmf = np.zeros(maxkey + 1)
    pmf[maxkey - j] = p / p.sum()
    return pmf


@pytest.mark.parametrize("percentile, frac, wrong_percentile", [(95, 0.8571428571, 90), (50, 0.01, 60)])
def test_exponential(percentile: float, frac: float, wrong_percentile: float) -> None:
    params = d.Params("exponential", RECORDS, exponential_percentile=percentile, exponential_frac=frac)
    counts = draw(params)
    check(
        counts,
        exponential_pmf(percentile, frac, RECORDS - 1),
        exponential_pmf(wrong_percentile, frac, RECORDS - 1),
    )


def test_sequential_counts_up_and_wraps() -> None:
    choice = d.chooser(d.Params("sequential", 5), SEED)
    first = d.next_keys(choice, np.full(7, 4, dtype=np.int64))
    second = d.next_keys(choice, np.full(3, 4, dtype=np.int64))
    assert first.tolist() == [0, 1, 2, 3, 4, 0, 1]
    assert second.tolist() == [2, 3, 4]


@pytest.mark.parametrize("name", d.NAMES)
def test_a_seed_gives_the_same_draws_every_time(name: str) -> None:
    params = d.Params(name, RECORDS, expectednewkeys=100)
    maxkey = np.arange(RECORDS - 1, RECORDS + 99, dtype=np.int64)
    first = d.next_keys(d.chooser(params, 7), maxkey)
    assert d.next_keys(d.chooser(params, 7), maxkey).tolist() == first.tolist()
    assert d.next_keys(d.chooser(params, 8), maxkey).tolist() != first.tolist() or name == "sequential"
    assert (first <= maxkey).all() and (first >= 0).all()


def test_draws_are_pinned() -> None:
    """The first draws of seed 1, written down: a change to the streams or maps shows here."""
    maxkey = np.full(6, RECORDS - 1, dtype=np.int64)
    got = {name: d.next_keys(d.chooser(d.Params(name, RECORDS), 1), maxkey).tolist() for name in d.NAMES}
    assert got == PINNED


PINNED: dict[str, list[int]] = {
    "uniform": [682, 571, 673, 399, 210, 822],
    "zipfian": [918, 881, 854, 849, 139, 610],
    "clustered_zipfian": [14, 12, 11, 3, 261, 0],
    "latest": [985, 987, 988, 996, 738, 999],
    "hotspot": [155, 29, 46, 23, 808, 42],
    "exponential": [829, 838, 844, 907, 506, 985],
    "sequential": [0, 1, 2, 3, 4, 5],
}


def test_unknown_distribution_is_named() -> None:
    with pytest.raises(ValueError, match="unknown request distribution 'zipf'.*uniform, zipfian"):
        d.chooser(d.Params("zipf", RECORDS), SEED)


def test_hotspot_without_hot_keys_is_refused() -> None:
    with pytest.raises(ValueError, match="0 hot and 10 cold keys"):
        d.chooser(d.Params("hotspot", 10, hotspotdatafraction=0.01), SEED)
