"""The harness's own cost on YCSB's phases: ``asyncbench floor-ycsb``, the sibling of
``asyncbench floor`` (:mod:`asyncbench.tools.floor`) for the ycsb workload.

Why: on YCSB the harness, not the engine, was measured (issue 53: 30-55 µs of harness per
operation at 1M records, the engines' difference compressed inside it). This times, per
engine and for the load and the run (mixed) phase:

* (A) the phase through the real phase loop
  (:func:`asyncbench.run.phase.dispatch.run_operations`: the phase-table row, batches of
  ``--batch``, each operation's digest and the checksum fold, the engine's placement of
  the batch, and a batch hook doing what the runner's does: ``PhaseRecorder.add`` of the
  marks, then the observer's ``batch``);
* (B) the plainest loop a user would write with the same binding, on the event-loop
  thread: the engine's own usertable calls (``KvTable``: a dict, the LSM tree, rocksdict
  ``get``/``put``/range scan), the same operations on the same keys with the same
  records, built with the same kernels. No digest, no marks, no thread hop, no hook.

A - B per operation is what the harness adds. The load: every round loads ``--records``
records into two fresh stores (A's through the engine, B's through plain puts), slice by
slice, alternating; the untimed check round proves both stores hold the same records. The
run: two stores loaded alike and stabilized, A's and B's, the same operations applied to
both slice by slice (so a read of either sees the same state); the untimed check round
proves B's results fold to A's checksum. Then ``--repeats`` timed rounds of ``--slices``
slices, A and B back to back in alternating order, as ``floor`` does.

Engines: those whose YCSB usertable is a key/value table (``workloads/ycsb/kv_store.py``):
memory, lsm, rocksdb. Exit 0 when every check held, 1 when A and B disagree, 2 on bad
arguments (a plan file that is not a YCSB plan named with the key at fault).

    python -m asyncbench floor-ycsb --engine memory,lsm,rocksdb --records 100k --operations 100k
    python -m asyncbench floor-ycsb --plan benchmarks/ycsb/workloada.toml --engine lsm
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import statistics
import sys
import tempfile
import time
import tomllib
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio

from asyncbench.engine import opened
from asyncbench.fmt import parse_count
from asyncbench.measure.latency_recorder import PhaseRecorder
from asyncbench.parse import escape_unprintable
from asyncbench.run.observe.observers import BatchDone
from asyncbench.run.phase.dispatch import run_operations
from asyncbench.tools.floor import OBSERVER, Sample, add, engine_names, slices_of
from asyncbench.tools.store import new_engine
from asyncbench.workloads import workload
from asyncbench.workloads.ycsb.kv_store import KvYcsbStore
from asyncbench.workloads.ycsb.stores import ycsb_store
from asyncbench.workloads.ycsb.workload import YcsbWorkload

__all__ = ["ENGINES", "FloorYcsbMismatch", "add_arguments", "main", "run"]

#: The engines whose usertable is a key/value table B can call.
#: The workload this tool measures (its phases, plan and checksums).
YCSB = "ycsb"
ENGINES = ("memory", "lsm", "rocksdb")
#: Workload C (100 % zipfian reads of every field) when no ``--plan`` is given.
DEFAULT_YCSB = {"fieldcount": 10, "fieldlength": 100, "insertorder": "hashed", "zeropadding": 1}
DEFAULT_MIXED = {
    "readproportion": 1.0, "updateproportion": 0.0, "insertproportion": 0.0, "scanproportion": 0.0,
    "readmodifywriteproportion": 0.0, "requestdistribution": "zipfian", "readallfields": True,
}  # fmt: skip
SEED = 570_123_434  # the converted YCSB plans' seed
MAX_RECORDS = 10_000_000


class FloorYcsbMismatch(Exception):
    """A and B disagree (results or stores): the comparison would be meaningless."""


@dataclass
class Row:
    phase: str
    ops: int
    a: list[Sample] = field(default_factory=list)
    b: list[Sample] = field(default_factory=list)

    def ratios(self, attr: str) -> list[float]:
        return [getattr(x, attr) / getattr(y, attr) for x, y in zip(self.a, self.b, strict=True)]

    def line(self) -> str:
        n = self.ops
        a = statistics.median(s.wall for s in self.a) / n * 1e6
        b = statistics.median(s.wall for s in self.b) / n * 1e6
        rw, rc = self.ratios("wall"), self.ratios("cpu")
        return (
            f"| {self.phase} | {n:_d} | {a:.2f} | {b:.2f} | {a - b:.2f} | {statistics.median(rw):.3f} "
            f"({min(rw):.3f}–{max(rw):.3f}) | {statistics.median(rc):.3f} ({min(rc):.3f}–{max(rc):.3f}) |"
        )


HEADER = (
    "| phase | ops/round | A µs/op | B µs/op | A − B µs/op | A/B wall median (min–max) | A/B CPU median (min–max) |\n"
    "| --- | ---: | ---: | ---: | ---: | --- | --- |"
)


@dataclass
class Setup:
    """What every engine's measurement shares: the workload, its plan and both phases' items."""

    wl: Any
    plan: Any
    load: Any
    mixed: Any
    keys: Any  # the load's items
    ops: Any  # the mixed phase's items (every operation, drawn once)


def setup(args: argparse.Namespace) -> Setup:
    """The ycsb workload's plan and items, from ``--plan`` (its [ycsb] table and its first
    mixed phase) or workload C's defaults; a bad plan raises ``ValueError`` naming the key."""
    wl = workload(YCSB)
    assert isinstance(wl, YcsbWorkload)  # its own settings and mixed-phase keys
    ycsb, mixed_table = dict(DEFAULT_YCSB), dict(DEFAULT_MIXED)
    if args.plan is not None:
        doc = tomllib.loads(args.plan.read_text())
        ycsb = dict(doc.get("ycsb", {}))
        mixed = [p for p in doc.get("phase", []) if p.get("kind") == "mixed"]
        if not mixed:
            raise ValueError("[[phase]]: no phase of kind 'mixed' (a YCSB plan's run phase)")
        mixed_table = {k: v for k, v in mixed[0].items() if k not in ("kind", "name")}
    settings = wl.settings({**ycsb, "recordcount": args.records})
    plan = wl.draw_plan(wl.counts(args.records, 50, {}, settings), SEED)
    load, mixed_kind = wl.phases["load"], wl.phases["mixed"]
    params = wl.phase_params(mixed_kind, {**mixed_table, "operations": args.operations}, settings)
    keys = wl.phase_items(load, None, None, plan, {})
    ops: Any = wl.phase_items(mixed_kind, None, None, plan, params)  # MixedOps
    ops.phase.prepare()  # the scan rule's keys, before any timing
    return Setup(wl, plan, load, mixed_kind, keys, ops)


