"""What a run will run, counted from its config alone: the phases (a reuse run leaves out
some) and the operations each phase's stream holds.

Apart from the estimate (:mod:`asyncbench.run.estimate`, which calibrates engines and so
reaches the runner) so the checks before a run (:mod:`asyncbench.run.checks.preflight`,
:mod:`asyncbench.run.checks.memory_need`, which the runner's own validation calls) can count
without an import cycle through the runner.
"""

from __future__ import annotations

from asyncbench.config import BenchConfig, PhaseSpec
from asyncbench.run.reuse import reuse
from asyncbench.workload import Action, Items
from asyncbench.workload_capabilities import stream_count, verify_ops

__all__ = ["running_phases", "stream_operations"]


def running_phases(cfg: BenchConfig) -> list[PhaseSpec]:
    """The phases the run will run: a reuse run (``reuse_data``) leaves out the writes and
    the reads of the other side of the updates (:func:`asyncbench.run.reuse.reuse.skip_reason`;
    the store was built by this plan's writes, so it holds updated profiles when they
    rewrite any), and an estimate of them would count time never spent."""
    if not cfg.reuse_data:
        return list(cfg.phases)
    wl = cfg.workload_impl
    updated = reuse.updated({"writes": reuse.writes(cfg.phases, wl)}, wl)
    return [s for s in cfg.phases if reuse.skip_reason(s, updated, wl) is None]


def stream_operations(cfg: BenchConfig, profiles: int) -> list[tuple[PhaseSpec, int]]:
    """Each phase the run will run with the operations its stream holds for ``profiles``."""
    counts = cfg.counts_for(profiles)
    out = []
    for spec in running_phases(cfg):
        kind = cfg.workload_impl.phases[spec.kind]
        ops = 0
        if kind.items is Items.PROFILE_IDS:
            ops = profiles
        elif kind.takes_stream and spec.stream is not None:
            ops = spec.count if spec.count is not None else getattr(counts, stream_count(cfg.workload_impl, spec.stream))
        elif kind.action is Action.VERIFY:
            ops = verify_ops(cfg.workload_impl)
        elif spec.operations is not None:  # a workload's own size of a phase (YCSB's mixed)
            ops = spec.operations
        out.append((spec, ops))
    return out
