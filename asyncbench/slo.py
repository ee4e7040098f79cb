"""Service-level objectives: percentile bounds on response time, and rate requirements.

People choose an engine for a latency bound at a rate ("p99 under 2 ms at the rate we
need"); the capacity search (:mod:`asyncbench.run.capacity.capacity`) judges every probe against
these bounds. Kept in the lowest layer beside :mod:`asyncbench.rate` because the plan
(config), the result model and the runner all name them.

What is accepted, strictly (the same rules as :mod:`asyncbench.parse`):

- a percentile is one of :data:`PERCENTILES` (``p50`` ... ``p9999``); any other is refused;
- a bound is a positive number with a unit, ``us`` (or ``µs``), ``ms`` or ``s``: ``2ms``,
  ``500us``, ``0.5s``. A bare number is refused (is ``2`` seconds or milliseconds?), as are
  zero, a sign, whitespace and anything parse.py's number rules refuse;
- bounds that contradict each other are refused: a higher percentile's bound below a lower
  one's (``p99 = 10ms`` with ``p999 = 2ms``) means the lower bound can never limit
  anything (every distribution's p99 is at most its p999), almost always two swapped values.

ValueError says what was wrong; the caller names the file or flag and the key.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from asyncbench.parse import parse_count, parse_seconds

__all__ = [
    "CLIENT_LATE_SHARE",
    "PERCENTILES",
    "Bound",
    "Slo",
    "client_late",
    "make_slo",
    "ns_text",
    "parse_bound_ns",
    "parse_requirement",
    "parse_slo_text",
]

#: The percentiles a bound may name, and the quantile each stands for.
PERCENTILES: dict[str, float] = {
    "p50": 0.5,
    "p90": 0.9,
    "p95": 0.95,
    "p99": 0.99,
    "p999": 0.999,
    "p9999": 0.9999,
}
#: The client is late for a bound when its own schedule delay at the bound's percentile
#: takes at least this share of the bound. The delay is the harness's lateness in issuing
#: operations (asyncbench.measure.latency_recorder): it is inside every response time, and
#: no engine could meet a bound whose budget the client already spent half of. A bound
#: missed then is no verdict on the engine: INCONCLUSIVE, naming the delay.
CLIENT_LATE_SHARE = 0.5


def client_late(delay_ns: int, bound_ns: int) -> bool:
    """The client's own delay is large enough to decide the bound (:data:`CLIENT_LATE_SHARE`)."""
    return delay_ns >= CLIENT_LATE_SHARE * bound_ns


_UNITS = {"us": 1_000, "µs": 1_000, "ms": 1_000_000, "s": 1_000_000_000}
_BOUND = re.compile(r"(.*?)(us|µs|ms|s)")
#: No bound above an hour: a larger one is a typo (and keeps the ns figure an exact int).
MAX_BOUND_NS = 3_600 * 1_000_000_000


def parse_bound_ns(text: str) -> int:
    """``2ms``, ``500us``, ``0.5s`` -> nanoseconds (a positive int); ValueError otherwise."""
    if not isinstance(text, str):
        raise ValueError(f"{text!r} is not a duration: write it as a string with a unit, e.g. \"2ms\"")
    m = _BOUND.fullmatch(text)
    if m is None or not m.group(1):
        raise ValueError(f"{text!r} has no unit: write a number with us, ms or s (e.g. 2ms)")
    number = parse_seconds(m.group(1))  # the strict number rules; the unit scales it below
    ns = number * _UNITS[m.group(2)]
    if not (ns > 0) or ns != ns:
        raise ValueError(f"{text!r} is not a positive duration")
    if ns > MAX_BOUND_NS:
        raise ValueError(f"{text!r} is over an hour: too large a latency bound")
    if ns < 1:
        raise ValueError(f"{text!r} is under a nanosecond: the clock cannot judge it")
    return round(ns)


@dataclass(frozen=True)
class Bound:
    """Response time at percentile ``name`` (quantile ``q``) must be at most ``ns``."""

    name: str
    q: float
    ns: int


@dataclass(frozen=True)
class Slo:
    """The bounds one phase kind is judged by, tightest percentile last."""

    bounds: tuple[Bound, ...]

    @property
    def tightest_q(self) -> float:
        """The highest quantile bounded: it sets how long a probe must run."""
        return max(b.q for b in self.bounds)

    def text(self) -> str:
        """``p99 ≤ 2 ms, p999 ≤ 10 ms`` for the console and the report."""
        return bounds_text({b.name: b.ns for b in self.bounds})


def bounds_text(bounds: Mapping[str, int]) -> str:
    """``p99 ≤ 2 ms, p999 ≤ 10 ms`` from percentile -> bound in ns: an Slo's, and a
    recorded capacity's (the report and compare), written one way."""
    return ", ".join(f"{name} ≤ {_ns_text(ns)}" for name, ns in bounds.items())


def ns_text(ns: int) -> str:
    """``2 ms``, ``500 µs``, ``1.5 s``: a duration as the verdicts and bounds print it."""
    return _ns_text(ns)


def _ns_text(ns: int) -> str:
    if ns >= 1_000_000_000:
        return f"{ns / 1e9:g} s"
    if ns >= 1_000_000:
        return f"{ns / 1e6:g} ms"
    return f"{ns / 1e3:g} µs"


def make_slo(pairs: dict[str, str]) -> Slo:
    """An Slo from ``{"p99": "2ms", ...}``; ValueError naming the percentile that is wrong."""
    if not pairs:
        raise ValueError("needs at least one percentile bound (e.g. p99 = \"2ms\")")
    bounds = []
    for name, value in pairs.items():
        if name not in PERCENTILES:
            raise ValueError(f"{name!r} is not a percentile this tool bounds (one of {', '.join(PERCENTILES)})")
        try:
            bounds.append(Bound(name, PERCENTILES[name], parse_bound_ns(value)))
        except ValueError as exc:
            raise ValueError(f"{name}: {exc}") from None
    bounds.sort(key=lambda b: b.q)
    for low, high in zip(bounds, bounds[1:], strict=False):
        if high.ns < low.ns:
            raise ValueError(
                f"{high.name} ≤ {_ns_text(high.ns)} is tighter than {low.name} ≤ {_ns_text(low.ns)}: "
                f"{low.name} is never above {high.name}, so its bound could never limit; the values look swapped"
            )
    return Slo(tuple(bounds))


def parse_slo_text(text: str) -> Slo:
    """``p99=2ms,p999=10ms`` (the command line's ``--slo``) -> Slo."""
    pairs: dict[str, str] = {}
    for item in text.split(","):
        name, eq, value = item.partition("=")
        if not eq:
            raise ValueError(f"{item!r} is not PERCENTILE=BOUND (e.g. p99=2ms)")
        if name in pairs:
            raise ValueError(f"{name} is bounded twice")
        pairs[name] = value
    return make_slo(pairs)


def parse_requirement(text: str) -> tuple[str, float]:
    """``read_by_id=5k`` (``--require-rate``) -> (phase kind, ops/s); the caller checks the kind."""
    kind, eq, value = text.partition("=")
    if not eq or not kind:
        raise ValueError(f"{text!r} is not KIND=RATE (e.g. read_by_id=5k)")
    rate = parse_count(value)
    if rate <= 0:
        raise ValueError(f"{text!r}: the rate must be positive")
    return kind, float(rate)