# --- A: the real phase loop ---------------------------------------------------------------


async def run_a(kind: Any, store: Any, items: Sequence[Any], ctx: object, batch: int) -> tuple[Sample, str | None]:
    """``items`` through run_operations as the runner runs a phase at P1 (floor's run_a, for
    a phase kind of the ycsb workload)."""
    recorder = PhaseRecorder(1)
    rec_add, observer_batch = recorder.add, OBSERVER.batch
    done = 0

    def hook(worker: int, index: int, ops: int, seconds: float, marks: list[int]) -> None:
        nonlocal done
        done += ops
        observer_batch(BatchDone("floor-ycsb", kind.kind, index, ops, seconds, done, worker, rec_add(worker, ops, seconds, marks)))

    cpu0 = time.process_time()
    with recorder:
        outcome = await run_operations(kind, items, [store], ctx, batch, hook, wl=workload(YCSB))
    return Sample(outcome.seconds, time.process_time() - cpu0), outcome.checksum


# --- B: the plain loops -------------------------------------------------------------------


def plain_load(table: Any, plan: Any) -> Callable[[Any], Sample]:
    """B's load: build each record with the same kernels, then one put per record."""

    def load(keys: Any) -> Sample:
        cpu0, t0 = time.process_time(), time.perf_counter()
        put = table.kv.put
        for name, record in zip(plan.names(keys.keys), plan.values.encoded(keys.keys), strict=True):
            put(name, record)
        return Sample(time.perf_counter() - t0, time.process_time() - cpu0)

    return load


def plain_run(table: Any, ops: Any) -> list[Any]:
    """B's run: each operation's table calls, what each read returned kept (no digest)."""
    from asyncbench.workloads.ycsb.operations import ALL_FIELDS, INSERT, READ, READMODIFYWRITE, SCAN, UPDATE

    read, update, insert, scan = table.read, table.update, table.insert, table.scan
    out: list[Any] = []
    keep = out.append
    for (_, kind, _, rf, wf, length, tag), name in zip(ops.rows(), ops.names(), strict=True):
        if kind == READ:
            keep(read(name, rf))
        elif kind == UPDATE:
            update(name, wf, ops.record(tag) if wf == ALL_FIELDS else ops.value(tag, wf))
            keep(None)
        elif kind == INSERT:
            insert(name, ops.record(tag))
            keep(None)
        elif kind == READMODIFYWRITE:
            got = read(name, rf)
            update(name, wf, ops.record(tag) if wf == ALL_FIELDS else ops.value(tag, wf))
            keep(got)
        elif kind == SCAN:
            bounds = ops.scan_bounds(name, length)
            keep([] if bounds is None else scan(*bounds, rf))
    return out


