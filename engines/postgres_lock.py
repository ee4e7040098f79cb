"""The PostgreSQL engine's own schema, its ownership marker and its run lock (see
engines/server_lock.py for why).

**Schema.** The table lives in a schema of its own (``[engines.postgres] schema``,
default ``asyncbench``) that every connection puts first on its ``search_path``: a
user's ``public.profiles`` in the same database is never seen, let alone dropped.
:func:`claim` creates the schema with the marker table ``asyncbench_owner`` in it, or
accepts an existing schema that holds our marker row, or claims an existing empty one;
any other schema is refused, naming its tables.

**Lock.** ``pg_advisory_lock`` on a connection of its own, keyed by the database (an
advisory lock is per database) and the schema. It is polled with
``pg_try_advisory_lock`` until ``lock_wait_seconds`` pass, so the wait is bounded
without depending on ``lock_timeout``; the server releases it when the connection goes,
so a run that dies leaves no stale lock.
"""

from __future__ import annotations

import asyncio
import time
import zlib
from typing import Any

from asyncbench.engines.server_lock import MARKER_TABLE, MARKER_TOOL, NotOurs, ServerBusy
from asyncbench.engines.sql_names import pg_ident

__all__ = ["AdvisoryLock", "claim", "lock_keys", "owned"]

PROFILES = "profiles"
#: The advisory lock's first key: "asb1", asyncbench's class of locks.
LOCK_CLASS = 0x61736231
POLL_S = 0.2


def lock_keys(schema: str) -> tuple[int, int]:
    """(class, schema's crc32 as a signed int4): the two-key form of pg_advisory_lock."""
    crc = zlib.crc32(schema.encode())
    return LOCK_CLASS, crc - (1 << 32) if crc >= 1 << 31 else crc


async def _tables(conn: Any, schema: str) -> list[str] | None:
    """The schema's relations, or None when it does not exist."""
    if not await conn.fetchval("SELECT 1 FROM pg_namespace WHERE nspname = $1", schema):
        return None
    rows = await conn.fetch(
        "SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
        "WHERE n.nspname = $1 AND c.relkind IN ('r', 'p', 'v', 'm', 'f') ORDER BY c.relname",
        schema,
    )
    return [str(r[0]) for r in rows]


async def owned(conn: Any, schema: str) -> bool:
    """Whether ``schema`` holds our marker row."""
    tables = await _tables(conn, schema)
    if not tables or MARKER_TABLE not in tables:
        return False
    tools = await conn.fetch(f"SELECT tool FROM {pg_ident(schema)}.{MARKER_TABLE}")
    return any(str(r[0]) == MARKER_TOOL for r in tools)


async def claim(conn: Any, schema: str, where: str) -> None:
    """Make sure ``schema`` is ours (module docstring); else :class:`NotOurs`."""
    tables = await _tables(conn, schema)
    if tables is not None and MARKER_TABLE in tables:
        if await owned(conn, schema):
            return
        raise NotOurs(
            f"{where}: table {MARKER_TABLE} exists but holds no {MARKER_TOOL!r} row, so asyncbench did not "
            f"create this schema's tables; refusing to drop or reset table {PROFILES} "
            "(give [engines.postgres] schema a name of its own)"
        )
    if tables:
        what = f"table {PROFILES}" if PROFILES in tables else f"table {tables[0]}"
        others = (
            f" (it holds {len(tables)} tables: {', '.join(tables[:5])}{', ...' if len(tables) > 5 else ''})"
        )
        raise NotOurs(
            f"{where}: {what} was not created by asyncbench (no marker table {MARKER_TABLE}){others}; "
            "refusing to drop or reset anything in it: give [engines.postgres] schema a name of its own "
            "(a new or empty schema is claimed), or drop the table yourself"
        )
    q = pg_ident(schema)
    await conn.execute(f"CREATE SCHEMA IF NOT EXISTS {q}")
    await conn.execute(
        f"CREATE TABLE IF NOT EXISTS {q}.{MARKER_TABLE} "
        "(tool TEXT PRIMARY KEY, created_at TIMESTAMPTZ NOT NULL DEFAULT now(), note TEXT NOT NULL)"
    )
    await conn.execute(
        f"INSERT INTO {q}.{MARKER_TABLE} (tool, note) VALUES ($1, $2) ON CONFLICT DO NOTHING",
        MARKER_TOOL,
        f"asyncbench created this schema's tables; each run drops and recreates {PROFILES}",
    )


class AdvisoryLock:
    """A session-level advisory lock held by a connection of its own."""

    def __init__(self, conn: Any, keys: tuple[int, int]) -> None:
        self.conn, self.keys = conn, keys

    @classmethod
    async def take(cls, conn: Any, schema: str, wait_s: float, where: str) -> AdvisoryLock:
        keys = lock_keys(schema)
        deadline = time.monotonic() + max(0.0, wait_s)
        while not await conn.fetchval("SELECT pg_try_advisory_lock($1, $2)", *keys):
            if time.monotonic() >= deadline:
                holder = await conn.fetchrow(
                    "SELECT a.pid, a.application_name, a.client_addr FROM pg_locks l "
                    "JOIN pg_stat_activity a ON a.pid = l.pid WHERE l.locktype = 'advisory' AND l.granted "
                    "AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database()) "
                    "AND l.classid = $1::bigint::oid AND l.objid = ($2::bigint & 4294967295)::oid LIMIT 1",
                    *keys,
                )
                who = (
                    f"server process {holder[0]}, {holder[1] or 'no application name'}, from {holder[2]}"
                    if holder
                    else "another session"
                )
                raise ServerBusy(
                    f"{where}: another asyncbench run holds the advisory lock of this schema ({who}); "
                    f"waited {wait_s:g} s and touched nothing: run one at a time against a schema, "
                    "or give this run another [engines.postgres] schema"
                )
            await asyncio.sleep(POLL_S)
        return cls(conn, keys)

    async def release(self) -> None:
        conn, self.conn = self.conn, None
        if conn is None:
            return
        try:
            await conn.execute("SELECT pg_advisory_unlock($1, $2)", *self.keys)
            await conn.close(timeout=5)
        except Exception:
            conn.terminate()  # the server releases the lock with the session
