"""A complete SQL engine in one file: Python's sqlite3, in memory.

The SQL counterpart of ``sorted_list_engine.py`` (docs/extending.md's "Writing an engine"): copy
it, replace the sqlite3 calls with your driver's, register it (an ``asyncbench.engines``
entry point, or ``ASYNCBENCH_ENGINES="mine=mypackage.module:MyEngine"``) and run any plan
with ``--engine mine``. ``tests/test_example_engine.py`` runs the spec's reference plan
through the real CLI with it and checks all 17 checksums.

What a SQL engine implements:
- a session (:class:`MemorySqlSession`): the three driver calls a workload's SQL store
  needs (fetch one row, fetch all rows, execute), ``async`` for any driver; a synchronous
  one like sqlite3 never suspends in them;
- its dialect (:class:`~asyncbench.store.Dialect`: placeholders, optional index hints, the
  column types of an integer, text and bytes), from which each workload writes its
  statements once, and the engine the DDL of the tables workloads declare
  (:class:`~asyncbench.store.Table`, made before a workload's first batch: here the
  dialect's DDL simply runs, the whole in-memory database being the engine's own; a
  server engine also records what it made: ``SqlPrimitives.make_table``);
- where a batch runs: here on the event loop, driven to its end in one go
  (:func:`~asyncbench.store.run_to_completion`), then a turn for other tasks;
- the lifecycle of :class:`asyncbench.engine.Engine` and ``worker(i)``, which returns its
  :class:`~asyncbench.store.SqlPrimitives`.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Coroutine, Sequence
from typing import Any

import anyio
from anyio.abc import TaskGroup

from asyncbench.engine import Engine
from asyncbench.facts import Durability, EngineFacts, StorageMethod
from asyncbench.store import Dialect, SqlPrimitives, run_to_completion

__all__ = ["MemorySqlSession", "SqliteMemoryEngine"]

DIALECT = Dialect(placeholder=lambda i: "?")  # INTEGER, TEXT, BLOB: the defaults


class MemorySqlSession:
    """The driver calls, over one sqlite3 connection in autocommit mode."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    async def fetch_one(self, statement: str, args: Sequence[Any]) -> Sequence[Any] | None:
        return self.conn.execute(statement, args).fetchone()

    async def fetch_all(self, statement: str, args: Sequence[Any]) -> Sequence[Sequence[Any]]:
        return self.conn.execute(statement, args).fetchall()

    async def execute(self, statement: str, args: Sequence[Any]) -> None:
        self.conn.execute(statement, args)


async def _on_loop(body: Callable[..., Coroutine[Any, Any, Any]], *args: Any) -> Any:
    """Run a batch right here (the session never suspends), then give other tasks a turn."""
    out = run_to_completion(body, *args)
    await anyio.sleep(0)
    return out


class SqliteMemoryEngine(Engine):
    """One in-memory SQLite database shared by every worker (docs/extending.md's SQL example)."""

    name = "sqlite-memory"
    persistent = False  # nothing survives the process: reopen keeps this object

    def __init__(self, config) -> None:  # type: ignore[no-untyped-def]
        super().__init__(config)
        self._conn: sqlite3.Connection | None = None
        self._primitives: SqlPrimitives | None = None

    # --- lifecycle ----------------------------------------------------------------------
    async def open(self, reset: bool, background: TaskGroup | None = None) -> None:
        if reset or self._conn is None:
            if self._conn is not None:
                self._conn.close()
            self._conn = sqlite3.connect(":memory:", isolation_level=None)  # autocommit
        self._primitives = SqlPrimitives(MemorySqlSession(self._conn), DIALECT, hop=_on_loop)

    async def close(self) -> None:
        self._primitives = None  # the database stays for a reopen (it lives as long as the object)

    def worker(self, index: int) -> SqlPrimitives:
        """Every worker shares the one connection (batches never interleave on the loop)."""
        if self._primitives is None:
            raise RuntimeError("sqlite-memory engine is not open")
        return self._primitives

    def storage_bytes(self) -> int:
        return 0

    def facts(self) -> EngineFacts:
        facts = super().facts()
        facts.durability = Durability(persistent=False)
        facts.storage_method = StorageMethod.NONE
        return facts
