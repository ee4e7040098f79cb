"""Plug-in engines that are wrong in the ways users get them wrong (for test_plugins)."""

from asyncbench.engines.memory import MemoryEngine


class NoCount(MemoryEngine):
    """Forgot count(): the verify phase would fail after every other phase ran."""

    name = "nocount"
    count = None  # type: ignore[assignment]


class NotAnEngine:
    pass
