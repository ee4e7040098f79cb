"""A phase's target rate: how many operations per second, and how they arrive.

Kept in the lowest layer because the plan (config), the result model and the runner all
name it, and those may not import each other.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

__all__ = ["Arrivals", "Rate", "RATE_SHORTFALL"]

#: An achieved rate more than this fraction below the target marks the phase (``--check-rate``).
RATE_SHORTFALL = 0.05


class Arrivals(StrEnum):
    """How the intended start times of a phase's operations are spaced."""

    UNIFORM = "uniform"  # evenly, every P / rate seconds per worker (wrk2's constant throughput)
    POISSON = "poisson"  # exponential gaps of mean P / rate per worker, a seeded RNG of its own


@dataclass(frozen=True)
class Rate:
    """A target of ``ops_per_s`` operations per second across all the phase's workers."""

    ops_per_s: float
    arrivals: Arrivals = Arrivals.UNIFORM

    def __post_init__(self) -> None:
        if not (self.ops_per_s > 0 and self.ops_per_s < float("inf")):
            raise ValueError(f"a rate must be a positive number of operations per second, got {self.ops_per_s!r}")

    def met_by(self, achieved_ops_per_s: float) -> bool:
        """True when the achieved rate is at most :data:`RATE_SHORTFALL` below the target."""
        return achieved_ops_per_s >= self.ops_per_s * (1 - RATE_SHORTFALL)
