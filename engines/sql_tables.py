"""The tables a SQL engine made for workloads, recorded where it made them.

An engine knows no workload: a workload declares its table (``asyncbench.store.Table``)
and asks the engine to make it (``SqlPrimitives.create``). The engine writes the DDL in
its flavour and records the table in :data:`RECORD_TABLE`, a table of its own beside it
(in the SQLite file it created, in the MySQL database or PostgreSQL schema it claimed and
marked). The record is what makes a table the engine's:

- a reset or ``delete_store`` drops exactly the recorded tables, whatever workload made
  them (a profile store's table, YCSB's usertable, a plug-in workload's), and never a
  table it did not record;
- a table that exists under a workload's name without a record (someone else's, or one
  an asyncbench before the record made) is refused by name, never adopted or dropped;
- the storage figure, ANALYZE and FLUSH go over the recorded tables.

The record row is written before the CREATE, so a crash between the two leaves a record
of a table that may be missing (dropped with ``IF EXISTS``, made again by the next
create), never a table without a record. Workers of one engine make a table once (a
lock and a set); client processes of one run race through ``IF NOT EXISTS`` and retries,
and a table seen to exist is checked against a record read after it (the record row of
another process commits before its CREATE does).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import anyio

from asyncbench.engines.server_lock import NotOurs
from asyncbench.store import Dialect, Table

__all__ = ["DDL_SEPARATOR", "RECORD_TABLE", "Present", "Run", "TableRecord", "record_schema"]

#: The record of the tables the engine made: one row per table, with the DDL it ran.
RECORD_TABLE = "asyncbench_tables"
#: Between the statements of a table's DDL in its record row.
DDL_SEPARATOR = ";\n"
#: Attempts of a CREATE racing another process's, and the pause before attempt n.
CREATE_ATTEMPTS = 10
CREATE_PAUSE_S = 0.05

#: One connection's statement runner: a statement and its arguments -> its rows.
Run = Callable[[str, Sequence[Any]], Awaitable[Sequence[Sequence[Any]]]]
#: The tables that exist in the place, asked over a connection's runner.
Present = Callable[[Run], Awaitable[set[str]]]


def record_schema(dialect: Dialect, text: str | None = None) -> str:
    """The record table's DDL in the engine's flavour; ``text``: the engine's type for
    the recorded DDL (a long text) when ``dialect.text`` bounds its length."""
    return (
        f"CREATE TABLE IF NOT EXISTS {RECORD_TABLE} (name {dialect.text(64)} NOT NULL PRIMARY KEY, "
        f"ddl {text or dialect.text(65_535)} NOT NULL){dialect.table_suffix}"
    )


class TableRecord:
    """An engine's record in its one place, shared by its workers: each call runs over
    the calling worker's own connection (``run``: connections are not shared between
    tasks). ``present`` lists the tables there; ``where`` names the place in messages."""

    def __init__(self, dialect: Dialect, present: Present, where: str, *, text: str | None = None) -> None:
        self.dialect, self.present, self.where = dialect, present, where
        p = dialect.placeholder
        self.schema = record_schema(dialect, text)
        self._select = f"SELECT name FROM {RECORD_TABLE} ORDER BY name"
        self._insert = f"INSERT INTO {RECORD_TABLE} (name, ddl) VALUES ({p(1)}, {p(2)})"
        self._delete = f"DELETE FROM {RECORD_TABLE} WHERE name = {p(1)}"
        self._made: set[str] = set()
        self._lock = anyio.Lock()

    async def ensure(self, run: Run) -> None:
        """The record table (made with the engine's marker, when its place is new)."""
        await run(self.schema, ())

    async def tables(self, run: Run) -> list[str]:
        """The recorded tables, by name (none before the record exists)."""
        if RECORD_TABLE not in await self.present(run):
            return []
        return [str(r[0]) for r in await run(self._select, ())]

    def maker(self, run: Run) -> Callable[[Table], Awaitable[None]]:
        """``SqlPrimitives.make_table`` for the worker whose connection ``run`` runs on."""

        async def make_table(table: Table) -> None:
            await self.make(table, run)

        return make_table

    async def make(self, table: Table, run: Run) -> None:
        """``table`` made and recorded, once; NotOurs if a table of its name exists that
        the record does not hold."""
        if table.name in self._made:
            return
        async with self._lock:
            if table.name in self._made:
                return
            if table.name == RECORD_TABLE:
                raise ValueError(f"a workload's table cannot be named {RECORD_TABLE} (the engine's record)")
            statements = self.dialect.create(table)
            if table.name in await self.present(run):
                if table.name not in await self.tables(run):
                    raise NotOurs(
                        f"{self.where}: table {table.name} exists but asyncbench's record ({RECORD_TABLE}) does "
                        "not hold it, so asyncbench did not make it (someone else did, or an asyncbench from "
                        "before the record): refusing to use, reset or drop it; drop it yourself or give the "
                        "engine a place of its own"
                    )
                # ours, made by an earlier open or another process: an existing store is
                # never written to here (a read-only one could not be)
                self._made.add(table.name)
                return
            await self._record_row(run, table.name, DDL_SEPARATOR.join(statements))
            for statement in statements:  # IF NOT EXISTS each: another process may race
                await _create(run, statement)
            self._made.add(table.name)

    async def _record_row(self, run: Run, name: str, ddl: str) -> None:
        """The record row, once: another process of the run may write it first (a
        duplicate key), or win a Galera certification against this one (error 1213):
        then the row is read back, after a pause, until it is there."""
        for attempt in range(1, CREATE_ATTEMPTS + 1):
            if name in await self.tables(run):
                return
            try:
                await run(self._insert, (name, ddl))
                return
            except Exception:
                if attempt == CREATE_ATTEMPTS:
                    raise
                await anyio.sleep(CREATE_PAUSE_S * attempt)

    async def drop_all(self, run: Run, qualify: Callable[[str], str] = str) -> list[str]:
        """Drop every recorded table and its record row (a reset, ``delete_store``);
        the names dropped. ``qualify`` writes a table's name as the DROP needs it."""
        names = await self.tables(run)
        for name in names:
            await run(f"DROP TABLE IF EXISTS {qualify(name)}", ())
            await run(self._delete, (name,))
        self._made.clear()
        return names


async def _create(run: Run, statement: str) -> None:
    for attempt in range(1, CREATE_ATTEMPTS + 1):
        try:
            await run(statement, ())
            return
        except Exception:
            # another process's CREATE of the same table: PostgreSQL's catalog unique
            # index, Galera's total-order DDL; once made, IF NOT EXISTS passes
            if attempt == CREATE_ATTEMPTS:
                raise
            await anyio.sleep(CREATE_PAUSE_S * attempt)
