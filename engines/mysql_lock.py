"""The MySQL engine's ownership marker and run lock (see engines/server_lock.py for why).

**Marker.** :func:`claim` runs on the session that creates the schema: a database that
holds ``asyncbench_owner`` with our row is ours; a new or empty one is claimed by creating
that marker; any other database is refused, naming what it holds, before anything is
dropped. Empty means no object of any kind (:func:`objects`: tables, views, sequences,
functions, procedures, packages, events, triggers), except our Galera lock table
``asyncbench_lock`` when it is ours: our columns, our row name (a user's table of that
name is a user's table). The check sees what the configured user may see:
MySQL hides routines, events and triggers from a user without privileges on them, so a
database holding only another user's procedure, function or event looked empty and was
claimed (issue 52). So a database is claimed only when the user can see every kind
(:func:`hidden_kinds`: ``EXECUTE``, ``ALTER ROUTINE`` or ``CREATE ROUTINE`` show its
routines, ``EVENT`` its events; a trigger sits on a table, which is seen); otherwise it
is refused, naming what the user cannot see and the grant that would show it
(``scripts/mysql-server`` grants them).

**Lock on one server: ``GET_LOCK``.** A named lock held by a connection of its own,
released by ``RELEASE_LOCK`` or, if the process dies, by the server when the connection
goes: no stale lock is possible. The name is ``asyncbench:<database>``.

**Lock on Galera: a lock row.** MariaDB Galera does not replicate ``GET_LOCK``: measured
on the 3-node cluster of ``scripts/galera-cluster`` (MariaDB 10.11, galera-4), two
connections on two nodes both get ``GET_LOCK('asyncbench:x', 1) = 1`` at the same time
(tests/test_server_lock_galera.py shows it), so it excludes nothing across nodes. What a
cluster does agree on is a row's primary key: :class:`GaleraLockRow` INSERTs
``(name, token)`` into ``asyncbench_lock`` in an autocommit statement. Two runs inserting
at once on two nodes cannot both commit: the one certified second gets a certification
failure (1213) or, when the winner's row already arrived, a duplicate key (1062). The
winner then confirms with a causal read (``wsrep_sync_wait=1``: every write committed
cluster-wide before it is applied) that the row holds its token.

Stale rows: the holder refreshes ``heartbeat`` (the node's clock, in ms) every
:data:`HEARTBEAT_S` seconds on the lock's own connection. A row whose heartbeat is older
than :data:`LEASE_S` (a holder that died) may be taken over, and only by one contender:
``UPDATE ... WHERE token = <the stale token> AND heartbeat < now - lease``. Two
contenders doing it at once either conflict in certification (one gets 1213) or, on one
node, the second finds the token changed (0 rows); the winner confirms with a causal read
as above. A holder that is alive keeps its heartbeat fresh, so its row is never taken
over while it runs; the release deletes the row only ``WHERE token = <ours>``, so a
holder whose row was taken over (it stalled for more than the lease) never deletes the
new holder's row, and says so. Assumed: the nodes' clocks agree to well within
:data:`LEASE_S` (NTP; on one machine they are the same clock).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import secrets
import socket
import time
from typing import Any

from asyncmy.errors import MySQLError

from asyncbench.engines.server_lock import (
    LOCK_TABLE,
    MARKER_TABLE,
    MARKER_TOOL,
    NotOurs,
    ServerBusy,
    not_empty,
)
from asyncbench.engines.sql_tables import RECORD_TABLE

__all__ = ["GaleraLockRow", "GetLock", "claim", "lock_name", "objects", "owned"]

DUPLICATE_KEY = 1062
LOCK_DEADLOCK = 1213
HEARTBEAT_S = 5.0
LEASE_S = 60.0
#: The lock row's name (one lock row per database: the table lives in it).
ROW_NAME = "run"
POLL_S = 0.25

MARKER_SCHEMA = f"""CREATE TABLE IF NOT EXISTS {MARKER_TABLE} (
    tool VARCHAR(32) NOT NULL PRIMARY KEY,
    created_at BIGINT NOT NULL,
    note VARCHAR(255) NOT NULL
) ENGINE=InnoDB"""
LOCK_SCHEMA = f"""CREATE TABLE IF NOT EXISTS {LOCK_TABLE} (
    name VARCHAR(64) NOT NULL PRIMARY KEY,
    token CHAR(32) NOT NULL,
    holder VARCHAR(255) NOT NULL,
    heartbeat BIGINT NOT NULL,
    beats BIGINT NOT NULL DEFAULT 0
) ENGINE=InnoDB"""
NOW_MS = "CAST(UNIX_TIMESTAMP(NOW(6)) * 1000 AS SIGNED)"


def lock_name(database: str) -> str:
    """``asyncbench:<database>``; GET_LOCK names are at most 64 characters, so a long
    database name is shortened with a hash of the whole."""
    name = f"asyncbench:{database}"
    if len(name) <= 64:
        return name
    import hashlib

    return f"asyncbench:{database[:32]}:{hashlib.sha256(database.encode()).hexdigest()[:16]}"


def _holder() -> str:
    """Who holds a lock row, for the refusal message: host and pid (safe characters only)."""
    host = re.sub(r"[^A-Za-z0-9._-]", "_", socket.gethostname())[:200]
    return f"{host} pid {os.getpid()}"


async def _query(conn: Any, sql: str, args: Any = None) -> list[tuple[Any, ...]]:
    async with conn.cursor() as cur:
        await cur.execute(sql, args)
        return list(await cur.fetchall())


async def _execute(conn: Any, sql: str, args: Any = None) -> int:
    """Rows affected."""
    async with conn.cursor() as cur:
        await cur.execute(sql, args)
        return int(cur.rowcount)


def _code(exc: BaseException) -> int | None:
    return exc.args[0] if isinstance(exc, MySQLError) and exc.args and isinstance(exc.args[0], int) else None


async def _tables(conn: Any) -> set[str]:
    rows = await _query(
        conn, "SELECT table_name FROM information_schema.tables WHERE table_schema = DATABASE()"
    )
    return {str(r[0]) for r in rows}


async def objects(conn: Any) -> list[tuple[str, str]]:
    """Every object of the connection's database, as (kind, name): what makes it not empty."""
    found: list[tuple[str, str]] = []
    for sql in (
        "SELECT CASE table_type WHEN 'VIEW' THEN 'view' WHEN 'SYSTEM VIEW' THEN 'view' "
        "WHEN 'SEQUENCE' THEN 'sequence' ELSE 'table' END, table_name "
        "FROM information_schema.tables WHERE table_schema = DATABASE()",
        "SELECT LOWER(routine_type), routine_name FROM information_schema.routines WHERE routine_schema = DATABASE()",
        "SELECT 'event', event_name FROM information_schema.events WHERE event_schema = DATABASE()",
        "SELECT 'trigger', trigger_name FROM information_schema.triggers WHERE trigger_schema = DATABASE()",
    ):
        found += [(str(kind), str(name)) for kind, name in await _query(conn, sql)]
    return found


