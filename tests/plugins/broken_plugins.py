"""Plug-in engines that are wrong in the ways users get them wrong (for test_plugins)."""

from asyncbench.engines.memory import MemoryEngine


class NoCount(MemoryEngine):
    """Forgot count(): the verify phase would fail after every other phase ran."""

    name = "nocount"
    count = None  # type: ignore[assignment]


class NotAnEngine:
    pass


class GrowthAtTheKnee(MemoryEngine):
    """A measured point at the estimate's knee: the line's first stretch has no length."""

    name = "atknee"
    cost_growth = ((200_000, 1.2),)


class GrowthOutOfOrder(MemoryEngine):
    """Points out of increasing size."""

    name = "unordered"
    cost_growth = ((10_000_000, 1.5), (2_000_000, 1.1))


class GrowthOfZero(MemoryEngine):
    """A factor of 0: no cost at all, and no logarithm of it."""

    name = "zerofactor"
    cost_growth = ((2_000_000, 0.0),)


class GrowthNotANumber(MemoryEngine):
    """An exponent read from somewhere that gave NaN."""

    name = "nanexp"
    cost_growth = float("nan")