def timed_run(table: Any) -> Callable[[Any], Sample]:
    def run(ops: Any) -> Sample:
        cpu0, t0 = time.process_time(), time.perf_counter()
        plain_run(table, ops)
        return Sample(time.perf_counter() - t0, time.process_time() - cpu0)

    return run


def fold_b(ops: Any, results: list[Any]) -> str:
    """B's results folded as A's phase checksum folds its digests (the check only)."""
    from asyncbench.workloads.ycsb import kernels
    from asyncbench.workloads.ycsb.checksum import scan_digest
    from asyncbench.workloads.ycsb.operations import SCAN

    total = 0
    for (index, kind, *_), name, got in zip(ops.rows(), ops.names(), results, strict=True):
        if kind == SCAN:
            total += scan_digest(index, kind, name, [(n, r) for n, r in got if not ops.written(n)])
        else:
            total += kernels.digest(index, kind, name, got)
    return f"{total & ((1 << 64) - 1):016X}"


def store_digest(table: Any, plan: Any, keys: Any) -> str:
    """Every loaded record as the store returns it, by key name (the load's check)."""
    h = hashlib.blake2b(digest_size=16)
    get = table.kv.get
    for name in plan.names(keys.keys):
        value = get(name)
        h.update(b"-" if value is None else value)
    return h.hexdigest()


# --- the rounds ---------------------------------------------------------------------------


async def _interleaved(
    row: Row, parts: list[Any], repeats: int, a: Callable[[Any], Awaitable[Sample]], b: Callable[[Any], Sample]
) -> None:
    for r in range(repeats):
        a_total = b_total = None
        for i, part in enumerate(parts):
            for side in ("a", "b") if (r + i) % 2 == 0 else ("b", "a"):
                if side == "a":
                    a_total = add(a_total, await a(part))
                else:
                    b_total = add(b_total, b(part))
        assert a_total is not None and b_total is not None
        row.a.append(a_total)
        row.b.append(b_total)


def _loader(kind: Any, store: Any, batch: int) -> Callable[[Any], Awaitable[Sample]]:
    """A's load of one slice into ``store``."""

    async def a(part: Any) -> Sample:
        return (await run_a(kind, store, part, None, batch))[0]

    return a


def _kv_store(engine: Any) -> KvYcsbStore:
    """YCSB's store over the engine's worker 0, a key/value one (B calls its table)."""
    store = ycsb_store(engine.worker(0))
    if not isinstance(store, KvYcsbStore):
        raise TypeError(f"{engine.name}: YCSB's store is a {type(store).__name__}, not a key/value one")
    return store


async def measure_load(name: str, s: Setup, root: Path, args: argparse.Namespace) -> Row:
    row = Row("load", len(s.keys))
    parts = slices_of(s.keys, args.slices, args.batch)
    for r in range(args.repeats + 1):  # round 0: the untimed check
        async with contextlib.AsyncExitStack() as stack:
            ea = await stack.enter_async_context(opened(new_engine(name, root / f"load-a-{r}", workload_name=YCSB)))
            eb = await stack.enter_async_context(opened(new_engine(name, root / f"load-b-{r}", workload_name=YCSB)))
            sa, tb = _kv_store(ea), _kv_store(eb).table

            one = Row("load", row.ops)
            await _interleaved(one, parts, 1, _loader(s.load, sa, args.batch), plain_load(tb, s.plan))
            if r == 0:
                da, db = store_digest(sa.table, s.plan, s.keys), store_digest(tb, s.plan, s.keys)
                if da != db:
                    raise FloorYcsbMismatch(f"{name} load: A's and B's stores differ ({da} vs {db})")
            else:
                row.a += one.a
                row.b += one.b
    return row


async def measure_run(name: str, s: Setup, root: Path, args: argparse.Namespace) -> Row:
    row = Row("run", len(s.ops))
    async with contextlib.AsyncExitStack() as stack:
        ea = await stack.enter_async_context(opened(new_engine(name, root / "run-a", workload_name=YCSB)))
        eb = await stack.enter_async_context(opened(new_engine(name, root / "run-b", workload_name=YCSB)))
        sa, sb = _kv_store(ea), _kv_store(eb)
        for engine, store in ((ea, sa), (eb, sb)):  # both loaded alike, as a run loads, then stabilized
            await run_a(s.load, store, s.keys, None, args.batch)
            await engine.stabilize()
        tb = sb.table
        ctx = s.wl.context(SEED)
        parts = slices_of(s.ops, args.slices, args.batch)
        for part in parts:  # the untimed check, slice by slice so both stores stay alike
            _, want = await run_a(s.mixed, sa, part, ctx, args.batch)
            got = fold_b(part, plain_run(tb, part))
            if got != want:
                raise FloorYcsbMismatch(f"{name} run: B's results fold to {got}, A's checksum is {want}")

        async def a(part: Any) -> Sample:
            return (await run_a(s.mixed, sa, part, ctx, args.batch))[0]

        await _interleaved(row, parts, args.repeats, a, timed_run(tb))
    return row


