"""Issue 52 item 4: MySQL hides a database's routines and events from a user without
rights on them, so a database holding only another user's procedure, function or event
looked empty and was claimed. A database is claimed only when the user can see every
kind of object; else the refusal names what it cannot see and the grant that shows it.

Checked on a real server by hand (root's procedure, function and event in a database
where the user lacked EXECUTE and EVENT: claimed before, refused after; with the grants:
refused naming ``event e1, function f1, procedure p1``). The server's users cannot be
made from the tests (no admin account), so here a connection answers as such a server
does: information_schema shows nothing, and the user's privileges are the rows given.
"""

from __future__ import annotations

from typing import Any

import pytest

from asyncbench.engines.mysql_lock import claim
from asyncbench.engines.server_lock import NotOurs


class _Cursor:
    def __init__(self, conn: _Conn) -> None:
        self.conn, self.rows, self.rowcount = conn, [], 0

    async def __aenter__(self) -> _Cursor:
        return self

    async def __aexit__(self, *exc: object) -> None:
        return None

    async def execute(self, sql: str, args: Any = None) -> None:
        self.conn.statements.append(sql)
        self.rows = self.conn.privileges if "_privileges" in sql else []

    async def fetchall(self) -> list[tuple[Any, ...]]:
        return self.rows


class _Conn:
    """A database whose objects the user cannot see, and the user's privileges on it."""

    def __init__(self, privileges: list[str]) -> None:
        self.privileges = [(p,) for p in privileges]
        self.statements: list[str] = []

    def cursor(self) -> _Cursor:
        return _Cursor(self)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("privileges", "hidden"),
    [
        (["SELECT", "INSERT", "CREATE", "DROP"], "procedures and functions or events"),
        (["SELECT", "CREATE", "EXECUTE"], "events"),
        (["SELECT", "CREATE", "EVENT"], "procedures and functions"),
    ],
)
async def test_a_database_the_user_cannot_see_whole_is_not_claimed(privileges: list[str], hidden: str) -> None:
    conn = _Conn(privileges)
    with pytest.raises(NotOurs) as refused:
        await claim(conn, "server s, database `d`")
    message = str(refused.value)
    assert message.startswith(f"server s, database `d`: the MySQL user cannot see this database's {hidden} ")
    assert "grant the user" in message
    assert not any(s.lstrip().upper().startswith(("CREATE", "INSERT")) for s in conn.statements)  # nothing made


@pytest.mark.anyio
async def test_a_database_the_user_sees_whole_and_empty_is_claimed() -> None:
    conn = _Conn(["SELECT", "CREATE", "EXECUTE", "EVENT"])
    await claim(conn, "server s, database `d`")
    assert any("INSERT IGNORE INTO asyncbench_owner" in s for s in conn.statements)
