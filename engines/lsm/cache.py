"""Bounded two-generation caches for disk-segment reads.

A cache keeps a *young* and an *old* dict. Hits in ``young`` cost one dict lookup; hits
in ``old`` are promoted. When ``young`` is full (or when the clock says a lifetime
half has passed) the generations rotate: ``old`` is dropped and ``young`` becomes
``old``. So the cache never holds more than ``capacity`` entries, every operation is
O(1) C-level dict work (no per-entry timestamps, no O(n) eviction scans), and an entry
idle for longer than one lifetime is gone after two rotations.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any

__all__ = ["GenerationalCache"]


class GenerationalCache:
    """Bounded map; ``capacity`` 0 disables caching. Callers go through
    :meth:`get_or_load` (or its bound form :meth:`getter`) only, so the generations
    stay this class's business."""

    __slots__ = ("young", "old", "half")

    def __init__(self, capacity: int) -> None:
        if capacity < 0:
            raise ValueError("cache capacity must be >= 0")
        self.half = (capacity + 1) // 2 if capacity else 0
        self.young: dict[Any, Any] = {}
        self.old: dict[Any, Any] = {}

    def get_or_load(self, key: Hashable, loader: Callable[[Any], Any]) -> Any:
        """The cached value of ``key``, else ``loader(key)``, cached unless it is None
        (None means "nothing there" and is never stored). A hit in the old generation
        moves to the young one."""
        return self.getter(loader)(key)

    def getter(self, loader: Callable[[Any], Any]) -> Callable[[Any], Any]:
        """``get_or_load`` with ``loader`` fixed, as one function: what hot paths keep
        (a point read pays one call for the cache instead of a method call and a bound
        loader per lookup)."""
        cache = self

        def get(key: Any) -> Any:
            v = cache.young.get(key)
            if v is not None:
                return v
            v = cache.old.get(key)
            if v is None:
                v = loader(key)
                if v is None:
                    return None
            half = cache.half
            if half:
                young = cache.young
                if len(young) >= half:
                    cache.old = young
                    cache.young = young = {}
                young[key] = v
            return v

        return get

    def rotate(self) -> None:
        """Age every entry by one generation (called by the lifetime clock)."""
        self.old = self.young
        self.young = {}

    def clear(self) -> None:
        self.young = {}
        self.old = {}

    def __len__(self) -> int:
        return len(self.young) + len(self.old)
