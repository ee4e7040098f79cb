"""Redis engine: the key/value server most services already run, over TCP through the
``redis`` client with the ``hiredis`` parser.

**Layout.** Each store the workload declares (``EngineConfig.stores``) is two keys under
the engine's prefix in its own database (engines/redis_lock.py): a hash
``<prefix>s:<store>:v`` of key -> value and a sorted set ``<prefix>s:<store>:k`` whose
members are the same keys, all with score 0, so Redis orders them by their bytes
(``memcmp``), exactly as the byte-ordered engines do. A scan is one ``ZRANGEBYLEX`` from
``[start`` to ``[last`` (or ``+``) with ``LIMIT 0 n``; a get one ``HGET``; a count
``HLEN``. A put is one ``EVALSHA`` of a two-line Lua script (``HSET`` then ``ZADD``) and
a delete one of ``HDEL`` then ``ZREM``: the value and its member change together,
atomically (a script runs whole, and the AOF and replicas receive its effects as one
``MULTI``), in ONE command and one reply. ``MULTI``/``HSET``/``ZADD``/``EXEC`` sent together
would be the same round trip with four commands and four replies to parse; both are one
operation's only. Measured (20_000 puts of 200-byte values, one connection, twice, the
loaded 2-CPU machine): ``EVALSHA`` 55.3 and 43.7 µs per put, ``MULTI``..``EXEC`` 65.3 and
58.4 µs, a bare ``HSET`` (no ordered key: not a store) 37.3 and 32.4 µs. Why a hash rather than one plain key per record: the database then holds a
handful of keys whatever the data's size, so ownership is checked by walking the whole
keyspace at every open, and a reset deletes exactly the keys the marker proves ours.

**One round trip per operation.** No pipelining, no ``MULTI`` over several operations,
no multi-get: every number is a TCP round trip to the server plus its work, as the other
server engines' (a profile insert is five puts, so five round trips).

**Client: synchronous, in a worker thread.** :class:`~asyncbench.store.KvStore` is
synchronous (an ``await`` per call would cost more than an embedded engine's get), and the
workloads' key/value mappings are written once over it. ``redis.asyncio`` would need an
async twin of that protocol and of every workload's mapping, so this engine uses the
synchronous client (hiredis parsing) with one connection per worker, and runs each batch
in a worker thread (``anyio.to_thread.run_sync``: one hop per batch, like RocksDB's
writes). A blocked socket read releases the GIL, so P workers keep P requests in flight;
a batch on the event loop would serialize them. Each store object issues its command on
its worker's connection directly (``Connection.send_command``/``read_response``), not
through ``Redis.execute_command``'s pool checkout and retry wrapper. Measured on the
2-CPU machine under load (load average 6), one connection to a local server, 20_000
``HGET`` of 200-byte values under uvloop, twice: this path in a thread, 1_000 per hop,
29.2 and 35.3 µs per get; ``Redis.hget`` the same way, 41.5 and 41.2 µs; ``redis.asyncio``
awaited per get on the loop, 73.7 and 94.4 µs (its per-command coroutine and future
machinery cost more than the round trip).

**Durability** is the server's persistence (``CONFIG GET appendonly appendfsync save``,
read back into the facts), or, with ``[engines.redis] persistence`` set, set by the
engine at open (``CONFIG SET``): ``none``, ``rdb`` (snapshots), ``aof-everysec`` (the log
written per command, fsynced once a second: the counterpart of PostgreSQL's
synchronous_commit=off) or ``aof-always`` (fsynced per command). Settle is ``SAVE`` when
snapshots are on (the ``rdb`` mode), else nothing (the log is already written).

**Storage** is the server's memory for our keys (``MEMORY USAGE ... SAMPLES 0``, every
element counted), the dataset Redis must hold in RAM; the RDB/AOF files are not counted.
**Cost**: the server process's CPU and I/O (``INFO server`` ``process_id``, verified
local), and the server's counters (commands processed, network bytes).

Connection: ``[engines.redis]`` ``host``/``port``/``database``/``password``, else
``REDIS_HOST``/``REDIS_PORT``/``REDIS_DB``/``REDIS_PASSWORD`` (``scripts/redis-server``
exports them), else 127.0.0.1, 6379, 0. ``--processes K`` and ``--cluster`` run the
workers in several client processes (one connection per worker, the lock adopted from the
coordinator). A Redis Cluster (keys sharded over several servers) is not supported.
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import os
from collections.abc import Iterator, Mapping
from typing import Any, ClassVar

import anyio.to_thread
import redis
from anyio.abc import TaskGroup
from redis.backoff import NoBackoff
from redis.retry import Retry

from asyncbench.engine import BackgroundThreads, Engine, EngineConfig, EngineCounters, EngineUnavailable
from asyncbench.engines.client_server import Endpoint, hybridmethod, is_local_host, local_process
from asyncbench.engines.redis_lock import claim, glob_pattern, lock_key_name, marker_key, take_lease
from asyncbench.engines.server_lock import (
    DEFAULT_LOCK_WAIT_S,
    Lease,
    NotOurs,
    held,
    is_held,
    lock_wait_seconds,
)
from asyncbench.engines.store_dir import StoreDamaged
from asyncbench.facts import Durability, EngineFacts, MemoryScope, Setting, StorageMethod
from asyncbench.store import KvPrimitives, Placement

__all__ = ["PERSISTENCE", "RedisEngine", "RedisKv", "resolve_settings"]

DEFAULTS: dict[str, Any] = {"host": "127.0.0.1", "port": 6379, "database": 0, "password": ""}
ENV_VARS = {"host": "REDIS_HOST", "port": "REDIS_PORT", "database": "REDIS_DB", "password": "REDIS_PASSWORD"}
#: persistence mode -> the CONFIG SET it makes (module docstring).
PERSISTENCE: dict[str, dict[str, str]] = {
    "none": {"appendonly": "no", "save": ""},
    "rdb": {"appendonly": "no", "save": "3600 1 300 100 60 10000"},
    "aof-everysec": {"appendonly": "yes", "appendfsync": "everysec", "save": ""},
    "aof-always": {"appendonly": "yes", "appendfsync": "always", "save": ""},
}
CONNECT_TIMEOUT_S = 5
#: A put and a delete: the value and the ordered key together, in one command.
_PUT = "redis.call('HSET', KEYS[1], ARGV[1], ARGV[2]) redis.call('ZADD', KEYS[2], 0, ARGV[1])"
_DELETE = "redis.call('HDEL', KEYS[1], ARGV[1]) redis.call('ZREM', KEYS[2], ARGV[1])"
#: A scan's page in items() (not timed: crash repair and checks).
_PAGE = 1000


def validate_settings(settings: Mapping[str, Any]) -> None:
    """ValueError naming the setting."""
    mode = settings.get("persistence", "")
    if mode and mode not in PERSISTENCE:
        raise ValueError(f"persistence must be one of {', '.join(PERSISTENCE)} (or empty: the server's), got {mode!r}")
    port = settings.get("port", 0)
    if not (isinstance(port, int) and 0 <= port <= 65535):
        raise ValueError(f"port must be between 1 and 65535, got {port!r}")
    db = settings.get("database", -1)
    if not (isinstance(db, int) and -1 <= db <= 1_000_000):
        raise ValueError(f"database must be a database number >= 0 (or -1: REDIS_DB, else 0), got {db!r}")
    prefix = settings.get("prefix", "asyncbench:")
    if not isinstance(prefix, str) or not prefix or not prefix.isprintable() or len(prefix) > 100:
        raise ValueError(f"prefix must be 1 to 100 printable characters, got {prefix!r}")
    lock_wait_seconds(settings)


def check_environment(settings: Mapping[str, Any], environ: Mapping[str, str]) -> None:
    """``REDIS_PORT``/``REDIS_DB`` when the plan sets none: numbers."""
    for key, variable in (("port", "REDIS_PORT"), ("database", "REDIS_DB")):
        text = environ.get(variable)
        if settings.get(key) in (None, 0, -1) and text and not text.isdigit():
            raise ValueError(f"{variable} must be a number, got {text!r}")


def resolve_settings(settings: Mapping[str, Any], environ: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Endpoint, database, password and prefix: the TOML's, else the variables, else the defaults."""
    env = os.environ if environ is None else environ
    check_environment(settings, env)
    host = settings.get("host") or env.get(ENV_VARS["host"]) or DEFAULTS["host"]
    port = settings.get("port") or int(env.get(ENV_VARS["port"]) or DEFAULTS["port"])
    db = settings.get("database", -1)
    if db is None or db < 0:
        db = int(env.get(ENV_VARS["database"]) or DEFAULTS["database"])
    password = settings.get("password") or env.get(ENV_VARS["password"]) or DEFAULTS["password"]
    if not 0 < int(port) < 65536:
        raise ValueError(f"REDIS_PORT must be between 1 and 65535, got {port}")
    return {
        "endpoint": Endpoint(str(host), int(port)),
        "database": int(db),
        "password": str(password),
        "prefix": str(settings.get("prefix") or "asyncbench:"),
    }


