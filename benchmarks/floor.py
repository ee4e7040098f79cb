"""The floor of every phase kind: the engine through the real phase loop (A) against the
plainest loop a user would write with the same binding (B), interleaved in one process.

Why: the adapters and the harness must cost little next to the engine they measure. For
each engine and EVERY operation phase kind this times, on the same store:

* (A) the engine's batch call through :func:`asyncbench.run.phase_loop.run_operations`, with
  the phase-table row (``PHASES[kind]``), ``PhaseContext.for_seed``, batches of
  ``--batch``, the checksum fold and a batch hook that does what the runner's does
  (``PhaseRecorder.add`` of the per-operation marks, then the observer's ``batch``; with
  ``--log FILE``, the live JSON log's, whose writer thread then runs beside A as in a real
  run): the phase time is the loop's own ``PhaseOutcome.seconds``, as the runner reports it;
* (B) a plain loop with the same binding on the event-loop thread, doing the same
  operations with the same results: rocksdict ``get``/``keys(from_key=...)``/``put``/
  ``delete`` on the engine's own database handles; stdlib ``sqlite3`` ``execute`` on a
  connection of its own with the engine's PRAGMAs. No checksum, no marks, no thread hop.

Before timing a kind, one untimed round runs A and B over the same items and asserts
that B's results fold to A's phase checksum (inserts and updates: and that the two stores
end up identical); it also warms the caches. Then ``--repeats`` timed rounds: each round
runs the kind's items in ``--slices`` contiguous slices, and every slice runs A and B back
to back in alternating order (A B, B A, ...), so a load change from other processes hits
both alike; a round's A and B times are the sums over its slices. Per kind the table shows
the median µs/op of A and of B, the median of the per-round ratios A/B with their
min-max, the same ratio in process CPU time (which leaves out time spent waiting for a
core on a loaded machine), the ratio of the fastest A round to the fastest B round (the
least disturbed rounds), A's time outside the engine's batch body per batch (thread hop,
checksum fold, hook), and A's engine share: the sum of the per-operation latencies
(last mark - first mark of each batch) / A's phase time, i.e. the part of A spent inside
the engine's batch body.

Stores and state:
* reads, lookups, scans and queries: one store of ``--profiles`` profiles, built once
  through the engine (insert phase loop, then ``stabilize``, as a run does); A and B use
  the same store (RocksDB: the engine's own rocksdict handles).
* update: before the update kind, the store is copied (closed cleanly, files copied,
  reopened): A updates the original through the engine, B the copy through plain calls,
  the same ids in the same order, so after every slice both stores hold the same data and
  every A/B pair starts from equal states. Updates run last, after every read kind.
* insert: every round inserts ``--insert-profiles`` profiles into two fresh, empty stores
  (A through the engine, B through plain calls), slice by slice, alternating.

Item counts: the first ``--point-ops`` items of the reads/email_reads streams, the first
``--update-ops`` of the updates stream and the first ``--query-ops`` of the queries/ranges
streams (a phase ``count``, as a plan may
set); the store itself has ``--profiles`` profiles.

Usage::

    .venv/bin/python benchmarks/floor.py --profiles 200k --repeats 5 --pin 0
    .venv/bin/python benchmarks/floor.py --profiles 50k --engine sqlite --kinds read_by_id,update
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import os
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from itertools import islice
from pathlib import Path
from typing import Any

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from _store import LIMIT, OPERATION_PHASES, SEED, draw, load, new_engine  # noqa: E402
from asyncbench.workloads.profile_store import kernels  # noqa: E402
from asyncbench.workloads.profile_store.checksum import Checksum  # noqa: E402
from asyncbench.workloads.profile_store.generate import create_many  # noqa: E402
from asyncbench.workloads.profile_store.phases import PHASES, STREAM_COUNT, Fold, PhaseContext, phase_items  # noqa: E402
from asyncbench.workloads.profile_store.plan import Plan  # noqa: E402
from asyncbench.workloads.profile_store.profiles import (  # noqa: E402
    INT63_MAX,
    country_status_key,
    created_at_key,
    decode,
    encode,
    reputation_key,
    update,
)

from asyncbench.fmt import parse_count  # noqa: E402
from asyncbench.measure.latency_recorder import PhaseRecorder  # noqa: E402
from asyncbench.run.logs import open_log  # noqa: E402
from asyncbench.run.observers import JsonLogObserver, Observer, ObserverGroup  # noqa: E402
from asyncbench.run.phase_loop import run_operations  # noqa: E402
from asyncbench.run.signals import backend_options  # noqa: E402

TARGET = 1.10
#: The observer A's batch hook calls: a no-op, or the live JSON log with ``--log``.
OBSERVER: Observer = ObserverGroup(Observer())

#: (phase kind, the plan stream it consumes), in the order they run: updates last.
KINDS = OPERATION_PHASES
QUERY_STREAMS = ("queries", "ranges")


# --- (A): the real phase loop ---------------------------------------------------------------


@dataclass
class Sample:
    wall: float
    cpu: float
    engine_ns: int = 0  # sum of per-operation latencies (A only)


async def run_a(kind: str, engine: Any, items: Sequence[Any], batch: int) -> tuple[Sample, str | None]:
    """``items`` through run_operations as the runner runs a phase at P1."""
    recorder = PhaseRecorder(1)
    add, observer_batch = recorder.add, OBSERVER.batch
    engine_ns = 0
    done = 0

    def hook(worker: int, index: int, ops: int, seconds: float, marks: list[int]) -> None:
        nonlocal done, engine_ns
        done += ops
        observer_batch("floor", kind, index, ops, seconds, done, worker, add(worker, ops, seconds, marks))
        engine_ns += marks[-1] - marks[0]

    OBSERVER.phase_start("floor", kind, len(items), kind, None)  # outside the phase time, as in a run

    cpu0 = time.process_time()
    outcome = await run_operations(PHASES[kind], items, [engine], PhaseContext.for_seed(SEED), batch, hook)
    cpu = time.process_time() - cpu0
    return Sample(outcome.seconds, cpu, engine_ns), outcome.checksum


def run_b(
    plain: Callable[[Sequence[Any]], list], items: Sequence[Any], keep: bool = False
) -> tuple[Sample, list]:
    """B's loop, timed including dropping its results (A frees each batch's results inside
    the phase loop, after the fold; leaving B's to be freed after the clock stopped hid
    ~10 ms per 1_000 50-row queries of deallocation from B). ``keep``: return them."""
    cpu0, t0 = time.process_time(), time.perf_counter()
    out = plain(items)
    if not keep:
        out = []
    wall = time.perf_counter() - t0
    return Sample(wall, time.process_time() - cpu0), out


def fold_of(kind: str, results: list) -> str:
    cs = Checksum()
    if PHASES[kind].fold is Fold.IDS:
        cs.add_ints(results)
    else:
        cs.add_profiles(results)
    return cs.hex()


# --- engines: what A runs on and what B does -------------------------------------------------


class Floor:
    """One engine: its store for A, the plain loops for B, and copies/fresh stores."""

    name = ""

    async def build(self, root: Path, plan: Plan, batch: int) -> None: ...
    def plain(self, kind: str) -> Callable[[Sequence[Any]], list]: ...
    async def fork(self) -> None:
        """Make a copy of the store for B's updates (A keeps the original)."""

    async def fresh(self, tag: str) -> tuple[Any, Callable[[Sequence[int]], list]]:
        """Two fresh empty stores: A's engine and B's plain insert loop."""
        raise NotImplementedError

    async def drop_fresh(self, engine: Any) -> None: ...
    def digests(self) -> tuple[str, str]:
        """Digest of A's store and of B's copy (after updates / inserts)."""
        raise NotImplementedError

    async def close(self) -> None: ...


