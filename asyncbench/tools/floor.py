"""The floor of every phase kind: the engine through the real phase loop (A)
against the plainest loop a user would write with the same binding (B),
interleaved in one process.

Why: the adapters and the harness must cost little next to the engine they
measure. For
each engine and EVERY operation phase kind this times, on the same store:

* (A) the engine's batch call through
  :func:`asyncbench.run.phase.phase_loop.run_operations`, with the phase-table row
  (``workload(PROFILE_STORE).phases[kind]``), ``PhaseContext.for_seed``, batches of
  ``--batch``, the checksum fold and a batch hook that does what the runner's
  does (``PhaseRecorder.add`` of the per-operation marks, then the observer's
  ``batch``): the phase time is the loop's own ``PhaseOutcome.seconds``, as the
  runner reports it;
* (B) a plain loop with the same binding on the event-loop thread, doing the
  same operations with the same results: rocksdict
  ``get``/``keys(from_key=...)``/``put``/ ``delete`` on the engine's own
  database handles; stdlib ``sqlite3`` ``execute`` on a connection of its own
  with the engine's PRAGMAs. No checksum, no marks, no thread hop.

Before timing a kind, one untimed round runs A and B over the same items and
checks that B's results fold to A's phase checksum (inserts and updates: and
that the two stores end up identical); it also warms the caches. Then
``--repeats`` timed rounds: each round runs the kind's items in ``--slices``
contiguous slices, and every slice runs A and B back to back in alternating
order (A B, B A, ...), so a load change from other processes hits both alike; a
round's A and B times are the sums over its slices. Per kind the table shows the
median µs/op of A and of B, the median of the per-round ratios A/B with their
min-max, the same ratio in process CPU time (which leaves out time spent waiting
for a core on a loaded machine), the ratio of the fastest A round to the fastest
B round (the least disturbed rounds), A's time outside the engine's batch body
per batch (thread hop, checksum fold, hook), and A's engine share: the sum of
the per-operation latencies (last mark - first mark of each batch) / A's phase
time, i.e. the part of A spent inside the engine's batch body.

Stores and state:
* reads, lookups, scans and queries: one store of ``--profiles`` profiles, built
  once through the engine (insert phase loop, then ``stabilize``, as a run
  does); A and B use the same store (RocksDB: the engine's own rocksdict
  handles).
* update: before the update kind, the store is copied (closed cleanly, files
  copied, reopened): A updates the original through the engine, B the copy
  through plain calls, the same ids in the same order, so after every slice both
  stores hold the same data and every A/B pair starts from equal states. Updates
  run last, after every read kind.
* insert: every round inserts ``--insert-profiles`` profiles into two fresh,
  empty stores (A through the engine, B through plain calls), slice by slice,
  alternating.

Item counts: the first ``--point-ops`` items of the reads/email_reads streams,
the first ``--update-ops`` of the updates stream and the first ``--query-ops``
of the queries/ranges streams (a phase ``count``, as a plan may set); the store
itself has ``--profiles`` profiles.

Output: the effective command, then per engine one Markdown table with one row
per phase kind (``docs/results/floor-200k.md`` is one such run, annotated). Exit
0 when every A/B check held (the table's ``≤ 1.10`` column is the target,
informational), 1 when A's
and B's results or stores differ, 2 on bad arguments (every count flag has a
maximum: ``--profiles`` 10M, ``--repeats`` 100, ``--slices`` 1_000, the others
10M: ``asyncbench/tools/floor_estimate.py``), 130 when stopped by Ctrl-C,
SIGTERM or SIGHUP (the engines are closed, the temporary stores removed).
Timing tests do not assert on it: the figures belong to this command, run on a
quiet machine.

Before it starts, the command prints about how long it will take (scaled from
``docs/results/floor-200k.md``); on a terminal, a run estimated over 10 minutes
asks first, as ``run`` does, and ``--yes`` skips the question.

Usage::

    .venv/bin/python -m asyncbench floor --profiles 200k --repeats 5 --pin 0
    .venv/bin/python -m asyncbench floor --engine sqlite --kinds update
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import anyio.abc

from asyncbench.fmt import parse_count
from asyncbench.measure.latency_recorder import PhaseRecorder
from asyncbench.parse import escape_unprintable
from asyncbench.result import EXIT_INTERRUPTED
from asyncbench.run.estimate import ask_to_start, duration
from asyncbench.run.observe.observers import BatchDone, Observer, ObserverGroup
from asyncbench.run.observe.signals import StopSignals, backend_options
from asyncbench.run.phase.dispatch import run_operations
from asyncbench.run.phase.stores import worker_store
from asyncbench.tools.floor_engines import FLOORS, Floor
from asyncbench.tools.floor_estimate import FLAG_MAXIMA, floor_seconds
from asyncbench.tools.store import LIMIT, OPERATION_PHASES, PROFILE_STORE, SEED, draw
from asyncbench.workload import Fold
from asyncbench.workload_capabilities import stream_count
from asyncbench.workloads import workload
from asyncbench.workloads.profile_store import kernels
from asyncbench.workloads.profile_store.checksum import Checksum
from asyncbench.workloads.profile_store.phases import PhaseContext, phase_items
from asyncbench.workloads.profile_store.plan import Counts, Plan

__all__ = ["add_arguments", "main", "run"]

TARGET = 1.10

#: (phase kind, the plan stream it consumes), in the order they run: updates last.
KINDS = OPERATION_PHASES
#: The observer A's batch hook calls: a no-op, or the live JSON log (benchmarks/bench_live_log.py
#: sets it to measure what the log costs A).
OBSERVER: Observer = ObserverGroup(Observer())
QUERY_STREAMS = ("queries", "ranges")
#: Kinds ``--a-only`` cannot time: they need B's fresh or copied store.
WRITE_KINDS = ("insert", "update")


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
        observer_batch(BatchDone("floor", kind, index, ops, seconds, done, worker, add(worker, ops, seconds, marks)))
        engine_ns += marks[-1] - marks[0]

    OBSERVER.phase_start("floor", kind, len(items), kind, None)  # outside the phase time, as in a run
    wl = workload(PROFILE_STORE)
    cpu0 = time.process_time()
    with recorder:
        outcome = await run_operations(wl.phases[kind], items, [worker_store(wl, engine, 0)], PhaseContext.for_seed(SEED), batch, hook, wl=wl)
    cpu = time.process_time() - cpu0
    return Sample(outcome.seconds, cpu, engine_ns), outcome.checksum


def run_b(
    plain: Callable[[Sequence[Any]], list[Any]], items: Sequence[Any], keep: bool = False
) -> tuple[Sample, list[Any]]:
    """B's loop, timed including dropping its results (A frees each batch's results inside
    the phase loop, after the fold; leaving B's to be freed after the clock stopped hid
    ~10 ms per 1_000 50-row queries of deallocation from B). ``keep``: return them."""
    cpu0, t0 = time.process_time(), time.perf_counter()
    out = plain(items)
    if not keep:
        out = []
    wall = time.perf_counter() - t0
    return Sample(wall, time.process_time() - cpu0), out


class FloorMismatch(Exception):
    """A and B disagree (results or stores): the comparison would be meaningless."""


def fold_of(kind: str, results: list[Any]) -> str:
    cs = Checksum()
    if workload(PROFILE_STORE).phases[kind].fold is Fold.IDS:
        cs.add_ints(results)
    else:
        cs.add_profiles(results)
    return cs.hex()


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
        for _ in range(args.repeats):
            s, _ = await run_a(kind, floor.engine, items, args.batch)
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
        if da != db:
            raise FloorMismatch(f"{floor.name} insert: A's and B's stores differ ({da} vs {db})")
    else:
        plain = floor.plain(kind)
        _, want = await run_a(kind, engine, items, args.batch)
        _, got = run_b(plain, items, keep=True)
        if kind == "update":
            da, db = floor.digests()
            if da != db:
                raise FloorMismatch(f"{floor.name} update: A's and B's stores differ ({da} vs {db})")
    if fold_of(kind, got) != want:
        raise FloorMismatch(f"{floor.name} {kind}: B's checksum {fold_of(kind, got)} != A's {want}")
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
    return _items(stream, args, plan.counts)


def _items(stream: str, args: argparse.Namespace, counts: Counts) -> int:
    cap: int = args.query_ops if stream in QUERY_STREAMS else args.point_ops  # argparse's values are Any
    if stream == "updates":
        cap = args.update_ops
    available: int = getattr(counts, stream_count(workload(PROFILE_STORE), stream))  # a Counts field, by name
    return min(cap, available)


def estimate(args: argparse.Namespace) -> float:
    """About how many seconds this floor run takes (asyncbench/tools/floor_estimate.py),
    from its flags alone: nothing is drawn or built."""
    counts = Counts.for_profiles(args.profiles, limit=LIMIT)
    items = [
        (kind, args.insert_profiles if stream is None else _items(stream, args, counts))
        for kind, stream in KINDS
        if args.kinds is None or kind in args.kinds
    ]
    return floor_seconds(args.engine, args.profiles, items, args.repeats, args.a_only)


def command_line(args: argparse.Namespace) -> str:
    """The effective command, every setting spelled out, so a table says how to redo it."""
    parts = [
        "python -m asyncbench floor",
        f"--engine {','.join(args.engine)}",
        f"--profiles {args.profiles}",
        f"--batch {args.batch}",
        f"--repeats {args.repeats}",
        f"--slices {args.slices}",
        f"--point-ops {args.point_ops}",
        f"--update-ops {args.update_ops}",
        f"--query-ops {args.query_ops}",
        f"--insert-profiles {args.insert_profiles}",
    ]
    if args.kinds is not None:
        parts.append(f"--kinds {','.join(k for k, _ in KINDS if k in args.kinds)}")
    if args.a_only:
        parts.append("--a-only")
    if args.pin is not None:
        parts.append(f"--pin {args.pin}")
    return " ".join(parts)


async def measure(args: argparse.Namespace) -> None:
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
            try:  # from the build on: a stop during it must close what it opened (Floor.close)
                t0 = time.perf_counter()
                await floor.build(Path(tmp) / name, plan, args.batch)
                print(
                    f"\n## {name}: store of {args.profiles:_d} profiles built through the engine in "
                    f"{time.perf_counter() - t0:.1f} s; loadavg {os.getloadavg()[0]:.2f}",
                    flush=True,  # benchmarks/floor_profile.py attaches py-spy on this line
                )
                print(
                    "\n| phase kind | ops/round | A µs/op | B µs/op | A/B wall median (min–max) "
                    "| A/B CPU median (min–max) | A/B of minima | engine share | A outside engine µs/batch "
                    "| ≤ 1.10 |"
                )
                print("| --- | ---: | ---: | ---: | --- | --- | ---: | ---: | ---: | --- |")
                for kind, stream in kinds:
                    if kind == "insert":
                        items: Sequence[Any] = range(1, args.insert_profiles + 1)
                    else:
                        assert stream is not None
                        items = phase_items(workload(PROFILE_STORE).phases[kind], stream, count_for(stream, args, plan), plan)
                    row = await measure_kind(floor, kind, items, args)
                    print(fmt_row(row, args.batch), flush=True)
            finally:
                with anyio.CancelScope(shield=True):  # a stop signal cancels the measurement, not the close
                    await floor.close()
            print(f"\n{name}: loadavg after {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"\ntotal {time.perf_counter() - t_start:.0f} s")


# --- the command ----------------------------------------------------------------------------


def _positive(text: str, most: int) -> int:
    try:
        n = parse_count(text)
    except (ValueError, IndexError) as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    if n < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive count")
    if n > most:
        raise argparse.ArgumentTypeError(f"{n:_d} is more than the {most:_d} this flag allows")
    return n


def _count(dest: str) -> Callable[[str], int]:
    """The parser of a count flag, bounded by :data:`FLAG_MAXIMA` (argparse names the flag)."""
    most = FLAG_MAXIMA[dest]

    def parse(text: str) -> int:
        return _positive(text, most)

    parse.__name__ = "count"  # argparse's message: "invalid count value"
    return parse


def _cpu(text: str) -> int:
    """A CPU number, read as strictly as every count (int() took ' 1' and '+1')."""
    try:
        return parse_count(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def engine_names(text: str, known: Sequence[str], which: str) -> list[str]:
    """``--engine a,b`` of a floor command: names among ``known`` (``which`` says what they
    are, for the refusal), at least one."""
    names = [n.strip() for n in text.split(",") if n.strip()]
    unknown = [n for n in names if n not in known]
    if unknown or not names:
        raise argparse.ArgumentTypeError(f"{', '.join(unknown) or repr(text)}: not one of {', '.join(known)} ({which})")
    return names


def _engines(text: str) -> list[str]:
    return engine_names(text, list(FLOORS), "the engines with a plain loop")


def _kinds(text: str) -> set[str]:
    names = {n.strip() for n in text.split(",") if n.strip()}
    known = [k for k, _ in KINDS]
    unknown = sorted(names - set(known))
    if unknown or not names:
        raise argparse.ArgumentTypeError(f"{', '.join(unknown) or repr(text)}: not one of {', '.join(known)}")
    return names


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The floor command's flags (every value checked here, so bad input exits 2 from argparse)
    and its short help's epilog: what it prints, its exit codes, two examples and where the
    method is written down (this module's docstring is the developer's manual, not --help)."""
    p = parser
    p.formatter_class = argparse.RawDescriptionHelpFormatter  # the epilog's lines as written
    p.epilog = """\
Times each phase kind through the real phase loop (A) against the plainest loop
with the same binding (B), interleaved on one store, and prints per engine a
table of µs per operation and the A/B ratios. It says how long it will take
first, and asks on a terminal when that is over 10 minutes (--yes: do not ask).

exit codes: 0 every A/B check held; 1 A's and B's results or stores differ;
2 bad arguments; 130 stopped (Ctrl-C, SIGTERM, SIGHUP).

examples:
  python -m asyncbench floor --profiles 200k --repeats 5 --pin 0
  python -m asyncbench floor --engine sqlite --kinds update

The method and a recorded run: docs/measurements.md and
docs/results/floor-200k.md."""
    p.add_argument(
        "--engine", default=_engines("rocksdb,sqlite"), type=_engines, help=f"comma separated: {', '.join(FLOORS)}"
    )
    for flag, default, what in (
        ("--profiles", 200_000, "profiles in the store (e.g. 200k)"),
        ("--batch", 1_000, "operations per batch"),
        ("--repeats", 5, "timed interleaved rounds per kind"),
        ("--slices", 8, "A/B pairs per round"),
        ("--point-ops", 40_000, "reads and lookups per round"),
        ("--update-ops", 10_000, "updates per round"),
        ("--query-ops", 4_000, "scans and queries per round"),
        ("--insert-profiles", 20_000, "per round, into fresh stores"),
    ):
        dest = flag[2:].replace("-", "_")
        p.add_argument(flag, type=_count(dest), default=default, help=f"{what}; at most {FLAG_MAXIMA[dest]:_d}")
    p.add_argument(
        "--yes",
        action="store_true",
        help="start without asking, even when the estimate is over 10 minutes (asked only on a terminal)",
    )
    p.add_argument(
        "--kinds", type=_kinds, default=None, help=f"comma separated phase kinds (default: all): {', '.join(k for k, _ in KINDS)}"
    )
    p.add_argument(
        "--a-only",
        action="store_true",
        help="time only A (read/scan/query kinds), e.g. under py-spy: benchmarks/floor_profile.py",
    )
    p.add_argument("--dir", type=Path, default=None, help="existing parent directory of the temporary stores")
    p.add_argument("--pin", type=_cpu, default=None, metavar="CPU", help="run every thread on this CPU")


