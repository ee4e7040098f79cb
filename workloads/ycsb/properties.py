"""Java ``.properties`` text, the syntax of YCSB's workload files, read into (key, value, line).

YCSB loads its files with ``java.util.Properties.load``; this reads the same syntax:
``#``/``!`` comment lines, ``key=value``, ``key: value`` or ``key value``, backslash line
continuations, ``\\uXXXX`` and ``\\t``-style escapes. Unlike Java, a key set twice is an
error instead of the last one silently winning, and values lose trailing whitespace
(YCSB's number parsing would reject it anyway).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}


class PropertiesError(ValueError):
    """Bad input in a properties file: the message names the file, the key or line and the problem."""


@dataclass(frozen=True)
class Property:
    key: str
    value: str
    line: int


def _logical_lines(text: str) -> list[tuple[int, str]]:
    """(first line number, joined text) per logical line, continuations joined."""
    out: list[tuple[int, str]] = []
    pending: str | None = None
    start = 0
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.lstrip(" \t\f")
        if pending is None:
            if not line or line[0] in "#!":
                continue
            start, pending = number, ""
        trailing = len(line) - len(line.rstrip("\\"))
        if trailing % 2:
            pending += line[:-1]
            continue
        out.append((start, pending + line))
        pending = None
    if pending is not None:
        out.append((start, pending))
    return out


def _unescape(text: str, where: str) -> str:
    out: list[str] = []
    i = 0
    while i < len(text):
        c = text[i]
        if c != "\\" or i + 1 >= len(text):
            out.append(c)
            i += 1
            continue
        nxt = text[i + 1]
        if nxt == "u":
            digits = text[i + 2 : i + 6]
            if len(digits) != 4 or any(d not in "0123456789abcdefABCDEF" for d in digits):
                raise PropertiesError(f"{where}: malformed \\u escape {text[i : i + 6]!r}")
            out.append(chr(int(digits, 16)))
            i += 6
            continue
        out.append(_ESCAPES.get(nxt, nxt))
        i += 2
    return "".join(out)


def _split(line: str) -> tuple[str, str]:
    """Key and raw value: the key ends at the first unescaped '=', ':' or whitespace."""
    i = 0
    while i < len(line):
        c = line[i]
        if c == "\\":
            i += 2
            continue
        if c in "=: \t\f":
            break
        i += 1
    key, rest = line[:i], line[i:]
    rest = rest.lstrip(" \t\f")
    if rest[:1] in ("=", ":"):
        rest = rest[1:].lstrip(" \t\f")
    return key, rest


def parse_properties(text: str, source: str) -> list[Property]:
    """The properties of ``text`` in file order; ``source`` names the file in errors."""
    seen: dict[str, int] = {}
    props = []
    for number, line in _logical_lines(text):
        raw_key, raw_value = _split(line)
        where = f"{source}, line {number}"
        key = _unescape(raw_key, where)
        if key in seen:
            raise PropertiesError(f"{source}: key {key!r} is set twice (lines {seen[key]} and {number})")
        seen[key] = number
        props.append(Property(key, _unescape(raw_value, where).rstrip(" \t\f"), number))
    return props


def read_properties(path: Path) -> list[Property]:
    """:func:`parse_properties` of a file (Java reads .properties as ISO-8859-1)."""
    try:
        text = path.read_bytes().decode("latin-1")
    except OSError as exc:
        raise PropertiesError(f"{path}: cannot read: {exc.strerror or exc}") from None
    return parse_properties(text, str(path))