#: Per kind of object MySQL hides from a user without rights on it: the database-level
#: (or global) privileges of which one shows them in information_schema.
REVEALING = {
    "procedures and functions": ("EXECUTE", "ALTER ROUTINE", "CREATE ROUTINE"),
    "events": ("EVENT",),
}


async def hidden_kinds(conn: Any) -> list[str]:
    """The kinds of object (of :data:`REVEALING`) the connection's user cannot see in its
    database: it holds none of the privileges that would show them, on this database (a
    grant's database name is a LIKE pattern) or globally."""
    rows = await _query(
        conn,
        "SELECT privilege_type FROM information_schema.schema_privileges WHERE DATABASE() LIKE table_schema "
        "UNION SELECT privilege_type FROM information_schema.user_privileges",
    )
    held = {str(r[0]).upper() for r in rows}
    return [kind for kind, privileges in REVEALING.items() if not held & set(privileges)]


#: The lock table's columns, in order (LOCK_SCHEMA): how ours is told from a user's table.
LOCK_COLUMNS = ["name", "token", "holder", "heartbeat", "beats"]


async def _our_lock_table(conn: Any) -> bool:
    """Whether ``asyncbench_lock`` has our columns and only our row name."""
    columns = await _query(
        conn,
        "SELECT column_name FROM information_schema.columns WHERE table_schema = DATABASE() "
        "AND table_name = %s ORDER BY ordinal_position",
        (LOCK_TABLE,),
    )
    if [str(r[0]) for r in columns] != LOCK_COLUMNS:
        return False
    rows = await _query(conn, f"SELECT COUNT(*) FROM {LOCK_TABLE} WHERE name <> %s", (ROW_NAME,))
    return int(rows[0][0]) == 0


