"""One run at a time per server schema, and only our own tables dropped: what the
client/server engines (mysql, postgres) share for it.

Two promises (issue 23, item 8):

- **Ownership.** The benchmark's table lives in a database (MySQL) or schema (PostgreSQL)
  that holds a marker table, ``asyncbench_owner``, written when asyncbench claimed it. An
  engine claims only a database/schema that is new or empty of every kind of object
  (tables, views, sequences, routines, types, events...; our own lock table aside); it
  drops or resets only where the marker is, and only the tables it recorded there as
  made for a workload (``engines/sql_tables.py``). Anything else is refused with
  :class:`NotOurs`, naming the server, the database/schema and the objects in it.
- **Exclusion.** A run holds a server-side lock (a :class:`Lease`) for the whole engine
  run, from before the open that resets the table until after the last close and the
  clean-up, across the ``reopen`` phase's close and open. A second run against the same
  database/schema waits a bounded time for it and is then refused with
  :class:`ServerBusy`; it never touches the first run's table.

The runner takes the lease around an engine's run through ``Engine.exclusive``; an
engine opened on its own (a test, the ``floor`` tool) takes one in ``open`` when its
process does not hold it already and releases it in ``close``. :data:`_HELD` is that
process-wide bookkeeping: a lease is re-entrant within the process (the engine's own open
inside the runner's lease), never shared with another process.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import Any, Protocol

__all__ = [
    "lock_wait_seconds",
    "LOCK_TABLE",
    "MARKER_TABLE",
    "Lease",
    "NotOurs",
    "not_empty",
    "ServerBusy",
    "adopt",
    "adopted",
    "unadopt",
    "held",
    "is_held",
]

#: The marker table: one row saying asyncbench created this database/schema's tables.
MARKER_TABLE = "asyncbench_owner"
#: The lock table of a Galera cluster (see engines/mysql_lock.py); ours, like the marker.
LOCK_TABLE = "asyncbench_lock"
#: What the marker row's ``tool`` column says.
MARKER_TOOL = "asyncbench"
#: How long a second run waits for the lock before it is refused (``lock_wait_seconds``).
DEFAULT_LOCK_WAIT_S = 10.0


def lock_wait_seconds(settings: Mapping[str, Any]) -> float:
    """The ``lock_wait_seconds`` setting (default :data:`DEFAULT_LOCK_WAIT_S`), checked:
    ValueError unless a finite number of seconds >= 0."""
    wait = settings.get("lock_wait_seconds", DEFAULT_LOCK_WAIT_S)
    if isinstance(wait, bool) or not isinstance(wait, (int, float)) or not (math.isfinite(wait) and wait >= 0):
        raise ValueError(f"lock_wait_seconds must be a number of seconds >= 0, got {wait!r}")
    return float(wait)


class NotOurs(RuntimeError):
    """A table or database/schema asyncbench did not create: it is never dropped."""


#: How many of a refused place's objects the refusal lists by name before "and N more".
NAMED_OBJECTS = 12


def not_empty(where: str, objects: list[tuple[str, str]], place: str, setting: str) -> NotOurs:
    """The refusal of a database/schema (``place``) without our marker that holds
    ``objects`` ((kind, name) pairs, e.g. ("sequence", "s1")): it names them, tables
    first, so the user sees what would have been at stake."""
    named = [f"{kind} {name}" for kind, name in sorted(objects, key=lambda o: (o[0] != "table", o))]
    first = named[0]
    shown = ", ".join(named[:NAMED_OBJECTS])
    more = f" and {len(named) - NAMED_OBJECTS} more" if len(named) > NAMED_OBJECTS else ""
    count = "1 object" if len(named) == 1 else f"{len(named)} objects"
    return NotOurs(
        f"{where}: {first} was not created by asyncbench (no marker table {MARKER_TABLE}; "
        f"it holds {count}: {shown}{more}); refusing to drop or reset anything in it: give "
        f"{setting} a name of its own (a new or empty {place} is claimed), or remove them yourself"
    )


class ServerBusy(RuntimeError):
    """Another run holds the lock of this database/schema; nothing was touched."""


class Lease(Protocol):
    """A held server-side lock; ``release`` gives it back (and closes its connection)."""

    async def release(self) -> None: ...


#: key (engine, first endpoint, database/schema) -> the lease this process holds
_HELD: dict[str, Lease] = {}


def is_held(key: str) -> bool:
    """Whether this process holds the lock of ``key`` (the runner's lease)."""
    return key in _HELD


@contextlib.asynccontextmanager
async def held(key: str, take: Callable[[], Awaitable[Lease]]) -> AsyncIterator[None]:
    """Hold the lock of ``key`` for the block: taken with ``take`` unless this process
    holds it already (then the outer holder releases it)."""
    if key in _HELD:
        yield
        return
    lease = await take()
    _HELD[key] = lease
    try:
        yield
    finally:
        del _HELD[key]
        await lease.release()


class _Adopted:
    async def release(self) -> None:
        """Nothing: the process that took the lock gives it back."""


@contextlib.asynccontextmanager
async def adopted(key: str) -> AsyncIterator[None]:
    """For a process that runs part of an engine run whose lock another process of the
    same run holds (a coordinator's worker processes): engines opened in the block take
    no lock of their own. Never for an unrelated run: the lock is what keeps two runs
    apart."""
    async with held(key, _adopt):
        yield


async def _adopt() -> Lease:
    return _Adopted()


def adopt(key: str) -> None:
    """:func:`adopted` without a block, for a client process whose engine opens and closes
    in separate calls (run/scale_out/client_process.py); :func:`unadopt` at its close."""
    _HELD.setdefault(key, _Adopted())


def unadopt(key: str) -> None:
    if isinstance(_HELD.get(key), _Adopted):
        del _HELD[key]