def chunks(n: int, size: int) -> list[tuple[int, int]]:
    return [(s, min(s + size, n)) for s in range(0, n, size)]


class RocksFloor(Floor):
    name = "rocksdb"

    async def build(self, root: Path, plan: Plan, batch: int) -> None:
        import rocksdict
        from asyncbench.engines.rocksdb import DB_NAMES

        self.rocksdict, self.DB_NAMES = rocksdict, DB_NAMES
        self.root, self.batch = root, batch
        self.engine = new_engine("rocksdb", root / "main")
        await self.engine.open(True)
        await load([self.engine], plan.counts.profiles, batch)
        await self.engine.stabilize()
        self.dbs = list(self.engine._dbs)  # B reads the engine's own handles
        self.copy: list[Any] | None = None
        self.fresh_b: list[Any] | None = None

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

    async def fresh(self, tag: str) -> tuple[Any, Callable[[Sequence[int]], list]]:
        engine = new_engine("rocksdb", self.root / f"fresh-a-{tag}")
        await engine.open(True)
        path = self.root / f"fresh-b-{tag}"
        shutil.rmtree(path, ignore_errors=True)
        path.mkdir(parents=True)
        dbs = self._open_plain(path)
        self.fresh_a, self.fresh_b, self.fresh_path = engine, dbs, path
        return engine, self._insert_loop(dbs)

    async def drop_fresh(self, engine: Any) -> None:
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

    async def close(self) -> None:
        for db in self.copy or []:
            db.close()
        await self.engine.close()

    # --- the plain loops ------------------------------------------------------------------
    def _insert_loop(self, dbs: Sequence[Any]) -> Callable[[Sequence[int]], list]:
        profiles_db, emails, cs, ca, rep = dbs
        batch = self.batch

        def insert(uids: Sequence[int]) -> list:
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

    def plain(self, kind: str) -> Callable[[Sequence[Any]], list]:
        profiles_db, emails, cs, ca, rep = self.dbs
        get = profiles_db.get
        limit = LIMIT

        def read_by_id(uids: Sequence[int]) -> list:
            out = []
            for uid in uids:
                v = get(b"%020d" % uid)
                if v is not None:
                    out.append(v)
            return out

        def lookup_by_email(addresses: Sequence[str]) -> list:
            out = []
            for e in addresses:
                pk = emails.get(e.encode())
                if pk is not None:
                    v = get(pk)
                    if v is not None:
                        out.append(v)
            return out

        def walk(db: Any, start: bytes, last: bytes | None, fetch: bool, out: list) -> None:
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

        def by_country_status(fetch: bool) -> Callable:
            def loop(queries: Sequence[tuple[str, str]]) -> list:
                out: list = []
                for country, status in queries:
                    prefix = f"{country}|{status}|".encode()
                    walk(cs, prefix, prefix + b"\xff", fetch, out)
                return out

            return loop

        def by_created_at(fetch: bool) -> Callable:
            def loop(ranges: Sequence[tuple[int, int]]) -> list:
                out: list = []
                for lo, hi in ranges:
                    walk(ca, b"%020d|%020d" % (lo, 0), b"%020d|%020d" % (hi, INT63_MAX), fetch, out)
                return out

            return loop

        def top(fetch: bool) -> Callable:
            def loop(times: Sequence[int]) -> list:
                out: list = []
                for _ in times:
                    walk(rep, b"", None, fetch, out)
                return out

            return loop

        def updates(uids: Sequence[int]) -> list:
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

        return {
            "read_by_id": read_by_id,
            "lookup_by_email": lookup_by_email,
            "scan_country_status": by_country_status(False),
            "query_country_status": by_country_status(True),
            "scan_created_at": by_created_at(False),
            "query_created_at": by_created_at(True),
            "scan_top_reputation": top(False),
            "query_top_reputation": top(True),
            "update": updates,
        }[kind]


