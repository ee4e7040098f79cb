"""Keep the harness's own objects out of the garbage collector's full collections.

Why: a full (generation 2) collection walks every tracked object of the process. Before an
engine opens, that is the harness's world: the modules, classes and functions its imports
made (about 135_000 objects, none of which ever dies), the drawn plan, earlier results. A
full collection over them took 12-68 ms on the development machine, and one landing inside
a paced phase delays every operation due meanwhile: at 2_000-5_000 operations a second a
single one is 25-340 operations issued late, enough to be a phase's p99 schedule delay, the
harness's lateness reported beside the engine's latency (issue 51's follow-up: 1.5-4 ms of
client delay at 2_000/s on an idle machine). The engine's own objects are not the harness's:
an engine written in Python pays for its garbage in a real application too, so what it
creates stays collected as usual.

So for each engine run, before the engine opens: collect (the previous engine's garbage, in
a run without isolation) and ``gc.freeze()`` what survives, moving it to the permanent
generation no collection walks; after the run, ``gc.unfreeze()`` hands it back to the
collector, so an object of the harness that died meanwhile is still freed (a process that
runs many engine runs, a test session, does not keep them).
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["harness_frozen"]


@contextmanager
def harness_frozen() -> Iterator[int]:
    """Collect, then freeze every object alive now for the block; yields how many are frozen."""
    gc.collect()
    gc.freeze()
    try:
        yield gc.get_freeze_count()
    finally:
        gc.unfreeze()
