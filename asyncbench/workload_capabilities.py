"""What a workload MAY do beyond running: the optional capabilities, one Protocol each.

:class:`asyncbench.workload.Workload` is what every workload writes (its phase table, plan,
store, checksum and the estimate's figures). Everything else is a capability only some
workloads have: a plan table of their own (YCSB's ``[ycsb]``), phases with keys of their own,
published reference tables, compiled kernels, a store that can be reused or checked after a
crash, phases that run for a duration or mix several kinds, a file format of their own.
Each is a small ``runtime_checkable`` Protocol here: a workload implements the ones it has
and writes nothing for the others.

Why Protocols checked where used rather than defaulted members: a workload no longer states
what it lacks (a stub raising NotImplementedError, a ``None`` table), so the framework
cannot call a stub by mistake, and a plug-in reads as what it does. The framework asks
``isinstance(wl, Capability)`` at the use, or calls the helper below, which says in one
place what the absence means where the framework shows it (no reference to compare with, a
crash refused by the plan, the default sizing of a stream...), never a made-up figure.

``isinstance`` against a ``runtime_checkable`` Protocol checks that the members exist, not
their signatures: ``mypy --strict`` holds the shipped workloads to them (each module's
``WORKLOAD`` is typed as the intersection it implements, in its tests).
"""

from __future__ import annotations

from collections.abc import Awaitable, Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

from asyncbench.workload import (
    MixFigures,
    NativePlan,
    PhaseKind,
    Prefix,
    RecoveryCounts,
    SettingError,
    Workload,
)

__all__ = [
    "CAPABILITIES",
    "BatchContext",
    "BoundedPhases",
    "CompiledKernels",
    "CrashRecovery",
    "MixedPhases",
    "OwnSettings",
    "OwnStoreEngines",
    "PhaseParams",
    "PlanConversion",
    "ReferenceTables",
    "ReuseProof",
    "StreamCounts",
    "Verifies",
    "accelerated",
    "batch_context",
    "can_crash",
    "crash_problem",
    "capabilities",
    "crash_recovery",
    "kernels_status",
    "mix_figures",
    "own_store_problem",
    "phase_params",
    "prefix_checksums",
    "reference_tables",
    "stream_count",
    "verifier",
    "verify_expected",
    "verify_note",
    "verify_ops",
]


@runtime_checkable
class OwnSettings(Protocol):
    """A plan table of its own settings (YCSB's ``[ycsb]``); without it ``[run]`` and
    ``[counts]`` say everything and a plan with such a table is refused (unknown key)."""

    #: The plan's top-level table of this workload's settings.
    section: str

    def settings(self, table: Mapping[str, Any]) -> dict[str, Any]:
        """The section's settings, checked (SettingError naming the key)."""
        ...

    def size(self, settings: Mapping[str, Any]) -> int | None:
        """The records the settings name (the default of ``profiles``), or None."""
        ...


@runtime_checkable
class PhaseParams(Protocol):
    """Phases with keys of their own (a mixed phase's proportions); without it a
    ``[[phase]]`` key beyond the framework's (config.PHASE_KEYS) is refused."""

    def phase_params(self, kind: PhaseKind, table: Mapping[str, Any], settings: Mapping[str, Any]) -> dict[str, Any]:
        """A ``[[phase]]``'s keys beyond the framework's, checked (SettingError naming the
        key); a key no kind of this workload takes is refused here. A phase whose items are
        not a plan stream states its size as ``operations`` (the estimate and the
        latency-mark check read it)."""
        ...

    def check_size(self, profiles: int, phases: Sequence[tuple[str, Mapping[str, Any]]]) -> None:
        """The phases' params (kind, params) against a size the run will use: ``--profiles``
        overrides the size they were checked with at load (SettingError naming the key)."""
        ...


@runtime_checkable
class StreamCounts(Protocol):
    """Streams sized by a count of another name (the profile store's ``post_reads`` by
    ``reads``); without it a stream is sized by the count of its own name."""

    def stream_count(self, stream: str) -> str:
        """The count that sizes a phase's stream (its name in the plan's counts)."""
        ...


