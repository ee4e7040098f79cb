"""Plug-in engines that are wrong in the ways users get them wrong (for test_plugins)."""

from own_store_engine import OwnStoreMemoryEngine


class NoCount(OwnStoreMemoryEngine):
    """Forgot count(): the verify phase would fail after every other phase ran."""

    name = "nocount"
    count = None  # type: ignore[assignment]


class NotAnEngine:
    pass


class GrowthAtTheKnee(OwnStoreMemoryEngine):
    """A measured point at the estimate's knee: the line's first stretch has no length."""

    name = "atknee"
    cost_growth = ((200_000, 1.2),)


class GrowthOutOfOrder(OwnStoreMemoryEngine):
    """Points out of increasing size."""

    name = "unordered"
    cost_growth = ((10_000_000, 1.5), (2_000_000, 1.1))


class GrowthOfZero(OwnStoreMemoryEngine):
    """A factor of 0: no cost at all, and no logarithm of it."""

    name = "zerofactor"
    cost_growth = ((2_000_000, 0.0),)


class GrowthNotANumber(OwnStoreMemoryEngine):
    """An exponent read from somewhere that gave NaN."""

    name = "nanexp"
    cost_growth = float("nan")


def _lookup_in_a_corrupt_index(uid: int) -> int:
    """The frame that raises: its name must reach the run's traceback file and log."""
    raise IndexError(f"array index out of range (uid {uid})")


class FailsMidRun(OwnStoreMemoryEngine):
    """Inserts fine, then fails on its first read, deep in its own code: a failure whose
    one line does not say where it came from (issue 51)."""

    name = "failsmidrun"

    async def read_by_id(self, uids, marks):  # type: ignore[no-untyped-def]
        _lookup_in_a_corrupt_index(uids[0])
