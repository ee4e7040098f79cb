"""What a plan's counts cost the harness itself, checked before anything runs (issue 23 item 12).

The plan's streams are drawn as they are consumed and a phase's latency marks go to a
temporary file, so the harness's memory does not grow with the counts: a huge count is
slow, not impossible, and the run says so before it starts (:func:`notes`). Two things
still grow, and a plan that cannot fit them is refused with the file and key that made it
so (:func:`check_scale`, exit 2), instead of a MemoryError or a full disk hours later:

* per batch, ~:data:`BYTES_PER_BATCH` of bookkeeping in memory (its ops, seconds, first
  stamp, p99 and max, and the log row built from them), so a phase of ``ops /
  batch_size`` batches needs that much memory: refused above the machine's physical memory;
* per operation of the phase, 8 bytes of latency marks on disk in the system's temporary
  directory (the spill file, deleted after the phase): refused above the free space there.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

import psutil

from asyncbench import fmt
from asyncbench.config import BenchConfig, ConfigError
from asyncbench.workload import Items
from asyncbench.workload_capabilities import stream_count

__all__ = ["BYTES_PER_BATCH", "MARK_BYTES", "LargestPhase", "check_scale", "largest_phase", "notes"]

#: Harness memory per batch of a phase, kept until the phase's figures are written: ~70 bytes
#: in arrays (latency_recorder.PhaseRecorder) plus a log row handed out 10_000 at a time; with margin.
BYTES_PER_BATCH = 128
#: Disk per operation of a phase: one int64 latency stamp in the spill file.
MARK_BYTES = 8
#: Skipping one NextInt64 draw in the compiled kernel (~50 ns measured on a 2-vCPU guest;
#: the pure-Python fallback is ~30x slower), for the "drawing the plan" note.
SKIP_SECONDS_PER_DRAW = 50e-9


@dataclass(frozen=True)
class LargestPhase:
    ops: int
    profiles: int
    key: str  # the plan key (or flag) that sets its size
    where: str  # the file, or "command line"


def largest_phase(cfg: BenchConfig, size_flag: str | None = None) -> LargestPhase | None:
    """The operation phase with the most operations over every record count, and the key
    that sized it: its ``count``, an explicit ``[counts]`` entry, or the record count (the
    flag that set it, ``size_flag``: ``--records`` or ``--profiles``, else the plan's key as
    the plan spells it)."""
    by_profiles = ("command line", size_flag) if size_flag else (cfg.source, f"run.{cfg.size_key}")
    best: LargestPhase | None = None
    for profiles in cfg.profiles:
        counts = cfg.counts_for(profiles)
        for i, ph in enumerate(cfg.phases):
            kind = cfg.workload_impl.phases[ph.kind]
            if kind.items is Items.PROFILE_IDS:
                ops, (where, key) = profiles, by_profiles
            elif kind.takes_stream and ph.stream is not None:
                name = stream_count(cfg.workload_impl, ph.stream)
                if ph.count is not None:
                    ops, where, key = ph.count, cfg.source, f"phase[{i}].count"
                elif name in cfg.counts:
                    ops, where, key = getattr(counts, name), cfg.source, f"counts.{name}"
                else:
                    ops, (where, key) = getattr(counts, name), by_profiles
            elif ph.operations is not None:  # a workload's own size of the phase (YCSB's mixed)
                ops, where, key = ph.operations, cfg.source, f"phase[{i}].operations"
            else:
                continue
            if best is None or ops > best.ops:
                best = LargestPhase(ops, profiles, key, where)
    return best


def _free_disk(path: Path) -> int:
    """Free bytes on the file system that holds (or will hold) ``path``."""
    for p in (path, *path.parents):
        if p.exists():
            return shutil.disk_usage(p).free
    return shutil.disk_usage(os.getcwd()).free


def check_scale(
    cfg: BenchConfig,
    size_flag: str | None = None,
    memory_bytes: int | None = None,
    free_disk_bytes: int | None = None,
) -> None:
    """Refuse, naming the key, a plan whose largest phase cannot fit this machine."""
    phase = largest_phase(cfg, size_flag)
    if phase is None:
        return
    memory = psutil.virtual_memory().total if memory_bytes is None else memory_bytes
    batches = -(-phase.ops // cfg.batch_size)
    need = batches * BYTES_PER_BATCH
    if need > memory:
        raise ConfigError(
            phase.where,
            phase.key,
            f"{phase.ops:_d} operations in one phase at batch_size {cfg.batch_size:_d} are {batches:_d} "
            f"batches; the harness keeps about {BYTES_PER_BATCH} bytes per batch until the phase ends "
            f"({fmt.size(need)}), more than this machine's {fmt.size(memory)} of memory: lower it or "
            "raise batch_size",
        )
    spill = Path(tempfile.gettempdir())
    free = _free_disk(spill) if free_disk_bytes is None else free_disk_bytes
    marks = phase.ops * MARK_BYTES
    if marks > free:
        raise ConfigError(
            phase.where,
            phase.key,
            f"{phase.ops:_d} operations in one phase keep {fmt.size(marks)} of latency marks "
            f"({MARK_BYTES} bytes each) in a temporary file under {spill} (TMPDIR), which has "
            f"{fmt.size(free)} free",
        )


def notes(cfg: BenchConfig) -> list[str]:
    """Lines for the size printed before a run: what large counts cost besides time."""
    out = []
    for profiles in cfg.profiles:
        c = cfg.counts_for(profiles)
        # every stream but the last is skipped once per engine (id and range draws; the
        # country/status pairs cost ~10x less and are left out)
        streams = ("reads", "email_reads", "queries", "updates", "post_reads", "post_email_reads")
        draws = sum(getattr(c, n, 0) for n in streams)  # a workload without them draws otherwise
        seconds = draws * SKIP_SECONDS_PER_DRAW
        if seconds >= 10:
            out.append(
                f"  plan at {fmt.count(profiles)} profiles: streams are drawn as they are consumed (the "
                f"harness's memory stays flat), after a skip pass of about {round(seconds):_d} s per engine"
            )
    return out
