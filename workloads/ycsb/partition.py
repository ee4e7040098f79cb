"""The concurrency rule that keeps a mixed phase's checksum exact at any P workers and K processes.

The phase is one seeded operation sequence (:mod:`.operations`); it is split, never
re-drawn, so P and K change who executes an operation, never which operations exist.

**Rule.** Key number k is owned by worker ``k % P`` (P = all workers over all K
processes; each process executes only its own workers' share). Every operation on a key
(read, update, insert, read-modify-write) goes to the key's owner, which executes its
share in sequence order. So all operations on one record happen in one worker, in the
order the sequence gives them, whatever the timing between workers: a read sees exactly
the writes before it in the sequence. Inserts append keys (the counter advances in
sequence order), so a read of a freshly inserted key (the latest distribution) is routed
to the inserter and comes after the insert.

**Scans** read other workers' keys, so they fold only what no timing can change: a scan
from start key s of length n covers the key range from s to the n-th key, in key order,
that existed when the phase began (:mod:`.scans`), and its checksum folds the records
of that range that no operation of the phase writes (updates, inserts,
read-modify-writes). A scan goes to its start key's owner.

**What it does to the distribution.** Nothing to the keys or kinds drawn (the sequence is
fixed first); it changes which worker runs an operation, so with a skewed distribution
the hottest keys' owners get more operations than the others (a worker's share follows
the key popularity), and YCSB's timing-dependent "latest acknowledged insert" becomes
"latest insert earlier in the sequence". A scan returns its n records plus any inserted
into its range.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from asyncbench.workloads.ycsb.operations import Batch


def owner(keys: npt.NDArray[np.int64], workers: int) -> npt.NDArray[np.int64]:
    """The worker (0..workers-1) that owns each key number."""
    if workers < 1:
        raise ValueError(f"workers must be >= 1, got {workers}")
    return keys % workers


def split(batch: Batch, workers: int) -> list[npt.NDArray[np.int64]]:
    """For each worker, the positions in ``batch`` it executes, in sequence order."""
    owners = owner(batch.key, workers)
    order = np.argsort(owners, kind="stable")
    bounds = np.searchsorted(owners[order], np.arange(workers + 1))
    return [order[bounds[w] : bounds[w + 1]] for w in range(workers)]
