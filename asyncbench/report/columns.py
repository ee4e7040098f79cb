"""Report tables as data: one list of :class:`Column` per table, rendered as Markdown or CSV.

A table is its columns (name, alignment, and how a row becomes that cell) plus its rows;
:func:`markdown` and :func:`csv_text` render any such table, so a column is added in one
place and both outputs agree on it.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

__all__ = ["Column", "csv_text", "markdown"]

R = TypeVar("R")


@dataclass(frozen=True)
class Column(Generic[R]):
    name: str
    align: str  # "l" or "r"
    cell: Callable[[R], Any]  # Markdown: already-escaped text; CSV: a plain value


def markdown(columns: Sequence[Column[R]], rows: Iterable[R]) -> list[str]:
    """A GitHub Markdown table; cells are written as the columns return them."""
    sep = ["---:" if c.align == "r" else "---" for c in columns]
    out = ["| " + " | ".join(c.name for c in columns) + " |", "| " + " | ".join(sep) + " |"]
    out += ["| " + " | ".join(str(c.cell(r)) for c in columns) + " |" for r in rows]
    return out


def csv_text(columns: Sequence[Column[R]], rows: Iterable[R]) -> str:
    """The same table as CSV: a header row, then one line per row (None: an empty cell)."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow([c.name for c in columns])
    for r in rows:
        w.writerow(["" if (v := c.cell(r)) is None else v for c in columns])
    return buf.getvalue()
