"""Numbers and names as the command line and the plan may write them, strictly.

Python's ``int()`` and ``float()`` accept far more than a user means by a count: any
Unicode decimal digit (``int("１２") == 12``, ``int("٣") == 3``), underscores anywhere
once the caller has stripped them (``_1``, ``1__0``, ``1_``), surrounding Unicode
whitespace (``float("5\u00a0") == 5``), a ``+`` sign. A count or seed that reads
differently from what the run uses is refused here instead: ASCII digits only, ``_``
only between two digits (as in TOML and Python literals), then the documented suffix;
no whitespace at all (``'1k '`` is a quoting mistake, not 1_000), and a sign only where
a value may be negative (a seed). Every numeric flag and string value goes through these
functions. ValueError says what was wrong; the caller names the flag or key.

Names a plan gives (phase names) are shown on the console and in reports: a control or
format character (an escape sequence, a carriage return, a bidirectional override)
would rewrite the terminal, so :func:`check_printable` refuses them.
"""

from __future__ import annotations

import json
import re
import sys
import unicodedata
from typing import Any

__all__ = ["check_printable", "escape_unprintable", "load_json", "parse_count", "parse_int", "parse_seconds"]

_DIGITS = r"[0-9]+(?:_[0-9]+)*"
#: ``20k``, ``2M``, ``2_000_000``, ``1.5M`` (a fraction only where the result is whole).
_COUNT = re.compile(rf"({_DIGITS})(?:\.([0-9]+))?([kKmM]?)", re.ASCII)
_INT = re.compile(rf"[+-]?{_DIGITS}", re.ASCII)
_SECONDS = re.compile(rf"-?(?:{_DIGITS})?(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?", re.ASCII)
#: More digits than any count, seed or timeout needs; also keeps int() from its own
#: 4_300-digit limit (a ValueError with a message about Python, not about the flag).
MAX_DIGITS = 30
_SUFFIX = {"": 1, "k": 1_000, "K": 1_000, "m": 1_000_000, "M": 1_000_000}
#: Unicode categories never shown raw: controls, format characters (bidi overrides,
#: zero-width joiners), surrogates, private use, unassigned, line/paragraph separators.
_UNPRINTABLE = {"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"}


def parse_count(text: str) -> int:
    """``20k``, ``2M``, ``2_000_000``, ``1.5M`` -> int; ValueError with the reason."""
    s = text
    m = _COUNT.fullmatch(s)
    if m is None:
        raise ValueError(
            f"{text!r} is not a count (ASCII digits, _ only between two digits, an optional k or M suffix)"
        )
    whole, fraction, suffix = m.group(1).replace("_", ""), m.group(2) or "", m.group(3)
    if len(whole) + len(fraction) > MAX_DIGITS:
        raise ValueError(f"{text[:40]!r}... has more than {MAX_DIGITS} digits: too large a count")
    mult = _SUFFIX[suffix]
    numerator = int(whole + fraction) * mult
    denominator: int = 10 ** len(fraction)  # int ** int is typed Any (a negative power is a float)
    if numerator % denominator:
        raise ValueError(f"{text!r} is not a whole number")
    return numerator // denominator


def parse_int(text: str) -> int:
    """An integer with an optional sign (a seed): ``-7``, ``570_123_434``."""
    s = text
    if _INT.fullmatch(s) is None:
        raise ValueError(f"{text!r} is not an integer (ASCII digits, _ only between two digits)")
    if len(s) > MAX_DIGITS * 2:
        raise ValueError(f"{text[:40]!r}... has more than {MAX_DIGITS * 2} digits: too large an integer")
    return int(s.replace("_", ""))


def parse_seconds(text: str) -> float:
    """A number of seconds: ``90``, ``1.5``, ``3_600``, ``1e3``. A minus sign, ``inf`` and
    ``nan`` are read, so the caller's range check says what is wrong with them; a ``+``
    is refused (no number here is written with one)."""
    s = text
    if s.lower().lstrip("-") in ("inf", "infinity", "nan"):
        return float(s)  # a number, refused by the caller's range check with its own words
    if _SECONDS.fullmatch(s) is None or not s.lstrip("-.")[:1].isdigit():
        raise ValueError(f"{text!r} is not a number of seconds (ASCII digits, an optional .fraction)")
    if len(s) > MAX_DIGITS * 2:
        raise ValueError(f"{text[:40]!r}... has more than {MAX_DIGITS * 2} digits: too large a number")
    value = float(s.replace("_", ""))
    written_nonzero = any(c in "123456789" for c in re.split("[eE]", s)[0])
    if written_nonzero and abs(value) < sys.float_info.min:
        # 1e-400 reads as 0.0 (a timeout of 0 is "none") and 1e-320 as a denormal: neither is what was written
        raise ValueError(f"{text!r} is too small a number of seconds to hold (it underflows)")
    return value


def _unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise ValueError(f"key {key[:60]!r} appears twice in one object")
        out[key] = value
    return out


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def load_json(data: bytes | str) -> Any:
    """JSON as asyncbench writes it: ValueError on a key twice in one object (which other
    readers resolve silently, the last one winning: a result whose second ``engines`` was
    empty rendered as an empty report) and on ``NaN``/``Infinity``."""
    return json.loads(data, object_pairs_hook=_unique, parse_constant=_no_constant)


def check_printable(text: str) -> str | None:
    """None when every character of ``text`` may be shown; else what is wrong, naming the
    first offending character by its code point."""
    for i, ch in enumerate(text):
        if unicodedata.category(ch) in _UNPRINTABLE:
            name = unicodedata.name(ch, "a control character")
            return f"character {i + 1} is U+{ord(ch):04X} ({name}), which cannot be shown; use printable characters"
    return None


def escape_unprintable(text: str) -> str:
    """``text`` with every character :func:`check_printable` refuses written as an escape
    (``\\x1b``, ``\\u202e``): for messages that quote input (a key, a path) on the console."""
    if check_printable(text) is None:
        return text
    return "".join(
        ch if unicodedata.category(ch) not in _UNPRINTABLE else ch.encode("unicode_escape").decode("ascii")
        for ch in text
    )
