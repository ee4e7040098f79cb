"""The Redis engine's claimed place: its database number, its key prefix, the ownership
marker and the run lock (engines/server_lock.py says why every server engine has them).

**Place.** The engine keeps everything in one database of the server (``SELECT n``,
``[engines.redis] database``) under one key prefix (``prefix``, default ``asyncbench:``):
per store a hash of its values and a sorted set of its keys (engines/redis_engine.py), the
marker hash ``<prefix>owner`` and the lock ``<prefix>lock``. A handful of keys whatever
the data's size, so the whole database is walked (``SCAN``) at every open.

**Ownership.** :func:`claim` accepts a database holding our marker (``tool`` =
``asyncbench``) and nothing outside our prefix, or an empty one (the lock aside), which it
marks. Any other key refuses the open with :class:`~asyncbench.engines.server_lock.NotOurs`
naming some of them: the engine never deletes, nor writes beside, what it did not create.

**Lock.** ``SET <prefix>lock <token> NX PX <ttl>``, polled until ``lock_wait_seconds``
pass, then :class:`~asyncbench.engines.server_lock.ServerBusy`. Redis has no lock that
dies with its connection (PostgreSQL's advisory lock, MySQL's GET_LOCK), so the lease
has a time to live and a thread of its own renews it every third of it, compare-and-set
on the token: a run that dies leaves a lock that lapses within :data:`LOCK_TTL_MS`.

**Open clients.** Each open engine registers its worker 0 connection's ``CLIENT ID`` in
the marker's ``open:`` fields and removes it at a clean close. An open that keeps the data
and finds a registered client the server no longer has (``CLIENT LIST ID``) knows that
client stopped without closing, maybe between the several puts of one record: the
workload's store then repairs (``KvPrimitives.unclean``). Clients still connected are
other processes of the same run (``--processes``), not a crash.
"""

from __future__ import annotations

import secrets
import threading
from typing import Any

from asyncbench.engines.server_lock import MARKER_TOOL, NAMED_OBJECTS, NotOurs, ServerBusy

__all__ = ["LOCK_TTL_MS", "RedisLease", "claim", "foreign_keys", "glob_pattern", "marker_key", "lock_key_name", "take_lease"]

#: The lock's time to live; renewed every third of it while the run holds it.
LOCK_TTL_MS = 30_000
POLL_S = 0.2

#: Renew the lock only while it still carries our token (another run's is never touched).
_RENEW = "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end return 0"
#: Delete the lock only while it still carries our token.
_RELEASE = "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0"


def marker_key(prefix: bytes) -> bytes:
    return prefix + b"owner"


def lock_key_name(prefix: bytes) -> bytes:
    return prefix + b"lock"


def foreign_keys(client: Any, prefix: bytes) -> tuple[list[bytes], int]:
    """Up to :data:`NAMED_OBJECTS` + 1 keys of the selected database outside ``prefix``
    (sorted), and how many keys the database holds outside it (DBSIZE less ours)."""
    found: list[bytes] = []
    ours = 0
    for key in client.scan_iter(count=1000):
        if key.startswith(prefix):
            ours += 1
        elif len(found) <= NAMED_OBJECTS:
            found.append(key)
    return sorted(found), int(client.dbsize()) - ours


def _refusal(where: str, keys: list[bytes], total: int, marked: bool) -> NotOurs:
    shown = ", ".join(repr(k.decode(errors="backslashreplace")) for k in keys[:NAMED_OBJECTS])
    more = f" and {total - NAMED_OBJECTS} more" if total > NAMED_OBJECTS else ""
    count = "1 key" if total == 1 else f"{total} keys"
    why = (
        "it holds asyncbench's marker, but also keys asyncbench did not create"
        if marked
        else f"it holds no asyncbench marker and {count} of someone else's"
    )
    return NotOurs(
        f"{where}: {why} ({count} outside the prefix: {shown}{more}); refusing to use it: give "
        "[engines.redis] database a number of its own (an empty database is claimed), or remove them yourself"
    )