async def measure(args: argparse.Namespace) -> None:
    s = setup(args)
    print(
        f"records {args.records:_d}, run operations {args.operations:_d}, batch {args.batch}, "
        f"{args.repeats} timed rounds x {args.slices} interleaved slices (+1 untimed check round)",
        flush=True,
    )
    with tempfile.TemporaryDirectory(prefix="asyncbench-floor-ycsb-", dir=args.dir) as tmp:
        for name in args.engine:
            print(f"\n## {name}\n\n{HEADER}", flush=True)
            root = Path(tmp) / name
            for measure_phase in (measure_load, measure_run):
                row = await measure_phase(name, s, root, args)
                print(row.line(), flush=True)


# --- the command --------------------------------------------------------------------------


def _count(most: int) -> Callable[[str], int]:
    def count(text: str) -> int:
        try:
            n = parse_count(text)
        except (ValueError, IndexError) as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None
        if not 1 <= n <= most:
            raise argparse.ArgumentTypeError(f"{text!r}: expected a count from 1 to {most:_d}")
        return n

    return count


def _engines(text: str) -> list[str]:
    return engine_names(text, list(ENGINES), "the engines with a key/value usertable")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    p = parser
    p.formatter_class = argparse.RawDescriptionHelpFormatter
    p.epilog = """\
Times YCSB's load and run phases through the real phase loop (A) against the
plainest loop with the same binding (B), interleaved, and prints per engine
µs per operation, A − B (the harness's cost) and the A/B ratios.

exit codes: 0 every A/B check held; 1 A's and B's results or stores differ;
2 bad arguments.

examples:
  python -m asyncbench floor-ycsb --engine memory,lsm,rocksdb --records 100k
  python -m asyncbench floor-ycsb --plan benchmarks/ycsb/workloada.toml --engine lsm"""
    p.add_argument("--engine", type=_engines, default=list(ENGINES), help=f"comma separated: {', '.join(ENGINES)}")
    p.add_argument("--records", type=_count(MAX_RECORDS), default=100_000, help="records loaded (e.g. 100k)")
    p.add_argument("--operations", type=_count(MAX_RECORDS), default=100_000, help="run phase operations per round")
    p.add_argument("--batch", type=_count(1_000_000), default=1_000, help="operations per batch")
    p.add_argument("--repeats", type=_count(100), default=3, help="timed interleaved rounds")
    p.add_argument("--slices", type=_count(1_000), default=4, help="A/B pairs per round")
    p.add_argument("--plan", type=Path, default=None, help="a YCSB plan (TOML): its [ycsb] table and mixed phase; default workload C")
    p.add_argument("--dir", type=Path, default=None, help="existing parent directory of the temporary stores")


def run(args: argparse.Namespace) -> int:
    if args.dir is not None and not args.dir.is_dir():
        print(f"asyncbench floor-ycsb: --dir {escape_unprintable(str(args.dir))}: not an existing directory", file=sys.stderr)
        return 2
    if args.plan is not None and not args.plan.is_file():
        print(f"asyncbench floor-ycsb: --plan {escape_unprintable(str(args.plan))}: no such file", file=sys.stderr)
        return 2
    try:
        setup(args)  # a bad plan is refused before anything is built
    except (ValueError, tomllib.TOMLDecodeError) as exc:
        print(f"asyncbench floor-ycsb: {escape_unprintable(str(args.plan))}: {exc}", file=sys.stderr)
        return 2
    failed: list[str] = []
    try:
        anyio.run(measure, args)
    except* FloorYcsbMismatch as group:  # raised inside the engines' task groups: wrapped
        failed += [str(exc) for exc in _leaves(group)]
    for text in failed:
        print(f"asyncbench floor-ycsb: {text}", file=sys.stderr)
    return 1 if failed else 0


def _leaves(exc: BaseException) -> list[BaseException]:
    """The exceptions inside (nested) exception groups."""
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for inner in exc.exceptions for leaf in _leaves(inner)]
    return [exc]


def main(argv: Sequence[str]) -> int:
    """``python -m asyncbench floor-ycsb [flags]``."""
    parser = argparse.ArgumentParser(prog="python -m asyncbench floor-ycsb", description=__doc__)
    add_arguments(parser)
    return run(parser.parse_args(list(argv)))
