"""The estimate's memory figure, and the refusal of a run that can never fit this machine.

Issue 52 item 3: a legal request (YCSB records of 1 MiB, a large ``--profiles`` on the
memory engine) ran until ``MemoryError`` or the kernel killed it. Two parts of a run's
memory grow with what the plan asks, and both are known before it runs:

* **the batches in flight**: a worker builds the records of its batch before the engine
  writes them (a load's ``batch_size`` records at once), so ``min(P x batch_size,
  records)`` records are in memory together, whatever the engine;
* **a store held in the process**: an engine that keeps nothing on disk (not
  ``persistent``: the memory engine) holds every record loaded.

Plus the process's own :data:`FIXED_BYTES` (interpreter, imports, the plan). What one
record costs is the workload's own measured figure (``Workload.record_memory``); the
measurements are in ``benchmarks/bench_memory_per_record.py`` (its docstring says how):
peak RSS of the engine's child at two sizes, the slope per record.

An engine on disk keeps its own caches and write buffers on top, which depend on the
engine and its settings (with YCSB records of 100 kB, 1 GB loaded: peak RSS 2.0 GB for
the LSM, 1.3 GB SQLite, 0.9 GB RocksDB); they are not modelled, and the figure says it is
that engine's floor.

Refused or warned: the records themselves (the batches in flight, and every record of a
store held in the process, at their bytes alone) must be in memory at the same moment, so
when that floor exceeds the machine's memory and swap no run can finish: refused before
anything is created (:func:`check_memory`, exit 2, naming the key). The modelled figure
above the memory available now is a warning in the estimate (:func:`memory_lines`): other
processes may free memory, and it is the user's call.
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass

import psutil

from asyncbench import fmt
from asyncbench.config import RUN_KEYS, BenchConfig, ConfigError
from asyncbench.engines import engine_class

__all__ = ["FIXED_BYTES", "Machine", "MemoryNeed", "check_memory", "memory_lines", "memory_needs"]

#: The process before any record: interpreter, imports, the drawn plan's state. Measured as
#: the fixed part of the memory engine's peak RSS (59 MiB on both workloads,
#: ``benchmarks/bench_memory_per_record.py``); rounded up.
FIXED_BYTES = 64 * 1024 * 1024


@dataclass(frozen=True)
class Machine:
    """This machine's memory: ``total`` physical, ``available`` now, ``swap`` total."""

    total: int
    available: int
    swap: int

    @classmethod
    def now(cls) -> Machine:
        vm = psutil.virtual_memory()
        return cls(vm.total, vm.available, psutil.swap_memory().total)


@dataclass(frozen=True)
class MemoryNeed:
    """One engine's memory at its largest level."""

    engine: str
    records: int  # the largest level's record (profile) count
    in_process: bool  # the engine holds its store in the process
    floor: int  # the records that must be in memory at once, at their bytes alone
    about: int  # the model: fixed part, batches in flight, a store held in the process


def _in_process(name: str) -> bool:
    """The engine keeps its store in this process's memory (nothing persists)."""
    try:
        return not engine_class(name).persistent
    except Exception:  # unknown, unavailable, or a plug-in that cannot be built (any error):
        return False  # the run names it and fails that engine at its open; nothing is assumed


def _writes_records(cfg: BenchConfig) -> bool:
    """A running phase builds records to write (an insert or a load; not on a reused store)."""
    from asyncbench.run.sequence.plan_operations import running_phases

    return any(cfg.workload_impl.phases[spec.kind].inserts for spec in running_phases(cfg))


def memory_needs(cfg: BenchConfig) -> list[MemoryNeed]:
    """Each engine's memory at the plan's largest level (levels run one after another)."""
    per = cfg.workload_impl.record_memory(cfg.workload_settings)
    writes = _writes_records(cfg)
    out = []
    for name in cfg.engines:
        held = _in_process(name)
        best: MemoryNeed | None = None
        for level in cfg.levels():
            n = level.profiles
            flight = min(level.parallelism * cfg.batch_size, n) if writes else 0
            floor = flight * per.built + (n * per.built if held else 0)
            about = FIXED_BYTES + flight * per.built + (n * per.kept if held else 0)
            if best is None or about > best.about:
                best = MemoryNeed(name, n, held, floor, about)
        if best is not None:
            out.append(best)
    return out


def check_memory(cfg: BenchConfig, flags: frozenset[str] = frozenset(), machine: Machine | None = None) -> None:
    """Refuse a plan whose records alone cannot fit this machine's memory and swap, naming
    the key that sized it: the record count for an engine that holds its store in the
    process, else the parallelism (each worker's batch of records is built at once); as
    the flag when ``flags`` holds it (``--records`` or ``--profiles``, ``--parallelism``)."""
    machine = Machine.now() if machine is None else machine
    limit = machine.total + machine.swap
    for need in memory_needs(cfg):
        if need.floor <= limit:
            continue
        unit = cfg.workload_impl.unit
        per = cfg.workload_impl.record_memory(cfg.workload_settings).built
        if need.in_process:
            size = RUN_KEYS["profiles"]
            flag = next((f for f in (size.flag, *size.flag_aliases) if f in flags), "--records")
            where, key = _key(cfg, flags, flag, f"run.{cfg.size_key}")
            why = (
                f"engine {need.engine!r} keeps every record in this process's memory: {fmt.count(need.records)} "
                f"{unit} of {fmt.size(per)} each"
            )
        else:
            where, key = _key(cfg, flags, "--parallelism", "run.parallelism")
            why = (
                f"each worker builds its batch of {fmt.count(cfg.batch_size)} {unit} of {fmt.size(per)} each "
                f"before engine {need.engine!r} writes them"
            )
        raise ConfigError(
            where,
            key,
            f"{why}: at least {fmt.size(need.floor)} in memory at once, more than this machine's "
            f"{fmt.size(machine.total)} of memory and {fmt.size(machine.swap)} of swap; lower it"
            + ("" if need.in_process else " or batch_size")
            + ", or choose smaller records",
        )


def _key(cfg: BenchConfig, flags: frozenset[str], flag: str, key: str) -> tuple[str, str]:
    """Where a setting came from: its flag on the command line, else the plan's key."""
    return ("command line", flag) if flag in flags else (cfg.source, key)


def memory_lines(cfg: BenchConfig, machine: Machine | None = None) -> list[str]:
    """The estimate's memory lines: each engine's figure at its peak, this machine's memory,
    and a warning for each engine whose figure is over the memory available now."""
    machine = Machine.now() if machine is None else machine
    needs = memory_needs(cfg)
    if not needs:
        return []
    figures = ", ".join(
        f"{n.engine} {'about' if n.in_process else 'at least'} {fmt.size(n.about)}" for n in needs
    )
    on_disk = " (engines on disk: their own caches not counted)" if not all(n.in_process for n in needs) else ""
    out = textwrap.wrap(f"memory at the peak: {figures}{on_disk}", 78, initial_indent="  ", subsequent_indent="   ")
    out.append(f"  this machine: {fmt.size(machine.available)} available of {fmt.size(machine.total)}")
    for n in needs:
        if n.about > machine.available:
            out += textwrap.wrap(
                f"warning: {n.engine} needs {'about' if n.in_process else 'at least'} {fmt.size(n.about)} "
                f"at {fmt.count(n.records)} {cfg.workload_impl.unit}, more than the {fmt.size(machine.available)} "
                "available now: it may fail with MemoryError or be killed",
                78,
                initial_indent="  ",
                subsequent_indent="   ",
            )
    return out
