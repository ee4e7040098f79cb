"""The native LSM engine adapter: one LSM tree per store of the workload, as key/value primitives.

Trees (one directory each under the data dir), named as the run's workload names its
stores (``EngineConfig.stores``): the profile store keeps ``profiles`` (primary key ->
encoded profile), ``email-index`` (email -> primary key) and three ordered indexes whose
keys end with the user id, with empty values (``KvPrimitives.empty_index_values``);
YCSB keeps ``usertable``.

The workload's operations are its own (``workloads/profile_store/kv_store.py``, built
over what ``worker(i)`` returns); this adapter supplies the trees as its primitives
(:class:`LsmKv`) and where a batch runs. The engine is pure Python on the event loop, so a
batch runs synchronously; after every batch the adapter yields (and, if memtables pile up, waits for the flusher) so the
background flush / merge / log-writer tasks get turns. Those tasks run in one task that
``open`` starts in the opener's ``background`` task group and ``close`` cancels and
awaits; opened without one (a bare script), the same work runs inline between batches.
"""

from __future__ import annotations

import contextlib
import re
import zlib
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

import anyio
from anyio.abc import TaskGroup

from asyncbench.engine import BackgroundThreads, Engine, EngineConfig, EngineCounters
from asyncbench.engines.clean_shutdown import CleanShutdownMarker
from asyncbench.engines.store_dir import MarkedStore, StoreDir, StoreLayout
from asyncbench.facts import Durability, EngineFacts
from asyncbench.store import KvPrimitives, Placement

from .maintainer import Maintainer
from .parallel_open import open_trees
from .tree import DEFAULT_COMPRESSION_THRESHOLD_MB, LsmTree, TreeOptions

T = TypeVar("T")

#: What the engine's directory holds (``engines.store_dir``): a tree per store of the run's
#: workload (set at open: :meth:`StoreLayout.for_stores`); a reset removes only these.
LAYOUT = StoreLayout(
    engine="lsm",
    stores=(),
    stores_are_dirs=True,
    store_files=re.compile(r"meta\.json|seg-\d+\.sst|wal-\d+\.log|[^/]*\.tmp"),
    own_files=re.compile(re.escape(CleanShutdownMarker.NAME)),
)