def run(args: argparse.Namespace) -> int:
    """Run the floor benchmark with parsed ``args``; the exit code (see the module docstring)."""
    if args.a_only and (args.kinds is None or args.kinds & set(WRITE_KINDS)):
        print("asyncbench floor: --a-only times the read, scan and query kinds: pass --kinds without "
              f"{' or '.join(WRITE_KINDS)}", file=sys.stderr)
        return 2
    if args.dir is not None and not args.dir.is_dir():
        print(f"asyncbench floor: --dir {escape_unprintable(str(args.dir))}: not an existing directory", file=sys.stderr)
        return 2
    if args.pin is not None:  # before any thread starts: threads inherit the mask
        try:
            os.sched_setaffinity(0, {args.pin})
        except (OSError, ValueError) as exc:
            print(f"asyncbench floor: --pin {args.pin}: {exc}", file=sys.stderr)
            return 2
    print(f"command: {command_line(args)}")
    seconds = estimate(args)
    print(f"estimate: about {duration(seconds)} ({ESTIMATE_BASIS})", flush=True)
    if not ask_to_start(f"this floor run of about {duration(seconds)}", seconds, args.yes, sys.stdin, sys.stdout):
        return 0
    stop = StopSignals("closing the engines and removing the floor's temporary stores")
    stop.install()  # before the loop runs and after it: no stop signal takes its default action
    try:
        anyio.run(measure_until_stopped, args, stop, backend="asyncio", backend_options=backend_options())
    except FloorMismatch as exc:
        stop.restore()
        print(f"asyncbench floor: {exc}", file=sys.stderr)
        return 1
    if stop.interrupted:  # the process is on its way out: a late second signal is absorbed, not a kill
        return EXIT_INTERRUPTED
    stop.restore()
    return 0


