"""Whether the machine, not the client or the server, limited a scaled-out phase.

The coordinator's bottleneck line used to say "the server was the limit" whenever no client
process was busy 80 % of a phase: on a 2-core machine shared by K client processes, the
coordinator and the server at a load of 6-7 that blames the server for a shortage of cores
(issue 34). Two signs of a saturated machine are measured per phase, in every process of
ours (each client process, and the coordinator):

- the time its threads waited on the run queue for a CPU while runnable (Linux
  ``/proc/self/task/*/schedstat``, second field, ns): a process that waits a tenth of the
  phase for a core is slowed by the machine, whatever its own CPU share;
- the host's 1-minute load average against its CPUs (a lagging but independent view).

A phase with either sign is *machine-bound*: the line says so and names neither the client
nor the server as the limit.
"""

from __future__ import annotations

import os
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from asyncbench.measure.stats import BUSY_CPU_PERCENT, CLIENT_BOUND_BUSY, NoiseSnapshot

__all__ = [
    "CLIENT_BOUND_BUSY",
    "SATURATED_LOAD_PER_CPU",
    "SATURATED_WAIT_SHARE",
    "PhaseLoad",
    "bottleneck_line",
    "host_load",
    "loaded_machine_warning",
    "runqueue_wait_seconds",
    "thread_wait_seconds",
]

#: A process of ours that waited this fraction of a phase's time for a CPU: the machine is short of cores.
SATURATED_WAIT_SHARE = 0.1
#: A host whose 1-minute load average is at least its CPU count is saturated.
SATURATED_LOAD_PER_CPU = 1.0


def runqueue_wait_seconds() -> float | None:
    """Seconds this process's threads (those alive now) have waited on a run queue while
    runnable, since each started; None where the kernel does not say (not Linux)."""
    total = 0
    try:
        tasks = os.listdir("/proc/self/task")
    except OSError:
        return None
    seen = False
    for tid in tasks:
        try:
            with open(f"/proc/self/task/{tid}/schedstat") as f:
                fields = f.read().split()
        except OSError:  # the thread ended meanwhile
            continue
        if len(fields) >= 2:
            total += int(fields[1])
            seen = True
    return total / 1e9 if seen else None


def thread_wait_seconds() -> float | None:
    """Seconds the calling thread has waited on a run queue while runnable, since it
    started (Linux ``/proc/thread-self/schedstat``); None where the kernel does not say.
    A capacity probe reads it on the event loop's thread, the client's: its wait is the
    machine taking the client's time (asyncbench.run.capacity.capacity)."""
    try:
        with open("/proc/thread-self/schedstat") as f:
            fields = f.read().split()
    except OSError:
        return None
    return int(fields[1]) / 1e9 if len(fields) >= 2 else None


def host_load() -> tuple[float | None, int]:
    """This host's 1-minute load average (None if unknown) and the CPUs this process may use."""
    try:
        load: float | None = os.getloadavg()[0]
    except OSError:
        load = None
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cpus = os.cpu_count() or 1
    return load, cpus


@dataclass(frozen=True)
class PhaseLoad:
    """One operation phase, as the bottleneck line weighs it."""

    busiest: float  # the busiest client process's CPU seconds / phase seconds
    wait_share: float | None = None  # the largest run-queue wait of our processes / phase seconds
    load_per_cpu: float | None = None  # the highest load average / CPUs of the hosts involved

    @property
    def machine_bound(self) -> bool:
        return (self.wait_share is not None and self.wait_share >= SATURATED_WAIT_SHARE) or (
            self.load_per_cpu is not None and self.load_per_cpu >= SATURATED_LOAD_PER_CPU
        )


def bottleneck_line(phases: Sequence[PhaseLoad]) -> str:
    """The report's bottleneck fact over a run's operation phases: how many were
    client-bound, how many machine-bound (and how saturated), and the server named as the
    limit only when neither."""
    busy = [p.busiest for p in phases]
    bound = sum(b >= CLIENT_BOUND_BUSY for b in busy)
    line = (
        f"client-bound in {bound} of {len(phases)} operation phases (the busiest client process's "
        f"CPU at least {CLIENT_BOUND_BUSY:.0%} of the phase time; median {statistics.median(busy):.0%})"
    )
    saturated = [p for p in phases if p.machine_bound]
    if saturated:
        waits = [p.wait_share for p in saturated if p.wait_share is not None]
        loads = [p.load_per_cpu for p in saturated if p.load_per_cpu is not None]
        signs = []
        if loads:
            signs.append(f"load average up to {max(loads):.1f} per CPU")
        if waits:
            signs.append(f"a process of this run waited up to {max(waits):.0%} of a phase for a CPU")
        return (
            f"{line}; machine-bound in {len(saturated)} of {len(phases)} ({', '.join(signs)}): the client "
            "processes, the coordinator and the server competed for too few cores, so these figures "
            "measure the machine, not the server (give the client processes cores, or hosts, of their own)"
        )
    return line + ("" if bound else ": the server (or the network) was the limit")


#: Other processes together using this much of one CPU (percent) compete with a run.
BUSY_OTHERS_PERCENT = 100.0


def loaded_machine_warning(snap: NoiseSnapshot, load_at_start: float | None) -> str | None:
    """A single run's warning that the machine was busy (None: it was not), naming the load
    average it started at and the other busy processes, as ``--repeat``'s advice does.

    Judged on the load at the run's *start* (the load at its end counts the run's own work)
    against :data:`SATURATED_LOAD_PER_CPU`, and on what the other processes use now
    (``snap.busy`` leaves this one out; the run's children have ended)."""
    busy = sorted((p for p in snap.busy if p.cpu_percent >= BUSY_CPU_PERCENT), key=lambda p: -p.cpu_percent)
    load = snap.load_avg[0] if load_at_start is None else load_at_start
    loaded = load >= snap.cpu_count * SATURATED_LOAD_PER_CPU
    if not loaded and sum(p.cpu_percent for p in busy) < BUSY_OTHERS_PERCENT:
        return None
    shown = ", ".join(f"{p.name} (pid {p.pid}) {p.cpu_percent:.0f}%" for p in busy[:5])
    more = f" and {len(busy) - 5} more" if len(busy) > 5 else ""
    others = f"; other busy processes: {shown}{more}" if busy else ""
    return (
        f"WARNING: a loaded machine: load average {load:.2f} (1 min) at the start on "
        f"{snap.cpu_count} CPUs{others}. This run's figures vary with them: run it on an idle "
        "machine, or with --repeat 5 to see by how much."
    )
