"""A scan's key range under the concurrency rule: fixed by the keys present when the phase began.

A scan "of n records from key s" (YCSB's ``scan(table, startkey, n)``) would return
different records depending on which concurrent inserts have landed in its range; the
range is therefore fixed up front from the keys that existed at the phase's start, and
an engine returns every record in it (see :mod:`.partition` for the whole rule).
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence


def scan_range(initial_names: Sequence[bytes], start: bytes, length: int) -> tuple[bytes, bytes] | None:
    """(first, last) key names, inclusive, of a scan of ``length`` records from ``start``.

    ``initial_names`` are the key names present when the phase began, sorted. The range
    ends at the ``length``-th of them from ``start`` (fewer at the end of the key space);
    None when no initial key is at or after ``start``.
    """
    i = bisect.bisect_left(initial_names, start)
    if i >= len(initial_names):
        return None
    last = initial_names[min(i + length, len(initial_names)) - 1]
    return start, last
