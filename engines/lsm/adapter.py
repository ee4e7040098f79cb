"""The native LSM engine adapter: the profile workload as five LSM trees.

Trees (one directory each under the data dir):
``profiles`` (primary key -> encoded profile), ``email-index`` (email -> primary key),
``country-status-index``, ``created-at-index`` and ``reputation-index`` (key -> empty
value; the user id is the key's last 20 digits). The adapter maintains the indexes as
the spec says: insert writes all five, an update rewrites the profile and deletes the
old / writes the new country-status and reputation keys.

The engine is pure Python on the event loop, so a batch runs synchronously; after every
batch the adapter yields (and, if memtables pile up, waits for the flusher) so the
background flush / merge / log-writer tasks get turns. Those tasks run in one task that
``open`` starts in the opener's ``background`` task group and ``close`` cancels and
awaits; opened without one (a bare script), the same work runs inline between batches.
"""

from __future__ import annotations

import contextlib
import re
import zlib
from collections.abc import Mapping, Sequence
from typing import Any

import anyio
from anyio.abc import TaskGroup
from asyncbench.engines.kv_profile_store import STORE_NAMES, KvProfileStore
from asyncbench.engines.kv_recovery import CleanShutdownMarker, RepairReport
from asyncbench.engines.store_dir import StoreDir, StoreLayout
from asyncbench.workloads.profile_store.profiles import Profile
from asyncbench.workloads.profile_store.store import Marks, Transform

from asyncbench.engine import Engine, EngineConfig
from asyncbench.facts import Durability, EngineFacts

from .maintainer import Maintainer
from .tree import LsmTree, TreeOptions

TREE_NAMES = STORE_NAMES
#: What the engine's directory holds (``engines.store_dir``): a reset removes only these.
LAYOUT = StoreLayout(
    engine="lsm",
    stores=TREE_NAMES,
    stores_are_dirs=True,
    store_files=re.compile(r"meta\.json|seg-\d+\.sst|wal-\d+\.log|[^/]*\.tmp"),
    own_files=re.compile(re.escape(CleanShutdownMarker.NAME)),
)


class LsmEngine(Engine):
    name = "lsm"
    #: What the last open's crash repair did (None: the previous close was clean).
    recovery: RepairReport | None = None
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

    # --- lifecycle ----------------------------------------------------------------------
    def _open_trees(self, reset: bool) -> list[LsmTree]:
        store = StoreDir(self.data_dir, LAYOUT)
        if reset:  # only its own store
            store.reset()
        else:  # every tree present
            store.require()
        # An existing store must have every tree: one emptied behind our back is refused
        # (MissingStore), never reopened as an empty index.
        trees: list[LsmTree] = []
        try:
            for name in TREE_NAMES:
                trees.append(LsmTree(self.data_dir / name, self.options, create_if_missing=reset))
            self._store = KvProfileStore([LsmKv(t) for t in trees], self.limit, index_values_are_pks=False)
            # A profile is five writes to five trees; after an unclean stop (no marker from
            # close) the indexes are repaired from the profiles tree before anything runs.
            self.recovery = None
            if not self._marker.take() and not reset:
                self.recovery = self._store.repair()
        except BaseException:
            # The engine never held these trees, so its close cannot release them: close
            # them here (segment mmaps, log files), keeping the error that stopped the open.
            for tree in reversed(trees):
                with contextlib.suppress(Exception):
                    tree.close()
            raise
        return trees

    async def delete_store(self) -> bool:
        """The five trees' directories and the clean-shutdown marker; nothing else."""
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

        await anyio.to_thread.run_sync(persist)

    def facts(self) -> EngineFacts:
        facts = super().facts()
        mode = self.options.wal_mode
        facts.durability = Durability(
            log={
                "sync": "write-ahead log",
                "none": "no write-ahead log (only flushed segments persist)",
            }.get(mode, "write-ahead log, compressed frames written by a background task"),
            sync={"sync": "per write", "none": "never"}.get(mode, "about once a second, and on settle/close"),
            write_unit="a profile is five puts into five trees, no batch across them",
            after_crash="the unwritten log tail is lost; open repairs the four indexes from the profiles tree"
            if mode != "sync"
            else "open repairs the four indexes from the profiles tree",
            parameters={"wal_mode": mode},
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

    # --- operations: the shared key/value profile store, on the loop, then a turn for the
    # background flush / merge / log writer ----------------------------------------------
    async def insert(self, profiles: Sequence[Profile], marks: Marks) -> None:
        self._store.insert(profiles, marks)
        await self._yield()

    async def update(self, uids: Sequence[int], transform: Transform, marks: Marks) -> list[Profile]:
        out = self._store.update(uids, transform, marks)
        await self._yield()
        return out

    async def read_by_id(self, uids: Sequence[int], marks: Marks) -> list[Any]:
        out = self._store.read_by_id(uids, marks)
        await self._yield()
        return out

    async def lookup_by_email(self, emails: Sequence[str], marks: Marks) -> list[Any]:
        out = self._store.lookup_by_email(emails, marks)
        await self._yield()
        return out

    async def scan_country_status(self, queries: Sequence[tuple[str, str]], marks: Marks) -> list[int]:
        out = self._store.scan_country_status(queries, marks)
        await self._yield()
        return out

    async def query_country_status(self, queries: Sequence[tuple[str, str]], marks: Marks) -> list[Any]:
        out = self._store.query_country_status(queries, marks)
        await self._yield()
        return out

    async def scan_created_at(self, ranges: Sequence[tuple[int, int]], marks: Marks) -> list[int]:
        out = self._store.scan_created_at(ranges, marks)
        await self._yield()
        return out

    async def query_created_at(self, ranges: Sequence[tuple[int, int]], marks: Marks) -> list[Any]:
        out = self._store.query_created_at(ranges, marks)
        await self._yield()
        return out

    async def scan_top_reputation(self, times: int, marks: Marks) -> list[int]:
        out = self._store.scan_top_reputation(times, marks)
        await self._yield()
        return out

    async def query_top_reputation(self, times: int, marks: Marks) -> list[Any]:
        out = self._store.query_top_reputation(times, marks)
        await self._yield()
        return out

    async def count(self) -> int:
        n = self._trees[0].count()
        await self._yield()
        return n


class LsmKv:
    """An LSM tree as a :class:`~asyncbench.engines.kv_profile_store.KvStore`: its own bound methods,
    and a scan that is the tree's merged key-range read."""

    __slots__ = ("tree", "get", "put", "delete", "items")

    def __init__(self, tree: LsmTree) -> None:
        self.tree = tree
        self.get, self.put, self.delete, self.items = tree.get, tree.upsert, tree.delete, tree.iter

    def scan(self, start: bytes, last: bytes | None, limit: int) -> list[bytes]:
        if last is None:
            return self.tree.scan_keys(start, None, False, limit)
        return self.tree.scan_keys(start, last, True, limit)
