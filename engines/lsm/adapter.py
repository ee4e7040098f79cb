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

import shutil
import zlib
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import anyio

from asyncbench.engine import Engine, EngineConfig
from engines.kv_recovery import (
    STORE_NAMES,
    CleanShutdownMarker,
    KvView,
    RepairReport,
    profile_indexes,
    repair,
    write_update,
)
from engines.lsm.maintainer import Maintainer
from engines.lsm.tree import LsmTree, TreeOptions
from workloads.profile_store.profiles import (
    Profile,
    country_status_key,
    country_status_prefix,
    created_at_bounds,
    created_at_key,
    decode,
    encode,
    primary_key,
    reputation_key,
)

TREE_NAMES = STORE_NAMES


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
        self._scope = anyio.CancelScope()
        self._done = anyio.Event()
        self._marker = CleanShutdownMarker(self.data_dir)

    # --- lifecycle ----------------------------------------------------------------------
    def _open_trees(self, reset: bool) -> list[LsmTree]:
        if reset and self.data_dir.exists():
            shutil.rmtree(self.data_dir)
        self.data_dir.mkdir(parents=True, exist_ok=True)
        trees = [LsmTree(self.data_dir / n, self.options) for n in TREE_NAMES]
        # A profile is five writes to five trees; after an unclean stop (no marker from
        # close) the indexes are repaired from the profiles tree before anything runs.
        self.recovery = None
        if not self._marker.take() and not reset:
            views = [KvView(items=t.iter, get=t.get, put=t.upsert, delete=t.delete) for t in trees]
            indexes = list(zip(profile_indexes(values_are_pks=False), views[1:], strict=True))
            self.recovery = repair(views[0], indexes)
        return trees

    async def open(self, reset: bool) -> None:
        if self._trees:
            raise RuntimeError("engine already open")
        self._trees = await anyio.to_thread.run_sync(self._open_trees, reset)
        self.profiles, self.emails, self.country_status, self.created_at, self.reputation = self._trees
        if self.background is not None:
            self._maint = Maintainer(self._trees, self.options.block_cache_lifetime_ms)
            self._done = anyio.Event()
            await self.background.start(self._run_background, self._maint)

    async def _run_background(
        self, maint: Maintainer, *, task_status: Any = anyio.TASK_STATUS_IGNORED
    ) -> None:
        """The maintainer's loops, in a scope ``close`` cancels (inside the runner's group)."""
        try:
            with anyio.CancelScope() as scope:
                self._scope = scope
                async with anyio.create_task_group() as tg:
                    maint.start(tg)
                    task_status.started()
        finally:
            self._done.set()

    async def close(self) -> None:
        if not self._trees:
            return
        maint, self._maint = self._maint, None
        if maint is not None:
            maint.stop()
            self._scope.cancel()
            await self._done.wait()
        await anyio.to_thread.run_sync(self._close_trees)
        self._trees = []
        if maint is not None:
            maint.check()
        await anyio.to_thread.run_sync(self._marker.set)  # only a close that got this far is clean

    def _close_trees(self) -> None:
        for t in self._trees:
            t.close()

    async def stabilize(self) -> None:
        if self._maint is not None:
            await self._maint.wait_idle()
        else:
            self._maintain_inline(everything=True)

    async def settle(self) -> None:
        await self.stabilize()
        for t in self._trees:  # on the loop: the log queues are the loop's to touch
            t.wal.write_now()

        def persist() -> None:
            for t in self._trees:
                t.wal.sync()
                t.save_meta()

        await anyio.to_thread.run_sync(persist)

    def _maintain_inline(self, everything: bool = False) -> None:
        """Without a background task group (``open`` outside a runner), flushes, merges
        and log writes run here, synchronously, between batches."""
        for t in self._trees:
            if everything:
                t.freeze()
            while t.frozen:
                t.run_job(t.flush_job())
            t.merge_all()
            t.wal.write_now()

    def durability(self) -> str:
        mode = self.options.wal_mode
        if mode == "sync":
            return "write-ahead log fsynced per write (wal_mode=sync)"
        if mode == "none":
            return "no write-ahead log; only flushed segments persist (wal_mode=none)"
        return (
            "write-ahead log compressed and written by a background task (wal_mode=async-compressed); "
            "a crash loses at most the unwritten tail, fsync on settle/close"
        )

    @classmethod
    def library_versions(cls) -> dict[str, str]:
        return {"zlib": zlib.ZLIB_RUNTIME_VERSION}

    async def _yield(self) -> None:
        maint = self._maint
        if maint is None:
            self._maintain_inline()
        else:
            maint.check()
            await maint.throttle()
        await anyio.sleep(0)

    # --- operations -----------------------------------------------------------------------
    async def insert(self, profiles: Sequence[Profile]) -> None:
        put_p = self.profiles.upsert
        put_e = self.emails.upsert
        put_cs = self.country_status.upsert
        put_ca = self.created_at.upsert
        put_r = self.reputation.upsert
        for p in profiles:
            # Index entries first, the profile last: a crash in between leaves only extra
            # index entries, the cheapest state for the recovery pass to repair.
            pk = primary_key(p[0])
            put_e(p[1].encode(), pk)
            put_cs(country_status_key(p), b"")
            put_ca(created_at_key(p), b"")
            put_r(reputation_key(p), b"")
            put_p(pk, encode(p))
        await self._yield()

    async def read_by_id(self, uids: Sequence[int]) -> list[Any]:
        get = self.profiles.get
        out = [v for v in map(get, map(primary_key, uids)) if v is not None]
        await self._yield()
        return out

    async def lookup_by_email(self, emails: Sequence[str]) -> list[Any]:
        get_e = self.emails.get
        get = self.profiles.get
        out = []
        for e in emails:
            pk = get_e(e.encode())
            if pk is not None:
                v = get(pk)
                if v is not None:
                    out.append(v)
        await self._yield()
        return out

    def _cs_keys(self, queries: Sequence[tuple[str, str]]) -> list[bytes]:
        scan = self.country_status.scan_prefix
        limit = self.limit
        out: list[bytes] = []
        for c, s in queries:
            out += scan(country_status_prefix(c, s), limit)
        return out

    def _ca_keys(self, ranges: Sequence[tuple[int, int]]) -> list[bytes]:
        scan = self.created_at.scan_keys
        limit = self.limit
        out: list[bytes] = []
        for lo, hi in ranges:
            start, last = created_at_bounds(lo, hi)
            out += scan(start, last, True, limit)
        return out

    def _top_keys(self, times: int) -> list[bytes]:
        scan = self.reputation.scan_keys
        limit = self.limit
        out: list[bytes] = []
        for _ in range(times):
            out += scan(b"", None, False, limit)
        return out

    def _fetch(self, index_keys: list[bytes]) -> list[Any]:
        """One primary-key get per id; an index key's last 20 bytes are its primary key."""
        return [v for v in map(self.profiles.get, [k[-20:] for k in index_keys]) if v is not None]

    @staticmethod
    def _ids(index_keys: list[bytes]) -> list[int]:
        return [int(k[-20:]) for k in index_keys]

    async def scan_country_status(self, queries: Sequence[tuple[str, str]]) -> list[int]:
        out = self._ids(self._cs_keys(queries))
        await self._yield()
        return out

    async def query_country_status(self, queries: Sequence[tuple[str, str]]) -> list[Any]:
        out = self._fetch(self._cs_keys(queries))
        await self._yield()
        return out

    async def scan_created_at(self, ranges: Sequence[tuple[int, int]]) -> list[int]:
        out = self._ids(self._ca_keys(ranges))
        await self._yield()
        return out

    async def query_created_at(self, ranges: Sequence[tuple[int, int]]) -> list[Any]:
        out = self._fetch(self._ca_keys(ranges))
        await self._yield()
        return out

    async def scan_top_reputation(self, times: int) -> list[int]:
        out = self._ids(self._top_keys(times))
        await self._yield()
        return out

    async def query_top_reputation(self, times: int) -> list[Any]:
        out = self._fetch(self._top_keys(times))
        await self._yield()
        return out

    async def update(self, uids: Sequence[int], transform: Callable[[Profile], Profile]) -> list[Profile]:
        get = self.profiles.get
        put_p = self.profiles.upsert
        cs, rep = self.country_status, self.reputation
        out = []
        for uid in uids:
            pk = primary_key(uid)
            raw = get(pk)
            if raw is None:
                continue
            old = decode(raw)
            new = transform(old)
            write_update(old, new, pk, b"", put_p, cs.upsert, cs.delete, rep.upsert, rep.delete)
            out.append(new)
        await self._yield()
        return out

    async def count(self) -> int:
        n = self.profiles.count()
        await self._yield()
        return n
