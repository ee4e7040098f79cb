"""The floor benchmark's per-engine side: the store A runs on and the plain loops B runs.

Why a module of its own: this is the only part of ``asyncbench floor`` that knows an
engine's insides. B must use the very binding and settings A's engine uses (RocksDB: the
engine's own rocksdict handles and options; SQLite: a stdlib connection with the engine's
PRAGMAs and schema), so it reads adapter attributes and, for RocksDB and SQLite, imports
their adapter modules by name (lazily, inside ``build``). That is the one declared
exception to the contract "the framework reaches engines only through the registry"
(pyproject's ``[tool.importlinter]``); the engines themselves are created through the
registry (:func:`asyncbench.tools.store.new_engine`).
"""

from __future__ import annotations

import hashlib
import shutil
import sqlite3
from collections.abc import Callable, Sequence
from itertools import islice
from pathlib import Path
from typing import Any

from asyncbench.tools.store import LIMIT, SEED, load, new_engine
from asyncbench.workloads.profile_store.generate import create_many
from asyncbench.workloads.profile_store.plan import Plan
from asyncbench.workloads.profile_store.profiles import (
    INT63_MAX,
    country_status_key,
    created_at_key,
    decode,
    encode,
    reputation_key,
    update,
)
from asyncbench.workloads.profile_store.sql_store import PROFILES_TABLE, SqlProfileStore, Statements
from asyncbench.workloads.profile_store.stores import profile_store

__all__ = ["FLOORS", "Floor"]


class Floor:
    """One engine: its store for A, the plain loops for B, and copies/fresh stores.

    :meth:`close` closes whatever is open at the moment it is called, a half-built floor
    included: a stop signal or an error may land inside :meth:`build` or between
    :meth:`fresh` and :meth:`drop_fresh`, and an engine left open there keeps its threads
    (aiosqlite's worker is not a daemon) and can hold the process at exit."""

    name = ""
    engine: Any = None  # A's engine (its store), once opened
    fresh_a: Any = None  # the fresh engine of an insert kind, until dropped

    async def build(self, root: Path, plan: Plan, batch: int) -> None: ...
    def plain(self, kind: str) -> Callable[[Sequence[Any]], list[Any]]:
        raise NotImplementedError
    async def fork(self) -> None:
        """Make a copy of the store for B's updates (A keeps the original)."""

    async def fresh(self, tag: str) -> tuple[Any, Callable[[Sequence[int]], list[Any]]]:
        """Two fresh empty stores: A's engine and B's plain insert loop."""
        raise NotImplementedError

    async def drop_fresh(self, engine: Any) -> None: ...
    def digests(self) -> tuple[str, str]:
        """Digest of A's store and of B's copy (after updates / inserts)."""
        raise NotImplementedError

    def close_plain(self) -> None:
        """Close B's own handles on A's store and on its copy (those that are open)."""

    async def close(self) -> None:
        """Close whatever is open (see the class doc): a fresh pair, B's handles, A's engine."""
        if self.fresh_a is not None:
            await self.drop_fresh(self.fresh_a)
        self.close_plain()
        if self.engine is not None:
            await self.engine.close()