def claim(client: Any, prefix: bytes, where: str) -> None:
    """Make sure the selected database is ours (module docstring), marking an empty one;
    else :class:`NotOurs` naming keys that are not ours."""
    marker = marker_key(prefix)
    kind = client.type(marker)
    tool = client.hget(marker, "tool") if kind == b"hash" else None
    if kind != b"none" and tool != MARKER_TOOL.encode():
        raise NotOurs(
            f"{where}: key {marker.decode(errors='backslashreplace')!r} exists but does not say "
            f"tool={MARKER_TOOL!r}, so asyncbench did not create this database's keys; refusing to use it"
        )
    keys, total = foreign_keys(client, prefix)
    if total > 0 or keys:
        raise _refusal(where, keys, max(total, len(keys)), tool is not None)
    if tool is None:
        ours = [k for k in client.scan_iter(match=glob_pattern(prefix) + b"*", count=1000) if k != lock_key_name(prefix)]
        if ours:  # our prefix's keys without our marker: someone else's, whatever their names
            raise _refusal(where, sorted(ours)[: NAMED_OBJECTS + 1], len(ours), False)
        client.hset(
            marker,
            mapping={"tool": MARKER_TOOL, "note": "asyncbench created this database's keys under this prefix"},
        )


def glob_pattern(prefix: bytes) -> bytes:
    """``prefix`` as a literal SCAN MATCH pattern (its glob characters escaped)."""
    out = bytearray()
    for b in prefix:
        if b in b"*?[]\\":
            out += b"\\"
        out.append(b)
    return bytes(out)


class RedisLease:
    """The held run lock: a thread renews it until :meth:`release` deletes it."""

    def __init__(self, client: Any, key: bytes, token: bytes) -> None:
        self._client, self._key, self._token = client, key, token
        self._stop = threading.Event()
        self._renew = client.register_script(_RENEW)
        self._thread = threading.Thread(target=self._keep, name="asyncbench-redis-lock", daemon=True)
        self._thread.start()

    def _keep(self) -> None:
        while not self._stop.wait(LOCK_TTL_MS / 3000):
            try:
                self._renew(keys=[self._key], args=[self._token, LOCK_TTL_MS])
            except Exception:  # a blip: the next renewal tries again, well within the TTL
                continue

    async def release(self) -> None:
        import anyio.to_thread

        await anyio.to_thread.run_sync(self._release_sync)

    def _release_sync(self) -> None:
        import redis

        self._stop.set()
        self._thread.join()
        release = self._client.register_script(_RELEASE)
        try:
            try:
                release(keys=[self._key], args=[self._token])
            except redis.ConnectionError:  # the server was restarted (a crash test kills it): a new connection
                release(keys=[self._key], args=[self._token])
        finally:
            self._client.close()


def take_lease(client: Any, prefix: bytes, wait_s: float, where: str) -> RedisLease:
    """Take the lock on ``client`` (a connection of its own, closed at release), waiting at
    most ``wait_s``; :class:`ServerBusy` after that."""
    import time

    key = lock_key_name(prefix)
    token = f"asyncbench {secrets.token_hex(8)}".encode()
    deadline = time.monotonic() + max(0.0, wait_s)
    while not client.set(key, token, nx=True, px=LOCK_TTL_MS):
        if time.monotonic() >= deadline:
            holder, left_ms = client.get(key), client.pttl(key)
            client.close()
            raise ServerBusy(
                f"{where}: another asyncbench run holds the lock {key.decode(errors='backslashreplace')!r} "
                f"({holder!r}, lapsing in {max(0, int(left_ms)) / 1000:g} s unless its run renews it); waited "
                f"{wait_s:g} s and touched nothing: run one at a time against a database, or give this run "
                "another [engines.redis] database or prefix"
            )
        time.sleep(POLL_S)
    return RedisLease(client, key, token)
