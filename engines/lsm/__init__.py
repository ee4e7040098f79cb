"""A native LSM-tree storage engine in Python, laid out like LevelDB (one optional C
module, ``_native``, for the flush/merge write loop, the in-memory first-key index and
the point lookup: built from ``csrc/``, one concept per file, as listed in
``csrc/module.c``).

Modules, one concept each:

- ``tree``: one LSM tree (memtables + log + segments + manifest) and its jobs.
- ``memtable``: the mutable in-memory table and its cursor.
- ``wal``: the write-ahead log (framing, background writer, replay).
- ``meta``: ``meta.json``, the manifest that says what is committed.
- ``block``: the data block format.
- ``segment_writer`` / ``segment_reader``: immutable sorted segment files.
- ``merging_iterator``: the one k-way merge behind reads, scans, flushes and compaction.
- ``cache``: bounded two-generation read caches.
- ``native``: the one import point of ``_native`` (compiled writer, ``KeyColumn``), with
  the pure-Python fallbacks.
- ``maintainer``: background flush / merge / log-writer tasks on the anyio loop.
- ``commit``: the file side of a flush's or merge's commit, as one step off the loop.
- ``errors``: why a damaged or missing store is refused.
- ``parallel_open``: a store's trees opened side by side, each checked as alone.
- ``adapter``: the profile workload as five trees.
"""

from .errors import CorruptLog, CorruptMeta, CorruptSegment, CorruptStore, MissingStore

__all__ = ["CorruptLog", "CorruptMeta", "CorruptSegment", "CorruptStore", "MissingStore"]