@runtime_checkable
class BatchContext(Protocol):
    """Something its batch calls need besides the store and the items (the profile store's
    seeded generators); without it they receive None."""

    def context(self, seed: int) -> object:
        """What a batch call needs besides the store and its items (opaque to the framework)."""
        ...


@runtime_checkable
class Verifies(Protocol):
    """A verify phase (a kind of ``Action.VERIFY`` in its table): the final checksum read
    back from the store. The registry refuses a workload with such a kind and not this."""

    #: The verify phase's operations (0: its checksum is one read of the store's summary).
    verify_ops: int
    #: What the verify phase reads and folds, for the report's notes (None: no note).
    verify_note: str | None

    def verify_checksum(self, store: Any, records: int) -> Awaitable[str]:
        """The verify phase's checksum, read from a store holding ``records``."""
        ...


@runtime_checkable
class ReferenceTables(Protocol):
    """Published reference checksums a run's are compared with (``--check-reference``)."""

    #: Reference identity (``StreamUse.reference``) -> checksum of the spec's reference run.
    reference_checksums: Mapping[str, str]

    def is_reference_run(self, profiles: int, seed: int, limit: int, parallelism: int, counts: Mapping[str, int]) -> bool:
        """Whether a run's configuration is the spec's reference run (its table applies)."""
        ...

    def published_checksums(
        self, profiles: int, parallelism: int, limit: int, seed: int, counts: Mapping[str, int]
    ) -> dict[str, str] | None:
        """The published reports' checksums for this configuration, or None."""
        ...

    def published_configurations(self) -> list[tuple[int, int, int]]:
        """(profiles, parallelism, limit) of every configuration with published checksums."""
        ...


@runtime_checkable
class CompiledKernels(Protocol):
    """Compiled kernels with a slower pure-Python fallback (``--require-accelerator``);
    without it there is no fallback to warn about."""

    @property
    def accelerated(self) -> bool:
        """Whether its compiled kernels are in use (False: the pure-Python fallback)."""
        ...

    def kernels_status(self) -> str:
        """One line saying which kernels run, and why not the compiled ones."""
        ...


@runtime_checkable
class ReuseProof(Protocol):
    """A kept store can be reused (``--reuse-data``): the verify checksum its plan gives
    proves what it holds; without it a store is never reused."""

    def verify_expected(self, plan: Any, rewrites: Sequence[tuple[str, int | None]]) -> str:
        """The verify checksum of a store built by ``plan``'s insert and the update phases
        ``rewrites`` (stream, count): what a reused store must read."""
        ...


@runtime_checkable
class CrashRecovery(Protocol):
    """Phases that may end in a crash (``crash`` in the plan), checked record by record
    afterwards; without it the plan refuses a crash in any phase."""

    def can_crash(self, kind: PhaseKind) -> bool:
        """Whether a phase of ``kind`` may end in a crash: the workload can tell, record by
        record, what its operations wrote."""
        ...

    def crash_problem(self, kind: PhaseKind, params: Mapping[str, Any]) -> str | None:
        """Why this phase (of a kind that ``can_crash``, with its own keys ``params``)
        cannot end in a crash, or None: a YCSB mixed phase that only reads has no write to
        lose. The plan refuses it with this reason."""
        ...

    def changes_records(self, kind: PhaseKind, params: Mapping[str, Any]) -> bool:
        """Whether a phase of ``kind`` with ``params``, run before a crash, changes records the
        load or insert wrote: the crash's check starts from that store, so a crash after such
        a phase is refused (a YCSB mixed phase that only reads changes none)."""
        ...

    def check_recovery(
        self,
        store: Any,
        plan: Any,
        kind: PhaseKind,
        stream: str | None,
        count: int | None,
        acknowledged: int,
        params: Mapping[str, Any],
    ) -> Awaitable[RecoveryCounts]:
        """After a crash in a phase of ``kind`` (its own keys ``params``) whose first
        ``acknowledged`` operations (in the phase's plan order) were acknowledged and no
        later one issued: read ``store`` back and count, against the plan, what survived
        (:class:`RecoveryCounts`)."""
        ...


