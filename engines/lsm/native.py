"""The one import point of the compiled flush/merge writer (``_native.c``).

Why compiled: a stabilization is memtable flushes and merges, and profiled in Python
about 40 % of it was reading memtables in key order and 40 % encoding blocks. The C
loop sorts, merges, encodes, checksums and writes with the GIL released, so a flush or
merge run in a worker thread takes the second core while the event loop serves reads.
It writes exactly the bytes the Python path writes for the same entries
(``tests/test_lsm_native.py``).

Without a compiler the package still installs (the extension is optional) and the
engine uses the pure-Python path (``merging_iterator.merge`` into
``SegmentWriter.add``); ``ACCELERATED`` says which, and ``FALLBACK_REASON`` why.
Setting ``ASYNCBENCH_LSM_PURE=1`` selects the Python path on purpose (tests, comparisons).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

__all__ = ["ACCELERATED", "FALLBACK_REASON", "BlockCorrupt", "write_blocks"]

write_blocks: Callable[..., tuple[Any, ...]] | None
FALLBACK_REASON: str | None = None


class _NoBlockCorrupt(Exception):
    """Stands in for the C module's exception when it is not built (never raised)."""


BlockCorrupt: type[Exception] = _NoBlockCorrupt

if os.environ.get("ASYNCBENCH_LSM_PURE"):
    write_blocks = None
    FALLBACK_REASON = "ASYNCBENCH_LSM_PURE is set"
else:
    try:
        from . import _native  # type: ignore[attr-defined]
    except ImportError as exc:  # built without a compiler: the pure-Python path
        write_blocks = None
        FALLBACK_REASON = f"the C extension is not built ({exc})"
    else:
        write_blocks = _native.write_blocks
        BlockCorrupt = _native.BlockCorrupt

ACCELERATED = write_blocks is not None
