"""The profile store in SQL, written once for every SQL engine.

One ``profiles`` table (user_id primary key, email UNIQUE, indexes on (country, status,
user_id), (created_at, user_id) and (reputation DESC, user_id)); every operation one
statement (an update: its SELECT plus its UPDATE), every write its own autocommit
transaction; the same WHERE / ORDER BY / LIMIT as the key/value engines' index walks.

Engines keep only their driver calls and dialect (placeholders, index hints):
- a synchronous DB-API connection (SQLite, on its connection thread) uses the ``sync_*``
  batch bodies;
- an asyncio driver (MySQL, PostgreSQL) implements :class:`AsyncSession` and uses
  :class:`AsyncSqlProfileStore`.
Every body appends ``perf_counter_ns()`` to ``marks`` after each operation.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from time import perf_counter_ns
from typing import Any, Protocol, TypeVar

import anyio
from asyncbench.workloads.profile_store.profiles import Profile
from asyncbench.workloads.profile_store.store import Marks, Transform

__all__ = [
    "COLUMNS",
    "TABLE",
    "AsyncSession",
    "AsyncSqlProfileStore",
    "Dialect",
    "Statements",
    "sync_count",
    "sync_insert",
    "sync_read",
    "sync_repeat",
    "sync_select_many",
    "sync_update",
    "update_params",
]

T = TypeVar("T")

TABLE = "profiles"
COLUMNS = "user_id, email, country, status, created_at, last_login, reputation, display_name, bio"
N_COLUMNS = 9
INDEX_COUNTRY_STATUS = "idx_profiles_country_status"
INDEX_CREATED_AT = "idx_profiles_created_at"
INDEX_REPUTATION = "idx_profiles_reputation"


@dataclass(frozen=True)
class Dialect:
    """What differs between SQL engines in the statements themselves."""

    placeholder: Callable[[int], str]  # 1-based parameter position -> "?", "%s" or "$1"
    index_hint: Callable[[str], str] = lambda index: ""  # e.g. MySQL's FORCE INDEX (...)


@dataclass(frozen=True)
class Statements:
    """Every SQL string a SQL engine runs, built once per engine (the limit is inlined)."""

    insert: str
    by_id: str
    by_email: str
    scan_country_status: str
    query_country_status: str
    scan_created_at: str
    query_created_at: str
    scan_top_reputation: str
    query_top_reputation: str
    update: str
    count: str

    @classmethod
    def build(cls, dialect: Dialect, limit: int) -> Statements:
        limit = int(limit)  # inlined into SQL: must be a plain int
        p, hint = dialect.placeholder, dialect.index_hint
        cs = f"{hint(INDEX_COUNTRY_STATUS)}WHERE country = {p(1)} AND status = {p(2)} ORDER BY user_id LIMIT {limit}"
        created = (
            f"{hint(INDEX_CREATED_AT)}WHERE created_at BETWEEN {p(1)} AND {p(2)} "
            f"ORDER BY created_at, user_id LIMIT {limit}"
        )
        top = f"{hint(INDEX_REPUTATION)}ORDER BY reputation DESC, user_id LIMIT {limit}"
        values = ", ".join(p(i) for i in range(1, N_COLUMNS + 1))
        return cls(
            insert=f"INSERT INTO {TABLE} ({COLUMNS}) VALUES ({values})",
            by_id=f"SELECT {COLUMNS} FROM {TABLE} WHERE user_id = {p(1)}",
            by_email=f"SELECT {COLUMNS} FROM {TABLE} WHERE email = {p(1)}",
            scan_country_status=f"SELECT user_id FROM {TABLE} {cs}",
            query_country_status=f"SELECT {COLUMNS} FROM {TABLE} {cs}",
            scan_created_at=f"SELECT user_id FROM {TABLE} {created}",
            query_created_at=f"SELECT {COLUMNS} FROM {TABLE} {created}",
            scan_top_reputation=f"SELECT user_id FROM {TABLE} {top}",
            query_top_reputation=f"SELECT {COLUMNS} FROM {TABLE} {top}",
            # email and created_at never change on update (spec): their indexes stay untouched.
            update=(
                f"UPDATE {TABLE} SET country = {p(1)}, status = {p(2)}, last_login = {p(3)}, "
                f"reputation = {p(4)}, display_name = {p(5)}, bio = {p(6)} WHERE user_id = {p(7)}"
            ),
            count=f"SELECT COUNT(*) FROM {TABLE}",
        )


def update_params(old: Sequence[Any], new: Profile, uid: int) -> tuple:
    """The UPDATE's parameters; the spec's update never changes the key columns."""
    if new[0] != old[0] or new[1] != old[1] or new[4] != old[4]:
        raise ValueError(f"update of {uid} changed user_id, email or created_at")
    return (new[2], new[3], new[5], new[6], new[7], new[8], uid)


# --- synchronous DB-API bodies (one batch per call, on the connection's thread) -------------


def sync_insert(conn: Any, sql: Statements, profiles: Sequence[Profile], marks: Marks) -> None:
    """One autocommit INSERT per profile (the connection opens no transaction around them)."""
    execute = conn.cursor().execute
    insert = sql.insert
    mark, clock = marks.append, perf_counter_ns
    mark(clock())  # the batch's start stamp, taken where the operations run
    for p in profiles:
        execute(insert, p)
        mark(clock())


def sync_read(conn: Any, statement: str, keys: Sequence[Any], marks: Marks) -> list:
    """One point SELECT per key, rows in request order, missing keys skipped."""
    execute = conn.cursor().execute
    mark, clock = marks.append, perf_counter_ns
    mark(clock())  # the batch's start stamp, taken where the operations run
    out: list[Any] = []
    append = out.append
    for key in keys:
        row = execute(statement, (key,)).fetchone()
        if row is not None:
            append(row)
        mark(clock())
    return out


def sync_select_many(
    conn: Any, statement: str, params: Sequence[Sequence[Any]], ids_only: bool, marks: Marks
) -> list:
    """One SELECT per query (ids only: an index scan), rows concatenated in query order."""
    execute = conn.cursor().execute
    mark, clock = marks.append, perf_counter_ns
    mark(clock())  # the batch's start stamp, taken where the operations run
    out: list = []
    if ids_only:  # the ids straight off the cursor: no intermediate list of 1-tuples
        for p in params:
            out += [r[0] for r in execute(statement, p)]
            mark(clock())
    else:
        for p in params:
            out += execute(statement, p).fetchall()
            mark(clock())
    return out


def sync_repeat(conn: Any, statement: str, times: int, ids_only: bool, marks: Marks) -> list:
    """The same parameterless SELECT ``times`` times (top reputation)."""
    return sync_select_many(conn, statement, [()] * times, ids_only, marks)


def sync_update(conn: Any, sql: Statements, uids: Sequence[int], transform: Transform, marks: Marks) -> list:
    """Per id: SELECT the row, transform it, one autocommit UPDATE; missing ids skipped."""
    execute = conn.cursor().execute
    by_id, update = sql.by_id, sql.update
    mark, clock = marks.append, perf_counter_ns
    mark(clock())  # the batch's start stamp, taken where the operations run
    out = []
    for uid in uids:
        old = execute(by_id, (uid,)).fetchone()
        if old is not None:
            new = transform(old)
            execute(update, update_params(old, new, uid))
            out.append(new)
        mark(clock())
    return out


def sync_count(conn: Any, sql: Statements) -> int:
    return int(conn.execute(sql.count).fetchone()[0])


# --- asyncio drivers ---------------------------------------------------------------------------


class AsyncSession(Protocol):
    """One connection of an asyncio SQL driver, as the store needs it."""

    async def fetch_one(self, statement: str, args: Sequence[Any]) -> Sequence[Any] | None: ...

    async def fetch_all(self, statement: str, args: Sequence[Any]) -> Sequence[Sequence[Any]]: ...

    async def execute(self, statement: str, args: Sequence[Any]) -> None: ...


#: Attempts of one write (or update unit) that keeps failing with a retryable error.
MAX_ATTEMPTS = 20
#: Pause before retry n: RETRY_PAUSE_S * n (a conflicting writer on another node commits first).
RETRY_PAUSE_S = 0.001


class AsyncSqlProfileStore:
    """The workload's operations over one :class:`AsyncSession` (one per worker).

    ``retryable`` (optional) says whether a write's error is a transient conflict to retry,
    e.g. a Galera certification failure (MySQL error 1213) or a PostgreSQL serialization
    failure: an insert is then retried as the same single statement, an update as its whole
    SELECT + UPDATE unit (the row is read again, so the write is based on what committed).
    Each retry adds one to ``retries``, which the engine reports per phase. Reads are never
    retried: in autocommit they take no write locks and cannot fail certification.
    """

    def __init__(
        self,
        session: AsyncSession,
        sql: Statements,
        row: Callable[[Sequence[Any]], Any] = tuple,
        retryable: Callable[[BaseException], bool] | None = None,
    ) -> None:
        self.session, self.sql, self.row = session, sql, row
        self.retryable = retryable
        self.retries = 0

    async def _retry(self, exc: Exception, op: Callable[..., Awaitable[T]], *args: Any) -> T:
        """Called with the first failure of ``op(*args)``: re-raise it unless it is retryable,
        else run ``op`` again (counting each retry) up to :data:`MAX_ATTEMPTS` in all."""
        for attempt in range(1, MAX_ATTEMPTS):
            if self.retryable is None or not self.retryable(exc):
                raise exc
            self.retries += 1
            await anyio.sleep(RETRY_PAUSE_S * attempt)
            try:
                return await op(*args)
            except Exception as again:
                exc = again
        raise exc

    async def insert(self, profiles: Sequence[Profile], marks: Marks) -> None:
        execute, insert = self.session.execute, self.sql.insert
        mark, clock = marks.append, perf_counter_ns
        mark(clock())  # the batch's start stamp, taken where the operations run
        for p in profiles:
            try:
                await execute(insert, p)
            except Exception as exc:
                await self._retry(exc, execute, insert, p)
            mark(clock())

    async def read(self, statement: str, keys: Sequence[Any], marks: Marks) -> list:
        fetch_one, row = self.session.fetch_one, self.row
        mark, clock = marks.append, perf_counter_ns
        mark(clock())  # the batch's start stamp, taken where the operations run
        out = []
        for key in keys:
            r = await fetch_one(statement, (key,))
            if r is not None:
                out.append(row(r))
            mark(clock())
        return out

    async def select_many(
        self, statement: str, params: Sequence[Sequence[Any]], ids_only: bool, marks: Marks
    ) -> list:
        fetch_all, row = self.session.fetch_all, self.row
        mark, clock = marks.append, perf_counter_ns
        mark(clock())  # the batch's start stamp, taken where the operations run
        out: list = []
        for p in params:
            rows = await fetch_all(statement, p)
            out += [r[0] for r in rows] if ids_only else [row(r) for r in rows]
            mark(clock())
        return out

    async def update_one(self, uid: int, transform: Transform) -> Profile | None:
        """One update unit: SELECT the row, transform it, one autocommit UPDATE (None: missing)."""
        old = await self.session.fetch_one(self.sql.by_id, (uid,))
        if old is None:
            return None
        new = transform(self.row(old))
        await self.session.execute(self.sql.update, update_params(old, new, uid))
        return new

    async def update(self, uids: Sequence[int], transform: Transform, marks: Marks) -> list[Profile]:
        update_one = self.update_one
        mark, clock = marks.append, perf_counter_ns
        mark(clock())  # the batch's start stamp, taken where the operations run
        out = []
        for uid in uids:
            try:
                new = await update_one(uid, transform)
            except Exception as exc:
                new = await self._retry(exc, update_one, uid, transform)
            if new is not None:
                out.append(new)
            mark(clock())
        return out

    async def count(self) -> int:
        row = await self.session.fetch_one(self.sql.count, ())
        assert row is not None
        return int(row[0])
