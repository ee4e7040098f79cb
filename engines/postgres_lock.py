"""The PostgreSQL engine's own schema, its ownership marker and its run lock (see
engines/server_lock.py for why).

**Schema.** The table lives in a schema of its own (``[engines.postgres] schema``,
default ``asyncbench``) that every connection puts first on its ``search_path``: a
user's table of the same name in ``public`` is never seen, let alone dropped.
:func:`claim` creates the schema with the marker table ``asyncbench_owner`` in it, or
accepts an existing schema that holds our marker row, or claims an existing empty one;
any other schema is refused, naming what it holds. Empty means no object of any kind
that lives in a schema (:func:`objects`): every relation (tables, views, materialized
views, foreign tables, sequences, composite types), function, procedure and aggregate,
type (enums, domains, ranges, base types), operator, operator class and family,
collation, conversion, text search object, extended statistics and extension. Indexes,
triggers, rules, policies and constraints belong to a table or domain that is listed.

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

from asyncbench.engines.server_lock import MARKER_TABLE, MARKER_TOOL, NotOurs, ServerBusy, not_empty
from asyncbench.engines.sql_names import pg_ident
from asyncbench.engines.sql_tables import RECORD_TABLE

__all__ = ["AdvisoryLock", "claim", "lock_keys", "objects", "owned"]

#: The advisory lock's first key: "asb1", asyncbench's class of locks.
LOCK_CLASS = 0x61736231
POLL_S = 0.2


def lock_keys(schema: str) -> tuple[int, int]:
    """(class, schema's crc32 as a signed int4): the two-key form of pg_advisory_lock."""
    crc = zlib.crc32(schema.encode())
    return LOCK_CLASS, crc - (1 << 32) if crc >= 1 << 31 else crc


#: Every object in the schema whose oid is $1, as (kind, name). Types exclude what comes
#: with another object: a relation's row type (typrelid), the array type made with each
#: type, a range's multirange; a composite type is listed as its relation.
OBJECTS_SQL = """
SELECT CASE c.relkind WHEN 'r' THEN 'table' WHEN 'p' THEN 'table' WHEN 'v' THEN 'view'
       WHEN 'm' THEN 'materialized view' WHEN 'f' THEN 'foreign table' WHEN 'S' THEN 'sequence'
       WHEN 'c' THEN 'type' ELSE 'relation' END, c.relname::text
  FROM pg_class c WHERE c.relnamespace = $1 AND c.relkind NOT IN ('i', 'I', 't')
UNION ALL
SELECT CASE p.prokind WHEN 'p' THEN 'procedure' WHEN 'a' THEN 'aggregate' WHEN 'w' THEN 'window function'
       ELSE 'function' END, p.proname::text
  FROM pg_proc p WHERE p.pronamespace = $1
UNION ALL
SELECT CASE t.typtype WHEN 'e' THEN 'enum type' WHEN 'd' THEN 'domain' WHEN 'r' THEN 'range type'
       ELSE 'type' END, t.typname::text
  FROM pg_type t WHERE t.typnamespace = $1 AND t.typrelid = 0 AND t.typtype <> 'm'
   AND NOT EXISTS (SELECT 1 FROM pg_type e WHERE e.typarray = t.oid)
UNION ALL SELECT 'operator', oprname::text FROM pg_operator WHERE oprnamespace = $1
UNION ALL SELECT 'operator class', opcname::text FROM pg_opclass WHERE opcnamespace = $1
UNION ALL SELECT 'operator family', opfname::text FROM pg_opfamily WHERE opfnamespace = $1
UNION ALL SELECT 'collation', collname::text FROM pg_collation WHERE collnamespace = $1
UNION ALL SELECT 'conversion', conname::text FROM pg_conversion WHERE connamespace = $1
UNION ALL SELECT 'text search configuration', cfgname::text FROM pg_ts_config WHERE cfgnamespace = $1
UNION ALL SELECT 'text search dictionary', dictname::text FROM pg_ts_dict WHERE dictnamespace = $1
UNION ALL SELECT 'text search parser', prsname::text FROM pg_ts_parser WHERE prsnamespace = $1
UNION ALL SELECT 'text search template', tmplname::text FROM pg_ts_template WHERE tmplnamespace = $1
UNION ALL SELECT 'extended statistics', stxname::text FROM pg_statistic_ext WHERE stxnamespace = $1
UNION ALL SELECT 'extension', extname::text FROM pg_extension WHERE extnamespace = $1
"""


async def objects(conn: Any, schema: str) -> list[tuple[str, str]] | None:
    """Every object in ``schema`` as (kind, name) (module docstring), or None when the
    schema does not exist."""
    oid = await conn.fetchval("SELECT oid FROM pg_namespace WHERE nspname = $1", schema)
    if oid is None:
        return None
    return [(str(kind), str(name)) for kind, name in await conn.fetch(OBJECTS_SQL, oid)]


async def _has_marker_table(conn: Any, schema: str) -> bool:
    return bool(
        await conn.fetchval(
            "SELECT 1 FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE n.nspname = $1 AND c.relname = $2 AND c.relkind IN ('r', 'p')",
            schema,
            MARKER_TABLE,
        )
    )


async def owned(conn: Any, schema: str) -> bool:
    """Whether ``schema`` holds our marker row."""
    if not await _has_marker_table(conn, schema):
        return False
    tools = await conn.fetch(f"SELECT tool FROM {pg_ident(schema)}.{MARKER_TABLE}")
    return any(str(r[0]) == MARKER_TOOL for r in tools)


async def claim(conn: Any, schema: str, where: str) -> None:
    """Make sure ``schema`` is ours (module docstring); else :class:`NotOurs` naming what
    it holds."""
    if await _has_marker_table(conn, schema):
        if await owned(conn, schema):
            return
        raise NotOurs(
            f"{where}: table {MARKER_TABLE} exists but holds no {MARKER_TOOL!r} row, so asyncbench did not "
            f"create this schema's tables; refusing to drop or reset anything in it "
            "(give [engines.postgres] schema a name of its own)"
        )
    found = await objects(conn, schema)
    if found:
        raise not_empty(where, found, "schema", "[engines.postgres] schema")
    q = pg_ident(schema)
    await conn.execute(f"CREATE SCHEMA IF NOT EXISTS {q}")
    await conn.execute(
        f"CREATE TABLE IF NOT EXISTS {q}.{MARKER_TABLE} "
        "(tool TEXT PRIMARY KEY, created_at TIMESTAMPTZ NOT NULL DEFAULT now(), note TEXT NOT NULL)"
    )
    await conn.execute(
        f"INSERT INTO {q}.{MARKER_TABLE} (tool, note) VALUES ($1, $2) ON CONFLICT DO NOTHING",
        MARKER_TOOL,
        f"asyncbench created this schema's tables; each run drops and remakes those recorded in {RECORD_TABLE}",
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