class SqliteFloor(Floor):
    name = "sqlite"

    async def build(self, root: Path, plan: Plan, batch: int) -> None:
        from asyncbench.engines import sqlite as mod

        self.mod, self.root, self.batch = mod, root, batch
        self.engine = new_engine("sqlite", root / "main")
        await self.engine.open(True)
        await load([self.engine], plan.counts.profiles, batch)
        await self.engine.settle()  # checkpoint: B's connection reads the same pages
        self.conn = self._connect(self.engine.path)
        self.copy: sqlite3.Connection | None = None
        self.fresh_b: sqlite3.Connection | None = None

    def _connect(self, path: Path) -> sqlite3.Connection:
        """A stdlib connection configured like the engine's own (autocommit, same PRAGMAs)."""
        conn = sqlite3.connect(path, isolation_level=None)
        self.mod.configure(conn, self.mod.pragma_statements(self.engine.settings))
        return conn

    async def fork(self) -> None:
        await self.engine.close()
        self.conn.close()
        shutil.copyfile(self.engine.path, self.root / "copy.db")
        await self.engine.open(False)
        self.conn = self._connect(self.engine.path)
        self.copy = self._connect(self.root / "copy.db")

    async def fresh(self, tag: str) -> tuple[Any, Callable[[Sequence[int]], list]]:
        engine = new_engine("sqlite", self.root / f"fresh-a-{tag}")
        await engine.open(True)
        path = self.root / f"fresh-b-{tag}.db"
        for suffix in self.mod.DB_SUFFIXES:
            Path(f"{path}{suffix}").unlink(missing_ok=True)
        conn = self._connect(path)
        self.fresh_a, self.fresh_b, self.fresh_path = engine, conn, path
        execute, insert_sql, batch = conn.execute, self.engine.sql.insert, self.batch

        def insert(uids: Sequence[int]) -> list:
            assert isinstance(uids, range)
            for start in range(uids.start, uids.stop, batch):  # generated per batch, like A
                for p in create_many(start, min(batch, uids.stop - start), SEED):
                    execute(insert_sql, p)
            return list(uids)

        return engine, insert

    async def drop_fresh(self, engine: Any) -> None:
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
        assert self.copy is not None
        return self._digest(self.conn), self._digest(self.copy)

    async def close(self) -> None:
        if self.copy is not None:
            self.copy.close()
        self.conn.close()
        await self.engine.close()

    def plain(self, kind: str) -> Callable[[Sequence[Any]], list]:
        sql = self.engine.sql
        execute = self.conn.execute

        def point(statement: str) -> Callable:
            def loop(keys: Sequence[Any]) -> list:
                out = []
                for key in keys:
                    row = execute(statement, (key,)).fetchone()
                    if row is not None:
                        out.append(row)
                return out

            return loop

        def many(statement: str, ids: bool) -> Callable:
            def loop(params: Sequence[Any]) -> list:
                out: list = []
                for p in params:
                    if ids:
                        out += [r[0] for r in execute(statement, p)]
                    else:
                        out += execute(statement, p).fetchall()
                return out

            return loop

        def repeat(statement: str, ids: bool) -> Callable:
            loop = many(statement, ids)
            return lambda times: loop([()] * len(times))

        def updates(uids: Sequence[int]) -> list:
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