def _text(value: object) -> str:
    """A reply as text (the client returns bytes; None: empty)."""
    if value is None:
        return ""
    return value.decode() if isinstance(value, bytes) else str(value)


class RedisKv:
    """One store on one connection, as a :class:`~asyncbench.store.KvStore`: every call is
    one command and one reply on the worker's connection (module docstring)."""

    __slots__ = ("_send", "_read", "hash", "zset", "_put_sha", "_del_sha")

    def __init__(self, conn: Any, hash_key: bytes, zset_key: bytes, put_sha: str, del_sha: str) -> None:
        self._send, self._read = conn.send_command, conn.read_response
        self.hash, self.zset = hash_key, zset_key
        self._put_sha, self._del_sha = put_sha, del_sha

    def _call(self, *args: Any) -> Any:
        self._send(*args)
        return self._read()

    def get(self, key: bytes) -> bytes | None:
        self._send("HGET", self.hash, key)
        value: bytes | None = self._read()
        return value

    def put(self, key: bytes, value: bytes) -> None:
        self._send("EVALSHA", self._put_sha, 2, self.hash, self.zset, key, value)
        self._read()

    def delete(self, key: bytes) -> None:
        self._send("EVALSHA", self._del_sha, 2, self.hash, self.zset, key)
        self._read()

    def scan(self, start: bytes, last: bytes | None, limit: int) -> list[bytes]:
        if limit <= 0:
            return []
        top = b"+" if last is None else b"[" + last
        count = -1 if limit >= 1 << 62 else limit
        self._send("ZRANGEBYLEX", self.zset, b"[" + start, top, "LIMIT", 0, count)
        keys: list[bytes] = self._read()
        return keys

    def items(self) -> Iterator[tuple[bytes, bytes]]:
        """Pages of keys, each page's values by one HMGET (untimed: repair and checks). Each
        command's reply is read whole before the caller runs, so the caller may use the
        connection (and delete from this store) between pages."""
        low = b"-"
        while True:
            keys: list[bytes] = self._call("ZRANGEBYLEX", self.zset, low, "+", "LIMIT", 0, _PAGE)
            if not keys:
                return
            values: list[bytes | None] = self._call("HMGET", self.hash, *keys)
            for key, value in zip(keys, values, strict=True):
                if value is None:
                    raise StoreDamaged(f"Redis store {self.zset!r} lists key {key!r} without a value in {self.hash!r}")
                yield key, value
            low = b"(" + keys[-1]

    def count(self) -> int:
        return int(self._call("HLEN", self.hash))


