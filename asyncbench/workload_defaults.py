"""What a workload may leave out, and what leaving it out means: the optional capabilities.

:class:`asyncbench.workload.Workload` lists everything the framework may ask of a workload.
Much of it is a capability only some workloads have: their own plan settings, a file
format of their own (YCSB's properties), published reference tables, compiled kernels, a
store that can be reused or checked after a crash, phases that run for a duration or mix
several kinds. :class:`WorkloadDefaults` states each of those as absent, so a workload
written as a plug-in subclasses it and writes only what every workload needs:

- ``name``, ``unit``, ``phases`` (its phase table), ``count_names``;
- ``counts``, ``draw_plan``, ``phase_items``: its plan, a pure function of counts and seed;
- ``store``: its store over an engine's primitives (:mod:`asyncbench.store`);
- ``context``, ``checksum``, ``combine``, ``verify_checksum``: what a batch needs and what
  its checksum folds;
- ``record_memory`` and ``plan_writes``: the figures the estimate and the cost measurement
  read (stated by the workload: only it knows its records' sizes).

``examples/counter_workload.py`` is such a workload. Each default here says, where the
framework shows it, that the capability is absent (no reference to compare with, no
native format to convert, a crash refused by the plan), never a made-up figure.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Any

from asyncbench.workload import MixFigures, NativePlan, PhaseKind, Prefix, RecoveryCounts, SettingError

__all__ = ["WorkloadDefaults"]


class WorkloadDefaults:
    """The optional capabilities of a workload, each absent (subclass and override)."""

    name: str
    #: No plan table of its own (YCSB's ``[ycsb]``): ``[run]`` and ``[counts]`` say everything.
    section: str | None = None
    #: The verify phase's operations (0: its checksum is one read of the store's summary).
    verify_ops: int = 0
    #: No note on the verify phase in the report (a workload with one states it).
    verify_note: str | None = None
    #: One key/value store (a workload keeping several declares their names).
    kv_stores: tuple[str, ...] = ("records",)
    #: No published reference run to compare checksums with.
    reference_checksums: Mapping[str, str] = MappingProxyType({})

    def settings(self, table: Mapping[str, Any]) -> dict[str, Any]:
        if table:
            raise SettingError(sorted(table)[0], f"unknown key: the {self.name} workload has no settings of its own")
        return {}

    def size(self, settings: Mapping[str, Any]) -> int | None:
        return None

    def check_size(self, profiles: int, phases: Sequence[tuple[str, Mapping[str, Any]]]) -> None:
        return None

    def phase_params(self, kind: PhaseKind, table: Mapping[str, Any], settings: Mapping[str, Any]) -> dict[str, Any]:
        if table:
            raise SettingError(sorted(table)[0], f"unknown key: the {self.name} workload's {kind.kind!r} phase takes none")
        return {}

    def stream_count(self, stream: str) -> str:
        """A stream is sized by the count of its own name."""
        return stream

    def own_store_problem(self, engine_class: type) -> str | None:
        return (
            f"{engine_class.__name__} is its own store (it keeps Engine.worker) and gives no key/value, SQL or "
            f"in-process primitives (asyncbench.store): it cannot run the {self.name} workload"
        )

    def plan_from_native(self, text: str, source: str, overrides: Sequence[tuple[str, str]] = ()) -> NativePlan:
        raise ValueError(f"{source}: the {self.name} workload has no file format of its own to convert")

    def override_plan(self, doc: dict[str, Any], overrides: Sequence[tuple[str, str]], source: str) -> list[str]:
        raise ValueError(f"{source}: -p sets a workload property; the {self.name} workload has none")

    def prefix_checksums(
        self, kind: PhaseKind, items: Sequence[Any], ran: Sequence[tuple[Sequence[Any], Sequence[Any]]]
    ) -> Prefix:
        raise NotImplementedError(f"the {self.name} workload's {kind.kind!r} phase cannot run for a duration")

    def mix_figures(self, kind: PhaseKind, items: Sequence[Any]) -> MixFigures | None:
        return None  # one operation kind per phase, no skew to report

    def verify_expected(self, plan: Any, rewrites: Sequence[tuple[str, int | None]]) -> str:
        raise NotImplementedError(f"a {self.name} store is not reused (--reuse-data)")

    def can_crash(self, kind: PhaseKind) -> bool:
        return False  # the plan refuses a crash in its phases

    async def check_recovery(
        self, store: Any, plan: Any, kind: PhaseKind, stream: str | None, count: int | None, acknowledged: int
    ) -> RecoveryCounts:
        raise NotImplementedError(f"a crash in a {self.name} phase is refused by the plan (can_crash)")

    @property
    def accelerated(self) -> bool:
        """No compiled kernels, so no slower fallback either (--require-accelerator passes)."""
        return True

    def kernels_status(self) -> str:
        return f"{self.name}: no compiled kernels (pure Python by design)"

    def is_reference_run(self, profiles: int, seed: int, limit: int, parallelism: int, counts: Mapping[str, int]) -> bool:
        return False

    def published_checksums(
        self, profiles: int, parallelism: int, limit: int, seed: int, counts: Mapping[str, int]
    ) -> dict[str, str] | None:
        return None

    def published_configurations(self) -> list[tuple[int, int, int]]:
        return []