async def owned(conn: Any) -> bool:
    """Whether the connection's database holds our marker row."""
    if MARKER_TABLE not in await _tables(conn):
        return False
    return any(str(r[0]) == MARKER_TOOL for r in await _query(conn, f"SELECT tool FROM {MARKER_TABLE}"))


async def claim(conn: Any, where: str) -> None:
    """Make sure the connection's database is ours: it holds our marker, or it holds no
    object but our lock table (then the marker is created). Else :class:`NotOurs` naming
    what it holds."""
    tables = await _tables(conn)
    if MARKER_TABLE in tables:
        if await owned(conn):
            return
        raise NotOurs(
            f"{where}: table {MARKER_TABLE} exists but holds no {MARKER_TOOL!r} row, so asyncbench did not "
            f"create this database's tables; refusing to drop or reset anything in it "
            "(give [engines.mysql] database a name of its own)"
        )
    foreign = await objects(conn)
    if ("table", LOCK_TABLE) in foreign and await _our_lock_table(conn):
        foreign.remove(("table", LOCK_TABLE))
    if foreign:
        raise not_empty(where, foreign, "database", "[engines.mysql] database")
    hidden = await hidden_kinds(conn)
    if hidden:
        grants = " and ".join(f"{' or '.join(REVEALING[k])} (for {k})" for k in hidden)
        raise NotOurs(
            f"{where}: the MySQL user cannot see this database's {' or '.join(hidden)} (MySQL hides them "
            f"from a user without rights on them), so asyncbench cannot prove it holds nothing of someone "
            f"else's; refusing to claim it: grant the user {grants} on it, or give [engines.mysql] "
            "database a name of its own"
        )
    await _execute(conn, MARKER_SCHEMA)
    await _execute(
        conn,
        f"INSERT IGNORE INTO {MARKER_TABLE} (tool, created_at, note) VALUES (%s, UNIX_TIMESTAMP(), %s)",
        (
            MARKER_TOOL,
            f"asyncbench created this database's tables; each run drops and remakes those recorded in {RECORD_TABLE}",
        ),
    )


class GetLock:
    """``GET_LOCK`` on a connection of its own (one server, not Galera)."""

    def __init__(self, conn: Any, name: str) -> None:
        self.conn, self.name = conn, name

    @classmethod
    async def take(cls, conn: Any, name: str, wait_s: float, where: str) -> GetLock:
        """Wait up to ``wait_s`` for the lock; :class:`ServerBusy` naming its holder's
        connection id when another session keeps it."""
        got = (await _query(conn, "SELECT GET_LOCK(%s, %s)", (name, max(0.0, wait_s))))[0][0]
        if got == 1:
            return cls(conn, name)
        holder = (await _query(conn, "SELECT IS_USED_LOCK(%s)", (name,)))[0][0]
        raise ServerBusy(
            f"{where}: another asyncbench run holds the lock {name!r} (server connection {holder}); "
            f"waited {wait_s:g} s and touched nothing: run one at a time against a database, "
            "or give this run another [engines.mysql] database"
        )

    async def release(self) -> None:
        conn, self.conn = self.conn, None
        if conn is None:
            return
        try:
            await _query(conn, "SELECT RELEASE_LOCK(%s)", (self.name,))
            await conn.ensure_closed()
        except Exception:
            conn.close()  # the server releases the lock with the connection