async def _in_thread(body: Any, *args: Any) -> Any:
    return await anyio.to_thread.run_sync(body, *args)


#: Every batch in a worker thread: one hop per batch, the socket waits outside the GIL.
PLACEMENT = Placement.everywhere(_in_thread)


class RedisEngine(Engine):
    """Redis over TCP: per store a hash of values and a sorted set of keys in a database and
    key prefix of its own (claimed, marked, locked for the run), one connection per worker,
    one command per operation; persistence stated as the server runs it."""

    name = "redis"
    in_all = True
    needs_server = True
    multi_process = True
    persistent = True
    default_settings: ClassVar[Mapping[str, Any]] = {
        "host": "",
        "port": 0,
        "database": -1,
        "password": "",
        "prefix": "asyncbench:",
        "persistence": "",
        "lock_wait_seconds": DEFAULT_LOCK_WAIT_S,
    }

    @classmethod
    def setting_sources(cls) -> Mapping[str, str]:
        out = {key: f"{ENV_VARS[key]}, else {DEFAULTS[key]!r}" for key in DEFAULTS}
        out["persistence"] = "empty: the server's own (none, rdb, aof-everysec, aof-always: CONFIG SET at open)"
        return out

    @classmethod
    def check_settings(cls, settings: Mapping[str, Any]) -> None:
        validate_settings(settings)

    @classmethod
    def check_environment(cls, settings: Mapping[str, Any], environ: Mapping[str, str]) -> None:
        check_environment(settings, environ)

    def __init__(self, config: EngineConfig) -> None:
        super().__init__(config)
        validate_settings(self.settings)
        self.conn_settings = resolve_settings(self.settings)
        self.endpoint: Endpoint = self.conn_settings["endpoint"]
        self.prefix: bytes = self.conn_settings["prefix"].encode()
        self._clients: list[redis.Redis] = []
        self._workers: list[KvPrimitives] = []
        self._server: dict[str, str] = {}
        self._storage_bytes: int | None = None
        self._own_lease: Lease | None = None
        self._client_id: int | None = None
        self._unclean = False

    # --- place, lock --------------------------------------------------------------------
    @property
    def where(self) -> str:
        return f"Redis server {self.endpoint}, database {self.conn_settings['database']}, prefix {self.conn_settings['prefix']!r}"

    def lock_key(self) -> str:
        return f"redis:{self.endpoint}/{self.conn_settings['database']}/{self.conn_settings['prefix']}"

    def pinned_settings(self) -> dict[str, Any]:
        s = self.conn_settings
        return {"host": s["endpoint"].host, "port": s["endpoint"].port, "database": s["database"],
                "password": s["password"], "prefix": s["prefix"]}  # fmt: skip

    def _client(self, name: str) -> redis.Redis:
        s = self.conn_settings
        return redis.Redis(
            host=self.endpoint.host,
            port=self.endpoint.port,
            db=s["database"],
            password=s["password"] or None,
            socket_connect_timeout=CONNECT_TIMEOUT_S,
            single_connection_client=True,
            # no silent retry: a failed command is the run's error, never a second round trip
            retry=Retry(NoBackoff(), 0),
            client_name=name,
        )

    def _connect(self, name: str) -> redis.Redis:
        try:
            client = self._client(name)  # a single-connection client connects here
            client.ping()
        except (redis.ConnectionError, redis.TimeoutError, OSError) as exc:
            raise EngineUnavailable(
                f"no Redis server reachable at {self.endpoint} ({type(exc).__name__}: {exc}); "
                "start one with scripts/redis-server"
            ) from exc
        return client

    async def take_lock(self) -> Lease:
        wait = lock_wait_seconds(self.settings)

        def take() -> Lease:
            return take_lease(self._connect("asyncbench-lock"), self.prefix, wait, self.where)

        lease: Lease = await anyio.to_thread.run_sync(take)
        return lease

    @classmethod
    def exclusive(cls, config: EngineConfig) -> contextlib.AbstractAsyncContextManager[object]:
        engine = cls(config)
        return held(engine.lock_key(), engine.take_lock)

    async def server_identity(self) -> str:
        def read() -> str:
            client = self._connect("asyncbench-identity")
            try:
                info = client.info("server")
            finally:
                client.close()
            return (
                f"Redis run_id {info.get('run_id')} (port {info.get('tcp_port')}), "
                f"database {self.conn_settings['database']}, prefix {self.conn_settings['prefix']!r}"
            )

        return await anyio.to_thread.run_sync(read)

    # --- lifecycle --------------------------------------------------------------------
    def _keys(self, store: str) -> tuple[bytes, bytes]:
        base = self.prefix + b"s:" + store.encode() + b":"
        return base + b"v", base + b"k"

    async def open(self, reset: bool, background: TaskGroup | None = None) -> None:
        key = self.lock_key()
        if not is_held(key):  # opened on its own: the lock lives until close
            self._own_lease = await self.take_lock()
        try:
            await anyio.to_thread.run_sync(self._open_sync, reset)
        except BaseException:
            await self._release_own_lease()
            raise

    def _open_sync(self, reset: bool) -> None:
        if self._clients:
            raise RuntimeError("redis engine is already open")
        first = self._connect("asyncbench-w0")
        self._clients.append(first)
        try:
            self._open_place(first, reset)
            for w in range(1, self.config.workers):
                self._clients.append(self._connect(f"asyncbench-w{w}"))
            put_sha = first.script_load(_PUT)
            del_sha = first.script_load(_DELETE)
            self._workers = []
            for client in self._clients:
                conn = client.connection
                assert conn is not None  # single_connection_client: connected by ping
                stores = {name: RedisKv(conn, *self._keys(name), put_sha, del_sha) for name in self.config.stores}
                self._workers.append(KvPrimitives(stores, PLACEMENT))
            self._workers[0].unclean = self._unclean
            self._read_server(first)
        except BaseException:
            self._close_sync()
            raise

    def _open_place(self, client: redis.Redis, reset: bool) -> None:
        """Claim the database (engines/redis_lock.py), set the persistence, then reset our
        stores or check them, and register this client as open."""
        claim(client, self.prefix, self.where)
        mode = self.settings["persistence"]
        if mode:
            for name, value in PERSISTENCE[mode].items():
                client.config_set(name, value)
        marker = marker_key(self.prefix)
        stores = ",".join(self.config.stores)
        if reset:
            for key in client.scan_iter(match=glob_pattern(self.prefix + b"s:") + b"*", count=1000):
                if key.startswith(self.prefix + b"s:"):
                    client.unlink(key)
            client.hset(marker, "stores", stores)
            # the clients a crash left registered wrote into what the reset just removed
            gone = [f for f in map(_text, client.hkeys(marker)) if f.startswith("open:")]
            if gone:
                client.hdel(marker, *gone)
            self._unclean = False
        else:
            kept = _text(client.hget(marker, "stores"))
            missing = [s for s in self.config.stores if s not in kept.split(",")]
            if missing:
                raise StoreDamaged(
                    f"{self.where}: the marker lists no store {', '.join(map(repr, missing))} "
                    f"(it lists {kept or 'none'}): there is no data of this workload to keep"
                )
            for name in self.config.stores:
                h, z = self._keys(name)
                if client.hlen(h) != client.zcard(z):
                    raise StoreDamaged(
                        f"{self.where}: store {name!r} holds {client.hlen(h)} values but {client.zcard(z)} ordered keys"
                    )
            self._unclean = self._clients_gone(client)
        self._client_id = int(client.client_id())
        client.hset(marker, f"open:{self._client_id}", "1")

    def _clients_gone(self, client: redis.Redis) -> bool:
        """Whether a client registered as open is no longer connected (it stopped without
        closing); those registrations are removed."""
        marker = marker_key(self.prefix)
        ids = [f[5:] for f in map(_text, client.hkeys(marker)) if f.startswith("open:")]
        if not ids:
            return False
        asked: list[Any] = list(ids)
        live = {str(c["id"]) for c in client.client_list(client_id=asked)}
        gone = [i for i in ids if i not in live]
        for i in gone:
            client.hdel(marker, f"open:{i}")
        return bool(gone)

    def _read_server(self, client: redis.Redis) -> None:
        info = client.info("server")
        values = {"redis_version": str(info.get("redis_version", "?")), "process_id": str(info.get("process_id", ""))}
        try:
            config = client.config_get("appendonly") | client.config_get("appendfsync") | client.config_get("save")
            values.update({str(k): str(v) for k, v in config.items()})
        except redis.ResponseError as exc:  # CONFIG renamed or disabled (a managed server)
            values["config"] = f"not readable: {exc}"
        self._server = values

    async def close(self) -> None:
        try:
            await anyio.to_thread.run_sync(self._close_sync)
        finally:
            await self._release_own_lease()

    def _close_sync(self) -> None:
        clients, self._clients, self._workers = self._clients, [], []
        try:
            if clients and self._client_id is not None:
                clients[0].hdel(marker_key(self.prefix), f"open:{self._client_id}")
                self._client_id = None
        finally:
            for client in clients:
                client.close()

    async def _release_own_lease(self) -> None:
        lease, self._own_lease = self._own_lease, None
        if lease is not None:
            await lease.release()

    async def delete_store(self) -> bool:
        """Our stores' keys and the marker, only in a database that holds our marker."""

        def delete() -> None:
            client = self._connect("asyncbench-clean")
            try:
                claim(client, self.prefix, self.where)
                if client.hget(marker_key(self.prefix), "tool") is None:
                    raise NotOurs(f"{self.where}: no marker, so nothing here is asyncbench's: kept")
                for key in client.scan_iter(match=glob_pattern(self.prefix) + b"*", count=1000):
                    if key.startswith(self.prefix) and key != lock_key_name(self.prefix):
                        client.unlink(key)
            finally:
                client.close()

        async with held(self.lock_key(), self.take_lock):
            await anyio.to_thread.run_sync(delete)
        return True

    def worker(self, index: int) -> KvPrimitives:
        """Worker ``index``'s own connection's stores."""
        if not self._workers:
            raise RuntimeError("redis engine is not open")
        return self._workers[index]

    async def settle(self) -> None:
        """``SAVE`` when snapshots are configured (the rdb mode): the dataset on disk."""
        if self._clients and self._server.get("save"):
            await anyio.to_thread.run_sync(self._clients[0].save)

    async def measure_storage(self) -> int:
        def measure() -> int:
            client = self._clients[0]
            total = 0
            for name in self.config.stores:
                for key in self._keys(name):
                    total += int(client.memory_usage(key, samples=0) or 0)
            return total

        self._storage_bytes = await anyio.to_thread.run_sync(measure)
        return self._storage_bytes

    def storage_bytes(self) -> int:
        return self._storage_bytes or 0

    # --- cost -----------------------------------------------------------------------------
    def background_threads(self) -> BackgroundThreads | str:
        return "none in the client: the server's process does the engine's work (server CPU)"

    async def server_processes(self) -> list[int] | str | None:
        if not self._server:
            return "the redis engine is not open"
        if not is_local_host(self.endpoint.host):
            return f"the server at {self.endpoint} is not on this machine"
        pid = self._server.get("process_id", "")
        if not pid.isdigit():
            return "the server did not say its process id"
        found = local_process(int(pid), ("redis-server", "redis-check"))
        return found if isinstance(found, str) else [found.pid]

    async def cost_counters(self) -> EngineCounters | str:
        """The server's counters (every client's): commands processed, network bytes, and
        the AOF's size, whose growth within a phase is what the log wrote (a rewrite
        shrinks it)."""
        if not self._clients:
            return "the engine is not open"
        client = self._clients[0]

        def read() -> dict[str, Any]:
            info: dict[str, Any] = client.info("stats") | client.info("persistence")
            return info

        info = await anyio.to_thread.run_sync(read)
        other: dict[str, float] = {
            key: float(info[key])
            for key in ("total_commands_processed", "total_net_input_bytes", "total_net_output_bytes")
            if key in info
        }
        written = {"aof": int(info["aof_current_size"])} if int(info.get("aof_enabled", 0)) else {}
        return EngineCounters(written=written, other=other, server_wide=True)

    # --- facts ------------------------------------------------------------------------
    def _persistence(self) -> tuple[str, str, str, bool]:
        """(mode, sync, after a crash, synced commits) from what the server says."""
        s = self._server
        if not s:
            return "unknown until connected", "", "", False
        if s.get("appendonly") == "yes":
            fsync = s.get("appendfsync", "?")
            if fsync == "always":
                return "aof-always", "per command (appendfsync always)", "every acknowledged write survives", True
            return (
                f"aof-{fsync}",
                "once a second by a background thread" if fsync == "everysec" else f"appendfsync {fsync}",
                "a server crash loses about the last second of acknowledged writes",
                False,
            )
        if s.get("save"):
            return "rdb", f"snapshots only (save {s['save']})", "a server crash loses every write since the last snapshot", False
        return "none", "never (no AOF, no snapshots)", "a server restart loses everything", False

    def facts(self) -> EngineFacts:
        mode, sync, after, synced = self._persistence()
        configured = self.settings["persistence"] or "the server's own"
        settings = [
            Setting("server", str(self.endpoint)),
            Setting("database", str(self.conn_settings["database"])),
            Setting("prefix", f"{self.conn_settings['prefix']} (asyncbench's own: marker hash {marker_key(self.prefix).decode()})"),
            Setting("persistence", configured, mode),
            Setting("appendonly", "server setting", self._server.get("appendonly")),
            Setting("appendfsync", "server setting", self._server.get("appendfsync")),
            Setting("save", "server setting", self._server.get("save")),
            Setting("layout", "per store a hash of values and a sorted set of keys (ZRANGEBYLEX scans)"),
            Setting("client", "redis (sync, hiredis parser), one connection per worker, batches in a worker thread"),
            Setting("write", "one EVALSHA per put/delete (HSET/HDEL + ZADD/ZREM, atomic), no pipelining"),
        ]
        return EngineFacts(
            settings=settings,
            durability=Durability(
                log="append-only file" if mode.startswith("aof") else "none (snapshots at most)",
                sync=sync,
                write_unit="one Lua script per put or delete (value and ordered key together)",
                after_crash=after,
                synced_commits=synced,
                parameters={k: self._server.get(k, "unknown until connected") for k in ("appendonly", "appendfsync", "save")},
            ),
            memory_scope=MemoryScope.CLIENT_ONLY,
            storage_method=StorageMethod.SERVER_ESTIMATE,
            versions=self.library_versions(),
            endpoints=[str(self.endpoint)],
            colour="#a41e11",
        )

    @hybridmethod  # called like the base's classmethod, and on an instance too
    def library_versions(self_or_cls: Any) -> dict[str, str]:  # type: ignore[override]
        """The client's and parser's versions; after open also the server's."""
        versions = {"redis": importlib.metadata.version("redis")}
        with contextlib.suppress(importlib.metadata.PackageNotFoundError):
            versions["hiredis"] = importlib.metadata.version("hiredis")
        server = getattr(self_or_cls, "_server", None)
        if isinstance(server, dict) and server.get("redis_version"):
            versions["server"] = server["redis_version"]
        return versions