@runtime_checkable
class BoundedPhases(Protocol):
    """Phases that may run for a ``duration`` (``PhaseKind.bounded``); the plan refuses a
    duration on any other kind (``config.durations``)."""

    def prefix_checksums(
        self, kind: PhaseKind, items: Sequence[Any], ran: Sequence[tuple[Sequence[Any], Sequence[Any]]]
    ) -> Prefix:
        """After a time-bounded phase stopped: its :class:`Prefix` from the batches that
        ran, (batch items, what the batch call returned) each; a later ``mix_figures`` of
        ``items`` counts only the operations that ran."""
        ...


@runtime_checkable
class MixedPhases(Protocol):
    """Phases of several operation kinds (``PhaseKind.mixes``): what each kind ran and the
    skew, for the result; without it every phase is one kind with no skew."""

    def mix_figures(self, kind: PhaseKind, items: Sequence[Any]) -> MixFigures | None:
        """After a phase (untimed): its operation kinds and skew, or None (one kind, no skew)."""
        ...


@runtime_checkable
class PlanConversion(Protocol):
    """A file format of its own (YCSB's workload properties): ``asyncbench plan`` and
    ``run -P`` convert it, and ``-p KEY=VALUE`` sets its properties."""

    def plan_from_native(self, text: str, source: str, overrides: Sequence[tuple[str, str]] = ()) -> NativePlan:
        """A TOML plan from the workload's own file format; ``overrides``: (key, value) set
        on the command line (``-p``), replacing the file's; ValueError naming ``source``, the
        key and the problem."""
        ...

    def override_plan(self, doc: dict[str, Any], overrides: Sequence[tuple[str, str]], source: str) -> list[str]:
        """Apply the workload's own properties (``-p KEY=VALUE``) to a TOML plan document of
        it, in place; the notes to print; ValueError naming ``source``, the key and the problem."""
        ...


@runtime_checkable
class OwnStoreEngines(Protocol):
    """Engines that are their own store (keep ``Engine.worker``, implementing the
    workload's operations themselves) may run it; without it such an engine is refused."""

    def own_store_problem(self, engine_class: type) -> str | None:
        """Why such an engine class cannot run this workload, naming what it lacks; None
        when it can."""
        ...


#: Every capability, by the name the docs use (``capabilities`` lists a workload's).
CAPABILITIES: tuple[type, ...] = (
    OwnSettings,
    PhaseParams,
    StreamCounts,
    BatchContext,
    Verifies,
    ReferenceTables,
    CompiledKernels,
    ReuseProof,
    CrashRecovery,
    BoundedPhases,
    MixedPhases,
    PlanConversion,
    OwnStoreEngines,
)


def capabilities(wl: Workload) -> list[str]:
    """The names of the capabilities ``wl`` implements, in :data:`CAPABILITIES` order."""
    return [c.__name__ for c in CAPABILITIES if isinstance(wl, c)]


# --- what the framework does where a capability is absent ------------------------------------


def stream_count(wl: Workload, stream: str) -> str:
    """The count that sizes ``stream``: the workload's, else the count of its own name."""
    return wl.stream_count(stream) if isinstance(wl, StreamCounts) else stream


def batch_context(wl: Workload, seed: int) -> object:
    """What the batch calls receive besides store and items: the workload's, else None."""
    return wl.context(seed) if isinstance(wl, BatchContext) else None


def verify_ops(wl: Workload) -> int:
    """The verify phase's operations (0 for a workload without one: it never runs)."""
    return wl.verify_ops if isinstance(wl, Verifies) else 0


def verify_note(wl: Workload) -> str | None:
    """The report's note on the verify phase, or None."""
    return wl.verify_note if isinstance(wl, Verifies) else None


def accelerated(wl: Workload) -> bool:
    """Whether the compiled kernels run; True without any (no slower fallback either)."""
    return wl.accelerated if isinstance(wl, CompiledKernels) else True


