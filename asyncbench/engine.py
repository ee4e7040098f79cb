"""The async engine protocol every adapter implements.

Every method takes a whole operation *batch* so that event-loop and thread hops are
paid once per batch, yet each item is still exactly one engine operation (no multi-get,
no write batch, no ``IN (...)``). Reads return records in request order, skipping ids that
are not found; a record is a profile tuple or its stored ``|``-joined encoding, which the
checksum folds without decoding. Scans return the matching user ids, concatenated over
the batch's queries in order.
"""

from __future__ import annotations

import abc
import contextlib
import os
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import anyio
from anyio.abc import TaskGroup

from workloads.profile_store.profiles import Profile, Record


class EngineUnavailable(RuntimeError):
    """The engine's library or server is missing; the message says how to get it."""


@dataclass(frozen=True)
class EngineConfig:
    name: str
    data_dir: Path
    settings: Mapping[str, Any] = field(default_factory=dict)
    limit: int = 50
    seed: int = 570123434
    workers: int = 1  # P: how many concurrent workers will call ``worker(i)`` handles


def directory_size(path: Path) -> int:
    """Bytes of every regular file under ``path`` (the reference's storage figure)."""
    total = 0
    for root, _dirs, files in os.walk(path):
        for name in files:
            with contextlib.suppress(FileNotFoundError):  # a file may vanish mid-walk
                total += os.lstat(os.path.join(root, name)).st_size
    return total


class Engine(abc.ABC):
    """Base class of engine adapters. Subclasses set ``name`` and ``default_settings``."""

    name: ClassVar[str]
    #: Settings the TOML may set under ``[engines.<name>]``, with their defaults; the
    #: config validator rejects other keys and values of another type.
    default_settings: ClassVar[Mapping[str, Any]] = {}
    #: Whether the runner should run stabilize phases for this engine.
    needs_stabilization: ClassVar[bool] = False
    #: Whether data survives close + reopen (the memory engine only keeps its object).
    persistent: ClassVar[bool] = True

    #: A task group that outlives ``open() .. close()``, set by whoever opens the engine
    #: (the runner, or :func:`opened`). Engines with background work (merges, log writers)
    #: start it here and must stop it in ``close()``; anyio scopes nest lexically, so an
    #: engine must never enter a task group in ``open`` and leave it in ``close``.
    background: TaskGroup | None = None

    @classmethod
    def check_settings(cls, settings: Mapping[str, Any]) -> None:
        """Raise ValueError naming the setting when a value (of the right type) is not
        acceptable; called by the config validator before anything runs."""

    def __init__(self, config: EngineConfig) -> None:
        self.config = config
        self.settings: dict[str, Any] = {**self.default_settings, **config.settings}
        self.limit = config.limit
        self.data_dir = Path(config.data_dir)

    # --- lifecycle --------------------------------------------------------------------
    @abc.abstractmethod
    async def open(self, reset: bool) -> None:
        """Open the store; ``reset`` wipes any previous data first."""

    @abc.abstractmethod
    async def close(self) -> None:
        """Flush what the engine normally flushes on close and release every handle."""

    async def stabilize(self) -> None:
        """Bring background work to rest (flush, compact) before timed reads."""

    async def settle(self) -> None:
        """Make everything durable before storage is measured (checkpoint, flush)."""

    def storage_bytes(self) -> int:
        return directory_size(self.data_dir)

    def worker(self, index: int) -> Engine:
        """The handle worker ``index`` (of ``config.workers``) uses. Engines that share one
        handle return ``self``; engines with a connection per worker (SQLite) return a view
        bound to that worker's connection, opened in ``open``."""
        return self

    # --- operations -------------------------------------------------------------------
    @abc.abstractmethod
    async def insert(self, profiles: Sequence[Profile]) -> None:
        """Insert each profile (and its four index entries) as its own operation."""

    @abc.abstractmethod
    async def read_by_id(self, uids: Sequence[int]) -> list[Record]: ...

    @abc.abstractmethod
    async def lookup_by_email(self, emails: Sequence[str]) -> list[Record]: ...

    @abc.abstractmethod
    async def scan_country_status(self, queries: Sequence[tuple[str, str]]) -> list[int]:
        """Per query, the first ``limit`` user ids of that country/status, by user id."""

    @abc.abstractmethod
    async def query_country_status(self, queries: Sequence[tuple[str, str]]) -> list[Record]: ...

    @abc.abstractmethod
    async def scan_created_at(self, ranges: Sequence[tuple[int, int]]) -> list[int]:
        """Per inclusive ``(from_ms, to_ms)`` range, the first ``limit`` ids by (created_at, id)."""

    @abc.abstractmethod
    async def query_created_at(self, ranges: Sequence[tuple[int, int]]) -> list[Record]: ...

    @abc.abstractmethod
    async def scan_top_reputation(self, times: int) -> list[int]:
        """Run the top-``limit`` reputation scan ``times`` times (reputation desc, id asc)."""

    @abc.abstractmethod
    async def query_top_reputation(self, times: int) -> list[Record]: ...

    @abc.abstractmethod
    async def update(self, uids: Sequence[int], transform: Callable[[Profile], Profile]) -> list[Profile]:
        """Per id: read the current profile, ``transform`` it, write it back with its
        indexes moved, and return the updated profiles in order (skip missing ids)."""

    @abc.abstractmethod
    async def count(self) -> int:
        """Number of stored profiles."""

    # --- report metadata ------------------------------------------------------------
    def describe_settings(self) -> dict[str, str]:
        """Engine Settings rows for the report."""
        return {k: str(v) for k, v in self.settings.items()}

    def durability(self) -> str:
        """One Durability Settings line for the report."""
        return "not stated"

    @classmethod
    def library_versions(cls) -> dict[str, str]:
        """Versions of the libraries this engine measures, for the Environment section."""
        return {}


@contextlib.asynccontextmanager
async def opened(engine: Engine, reset: bool = True) -> AsyncIterator[Engine]:
    """Open ``engine`` with a background task group around its lifetime; close it on exit.

    For tests and scripts; the runner does the same with timeouts and failure handling.
    """
    async with anyio.create_task_group() as tg:
        engine.background = tg
        await engine.open(reset)
        try:
            yield engine
        finally:
            with anyio.CancelScope(shield=True):
                await engine.close()
            tg.cancel_scope.cancel()
