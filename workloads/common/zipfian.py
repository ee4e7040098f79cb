"""YCSB's zipfian generator (Gray et al., SIGMOD 1994): zeta, eta, alpha, and its exact PMF.

YCSB does not draw from the textbook Zipf law: it maps a uniform double through Gray's
closed form (``ZipfianGenerator.nextLong``), so item 0 and 1 get exactly 1/zeta(n) and
0.5**theta/zeta(n) and the rest follow the closed form's steps. We reproduce that map,
vectorised, and compute the probability of every item under it (:func:`pmf`) so the
tests compare draws with what YCSB's generator really produces, not with an idealisation.

When the item count grows (the latest distribution grows it with every insert), YCSB's
``nextLong(itemcount)`` extends zeta term by term to the new count *and recomputes eta*
from the new zeta: ``eta = (1 - (2/items)**(1-theta)) / (1 - zeta2/zetan(itemcount))``.
One YCSB quirk is kept on purpose (a fact, so numbers compare): the ``2/items`` factor of
that recomputation is the count the generator was *built* with (YCSB's final ``items``
field), not the grown one. :meth:`Zipfian.eta_for` is that formula.
"""

from __future__ import annotations

from typing import cast

import numpy as np
import numpy.typing as npt

#: YCSB's default zipfian constant (``ZipfianGenerator.ZIPFIAN_CONSTANT``)
ZIPFIAN_CONSTANT = 0.99

_DIRECT_LIMIT = 10_000_000
_CHUNK = 1 << 20


def _direct(start: int, stop: int, theta: float) -> float:
    """sum of i**-theta for i in [start, stop), in chunks (memory stays small)."""
    total = 0.0
    for lo in range(start, stop, _CHUNK):
        i = np.arange(lo, min(stop, lo + _CHUNK), dtype=np.float64)
        total += float(np.sum(i**-theta))
    return total


def zeta(n: int, theta: float) -> float:
    """zeta(n, theta) = sum of 1/i**theta for i = 1..n (YCSB's ``zetastatic``).

    Summed directly up to 10**7 terms; beyond, the first 10**6 terms directly and the
    rest by Euler-Maclaurin (integral, end corrections and the first derivative term),
    whose error is far below a double's precision at these sizes, so the 10**10-item
    scrambled zipfian needs no minute-long loop (YCSB ships that zeta as a constant).
    """
    if n <= 0:
        return 0.0
    if n <= _DIRECT_LIMIT:
        return _direct(1, n + 1, theta)
    m = 1_000_000
    head = _direct(1, m + 1, theta)

    def f(x: float) -> float:
        return cast(float, x**-theta)  # float ** float is typed Any (a negative base gives a complex)

    def df(x: float) -> float:
        return cast(float, -theta * x ** (-theta - 1))

    integral: float = (n ** (1 - theta) - m ** (1 - theta)) / (1 - theta)
    tail = integral + (f(m) + f(n)) / 2 + (df(n) - df(m)) / 12 - f(m)
    return head + tail


class Zipfian:
    """Gray's zipfian over ``items`` items 0..items-1 (YCSB's ``ZipfianGenerator(items, theta)``)."""

    __slots__ = ("alpha", "eta", "items", "theta", "zeta2", "zetan")

    def __init__(self, items: int, theta: float = ZIPFIAN_CONSTANT, zetan: float | None = None) -> None:
        if items < 1:
            raise ValueError(f"a zipfian needs at least 1 item, got {items}")
        if not 0.0 < theta < 1.0:
            raise ValueError(f"zipfianconstant must be in (0, 1), got {theta}")
        self.items = items
        self.theta = theta
        self.alpha = 1.0 / (1.0 - theta)
        self.zeta2 = zeta(2, theta)
        self.zetan = zeta(items, theta) if zetan is None else zetan
        self.eta = float(self.eta_for(self.zetan))

    def eta_for(self, zetan: float | npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
        """eta for a (possibly grown) zeta, as YCSB's ``nextLong(itemcount)`` recomputes it.

        The ``2/items`` factor stays the built count's: YCSB writes ``2.0 / items`` (its final
        field) in the recomputation too, so only zeta moves eta.
        """
        grown = np.asarray(zetan, dtype=np.float64)
        eta: npt.NDArray[np.float64] = (1 - (2.0 / self.items) ** (1 - self.theta)) / (1 - self.zeta2 / grown)
        return eta

    def zetan_for(self, itemcount: int) -> float:
        """zeta for a grown item count, extended from this generator's (as YCSB does)."""
        if itemcount <= self.items:
            return self.zetan
        return self.zetan + _direct(self.items + 1, itemcount + 1, self.theta)

    def map(
        self,
        u: npt.NDArray[np.float64],
        itemcount: int | npt.NDArray[np.int64] | None = None,
        zetan: float | npt.NDArray[np.float64] | None = None,
    ) -> npt.NDArray[np.int64]:
        """Items for uniform doubles ``u`` in [0, 1): YCSB's ``nextLong(itemcount)``, vectorised.

        ``itemcount``/``zetan`` may be arrays (one per draw) when the count grows between
        draws; by default this generator's own. ``zetan`` is the zeta of ``itemcount``
        (computed by :meth:`zetan_for` when not given); eta follows it (:meth:`eta_for`).
        """
        if itemcount is None:
            n: int | npt.NDArray[np.int64] = self.items
            z: float | npt.NDArray[np.float64] = self.zetan
        else:
            n = itemcount
            if zetan is not None:
                z = zetan
            elif isinstance(itemcount, int):
                z = self.zetan_for(itemcount)
            else:
                raise ValueError("an array of item counts needs the matching array of zetas")
        eta = self.eta if itemcount is None else self.eta_for(z)
        uz = u * z
        with np.errstate(invalid="ignore"):
            far = np.floor(n * np.power(eta * u - eta + 1, self.alpha))
        out = np.where(uz < 1.0, 0.0, np.where(uz < 1.0 + 0.5**self.theta, 1.0, far))
        # u < 1 keeps the closed form below n; the clip only guards rounding at the top
        return cast(npt.NDArray[np.int64], np.minimum(out, np.asarray(n) - 1).astype(np.int64))

    def pmf(self, itemcount: int | None = None, first: int | None = None) -> npt.NDArray[np.float64]:
        """The exact probability of each item 0..itemcount-1 under :meth:`map` with u uniform.

        ``first``: only the first that many items (a 10**10-item zipfian's head).
        """
        n = self.items if itemcount is None else itemcount
        z = self.zetan_for(n)
        eta = float(self.eta_for(z))
        k = np.arange(min(n, first or n) + 1, dtype=np.float64)
        # u at which the closed form reaches item k: (k/n)**(1-theta) = eta*u - eta + 1
        g = ((k / n) ** (1 - self.theta) - 1 + eta) / eta
        u2 = (1.0 + 0.5**self.theta) / z
        lo = np.maximum(g[:-1], u2)
        hi = np.minimum(g[1:], 1.0)
        p: npt.NDArray[np.float64] = np.maximum(hi - lo, 0.0)
        p[0] += min(1.0, 1.0 / z)
        if len(p) > 1:
            p[1] += max(0.0, min(1.0, u2) - min(1.0, 1.0 / z))
        return p

