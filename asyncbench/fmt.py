"""Number formatting shared by the console and the report, in the reference's style."""

from __future__ import annotations


def count(n: int) -> str:
    """``2000000`` -> ``2_000_000``."""
    return f"{n:_d}"


def short_count(n: int) -> str:
    """``2000000`` -> ``2M``, ``100000`` -> ``100K``, ``1500000`` -> ``1.5M``: the reference's titles."""
    for div, suffix in ((1_000_000_000, "B"), (1_000_000, "M"), (1_000, "K")):
        if n >= div and (n * 10) % div == 0:
            value = n / div
            return f"{value:.0f}{suffix}" if value == int(value) else f"{value:.1f}{suffix}"
    return str(n)


def ms(seconds: float | None) -> str:
    """Seconds -> ``7_752 ms``."""
    if seconds is None:
        return "-"
    return f"{round(seconds * 1000):_d} ms"


def latency(ns: int | float | None) -> str:
    """A latency in at most 6 characters, unit included: ``0.4µs``, ``12µs``, ``4.1ms``, ``137ms``, ``2.3s``."""
    if ns is None:
        return "-"
    for div, unit in ((1e9, "s"), (1e6, "ms"), (1e3, "µs")):
        if ns >= div or unit == "µs":
            value = ns / div
            if value < 9.95:
                return f"{value:.1f}{unit}"
            if value < 1000 or unit == "s":
                return f"{value:.0f}{unit}"
    raise AssertionError("unreachable")


def rate(ops: int, seconds: float) -> str:
    """``258_006/s``."""
    if seconds <= 0:
        return "-"
    return f"{round(ops / seconds):_d}/s"


#: Sizes are binary, as the reference prints them: 1 MB = 1024 x 1024 bytes, so a figure
#: here compares with the reference report's figure for the same store.
SIZE_UNIT = 1024
MB = SIZE_UNIT * SIZE_UNIT
SIZE_UNIT_NOTE = "Sizes are binary, as in the reference reports: 1 KB = 1024 B, 1 MB = 1024 KB, 1 GB = 1024 MB."


def size(n_bytes: int | None) -> str:
    """Bytes -> ``140.7 MB`` in binary units (1 MB = 1024 * 1024 bytes), like the reference."""
    if n_bytes is None:
        return "-"
    value = float(n_bytes)
    for unit in ("B", "KB", "MB", "GB"):
        if value < SIZE_UNIT or unit == "GB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= SIZE_UNIT
    raise AssertionError("unreachable")


def parse_count(text: str) -> int:
    """``20k``, ``2M``, ``2_000_000``, ``1.5M`` -> int; raises ValueError with the reason
    (strict: ASCII digits, ``_`` between digits; see asyncbench/parse.py)."""
    from asyncbench.parse import parse_count as strict

    return strict(text)
