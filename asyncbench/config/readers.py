"""Small typed readers of one plan value (an integer in bounds, a shown name, seconds, a rate).

Every table of the plan (``[run]``, ``[[phase]]``, ``[counts]``, ``[slo]``) checks its values
with these, so a value is refused with the same words wherever it is written.
"""

from __future__ import annotations

import math
from typing import TypeGuard

from asyncbench import fmt
from asyncbench.config.errors import ConfigError
from asyncbench.limits import MAX_TIMEOUT_SECONDS
from asyncbench.parse import check_printable

#: The highest target rate a phase may set (operations per second, all workers).
MAX_RATE = 100_000_000


def is_int(v: object) -> TypeGuard[int]:
    return isinstance(v, int) and not isinstance(v, bool)


def read_int(where: str, key: str, v: object, lo: int, hi: int) -> int:
    if not is_int(v):
        raise ConfigError(where, key, f"must be an integer, got {type(v).__name__} {v!r}")
    if not lo <= v <= hi:
        raise ConfigError(where, key, f"must be between {lo:_d} and {hi:_d}, got {v:_d}")
    return v


def read_str(where: str, key: str, v: object) -> str:
    if not isinstance(v, str) or not v:
        raise ConfigError(where, key, f"must be a non-empty string, got {v!r}")
    return v


def read_shown(where: str, key: str, v: str) -> str:
    """A name the console and reports show: no control or format characters (parse.py)."""
    problem = check_printable(v)
    if problem is not None:
        raise ConfigError(where, key, f"{v!r}: {problem}")
    return v


#: The shortest duration a plan or flag may give (a timeout, a probe): 1 ms.
MIN_SECONDS = 0.001
#: The lowest target rate: one operation in 1_000 seconds.
MIN_RATE = 0.001


def read_seconds(where: str, key: str, v: object) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise ConfigError(where, key, f"must be a number, got {type(v).__name__} {v!r}")
    if not v > 0:
        raise ConfigError(where, key, f"must be positive, got {v!r}")
    if v < MIN_SECONDS:  # 1e-300 s is positive, and no duration a run can keep
        raise ConfigError(where, key, f"must be at least {MIN_SECONDS:g} seconds (1 ms), got {v!r}")
    if not math.isfinite(v) or v > MAX_TIMEOUT_SECONDS:
        raise ConfigError(where, key, f"must be at most {MAX_TIMEOUT_SECONDS:_.0f} seconds (a year), got {v!r}")
    return float(v)


def parse_rate(where: str, key: str, v: object) -> float:
    """A target rate: a positive number of operations per second, or a count string with
    a k or M suffix (``"20k"``)."""
    if isinstance(v, str):
        try:
            v = fmt.parse_count(v)
        except ValueError as exc:
            raise ConfigError(where, key, f"must be operations per second: {exc}") from None
    if not is_number(v):
        raise ConfigError(where, key, f"must be operations per second (a number), got {type(v).__name__} {v!r}")
    if not (v > 0 and math.isfinite(v)) or v > MAX_RATE:
        raise ConfigError(where, key, f"must be between 0 and {MAX_RATE:_d} operations per second, got {v!r}")
    if v < MIN_RATE:  # 1e-9/s is positive, and one operation in 30 years
        raise ConfigError(where, key, f"must be at least {MIN_RATE:g} operations per second, got {v!r}")
    return float(v)


def parse_rates(where: str, key: str, v: object) -> list[float]:
    """One rate, or a saturation sweep's rising rates: a list, or a comma-separated string
    (``"2k,4k,8k"``)."""
    items = v.split(",") if isinstance(v, str) else v if isinstance(v, list) else [v]
    if not items:
        raise ConfigError(where, key, "needs at least one rate")
    rates = [parse_rate(where, key, x) for x in items]  # no strip: parse.py refuses whitespace
    if any(b <= a for a, b in zip(rates, rates[1:], strict=False)):
        raise ConfigError(where, key, f"a sweep's rates must rise, got {', '.join(f'{r:g}' for r in rates)}")
    return rates


def read_arrivals(where: str, key: str, v: object) -> str:
    if v not in ("uniform", "poisson"):
        raise ConfigError(where, key, f"must be 'uniform' or 'poisson', got {v!r}")
    return str(v)


def is_number(v: object) -> TypeGuard[int | float]:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def read_bool(where: str, key: str, v: object) -> bool:
    if not isinstance(v, bool):
        raise ConfigError(where, key, f"must be true or false, got {v!r}")
    return v