class RocksFloor(Floor):
    name = "rocksdb"
    copy: list[Any] | None = None
    fresh_b: list[Any] | None = None

    async def build(self, root: Path, plan: Plan, batch: int) -> None:
        import rocksdict

        from asyncbench.workloads.profile_store.kv_recovery import STORE_NAMES

        self.rocksdict, self.DB_NAMES = rocksdict, STORE_NAMES
        self.root, self.batch = root, batch
        self.engine = new_engine("rocksdb", root / "main")
        await self.engine.open(True)
        await load([profile_store(self.engine.worker(0), LIMIT)], plan.counts.profiles, batch)
        await self.engine.stabilize()
        self.dbs = list(self.engine._dbs)  # B reads the engine's own handles

    def _open_plain(self, path: Path) -> list[Any]:
        """Five rocksdict handles with the engine's options and write options."""
        wo = self.rocksdict.WriteOptions()
        wo.sync = bool(self.engine.settings["sync"])
        dbs = []
        for name in self.DB_NAMES:
            db = self.rocksdict.Rdict(str(path / name), self.engine._options())
            db.set_write_options(wo)
            dbs.append(db)
        return dbs

    async def fork(self) -> None:
        await self.engine.close()
        shutil.copytree(self.root / "main", self.root / "copy")
        await self.engine.open(False)
        self.dbs = list(self.engine._dbs)
        self.copy = self._open_plain(self.root / "copy")

    async def fresh(self, tag: str) -> tuple[Any, Callable[[Sequence[int]], list[Any]]]:
        engine = new_engine("rocksdb", self.root / f"fresh-a-{tag}")
        path = self.root / f"fresh-b-{tag}"
        self.fresh_a, self.fresh_path = engine, path  # close() drops them from here on
        await engine.open(True)
        shutil.rmtree(path, ignore_errors=True)
        path.mkdir(parents=True)
        dbs = self._open_plain(path)
        self.fresh_b = dbs
        return engine, self._insert_loop(dbs)

    async def drop_fresh(self, engine: Any) -> None:
        self.fresh_a = None
        await engine.close()
        shutil.rmtree(engine.data_dir, ignore_errors=True)
        for db in self.fresh_b or []:
            db.close()
        self.fresh_b = None
        shutil.rmtree(self.fresh_path, ignore_errors=True)

    @staticmethod
    def _digest(dbs: Sequence[Any]) -> str:
        h = hashlib.sha256()
        for db in dbs:
            for k, v in db.items():
                h.update(k)
                h.update(b"\0")
                h.update(v)
                h.update(b"\1")
            h.update(b"\2")
        return h.hexdigest()[:16]

    def digests(self) -> tuple[str, str]:
        if self.fresh_b is not None:
            return self._digest(self.fresh_a._dbs), self._digest(self.fresh_b)
        assert self.copy is not None
        return self._digest(self.engine._dbs), self._digest(self.copy)

    def close_plain(self) -> None:
        for db in self.copy or []:  # (B reads A's store through the engine's own handles)
            db.close()
        self.copy = None

    # --- the plain loops ------------------------------------------------------------------
    def _insert_loop(self, dbs: Sequence[Any]) -> Callable[[Sequence[int]], list[Any]]:
        profiles_db, emails, cs, ca, rep = dbs
        batch = self.batch

        def insert(uids: Sequence[int]) -> list[Any]:
            assert isinstance(uids, range)
            for start in range(uids.start, uids.stop, batch):  # generated per batch, like A
                for p in create_many(start, min(batch, uids.stop - start), SEED):
                    pk = b"%020d" % p[0]
                    emails.put(p[1].encode(), pk)  # indexes first, the profile last
                    cs.put(country_status_key(p), pk)
                    ca.put(created_at_key(p), pk)
                    rep.put(reputation_key(p), pk)
                    profiles_db.put(pk, encode(p))
            return list(uids)

        return insert

    def plain(self, kind: str) -> Callable[[Sequence[Any]], list[Any]]:
        profiles_db, emails, cs, ca, rep = self.dbs
        get = profiles_db.get
        limit = LIMIT

        def read_by_id(uids: Sequence[int]) -> list[Any]:
            out = []
            for uid in uids:
                v = get(b"%020d" % uid)
                if v is not None:
                    out.append(v)
            return out

        def lookup_by_email(addresses: Sequence[str]) -> list[Any]:
            out = []
            for e in addresses:
                pk = emails.get(e.encode())
                if pk is not None:
                    v = get(pk)
                    if v is not None:
                        out.append(v)
            return out

        def walk(db: Any, start: bytes, last: bytes | None, fetch: bool, out: list[Any]) -> None:
            keys = []
            for k in islice(db.keys(from_key=start), limit):
                if last is not None and k > last:
                    break
                keys.append(k)
            # then one get per index entry (the profile's primary key is the key's tail):
            # iterating and getting interleaved measured ~10-20 % slower per query
            if fetch:
                for k in keys:
                    v = get(k[-20:])
                    if v is not None:
                        out.append(v)
            else:
                out += [int(k[-20:]) for k in keys]

        def by_country_status(fetch: bool) -> Callable[[Sequence[Any]], list[Any]]:
            def loop(queries: Sequence[tuple[str, str]]) -> list[Any]:
                out: list[Any] = []
                for country, status in queries:
                    prefix = f"{country}|{status}|".encode()
                    walk(cs, prefix, prefix + b"\xff", fetch, out)
                return out

            return loop

        def by_created_at(fetch: bool) -> Callable[[Sequence[Any]], list[Any]]:
            def loop(ranges: Sequence[tuple[int, int]]) -> list[Any]:
                out: list[Any] = []
                for lo, hi in ranges:
                    walk(ca, b"%020d|%020d" % (lo, 0), b"%020d|%020d" % (hi, INT63_MAX), fetch, out)
                return out

            return loop

        def top(fetch: bool) -> Callable[[Sequence[Any]], list[Any]]:
            def loop(times: Sequence[int]) -> list[Any]:
                out: list[Any] = []
                for _ in times:
                    walk(rep, b"", None, fetch, out)
                return out

            return loop

        def updates(uids: Sequence[int]) -> list[Any]:
            assert self.copy is not None
            p_db, _, cs_db, _, rep_db = self.copy
            out = []
            for uid in uids:
                pk = b"%020d" % uid
                raw = p_db.get(pk)
                if raw is None:
                    continue
                old = decode(raw)
                new = update(old, SEED)
                old_cs, new_cs = country_status_key(old), country_status_key(new)
                old_rep, new_rep = reputation_key(old), reputation_key(new)
                # crash-safe order: new index keys, the profile, then the old keys go
                if new_cs != old_cs:
                    cs_db.put(new_cs, pk)
                if new_rep != old_rep:
                    rep_db.put(new_rep, pk)
                p_db.put(pk, encode(new))
                cs_db.delete(old_cs)
                if new_cs == old_cs:
                    cs_db.put(new_cs, pk)
                rep_db.delete(old_rep)
                if new_rep == old_rep:
                    rep_db.put(new_rep, pk)
                out.append(new)
            return out

        loops: dict[str, Callable[[Sequence[Any]], list[Any]]] = {
            "read_by_id": read_by_id,
            "lookup_by_email": lookup_by_email,
            "scan_country_status": by_country_status(False),
            "query_country_status": by_country_status(True),
            "scan_created_at": by_created_at(False),
            "query_created_at": by_created_at(True),
            "scan_top_reputation": top(False),
            "query_top_reputation": top(True),
            "update": updates,
        }
        return loops[kind]


