"""The profile store in SQL, written once for every SQL engine.

One ``profiles`` table (user_id primary key, email UNIQUE, indexes on (country, status,
user_id), (created_at, user_id) and (reputation DESC, user_id)), declared here
(:data:`PROFILES_TABLE`) and made by the engine in its flavour before the first batch
(``SqlPrimitives.create``, outside every mark); every operation one
statement (an update: its SELECT plus its UPDATE), every write its own autocommit
transaction; the same WHERE / ORDER BY / LIMIT as the key/value engines' index walks.

:class:`SqlProfileStore` is a complete :class:`~asyncbench.workloads.profile_store.store.ProfileStore`
over a SQL engine's primitives (:class:`asyncbench.store.SqlPrimitives`: worker ``i``'s
connection). Engines keep only their driver calls (a :class:`~asyncbench.store.SqlSession`:
fetch one row, fetch all rows, execute), dialect (placeholders, index hints) and retry
policy, and say where a batch runs:
- an asyncio driver (MySQL, PostgreSQL) runs a batch on the event loop, awaiting each
  statement;
- a synchronous DB-API connection (SQLite) runs the whole batch in one hop on its
  connection thread: its session's ``async`` methods call the driver and never suspend,
  and :func:`run_to_completion` drives the batch coroutine there in one go.
So every batch loop is written once, here, whatever the driver. Every loop appends
``perf_counter_ns()`` to ``marks`` once before its first operation and after each one.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from time import perf_counter_ns
from typing import Any, TypeVar

from asyncbench.store import Column, Dialect, Index, SqlPrimitives, Table
from asyncbench.workloads.profile_store.profiles import Profile
from asyncbench.workloads.profile_store.store import Marks, Transform

__all__ = [
    "COLUMNS",
    "INDEXES",
    "TABLE",
    "UNIQUE_EMAIL",
    "SqlProfileStore",
    "Statements",
    "PROFILES_TABLE",
    "update_params",
]

T = TypeVar("T")

TABLE = "profiles"
COLUMNS = "user_id, email, country, status, created_at, last_login, reputation, display_name, bio"
N_COLUMNS = 9
INDEX_COUNTRY_STATUS = "idx_profiles_country_status"
INDEX_CREATED_AT = "idx_profiles_created_at"
INDEX_REPUTATION = "idx_profiles_reputation"
#: The secondary indexes, name -> columns: each scan's and query's ORDER BY, user_id last.
INDEXES = {
    INDEX_COUNTRY_STATUS: "country, status, user_id",
    INDEX_CREATED_AT: "created_at, user_id",
    INDEX_REPUTATION: "reputation DESC, user_id",
}
#: The name of email's UNIQUE constraint (an index in every SQL engine).
UNIQUE_EMAIL = "idx_profiles_email"


# --- the table, declared once; each engine writes its DDL (asyncbench.store.Table) -------

#: The profiles table. Text bounds hold the generator's strings with room to spare (an
#: engine that bounds text, MySQL's VARCHAR under strict mode, refuses an overflow).
PROFILES_TABLE = Table(
    TABLE,
    (
        Column("user_id", "integer"),
        Column("email", "text", 255),
        Column("country", "text", 16),
        Column("status", "text", 16),
        Column("created_at", "integer"),
        Column("last_login", "integer"),
        Column("reputation", "integer"),
        Column("display_name", "text", 255),
        Column("bio", "text", 4096),
    ),
    key="user_id",
    indexes=(
        Index(UNIQUE_EMAIL, ("email",), unique=True),
        *(Index(name, tuple(cols.split(", "))) for name, cols in INDEXES.items()),
    ),
)


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
    limit: int  # rows per scan/query, inlined above

    def texts(self) -> list[str]:
        """Every statement (what a driver prepares once per connection)."""
        return [v for v in vars(self).values() if isinstance(v, str)]

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
            limit=limit,
        )


def update_params(old: Sequence[Any], new: Profile, uid: int) -> tuple[Any, ...]:
    """The UPDATE's parameters; the spec's update never changes the key columns."""
    if new[0] != old[0] or new[1] != old[1] or new[4] != old[4]:
        raise ValueError(f"update of {uid} changed user_id, email or created_at")
    return (new[2], new[3], new[5], new[6], new[7], new[8], uid)


class SqlProfileStore:
    """The workload's operations over one worker's SQL primitives.

    The engine's ``hop`` runs a whole batch where the driver needs it (the event loop, a
    synchronous driver's connection thread); its ``barrier`` is awaited before every batch
    that reads, outside its marks (MySQL on Galera: one causal read, so the batch sees
    every write committed before it); its ``row`` turns a driver's row into the profile
    tuple the checksum folds.

    A write that fails goes to the engine's ``retry``, which re-raises it unless it is a
    transient conflict (a Galera certification failure, MySQL error 1213, a PostgreSQL
    serialization failure): an insert is then retried as the same single statement, an
    update as its whole SELECT + UPDATE unit (the row is read again, so the write is based
    on what committed), and the engine counts each retry and reports them per phase.
    Reads are never retried: in autocommit they take no write locks and cannot fail
    certification.
    """

    def __init__(self, primitives: SqlPrimitives, limit: int) -> None:
        self.session, self.row = primitives.session, primitives.row
        self.sql = Statements.build(primitives.dialect, limit)
        self.limit = self.sql.limit
        self._retry = primitives.retry
        self.hop, self._barrier = primitives.hop, primitives.barrier
        self._prepare = primitives.prepare
        self._create: Callable[[Table], Awaitable[None]] | None = primitives.create

    async def _ready(self) -> None:
        """Once per worker, before its first batch's marks: the table made (or found,
        recorded as the engine's), then the statements prepared (a driver that prepares)."""
        if self._create is not None:
            create, self._create = self._create, None
            await create(PROFILES_TABLE)
        if self._prepare is not None:
            prepare, self._prepare = self._prepare, None
            await prepare(self.sql.texts())

    async def barrier(self) -> None:
        """Before a batch that reads, outside its marks: :meth:`_ready`, then the
        engine's barrier."""
        if self._create is not None or self._prepare is not None:
            await self._ready()
        await self._barrier()

    async def _reading(self, body: Callable[..., Awaitable[T]], *args: Any) -> T:
        """One batch that reads: the barrier, then the batch in one hop."""
        await self.barrier()
        return await self.hop(body, *args)

    # --- the batch loops, once for every driver -------------------------------------------
    async def _insert(self, profiles: Sequence[Profile], marks: Marks) -> None:
        """One autocommit INSERT per profile (no transaction around them)."""
        execute, insert = self.session.execute, self.sql.insert
        mark, clock = marks.append, perf_counter_ns
        mark(clock())  # the batch's start stamp, taken where the operations run
        for p in profiles:
            try:
                await execute(insert, p)
            except Exception as exc:
                await self._retry(exc, execute, insert, p)
            mark(clock())

    async def _read(self, statement: str, keys: Sequence[Any], marks: Marks) -> list[Any]:
        """One point SELECT per key, rows in request order, missing keys skipped."""
        fetch_one, row = self.session.fetch_one, self.row
        mark, clock = marks.append, perf_counter_ns
        mark(clock())  # the batch's start stamp, taken where the operations run
        out: list[Any] = []
        append = out.append
        for key in keys:
            r = await fetch_one(statement, (key,))
            if r is not None:
                append(row(r))
            mark(clock())
        return out

    async def _select_many(
        self, statement: str, params: Sequence[Sequence[Any]], ids_only: bool, marks: Marks
    ) -> list[Any]:
        """One SELECT per query (ids only: an index scan), rows concatenated in query order."""
        fetch_all, row = self.session.fetch_all, self.row
        mark, clock = marks.append, perf_counter_ns
        mark(clock())  # the batch's start stamp, taken where the operations run
        out: list[Any] = []
        if ids_only:
            for p in params:
                out += [r[0] for r in await fetch_all(statement, p)]
                mark(clock())
        else:
            for p in params:
                out += [row(r) for r in await fetch_all(statement, p)]
                mark(clock())
        return out

    async def _update_one(self, uid: int, transform: Transform) -> Profile | None:
        """One update unit: SELECT the row, transform it, one autocommit UPDATE (None: missing)."""
        old = await self.session.fetch_one(self.sql.by_id, (uid,))
        if old is None:
            return None
        new = transform(self.row(old))
        await self.session.execute(self.sql.update, update_params(old, new, uid))
        return new

    async def _update(self, uids: Sequence[int], transform: Transform, marks: Marks) -> list[Profile]:
        update_one = self._update_one
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

    async def _count(self) -> int:
        row = await self.session.fetch_one(self.sql.count, ())
        assert row is not None
        return int(row[0])

    # --- the ProfileStore: one hop per batch ----------------------------------------------
    async def insert(self, profiles: Sequence[Profile], marks: Marks) -> None:
        if self._create is not None or self._prepare is not None:
            await self._ready()
        await self.hop(self._insert, profiles, marks)

    async def update(self, uids: Sequence[int], transform: Transform, marks: Marks) -> list[Profile]:
        return await self._reading(self._update, uids, transform, marks)

    async def read_by_id(self, uids: Sequence[int], marks: Marks) -> list[Profile]:
        return await self._reading(self._read, self.sql.by_id, uids, marks)

    async def lookup_by_email(self, emails: Sequence[str], marks: Marks) -> list[Profile]:
        return await self._reading(self._read, self.sql.by_email, emails, marks)

    async def scan_country_status(self, queries: Sequence[tuple[str, str]], marks: Marks) -> list[int]:
        return await self._reading(self._select_many, self.sql.scan_country_status, queries, True, marks)

    async def query_country_status(self, queries: Sequence[tuple[str, str]], marks: Marks) -> list[Profile]:
        return await self._reading(self._select_many, self.sql.query_country_status, queries, False, marks)

    async def scan_created_at(self, ranges: Sequence[tuple[int, int]], marks: Marks) -> list[int]:
        return await self._reading(self._select_many, self.sql.scan_created_at, ranges, True, marks)

    async def query_created_at(self, ranges: Sequence[tuple[int, int]], marks: Marks) -> list[Profile]:
        return await self._reading(self._select_many, self.sql.query_created_at, ranges, False, marks)

    async def scan_top_reputation(self, times: int, marks: Marks) -> list[int]:
        return await self._reading(self._select_many, self.sql.scan_top_reputation, [()] * times, True, marks)

    async def query_top_reputation(self, times: int, marks: Marks) -> list[Profile]:
        statement = self.sql.query_top_reputation
        return await self._reading(self._select_many, statement, [()] * times, False, marks)

    async def count(self) -> int:
        return await self._reading(self._count)
