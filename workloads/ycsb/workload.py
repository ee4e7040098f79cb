"""The YCSB workload as the framework sees it: :class:`asyncbench.workload.Workload`.

A plan says ``workload = "ycsb"`` under ``[run]``; its ``[ycsb]`` table is the usertable
(:mod:`.settings` checks it), its phases ``load`` and ``mixed`` (:mod:`.phases`). The
framework's size, ``profiles`` (``--profiles``), is the record count: ``[ycsb]
recordcount`` sets its default. YCSB has no published reference checksums: its checks are
that every engine, P and K give the same checksum per phase (tests/test_ycsb_run.py).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from asyncbench.workload import (
    MixFigures,
    NativePlan,
    PhaseKind,
    Prefix,
    RecordMemory,
    RecoveryCounts,
    SettingError,
    Workload,
)
from asyncbench.workload_capabilities import (
    BatchContext,
    BoundedPhases,
    CompiledKernels,
    CrashRecovery,
    MixedPhases,
    OwnSettings,
    PhaseParams,
    PlanConversion,
    StreamCounts,
)
from asyncbench.workloads.ycsb import kernels
from asyncbench.workloads.ycsb import settings as ycsb_settings
from asyncbench.workloads.ycsb.convert import COMMAND_LINE, convert, plan_toml
from asyncbench.workloads.ycsb.overrides import override_plan
from asyncbench.workloads.ycsb.phases import (
    PHASES,
    Counts,
    MixedOps,
    PhaseChecksum,
    Plan,
    bounded_prefix,
    combine,
    mix_figures,
    phase_items,
)
from asyncbench.workloads.ycsb.properties import Property, parse_properties
from asyncbench.workloads.ycsb.recovery import CRASH_KINDS, changes_records, check_recovery, crash_problem
from asyncbench.workloads.ycsb.sql_store import USERTABLE
from asyncbench.workloads.ycsb.store import YcsbStore
from asyncbench.workloads.ycsb.stores import ycsb_store

__all__ = ["CAPABILITIES", "WORKLOAD", "YcsbWorkload"]


class YcsbWorkload:
    """YCSB's core workloads A-F over a usertable of the engine's own (docs/workloads.md).

    Beyond :class:`~asyncbench.workload.Workload` it has the capabilities of
    :data:`CAPABILITIES` (:mod:`asyncbench.workload_capabilities`). Not others: no verify
    phase, no published reference tables, no engine that is its own store, no store reuse.
    A crash may end its load or a mixed phase that writes (:mod:`.recovery` checks every
    record against the versions the plan wrote)."""

    name = "ycsb"
    unit = "records"  # --profiles is the record count
    #: One table of records (YCSB's usertable).
    kv_stores: tuple[str, ...] = (USERTABLE,)
    phases: Mapping[str, PhaseKind] = PHASES
    count_names: tuple[str, ...] = ()
    section = "ycsb"

    def settings(self, table: Mapping[str, Any]) -> dict[str, Any]:
        return ycsb_settings.section(table)

    def size(self, settings: Mapping[str, Any]) -> int | None:
        return int(settings["recordcount"])

    def check_size(self, profiles: int, phases: Sequence[tuple[str, Mapping[str, Any]]]) -> None:
        ycsb_settings.check_records(phases, profiles)

    def record_memory(self, settings: Mapping[str, Any]) -> RecordMemory:
        return ycsb_settings.record_memory(settings)

    def phase_params(self, kind: PhaseKind, table: Mapping[str, Any], settings: Mapping[str, Any]) -> dict[str, Any]:
        if kind.kind == "mixed":
            return ycsb_settings.mixed_params(table, settings)
        if table:
            raise SettingError(sorted(table)[0], "unknown key")
        return {}

    def stream_count(self, stream: str) -> str:
        return "profiles"

    def counts(self, profiles: int, limit: int, overrides: Mapping[str, int], settings: Mapping[str, Any]) -> Counts:
        s = settings
        return Counts(profiles, s["fieldcount"], s["fieldlength"], int(s["insertorder"] == "hashed"), s["zeropadding"])

    def draw_plan(self, counts: Counts, seed: int) -> Plan:
        return Plan(counts, seed)

    def phase_items(
        self, kind: PhaseKind, stream: str | None, count: int | None, plan: Plan, params: Mapping[str, Any]
    ) -> Sequence[Any]:
        return phase_items(kind, plan, dict(params))

    def context(self, seed: int) -> int:
        return seed

    def plan_from_native(self, text: str, source: str, overrides: Sequence[tuple[str, str]] = ()) -> NativePlan:
        """YCSB's workload file (Java properties) as a plan (:mod:`.convert`: every property
        carried, noted or refused by name), ``-p`` properties replacing the file's."""
        given = [Property(k, v, COMMAND_LINE) for k, v in overrides]
        done = convert(parse_properties(text, source), source, given)
        return NativePlan(plan_toml(done.plan, Path(source).name, done.notes), tuple(done.notes))

    def override_plan(self, doc: dict[str, Any], overrides: Sequence[tuple[str, str]], source: str) -> list[str]:
        """``-p`` YCSB properties on a TOML YCSB plan (:mod:`.overrides`)."""
        return override_plan(doc, overrides, source)

    def prefix_checksums(
        self, kind: PhaseKind, items: Sequence[Any], ran: Sequence[tuple[Sequence[Any], Sequence[Any]]]
    ) -> Prefix:
        if not isinstance(items, MixedOps):
            raise TypeError(f"the ycsb {kind.kind!r} phase cannot run for a duration")
        return bounded_prefix(items, ran)

    def mix_figures(self, kind: PhaseKind, items: Sequence[Any]) -> MixFigures | None:
        return mix_figures(items) if isinstance(items, MixedOps) else None

    def checksum(self) -> PhaseChecksum:
        return PhaseChecksum()

    def combine(self, hexes: Sequence[str]) -> str:
        return combine(hexes)

    def store(self, primitives: Any, limit: int) -> YcsbStore:
        return ycsb_store(primitives)

    def plan_writes(
        self, phases: Sequence[tuple[PhaseKind, str | None, int | None]], plan: Plan, seed: int
    ) -> list[tuple[int | None, int]]:
        """The load writes every record; the live data is the records (inserts not counted)."""
        lay = plan.counts.layout
        live = lay.recordcount * lay.fieldcount * lay.fieldlength
        return [(live if kind.kind == "load" else None, live) for kind, _, _ in phases]

    def can_crash(self, kind: PhaseKind) -> bool:
        return kind.kind in CRASH_KINDS

    def crash_problem(self, kind: PhaseKind, params: Mapping[str, Any]) -> str | None:
        return crash_problem(kind, params)

    def changes_records(self, kind: PhaseKind, params: Mapping[str, Any]) -> bool:
        return changes_records(kind, params)

    async def check_recovery(
        self,
        store: YcsbStore,
        plan: Plan,
        kind: PhaseKind,
        stream: str | None,
        count: int | None,
        acknowledged: int,
        params: Mapping[str, Any],
    ) -> RecoveryCounts:
        return await check_recovery(store, phase_items(kind, plan, dict(params)), acknowledged)

    @property
    def accelerated(self) -> bool:
        return kernels.ACCELERATED

    def kernels_status(self) -> str:
        return f"ycsb: {kernels.status_line()}"


_IMPL = YcsbWorkload()
#: The instance the registry hands out.
WORKLOAD: Workload = _IMPL  # typed: mypy holds the class to the interface
#: The optional capabilities it implements, typed so that mypy holds the class to each
#: (``isinstance`` against a Protocol checks only that the names exist).
CAPABILITIES: tuple[
    OwnSettings,
    PhaseParams,
    StreamCounts,
    BatchContext,
    CompiledKernels,
    BoundedPhases,
    CrashRecovery,
    MixedPhases,
    PlanConversion,
] = (_IMPL,) * 9