class GaleraLockRow:
    """The cluster-wide lock row of the module docstring, with its heartbeat task."""

    def __init__(self, conn: Any, token: str) -> None:
        self.conn, self.token = conn, token
        self.lost: str | None = None  # why the heartbeat stopped holding the row
        self._beat: asyncio.Task[None] | None = None

    @classmethod
    async def take(
        cls, conn: Any, wait_s: float, where: str, lease_s: float = LEASE_S, heartbeat_s: float = HEARTBEAT_S
    ) -> GaleraLockRow:
        token = secrets.token_hex(16)
        holder = _holder()
        await _execute(conn, LOCK_SCHEMA)
        deadline = time.monotonic() + max(0.0, wait_s)
        while True:
            row = None
            try:
                await _execute(
                    conn,
                    f"INSERT INTO {LOCK_TABLE} (name, token, holder, heartbeat) VALUES (%s, %s, %s, {NOW_MS})",
                    (ROW_NAME, token, holder),
                )
                if await cls._confirm(conn, token):
                    return cls._started(conn, token, heartbeat_s)
            except MySQLError as exc:
                if _code(exc) not in (DUPLICATE_KEY, LOCK_DEADLOCK):
                    raise
            row = await cls._read(conn)
            if row is not None and row[2] > lease_s * 1000:  # stale: its holder stopped beating
                try:
                    changed = await _execute(
                        conn,
                        f"UPDATE {LOCK_TABLE} SET token = %s, holder = %s, heartbeat = {NOW_MS}, beats = 0 "
                        f"WHERE name = %s AND token = %s AND heartbeat < {NOW_MS} - %s",
                        (token, holder, ROW_NAME, row[0], int(lease_s * 1000)),
                    )
                    if changed == 1 and await cls._confirm(conn, token):
                        return cls._started(conn, token, heartbeat_s)
                except MySQLError as exc:
                    if _code(exc) != LOCK_DEADLOCK:
                        raise
            if time.monotonic() >= deadline:
                who = (
                    f"{row[1]}, last heartbeat {row[2] / 1000:.1f} s ago"
                    if row is not None
                    else "another run"
                )
                raise ServerBusy(
                    f"{where}: another asyncbench run holds the cluster's lock row ({LOCK_TABLE}: {who}); "
                    f"waited {wait_s:g} s and touched nothing: run one at a time against a database, or give "
                    "this run another [engines.mysql] database. A row whose holder died is taken over "
                    f"once its heartbeat is {lease_s:g} s old"
                )
            await asyncio.sleep(POLL_S)

    @staticmethod
    async def _read(conn: Any) -> tuple[str, str, int] | None:
        """(token, holder, heartbeat age in ms) after a causal wait, or None: no row."""
        rows = await _query(
            conn,
            f"SET STATEMENT wsrep_sync_wait = 1 FOR SELECT token, holder, {NOW_MS} - heartbeat "
            f"FROM {LOCK_TABLE} WHERE name = '{ROW_NAME}'",
        )
        return (str(rows[0][0]), str(rows[0][1]), int(rows[0][2])) if rows else None

    @classmethod
    async def _confirm(cls, conn: Any, token: str) -> bool:
        row = await cls._read(conn)
        return row is not None and row[0] == token

    @classmethod
    def _started(cls, conn: Any, token: str, heartbeat_s: float) -> GaleraLockRow:
        lease = cls(conn, token)
        lease._beat = asyncio.get_running_loop().create_task(lease._heartbeat(heartbeat_s))
        return lease

    async def _heartbeat(self, every_s: float) -> None:
        while True:
            await asyncio.sleep(every_s)
            try:
                changed = await _execute(
                    self.conn,
                    f"UPDATE {LOCK_TABLE} SET heartbeat = {NOW_MS}, beats = beats + 1 "
                    "WHERE name = %s AND token = %s",
                    (ROW_NAME, self.token),
                )
            except Exception as exc:  # the node went away: the row goes stale, then may be taken over
                self.lost = f"heartbeat failed: {type(exc).__name__}: {exc}"
                return
            if changed != 1:
                self.lost = (
                    "the lock row was taken over by another run (this run stalled for longer than the lease)"
                )
                return

    async def release(self) -> None:
        """Stop the heartbeat and delete the row if it is still ours; RuntimeError when it
        was lost meanwhile (the run may have shared the table with another one)."""
        if self._beat is not None:
            self._beat.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._beat
        conn, self.conn = self.conn, None
        if conn is None:
            return
        try:
            await _execute(
                conn, f"DELETE FROM {LOCK_TABLE} WHERE name = %s AND token = %s", (ROW_NAME, self.token)
            )
            await conn.ensure_closed()
        except Exception:
            conn.close()
        if self.lost is not None:
            raise RuntimeError(f"the Galera lock row was not held to the end: {self.lost}")