class SqliteFloor(Floor):
    name = "sqlite"
    conn: sqlite3.Connection | None = None
    copy: sqlite3.Connection | None = None
    fresh_b: sqlite3.Connection | None = None

    async def build(self, root: Path, plan: Plan, batch: int) -> None:
        from asyncbench.engines import sqlite as mod

        self.mod, self.root, self.batch = mod, root, batch
        self.engine = new_engine("sqlite", root / "main")
        await self.engine.open(True)
        await load([profile_store(self.engine.worker(0), LIMIT)], plan.counts.profiles, batch)
        await self.engine.settle()  # checkpoint: B's connection reads the same pages
        self.conn = self._connect(self.engine.path)

    def _connect(self, path: Path) -> sqlite3.Connection:
        """A stdlib connection configured like the engine's own (autocommit, same PRAGMAs)."""
        conn = sqlite3.connect(path, isolation_level=None)
        self.mod.configure(conn, self.mod.pragma_statements(self.engine.settings))
        return conn

    async def fork(self) -> None:
        await self.engine.close()
        assert self.conn is not None
        self.conn.close()
        shutil.copyfile(self.engine.path, self.root / "copy.db")
        await self.engine.open(False)
        self.conn = self._connect(self.engine.path)
        self.copy = self._connect(self.root / "copy.db")

    async def fresh(self, tag: str) -> tuple[Any, Callable[[Sequence[int]], list[Any]]]:
        engine = new_engine("sqlite", self.root / f"fresh-a-{tag}")
        path = self.root / f"fresh-b-{tag}.db"
        self.fresh_a, self.fresh_path = engine, path  # close() drops them from here on
        await engine.open(True)
        for suffix in self.mod.DB_SUFFIXES:
            Path(f"{path}{suffix}").unlink(missing_ok=True)
        conn = self._connect(path)
        for statement in self.mod.DIALECT.create(PROFILES_TABLE):  # B's own file: the same table A's engine makes
            conn.execute(statement)
        self.fresh_b = conn
        execute, insert_sql, batch = conn.execute, self._statements().insert, self.batch

        def insert(uids: Sequence[int]) -> list[Any]:
            assert isinstance(uids, range)
            for start in range(uids.start, uids.stop, batch):  # generated per batch, like A
                for p in create_many(start, min(batch, uids.stop - start), SEED):
                    execute(insert_sql, p)
            return list(uids)

        return engine, insert

    async def drop_fresh(self, engine: Any) -> None:
        self.fresh_a = None
        await engine.close()
        shutil.rmtree(engine.data_dir, ignore_errors=True)
        if self.fresh_b is not None:
            self.fresh_b.close()
        self.fresh_b = None
        for suffix in self.mod.DB_SUFFIXES:
            Path(f"{self.fresh_path}{suffix}").unlink(missing_ok=True)

    @staticmethod
    def _digest(conn: sqlite3.Connection) -> str:
        h = hashlib.sha256()
        for row in conn.execute("SELECT * FROM profiles ORDER BY user_id"):
            h.update(repr(row).encode())
        return h.hexdigest()[:16]

    def digests(self) -> tuple[str, str]:
        if self.fresh_b is not None:
            other = sqlite3.connect(self.fresh_a.path)
            try:
                return self._digest(other), self._digest(self.fresh_b)
            finally:
                other.close()
        assert self.conn is not None and self.copy is not None
        return self._digest(self.conn), self._digest(self.copy)

    def close_plain(self) -> None:
        for conn in (self.copy, self.conn):
            if conn is not None:
                conn.close()
        self.copy = self.conn = None

    def _statements(self) -> Statements:
        """The very statements A runs: the profile store's, over the engine's dialect."""
        store = profile_store(self.engine.worker(0), LIMIT)
        assert isinstance(store, SqlProfileStore)
        return store.sql

    def plain(self, kind: str) -> Callable[[Sequence[Any]], list[Any]]:
        sql = self._statements()
        assert self.conn is not None
        execute = self.conn.execute

        def point(statement: str) -> Callable[[Sequence[Any]], list[Any]]:
            def loop(keys: Sequence[Any]) -> list[Any]:
                out = []
                for key in keys:
                    row = execute(statement, (key,)).fetchone()
                    if row is not None:
                        out.append(row)
                return out

            return loop

        def many(statement: str, ids: bool) -> Callable[[Sequence[Any]], list[Any]]:
            def loop(params: Sequence[Any]) -> list[Any]:
                out: list[Any] = []
                for p in params:
                    if ids:
                        out += [r[0] for r in execute(statement, p)]
                    else:
                        out += execute(statement, p).fetchall()
                return out

            return loop

        def repeat(statement: str, ids: bool) -> Callable[[Sequence[Any]], list[Any]]:
            loop = many(statement, ids)
            return lambda times: loop([()] * len(times))

        def updates(uids: Sequence[int]) -> list[Any]:
            assert self.copy is not None
            ex = self.copy.execute
            out = []
            for uid in uids:
                old = ex(sql.by_id, (uid,)).fetchone()
                if old is None:
                    continue
                new = update(old, SEED)
                ex(sql.update, (new[2], new[3], new[5], new[6], new[7], new[8], uid))
                out.append(new)
            return out

        return {
            "read_by_id": point(sql.by_id),
            "lookup_by_email": point(sql.by_email),
            "scan_country_status": many(sql.scan_country_status, True),
            "query_country_status": many(sql.query_country_status, False),
            "scan_created_at": many(sql.scan_created_at, True),
            "query_created_at": many(sql.query_created_at, False),
            "scan_top_reputation": repeat(sql.scan_top_reputation, True),
            "query_top_reputation": repeat(sql.query_top_reputation, False),
            "update": updates,
        }[kind]


#: engine name -> its floor; the engines ``--engine`` accepts.
FLOORS: dict[str, type[Floor]] = {"rocksdb": RocksFloor, "sqlite": SqliteFloor}