class LsmEngine(MarkedStore, Engine):
    """asyncbench's own log-structured merge tree, in pure Python on the event loop: a tree
    per store of the workload (the profile store's five) under the data directory, each a write-ahead log,
    an in-memory segment and sorted immutable segments merged in the background, with
    block, key and value caches. All workers share one handle."""

    store_layout = LAYOUT
    name = "lsm"
    #: Cost per operation over the knee's (200k), the reference plan measured on the quiet
    #: machine: about flat to 2M, then a step as the profiles tree passes its compression
    #: threshold (about 5.5M) and the store outgrows the CPU's caches; no one exponent fits
    #: both (docs/results/estimate.md, "Points, not one exponent").
    cost_growth = ((2_000_000, 1.06), (10_000_000, 1.55))
    in_all = True
    needs_stabilization = True
    default_settings = {
        "mutable_segment_max_item_count": 250_000,
        "sparse_array_step": 16,
        "key_cache_size": 1024,
        "value_cache_size": 1024,
        "block_cache_size": 1024,
        "iterator_prefetch": 16,
        "block_cache_lifetime_ms": 60_000,
        "wal_mode": "async-compressed",
        "compression_threshold_mb": DEFAULT_COMPRESSION_THRESHOLD_MB,  # RocksDB's base level: engines/lsm/tree.py
    }

    @classmethod
    def check_settings(cls, settings: Mapping[str, Any]) -> None:
        TreeOptions.from_mapping(dict(settings))

    def __init__(self, config: EngineConfig) -> None:
        super().__init__(config)
        unknown = set(self.settings) - set(self.default_settings)
        if unknown:
            raise ValueError(f"unknown lsm settings: {', '.join(sorted(unknown))}")
        self.options = TreeOptions.from_mapping(self.settings)
        self._trees: list[LsmTree] = []
        self._maint: Maintainer | None = None
        self._marker = CleanShutdownMarker(self.data_dir)
        self._placement = Placement.everywhere(self._on_loop)

    # --- lifecycle ----------------------------------------------------------------------
    def _open_trees(self, reset: bool) -> list[LsmTree]:
        names = self.config.stores
        store = StoreDir(self.data_dir, LAYOUT.for_stores(names))
        if reset:  # only its own store
            store.reset()
        else:  # every tree present
            store.open_existing()
        # An existing store must have every tree: one emptied behind our back is refused
        # (MissingStore), never reopened as an empty index. The trees open side by side,
        # each checked as it is alone; a failure closes the others (``parallel_open``).
        trees = open_trees([self.data_dir / name for name in names], self.options, create_if_missing=reset)
        try:
            # Index entries keep empty values: the key alone carries the user id.
            self._primitives = KvPrimitives(
                dict(zip(names, (LsmKv(t) for t in trees), strict=True)), self._placement, empty_index_values=True
            )
            # A record may be several writes to several trees; after an unclean stop (no
            # marker from close) the workload's store repairs before its first batch.
            if not self._marker.take() and not reset:
                self._primitives.unclean = True
        except BaseException:
            # The engine never held these trees, so its close cannot release them: close
            # them here (segment mmaps, log files), keeping the error that stopped the open.
            for tree in reversed(trees):
                with contextlib.suppress(Exception):
                    tree.close()
            raise
        return trees

    async def delete_store(self) -> bool:
        """The trees' directories and the clean-shutdown marker; nothing else."""
        await anyio.to_thread.run_sync(StoreDir(self.data_dir, LAYOUT).delete)
        return True

    async def open(self, reset: bool, background: TaskGroup | None = None) -> None:
        if self._trees:
            raise RuntimeError("engine already open")
        if background is None:
            raise TypeError(
                "the lsm engine runs flushes, merges and log writes in a task group: "
                "open it with asyncbench.engine.opened(engine) or pass one to open()"
            )
        self._trees = await anyio.to_thread.run_sync(self._open_trees, reset)
        self._maint = Maintainer(self._trees, self.options.block_cache_lifetime_ms)
        await background.start(self._maint.run)

    async def close(self) -> None:
        if not self._trees:
            return
        maint, self._maint = self._maint, None
        if maint is not None:
            await maint.shutdown()
        await anyio.to_thread.run_sync(self._close_trees)
        self._trees = []
        if maint is not None:
            maint.check()
        await anyio.to_thread.run_sync(self._marker.set)  # only a close that got this far is clean
        # what a later reset may delete, by exact name
        await anyio.to_thread.run_sync(StoreDir(self.data_dir, LAYOUT).record_files)

    def _close_trees(self) -> None:
        for t in self._trees:
            t.close()

    async def stabilize(self) -> None:
        assert self._maint is not None
        await self._maint.wait_idle()

    async def settle(self) -> None:
        await self.stabilize()
        for t in self._trees:  # on the loop: the log queues are the loop's to touch
            t.wal.write_now()

        def persist() -> None:
            for t in self._trees:
                t.wal.sync()
                t.save_meta()

        if not all(t.persisted() for t in self._trees):  # else no thread hop: nothing to write
            await anyio.to_thread.run_sync(persist)

    # --- cost ---------------------------------------------------------------------------
    def background_threads(self) -> BackgroundThreads | str:
        """The flush, merge and commit lanes' threads (the log's frames are written from
        anyio's shared worker threads, counted in the client's CPU only)."""
        maint = self._maint
        if maint is None:
            return "the engine is not open"
        return BackgroundThreads(ids=frozenset(maint.flush_lane.thread_ids | maint.merge_lane.thread_ids | maint.commit_lane.thread_ids))

    async def cost_counters(self) -> EngineCounters | str:
        """Bytes logged, flushed and merged, over the trees, since this adapter opened."""
        trees = self._trees
        if not trees:
            return "the engine is not open"
        return EngineCounters(
            written={
                "logged": sum(t.wal.logged for t in trees),
                "flushed": sum(t.flushed_bytes for t in trees),
                "merged": sum(t.merged_bytes for t in trees),
            }
        )

    def facts(self) -> EngineFacts:
        facts = super().facts()
        mode = self.options.wal_mode
        facts.durability = Durability(
            log={
                "sync": "write-ahead log",
                "none": "no write-ahead log (only flushed segments persist)",
            }.get(mode, "write-ahead log, compressed frames written by a background task"),
            sync={"sync": "per write", "none": "never"}.get(mode, "about once a second, and on settle/close"),
            write_unit="one put per store a record touches, no batch across trees",
            after_crash="the unwritten log tail is lost; a record written as several puts is repaired at open"
            if mode != "sync"
            else "a record written as several puts is repaired at open",
            parameters={"wal_mode": mode},
            synced_commits=mode == "sync",
        )
        facts.colour = "#2a9d5c"
        return facts

    @classmethod
    def library_versions(cls) -> dict[str, str]:
        return {"zlib": zlib.ZLIB_RUNTIME_VERSION}

    async def _yield(self) -> None:
        maint = self._maint
        assert maint is not None
        maint.check()
        await maint.throttle()
        await anyio.sleep(0)

    # --- operations: the workload's key/value store, every batch on the loop followed
    # by a turn for the background flush / merge / log writer ------------------------------
    async def _on_loop(self, body: Callable[..., T], *args: Any) -> T:
        out = body(*args)
        await self._yield()
        return out

    def worker(self, index: int) -> KvPrimitives:
        """Every worker shares the one set of trees (they live on the event loop), so the
        workload builds one store over them."""
        if not self._trees:
            raise RuntimeError("lsm engine is not open")
        return self._primitives



class LsmKv:
    """An LSM tree as a :class:`~asyncbench.store.KvStore`: its own bound methods,
    and a scan that is the tree's merged key-range read."""

    __slots__ = ("tree", "get", "put", "delete", "items", "count")

    def __init__(self, tree: LsmTree) -> None:
        self.tree = tree
        self.get, self.put, self.delete, self.items = tree.get, tree.upsert, tree.delete, tree.iter
        self.count = tree.count

    def scan(self, start: bytes, last: bytes | None, limit: int) -> list[bytes]:
        if last is None:
            return self.tree.scan_keys(start, None, False, limit)
        return self.tree.scan_keys(start, last, True, limit)