FLOORS: dict[str, type[Floor]] = {"rocksdb": RocksFloor, "sqlite": SqliteFloor}


# --- the interleaved rounds -----------------------------------------------------------------


@dataclass
class Row:
    kind: str
    ops: int
    a: list[Sample] = field(default_factory=list)
    b: list[Sample] = field(default_factory=list)
    note: str = ""

    def ratios(self, attr: str) -> list[float]:
        return [getattr(x, attr) / getattr(y, attr) for x, y in zip(self.a, self.b, strict=True)]


def slices_of(items: Sequence[Any], slices: int, batch: int) -> list[Sequence[Any]]:
    """Contiguous slices, each a whole number of batches (the last may be shorter)."""
    batches = -(-len(items) // batch)
    per = max(1, -(-batches // slices)) * batch
    return [items[i : i + per] for i in range(0, len(items), per)]


def add(total: Sample | None, s: Sample) -> Sample:
    if total is None:
        return Sample(s.wall, s.cpu, s.engine_ns)
    return Sample(total.wall + s.wall, total.cpu + s.cpu, total.engine_ns + s.engine_ns)


async def measure_kind(floor: Floor, kind: str, items: Sequence[Any], args: argparse.Namespace) -> Row:
    row = Row(kind, len(items))
    if args.a_only:  # for a profiler: A alone, no check, no B (ratios then read 1.000)
        if kind in ("insert", "update"):
            raise SystemExit("--a-only runs the read, scan and query kinds")
        for _ in range(args.repeats):
            s, _ = await run_a(kind, floor.engine, items, args.batch)  # type: ignore[attr-defined]
            row.a.append(s)
            row.b.append(s)
        return row
    engine = getattr(floor, "engine", None)
    if kind == "update":
        await floor.fork()
        engine = floor.engine
    # Untimed check (and warm-up): A and B over the same items give the same results.
    if kind == "insert":
        engine, plain = await floor.fresh("check")
        _, want = await run_a(kind, engine, items, args.batch)
        _, got = run_b(plain, items, keep=True)
        da, db = floor.digests()
        await floor.drop_fresh(engine)
        assert da == db, f"{floor.name} insert: stores differ ({da} vs {db})"
    else:
        plain = floor.plain(kind)
        _, want = await run_a(kind, engine, items, args.batch)
        _, got = run_b(plain, items, keep=True)
        if kind == "update":
            da, db = floor.digests()
            assert da == db, f"{floor.name} update: stores differ ({da} vs {db})"
    assert fold_of(kind, got) == want, f"{floor.name} {kind}: B's checksum {fold_of(kind, got)} != A's {want}"
    parts = slices_of(items, args.slices, args.batch)
    for r in range(args.repeats):
        if kind == "insert":
            engine, plain = await floor.fresh(str(r))
        a_total = b_total = None
        for i, part in enumerate(parts):
            order = ("a", "b") if (r + i) % 2 == 0 else ("b", "a")
            for side in order:
                if side == "a":
                    s, _ = await run_a(kind, engine, part, args.batch)
                    a_total = add(a_total, s)
                else:
                    s, _ = run_b(plain, part)
                    b_total = add(b_total, s)
        if kind == "insert":
            await floor.drop_fresh(engine)
        assert a_total is not None and b_total is not None
        row.a.append(a_total)
        row.b.append(b_total)
    return row


def fmt_row(row: Row, batch: int) -> str:
    n = row.ops
    a = statistics.median(s.wall for s in row.a) / n * 1e6
    b = statistics.median(s.wall for s in row.b) / n * 1e6
    rw, rc = row.ratios("wall"), row.ratios("cpu")
    minima = min(s.wall for s in row.a) / min(s.wall for s in row.b)
    share = statistics.median(s.engine_ns / 1e9 / s.wall for s in row.a)
    batches = -(-n // batch)
    outside = statistics.median((s.wall - s.engine_ns / 1e9) / batches for s in row.a) * 1e6
    ok = "ok" if statistics.median(rw) <= TARGET else "MISS"
    return (
        f"| {row.kind} | {n:_d} | {a:.2f} | {b:.2f} | {statistics.median(rw):.3f} "
        f"({min(rw):.3f}–{max(rw):.3f}) | {statistics.median(rc):.3f} ({min(rc):.3f}–{max(rc):.3f}) "
        f"| {minima:.3f} | {share:.0%} | {outside:,.0f} | {ok} |"
    )


def count_for(stream: str, args: argparse.Namespace, plan: Plan) -> int:
    """The first N items of the stream: a phase ``count``, as a plan may set one."""
    cap = args.query_ops if stream in QUERY_STREAMS else args.point_ops
    if stream == "updates":
        cap = args.update_ops
    return min(cap, getattr(plan.counts, STREAM_COUNT[stream]))


async def main(args: argparse.Namespace) -> None:
    global OBSERVER
    print(f"command: {' '.join([Path(sys.executable).name, *sys.argv])}")
    log_fh = None
    if args.log:
        logger, log_fh = open_log(Path(args.log))
        OBSERVER = ObserverGroup(JsonLogObserver(logger, log_fh))
    try:
        await _main(args)
    finally:
        if log_fh is not None:
            log_fh.close()
            print(f"log: {args.log}" + (f" (incomplete: {log_fh.error})" if log_fh.error else ""))


async def _main(args: argparse.Namespace) -> None:
    print(
        f"profiles {args.profiles:_d}, batch {args.batch}, {args.repeats} timed rounds x {args.slices} "
        f"interleaved slices (+1 untimed check round), point ops {args.point_ops:_d}, updates "
        f"{args.update_ops:_d}, query ops "
        f"{args.query_ops:_d}, insert profiles {args.insert_profiles:_d}; kernels: {kernels.status_line()}; "
        f"pinned: {sorted(os.sched_getaffinity(0))} of {os.cpu_count()} CPUs; "
        f"loadavg at start {' '.join(f'{x:.2f}' for x in os.getloadavg())}"
    )
    t_start = time.perf_counter()
    plan = draw(args.profiles)
    kinds = [k for k in KINDS if args.kinds is None or k[0] in args.kinds]
    with tempfile.TemporaryDirectory(prefix="asyncbench-floor-", dir=args.dir) as tmp:
        for name in args.engine:
            floor = FLOORS[name]()
            t0 = time.perf_counter()
            await floor.build(Path(tmp) / name, plan, args.batch)
            print(
                f"\n## {name}: store of {args.profiles:_d} profiles built through the engine in "
                f"{time.perf_counter() - t0:.1f} s; loadavg {os.getloadavg()[0]:.2f}"
            )
            print(
                "\n| phase kind | ops/round | A µs/op | B µs/op | A/B wall median (min–max) "
                "| A/B CPU median (min–max) | A/B of minima | engine share | A outside engine µs/batch "
                "| ≤ 1.10 |"
            )
            print("| --- | ---: | ---: | ---: | --- | --- | ---: | ---: | ---: | --- |")
            try:
                for kind, stream in kinds:
                    if kind == "insert":
                        items: Sequence[Any] = range(1, args.insert_profiles + 1)
                    else:
                        items = phase_items(PHASES[kind], stream, count_for(stream, args, plan), plan)
                    row = await measure_kind(floor, kind, items, args)
                    print(fmt_row(row, args.batch), flush=True)
            finally:
                await floor.close()
            print(f"\n{name}: loadavg after {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"\ntotal {time.perf_counter() - t_start:.0f} s")


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--engine", default="rocksdb,sqlite", type=lambda s: s.split(","))
    p.add_argument("--profiles", type=parse_count, default=200_000)
    p.add_argument("--batch", type=int, default=1_000)
    p.add_argument("--repeats", type=int, default=5, help="timed interleaved rounds per kind")
    p.add_argument("--slices", type=int, default=8, help="A/B pairs per round")
    p.add_argument("--point-ops", type=parse_count, default=40_000, help="reads and lookups per round")
    p.add_argument("--update-ops", type=parse_count, default=10_000, help="updates per round")
    p.add_argument("--query-ops", type=parse_count, default=4_000, help="scans and queries per round")
    p.add_argument("--insert-profiles", type=parse_count, default=20_000, help="per round, into fresh stores")
    p.add_argument("--kinds", type=lambda s: set(s.split(",")), default=None)
    p.add_argument(
        "--a-only",
        action="store_true",
        help="time only A (read/scan/query kinds), e.g. under py-spy: benchmarks/floor_profile.py",
    )
    p.add_argument("--dir", default=None, help="parent directory of the temporary stores")
    p.add_argument("--log", default=None, metavar="FILE", help="A's batches go to this live JSON log, as in a run")
    p.add_argument("--pin", type=int, default=None, metavar="CPU", help="run every thread on this CPU")
    args = p.parse_args(argv)
    for name in args.engine:
        if name not in FLOORS:
            p.error(f"--engine: {name} is not one of {', '.join(FLOORS)}")
    return args


if __name__ == "__main__":
    arguments = parse_args()
    if arguments.pin is not None:  # before any thread starts: threads inherit the mask
        os.sched_setaffinity(0, {arguments.pin})
    with contextlib.suppress(KeyboardInterrupt):
        anyio.run(main, arguments, backend="asyncio", backend_options=backend_options())
