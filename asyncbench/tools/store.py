"""Building a benchmark's store through the engine, as a run builds it: the setup that
``asyncbench floor`` and the scripts under ``benchmarks/`` share.

Why one copy: each tool sets its figures against a run's, so each must get its engine,
its plan and its store the way the runner does (a registry engine with default settings,
the reference plan's seed and result limit, the insert phase kind through the real phase
loop); several copies could drift apart without any of the tools noticing. It lives in
the installed package (not under ``benchmarks/``) so the floor command can use it.
"""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from asyncbench.engine import EngineConfig
from asyncbench.engines import engine_class
from asyncbench.run.phase.dispatch import run_operations
from asyncbench.run.phase.phase_loop import PhaseOutcome
from asyncbench.workloads import workload
from asyncbench.workloads.profile_store.phases import PhaseContext
from asyncbench.workloads.profile_store.plan import Counts, Plan, draw_plan

__all__ = ["LIMIT", "OPERATION_PHASES", "SEED", "draw", "load", "new_engine"]

SEED = 570123434  # the reference plan's
#: The workload these tools measure: the profile store's phases, plan and checksums.
PROFILE_STORE = "profile_store"
LIMIT = 50  # rows per scan or query, as in the reference plan

#: The reference plan's operation phase kinds with the plan stream each consumes (None:
#: insert walks the profile ids), in the plan's order: insert first (it loads the
#: store), updates last (every read kind sees the store as inserted).
OPERATION_PHASES: tuple[tuple[str, str | None], ...] = (
    ("insert", None),
    ("read_by_id", "reads"),
    ("lookup_by_email", "email_reads"),
    ("scan_country_status", "queries"),
    ("query_country_status", "queries"),
    ("scan_created_at", "ranges"),
    ("query_created_at", "ranges"),
    ("scan_top_reputation", "queries"),
    ("query_top_reputation", "queries"),
    ("update", "updates"),
)


def draw(profiles: int) -> Plan:
    """The reference plan's operation streams for a store of ``profiles`` profiles."""
    return draw_plan(Counts.for_profiles(profiles, limit=LIMIT), SEED)


def new_engine(
    name: str,
    data_dir: Path | None = None,
    *,
    workers: int = 1,
    prefix: str = "asyncbench-bench-",
    workload_name: str = PROFILE_STORE,
) -> Any:
    """Registry engine ``name`` with its default settings (a server engine's connection
    from the usual environment, e.g. ``eval "$(scripts/postgres-server start)"``) for
    ``workers`` workers, on ``data_dir`` or else a new temporary directory named
    ``prefix...``, keeping the stores ``workload_name`` declares; not opened."""
    if data_dir is None:
        data_dir = Path(tempfile.mkdtemp(prefix=prefix))
    stores = workload(workload_name).kv_stores
    return engine_class(name)(EngineConfig(name, data_dir, {}, LIMIT, SEED, workers, stores))


def _no_hook(worker: int, index: int, ops: int, seconds: float, marks: list[int]) -> None:
    pass


async def load(handles: Sequence[Any], profiles: int, batch: int = 1_000) -> PhaseOutcome:
    """Insert profiles 1..``profiles`` into an open store as a run's insert phase does: the
    phase loop with the insert kind, batches of ``batch``, one worker per handle."""
    items = range(1, profiles + 1)
    wl = workload(PROFILE_STORE)
    return await run_operations(
        wl.phases["insert"], items, list(handles), PhaseContext.for_seed(SEED), batch, _no_hook, wl=wl
    )
