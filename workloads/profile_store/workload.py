"""The profile-store workload as the framework sees it: :class:`asyncbench.workload.Workload`.

One object gathers what the runner, config, report and estimate need of this workload
(its phase table, plan, checksums and reference tables), so they reach it through the
registry (:mod:`asyncbench.workloads`) and name none of this package's modules.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from asyncbench.workload import (
    MixFigures,
    PhaseKind,
    RecordMemory,
    RecoveryCounts,
    SettingError,
    Workload,
)
from asyncbench.workload_capabilities import (
    BatchContext,
    CompiledKernels,
    CrashRecovery,
    MixedPhases,
    OwnStoreEngines,
    PhaseParams,
    ReferenceTables,
    ReuseProof,
    StreamCounts,
    Verifies,
)
from asyncbench.workloads.profile_store import kernels, published
from asyncbench.workloads.profile_store.checksum import Checksum, combine
from asyncbench.workloads.profile_store.expected import verify_expected
from asyncbench.workloads.profile_store.kv_recovery import STORE_NAMES
from asyncbench.workloads.profile_store.logical_bytes import plan_writes
from asyncbench.workloads.profile_store.mix import MixedOps, mix_figures, mixed_params
from asyncbench.workloads.profile_store.phases import (
    PHASES,
    VERIFY_OPS,
    PhaseContext,
    phase_items,
    verify_checksum,
)
from asyncbench.workloads.profile_store.plan import COUNT_NAMES, Counts, Plan, draw_plan, stream_count
from asyncbench.workloads.profile_store.recovery import CRASH_KINDS, check_recovery
from asyncbench.workloads.profile_store.reference import (
    REFERENCE_CHECKSUMS,
    REFERENCE_PROFILES,
    REFERENCE_QUERIES,
    REFERENCE_SEED,
)
from asyncbench.workloads.profile_store.store import ProfileStore
from asyncbench.workloads.profile_store.stores import own_store_problem, profile_store

__all__ = ["CAPABILITIES", "WORKLOAD", "ProfileStoreWorkload"]


class ProfileStoreWorkload:
    """The reference profile store: users with secondary indexes, read, scanned, updated.

    Beyond :class:`~asyncbench.workload.Workload` it has the capabilities of
    :data:`CAPABILITIES` (:mod:`asyncbench.workload_capabilities`). Not others: no settings
    table of its own ([run] and [counts] say everything), no file format, and no phase may
    run for a duration (its checksums fold in order, an FNV chain per worker, so a prefix of
    a stream has no checksum another P could match)."""

    name = "profile_store"
    unit = "profiles"
    #: A profile and its four index entries: five stores (as the reference's RocksDB run).
    kv_stores: tuple[str, ...] = STORE_NAMES
    phases: Mapping[str, PhaseKind] = PHASES
    count_names: tuple[str, ...] = COUNT_NAMES
    verify_ops = VERIFY_OPS
    verify_note: str | None = (
        "final (verify) counts 4 operations: after the reopen, one count of the stored profiles and "
        "three point reads (the first profile, the middle one and the last); its checksum folds the "
        "count and the three profiles."
    )
    reference_checksums: Mapping[str, str] = REFERENCE_CHECKSUMS

    def check_size(self, profiles: int, phases: Sequence[tuple[str, Mapping[str, Any]]]) -> None:
        return None  # its mixed phase's values do not depend on the profile count

    def record_memory(self, settings: Mapping[str, Any]) -> RecordMemory:
        """A profile is a tuple of nine Python objects: 592 bytes on average with its fields
        (``sys.getsizeof`` of the tuple and each field, over 20_000 generated profiles),
        rounded down (``built`` is part of the floor a plan is refused by); the memory engine
        keeps it with its email and three index keys: its peak RSS grew 1_288 bytes a profile
        from 50_000 to 100_000 profiles of ``benchmarks/quick.toml``
        (``benchmarks/bench_memory_per_record.py``), rounded up."""
        return RecordMemory(built=580, kept=1_400)

    def phase_params(self, kind: PhaseKind, table: Mapping[str, Any], settings: Mapping[str, Any]) -> dict[str, Any]:
        if kind.mixes:
            return mixed_params(table)
        if table:
            raise SettingError(sorted(table)[0], "unknown key")
        return {}

    def stream_count(self, stream: str) -> str:
        return stream_count(stream)

    def counts(self, profiles: int, limit: int, overrides: Mapping[str, int], settings: Mapping[str, Any]) -> Counts:
        return Counts.for_profiles(profiles, limit=limit, **overrides)

    def draw_plan(self, counts: Counts, seed: int) -> Plan:
        return draw_plan(counts, seed)

    def phase_items(
        self, kind: PhaseKind, stream: str | None, count: int | None, plan: Plan, params: Mapping[str, Any]
    ) -> Sequence[Any]:
        return phase_items(kind, stream, count, plan, params)

    def context(self, seed: int) -> PhaseContext:
        return PhaseContext.for_seed(seed)

    def mix_figures(self, kind: PhaseKind, items: Sequence[Any]) -> MixFigures | None:
        """The mixed phase's kinds and skew; None for every other phase (one kind each)."""
        return mix_figures(items) if isinstance(items, MixedOps) else None

    def checksum(self) -> Checksum:
        return Checksum()

    def combine(self, hexes: Sequence[str]) -> str:
        return combine(list(hexes))

    def store(self, primitives: Any, limit: int) -> ProfileStore:
        return profile_store(primitives, limit)

    def own_store_problem(self, engine_class: type) -> str | None:
        return own_store_problem(engine_class)

    async def verify_checksum(self, store: ProfileStore, records: int) -> str:
        return await verify_checksum(store, records)

    def plan_writes(
        self, phases: Sequence[tuple[PhaseKind, str | None, int | None]], plan: Plan, seed: int
    ) -> list[tuple[int | None, int]]:
        return plan_writes(phases, plan, seed)

    def verify_expected(self, plan: Plan, rewrites: Sequence[tuple[str, int | None]]) -> str:
        return verify_expected(plan, rewrites)

    def can_crash(self, kind: PhaseKind) -> bool:
        return kind.kind in CRASH_KINDS

    def crash_problem(self, kind: PhaseKind, params: Mapping[str, Any]) -> str | None:
        return None  # its phases take no keys of their own: a kind that can crash always can

    def changes_records(self, kind: PhaseKind, params: Mapping[str, Any]) -> bool:
        return kind.rewrites or kind.mixes

    async def check_recovery(
        self,
        store: ProfileStore,
        plan: Plan,
        kind: PhaseKind,
        stream: str | None,
        count: int | None,
        acknowledged: int,
        params: Mapping[str, Any],
    ) -> RecoveryCounts:
        items = phase_items(kind, stream, count, plan)
        return await check_recovery(store, plan, kind, items, acknowledged)

    @property
    def accelerated(self) -> bool:
        return kernels.ACCELERATED

    def kernels_status(self) -> str:
        return kernels.status_line()

    def is_reference_run(self, profiles: int, seed: int, limit: int, parallelism: int, counts: Mapping[str, int]) -> bool:
        c = counts
        return (
            profiles == REFERENCE_PROFILES
            and seed == REFERENCE_SEED
            and limit == 50
            and parallelism == 1
            and c.get("queries") == c.get("post_queries") == REFERENCE_QUERIES
            and all(c.get(k) == REFERENCE_PROFILES for k in ("reads", "email_reads", "updates", "post_reads"))
            and c.get("post_email_reads") == REFERENCE_PROFILES
        )

    def published_checksums(
        self, profiles: int, parallelism: int, limit: int, seed: int, counts: Mapping[str, int]
    ) -> dict[str, str] | None:
        return published.published_checksums(profiles, parallelism, limit, seed, dict(counts))

    def published_configurations(self) -> list[tuple[int, int, int]]:
        return published.published_configurations()


_IMPL = ProfileStoreWorkload()
#: The instance the registry hands out.
WORKLOAD: Workload = _IMPL  # typed: mypy holds the class to the interface
#: The optional capabilities it implements, typed so that mypy holds the class to each
#: (``isinstance`` against a Protocol checks only that the names exist).
CAPABILITIES: tuple[
    PhaseParams,
    StreamCounts,
    BatchContext,
    Verifies,
    ReferenceTables,
    CompiledKernels,
    ReuseProof,
    CrashRecovery,
    MixedPhases,
    OwnStoreEngines,
] = (_IMPL,) * 10
