"""Request distributions: which key an operation touches, with YCSB's generators' semantics.

One class per YCSB key chooser (``CoreWorkload.init``), each drawing a whole batch at
once from its own seeded stream (a Python call per key would cost more than the 1 us an
operation may spend on drawing). ``maxkey`` is, per draw, the highest key number
inserted so far in the phase's operation order (YCSB's
``transactioninsertkeysequence.lastValue()``), and :func:`next_keys` applies YCSB's
``nextKeynum`` rule: a key past it (not inserted yet) is drawn again; for the
exponential, a key below 0 is.

Names follow YCSB's ``requestdistribution``: ``zipfian`` is YCSB's *scrambled* zipfian
(what CoreWorkload builds for "zipfian"); ``clustered_zipfian`` is the plain
``ZipfianGenerator`` over key numbers (key 0 hottest), our addition.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from asyncbench.workloads.common import draws
from asyncbench.workloads.common.fnv import fnvhash64_array
from asyncbench.workloads.common.zipfian import ZIPFIAN_CONSTANT, Zipfian

#: ScrambledZipfianGenerator's constants: a zipfian over 10**10 items, whose precomputed zeta
#: for theta 0.99 it ships (its ``ITEM_COUNT``, ``ZETAN``)
SCRAMBLED_ITEM_COUNT = 10_000_000_000
SCRAMBLED_ZETAN = 26.46902820178302

NAMES = ("uniform", "zipfian", "clustered_zipfian", "latest", "hotspot", "exponential", "sequential")

Keys = npt.NDArray[np.int64]


@dataclass(frozen=True)
class Params:
    """What a request distribution needs; the defaults are YCSB's."""

    name: str
    recordcount: int
    #: keys the scrambled zipfian spreads over beyond recordcount (YCSB: 2 * expected inserts)
    expectednewkeys: int = 0
    zipfianconstant: float = ZIPFIAN_CONSTANT
    hotspotdatafraction: float = 0.2
    hotspotopnfraction: float = 0.8
    exponential_percentile: float = 95.0
    exponential_frac: float = 0.8571428571


class Chooser:
    """A batch key chooser; subclasses give the candidate keys and what rejects one."""

    def __init__(self, params: Params, seed: int) -> None:
        self.params = params
        self.stream = draws.Stream(seed, draws.KEY)

    def candidates(self, maxkey: Keys) -> Keys:
        raise NotImplementedError

    def rejected(self, keys: Keys, maxkey: Keys) -> npt.NDArray[np.bool_]:
        return keys > maxkey


class Uniform(Chooser):
    """YCSB's ``UniformLongGenerator(0, recordcount - 1)``: never a key inserted in the run."""

    def candidates(self, maxkey: Keys) -> Keys:
        return self.stream.below(len(maxkey), self.params.recordcount)


class ScrambledZipfian(Chooser):
    """YCSB's default: a zipfian over 10**10 items, each hashed (FNV-64) onto the key range.

    The key range is recordcount + expectednewkeys + 1 keys (YCSB's
    ``ScrambledZipfianGenerator(insertstart, insertstart + insertcount + expectednewkeys)``,
    both ends inclusive); keys not inserted yet are drawn again.
    """

    def __init__(self, params: Params, seed: int) -> None:
        super().__init__(params, seed)
        theta = params.zipfianconstant
        zetan = SCRAMBLED_ZETAN if theta == ZIPFIAN_CONSTANT else None
        # ZipfianGenerator(0, ITEM_COUNT, ...): ITEM_COUNT + 1 items; YCSB's ZETAN is its zeta
        self.zipf = Zipfian(SCRAMBLED_ITEM_COUNT + 1, theta, zetan)
        self.itemcount = params.recordcount + params.expectednewkeys + 1

    def candidates(self, maxkey: Keys) -> Keys:
        items = self.zipf.map(self.stream.doubles(len(maxkey)))
        return (fnvhash64_array(items) % np.uint64(self.itemcount)).astype(np.int64)


class ClusteredZipfian(Chooser):
    """YCSB's plain ``ZipfianGenerator`` over the key numbers: key 0 hottest, then 1, 2..."""

    def __init__(self, params: Params, seed: int) -> None:
        super().__init__(params, seed)
        self.zipf = Zipfian(params.recordcount + params.expectednewkeys, params.zipfianconstant)

    def candidates(self, maxkey: Keys) -> Keys:
        return self.zipf.map(self.stream.doubles(len(maxkey)))