async def measure_until_stopped(args: argparse.Namespace, stop: StopSignals) -> None:
    """:func:`measure`, in a cancel scope the first SIGINT, SIGTERM or SIGHUP cancels: the
    run's own stop policy (:class:`~asyncbench.run.observe.signals.StopSignals`: later signals
    absorbed, a third Ctrl-C forces the exit). The event loop's own SIGINT handling (a
    native cancel of the main task) was at times lost inside the measurement's awaits: the
    floor went on building its store and the stop-signal test timed out. A scope's cancel
    is the one every await honours; the stores' ``with`` and the shielded close still run,
    so the temporary stores are removed."""
    failed: Exception | None = None
    async with anyio.create_task_group() as tg:
        scope = anyio.CancelScope()
        tg.start_soon(stop.watch, scope)  # (a signal before it starts is seen when it does)
        with scope:
            try:
                await measure(args)
            except Exception as exc:  # raised as itself below, not in the task group's ExceptionGroup
                failed = exc
        tg.cancel_scope.cancel()  # the measurement ended: stop watching
    if failed is not None:
        raise failed


ESTIMATE_BASIS = "scaled from docs/results/floor-200k.md, measured on a 2-vCPU machine"


def main(argv: Sequence[str]) -> int:
    """``python -m asyncbench floor [flags]``."""
    parser = argparse.ArgumentParser(
        prog="python -m asyncbench floor",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_arguments(parser)
    return run(parser.parse_args(list(argv)))
