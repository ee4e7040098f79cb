"""Escaping for text the report did not write itself: plan names, phase names, paths,
engine names, settings, error messages.

A plan is user input. Put into Markdown as is, a run name can open a heading or a link,
inject HTML, typeset math, or (with a ``|``) split a table row and shift every column
after it. The report therefore passes every such string through :func:`text` (inline
text) or :func:`code` (a code span) and never trusts it to be plain.
"""

from __future__ import annotations

import re

__all__ = ["code", "text"]

#: Characters that start or end inline Markdown constructs: emphasis, links, images, code,
#: HTML, autolinks, strikethrough, table cells, entities and GitHub's ``$`` math.
#: CommonMark lets any ASCII punctuation be backslash-escaped and renders it literally.
#: ``(``, ``)`` and ``+`` are left alone (``+`` starts a list only at the start of a line:
#: :data:`_LEADING_BLOCK`) (a link needs the ``]`` before them, which is escaped), and
#: so is an underscore between two letters or digits (``5_000``, ``x86_64``: CommonMark
#: never opens or closes emphasis there), so numbers and words read the same in the raw file.
_SPECIAL = re.compile(r"([\\`*{}\[\]<>#!|~&$]|(?<![0-9A-Za-z])_|_(?![0-9A-Za-z]))")
#: Line breaks and other control characters: a newline in a plan name would end the
#: heading or table row it is in and start a block of its own.
_CONTROL = re.compile(r"[\x00-\x1f\x7f]+")
#: What starts a block when it opens a list item's text: ``- x``, ``= x``, ``1. x``, ``1) x``
#: (a marker is followed by a space or ends the line: ``0.2.0`` and ``-5`` start none).
_LEADING_BLOCK = re.compile(r"^([-=+]+|\d{1,9}[.)])(?=\s|$)")


def text(value: object) -> str:
    """``value`` as inline Markdown that renders as exactly its characters, on one line."""
    s = _CONTROL.sub(" ", str(value)).strip()
    s = _SPECIAL.sub(r"\\\1", s)
    return _LEADING_BLOCK.sub(lambda m: m[0][:-1] + "\\" + m[0][-1], s)


def code(value: object, table: bool = True) -> str:
    """``value`` as a code span that renders as exactly its characters, on one line.

    Backslash escapes do not work inside code spans, so the span is fenced with one
    backtick more than the longest run of backticks inside it (CommonMark's rule), padded
    when the value starts or ends with one. In a table (``table``) a ``|`` is still
    escaped: GitHub splits cells on it even inside code spans, and drops the backslash.
    """
    s = _CONTROL.sub(" ", str(value))
    if table:
        s = s.replace("|", "\\|")
    longest = max((len(run) for run in re.findall(r"`+", s)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if s.startswith("`") or s.endswith("`") else ""
    return f"{fence}{pad}{s}{pad}{fence}"