class Latest(Chooser):
    """YCSB's ``SkewedLatestGenerator``: maxkey - zipfian(maxkey), skewed to the newest key.

    Built, as YCSB's, with a zipfian over recordcount - 1 items (the counter's last value
    at the start); as inserts raise maxkey, zeta is extended to maxkey items and eta is
    recomputed from it (YCSB's ``nextLong(itemcount)``, :meth:`Zipfian.eta_for`), so the
    newest keys' share shrinks as the key set grows, as in YCSB. Key 0 is never drawn
    (the zipfian's values are 0..maxkey-1), as in YCSB.
    """

    def __init__(self, params: Params, seed: int) -> None:
        super().__init__(params, seed)
        if params.recordcount < 2:
            raise ValueError("the latest distribution needs recordcount >= 2")
        self.zipf = Zipfian(params.recordcount - 1, params.zipfianconstant)
        self._zetas = np.array([self.zipf.zetan])  # zeta for maxkey = items + index

    def _zetan(self, maxkey: Keys) -> npt.NDArray[np.float64]:
        top = int(maxkey.max()) - self.zipf.items
        if top >= len(self._zetas):
            start = self.zipf.items + len(self._zetas)  # the next count to cover
            terms = np.arange(start, self.zipf.items + top + 1, dtype=np.float64) ** -self.zipf.theta
            self._zetas = np.concatenate([self._zetas, self._zetas[-1] + np.cumsum(terms)])
        return self._zetas[maxkey - self.zipf.items]

    def candidates(self, maxkey: Keys) -> Keys:
        u = self.stream.doubles(len(maxkey))
        return maxkey - self.zipf.map(u, maxkey, self._zetan(maxkey))


class Hotspot(Chooser):
    """YCSB's ``HotspotIntegerGenerator(0, recordcount - 1, datafraction, opnfraction)``.

    A share ``hotspotopnfraction`` of draws go uniformly to the hot set, the first
    ``int(recordcount * hotspotdatafraction)`` keys; the rest uniformly to the others.
    """

    def __init__(self, params: Params, seed: int) -> None:
        super().__init__(params, seed)
        self.hot = int(params.recordcount * params.hotspotdatafraction)
        self.cold = params.recordcount - self.hot
        if self.hot == 0 and params.hotspotopnfraction > 0 or self.cold == 0 and params.hotspotopnfraction < 1:
            raise ValueError(
                f"hotspot: {self.hot} hot and {self.cold} cold keys of {params.recordcount} "
                f"cannot take {params.hotspotopnfraction} of operations on the hot set"
            )

    def candidates(self, maxkey: Keys) -> Keys:
        n = len(maxkey)
        raw = self.stream.raw(2 * n)
        u = (raw[:n] >> np.uint64(11)).astype(np.float64) * 2.0**-53
        pick = raw[n:]
        hot = (pick % np.uint64(max(self.hot, 1))).astype(np.int64)
        cold = self.hot + (pick % np.uint64(max(self.cold, 1))).astype(np.int64)
        return np.where(u < self.params.hotspotopnfraction, hot, cold)


class Exponential(Chooser):
    """YCSB's ``ExponentialGenerator(percentile, recordcount * frac)``: maxkey - int(X).

    X is exponential with rate gamma = -ln(1 - percentile/100) / (recordcount * frac):
    ``percentile`` % of draws fall on the newest ``frac`` of the records.
    """

    def __init__(self, params: Params, seed: int) -> None:
        super().__init__(params, seed)
        span = params.recordcount * params.exponential_frac
        self.gamma = -math.log(1.0 - params.exponential_percentile / 100.0) / span

    def candidates(self, maxkey: Keys) -> Keys:
        u = self.stream.doubles(len(maxkey))
        x = -np.log1p(-u) / self.gamma  # -ln(1 - u), u in [0, 1): finite
        return maxkey - np.minimum(x, 2.0**62).astype(np.int64)

    def rejected(self, keys: Keys, maxkey: Keys) -> npt.NDArray[np.bool_]:
        return keys < 0


class Sequential(Chooser):
    """YCSB's ``SequentialGenerator(0, recordcount - 1)``: 0, 1, 2, ... wrapping around."""

    def __init__(self, params: Params, seed: int) -> None:
        super().__init__(params, seed)
        self.counter = 0

    def candidates(self, maxkey: Keys) -> Keys:
        n = len(maxkey)
        keys = (self.counter + np.arange(n, dtype=np.int64)) % self.params.recordcount
        self.counter += n
        return keys


_CLASSES: dict[str, type[Chooser]] = {
    "uniform": Uniform,
    "zipfian": ScrambledZipfian,
    "clustered_zipfian": ClusteredZipfian,
    "latest": Latest,
    "hotspot": Hotspot,
    "exponential": Exponential,
    "sequential": Sequential,
}


def chooser(params: Params, seed: int) -> Chooser:
    """The key chooser a distribution name stands for (ValueError naming the choices if none)."""
    cls = _CLASSES.get(params.name)
    if cls is None:
        raise ValueError(f"unknown request distribution {params.name!r} (one of {', '.join(NAMES)})")
    if params.recordcount < 1:
        raise ValueError(f"recordcount must be >= 1, got {params.recordcount}")
    return cls(params, seed)


def next_keys(choice: Chooser, maxkey: Keys) -> Keys:
    """One key per entry of ``maxkey``, redrawing rejected ones (YCSB's ``nextKeynum`` loop)."""
    keys = choice.candidates(maxkey)
    bad = np.flatnonzero(choice.rejected(keys, maxkey))
    while len(bad):
        again = choice.candidates(maxkey[bad])
        keys[bad] = again
        bad = bad[choice.rejected(again, maxkey[bad])]
    return keys