def kernels_status(wl: Workload) -> str:
    """The kernels' one line (recorded in a result's environment)."""
    return wl.kernels_status() if isinstance(wl, CompiledKernels) else f"{wl.name}: no compiled kernels (pure Python by design)"


def can_crash(wl: Workload, kind: PhaseKind) -> bool:
    """Whether a phase of ``kind`` may end in a crash (False without crash checks)."""
    return isinstance(wl, CrashRecovery) and wl.can_crash(kind)


def changes_records(wl: Workload, kind: PhaseKind, params: Mapping[str, Any]) -> bool:
    """Whether this phase changes stored records (a rewrite or a mixed phase, unless the
    workload's crash checks say it does not)."""
    if isinstance(wl, CrashRecovery):
        return wl.changes_records(kind, params)
    return kind.rewrites or kind.mixes


def crash_problem(wl: Workload, kind: PhaseKind, params: Mapping[str, Any]) -> str | None:
    """Why this phase of a kind that can crash cannot, with its params (None: it can)."""
    return wl.crash_problem(kind, params) if isinstance(wl, CrashRecovery) else None


def mix_figures(wl: Workload, kind: PhaseKind, items: Sequence[Any]) -> MixFigures | None:
    """A phase's operation kinds and skew, or None (one kind, no skew)."""
    return wl.mix_figures(kind, items) if isinstance(wl, MixedPhases) else None


def own_store_problem(wl: Workload, engine_class: type) -> str | None:
    """Why an engine that is its own store cannot run ``wl`` (None: it can)."""
    if isinstance(wl, OwnStoreEngines):
        return wl.own_store_problem(engine_class)
    return (
        f"{engine_class.__name__} is its own store (it keeps Engine.worker) and gives no key/value, SQL or "
        f"in-process primitives (asyncbench.store): it cannot run the {wl.name} workload"
    )


def phase_params(wl: Workload, kind: PhaseKind, table: Mapping[str, Any], settings: Mapping[str, Any]) -> dict[str, Any]:
    """A phase's own keys, checked by the workload; without :class:`PhaseParams` a phase
    takes none (SettingError naming the first)."""
    if isinstance(wl, PhaseParams):
        return wl.phase_params(kind, table, settings)
    if table:
        raise SettingError(sorted(table)[0], f"unknown key: the {wl.name} workload's {kind.kind!r} phase takes none")
    return {}


def reference_tables(wl: Workload) -> ReferenceTables | None:
    """The workload's published reference tables, or None (nothing to compare with)."""
    return wl if isinstance(wl, ReferenceTables) else None


def verifier(wl: Workload) -> Verifies:
    """The workload's verify phase (the registry refuses a verify kind without one)."""
    if not isinstance(wl, Verifies):
        raise TypeError(f"the {wl.name} workload has no verify phase (Verifies)")
    return wl


def verify_expected(wl: Workload, plan: Any, rewrites: Sequence[tuple[str, int | None]]) -> str:
    """The verify checksum a reused store must read; NotImplementedError when the
    workload's stores are never reused (no :class:`ReuseProof`)."""
    if not isinstance(wl, ReuseProof):
        raise NotImplementedError(f"a {wl.name} store is not reused (--reuse-data)")
    return wl.verify_expected(plan, rewrites)


def crash_recovery(wl: Workload) -> CrashRecovery:
    """The workload's crash checks (the plan refuses a crash without them)."""
    if not isinstance(wl, CrashRecovery):
        raise TypeError(f"a crash in a {wl.name} phase is refused by the plan (CrashRecovery)")
    return wl


def prefix_checksums(
    wl: Workload, kind: PhaseKind, items: Sequence[Any], ran: Sequence[tuple[Sequence[Any], Sequence[Any]]]
) -> Prefix:
    """A time-bounded phase's prefix (the plan refuses a duration without :class:`BoundedPhases`)."""
    if not isinstance(wl, BoundedPhases):
        raise NotImplementedError(f"the {wl.name} workload's {kind.kind!r} phase cannot run for a duration")
    return wl.prefix_checksums(kind, items, ran)
