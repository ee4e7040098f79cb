"""A native LSM-tree storage engine in pure Python.

Modules: ``memtable`` (mutable segment), ``wal`` (write-ahead log), ``segment`` (disk
segment format, reader, writer), ``cache`` (bounded read caches), ``merge`` (merging
sorted sources), ``tree`` (one LSM tree), ``maintainer`` (background tasks on the anyio
loop) and ``adapter`` (the profile workload as five trees).
"""

from engines.lsm.errors import CorruptLog, CorruptMeta, CorruptSegment, CorruptStore, MissingStore

__all__ = ["CorruptLog", "CorruptMeta", "CorruptSegment", "CorruptStore", "MissingStore"]
