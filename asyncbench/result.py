"""The one result model: written as JSON by a run (and by an isolated child), read back by
the parent, ``report`` and ``compare``.

Status is data: an enum plus the phase it happened in and a detail, never a string to
decode by prefix. The parent and an isolated child exchange exactly this model
(:meth:`EngineResult.to_dict` / :meth:`EngineResult.from_dict`), as pyperf's worker and
manager share one benchmark model.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from dataclasses import asdict, dataclass, field
from enum import Enum, StrEnum
from typing import Any

import orjson

from asyncbench.facts import EngineFacts
from asyncbench.fs.ownership import write_atomic  # the one file writer; re-exported here

__all__ = [
    "SCHEMA",
    "EngineResult",
    "PhaseResult",
    "ResultError",
    "RunResult",
    "Status",
    "exit_code",
    "write_atomic",
]

#: Version of the JSON shape (docs/result-schema.md); ``report`` refuses other versions.
SCHEMA = 2

EXIT_OK, EXIT_FAILED, EXIT_BAD_INPUT, EXIT_INTERRUPTED = 0, 1, 2, 130


class ResultError(ValueError):
    """A result file that is not an asyncbench result of a shape this version reads."""


class Status(StrEnum):
    RUNNING = "running"  # only ever seen in a child's partial file or a killed run
    OK = "ok"
    FAILED = "failed"
    TIMED_OUT = "timed_out"
    INTERRUPTED = "interrupted"
    SKIPPED = "skipped"  # an optional engine (from "all") that is not available here


@dataclass
class PhaseResult:
    index: int  # position in the plan: the phase's identity within a run
    name: str
    kind: str
    action: str  # ops | stabilize | settle | reopen | verify (the phase table's Action)
    group: str  # write | lookup | scan | query | maintenance | verify
    ops: int
    seconds: float
    checksum: str | None = None
    stream: str | None = None
    count: int | None = None
    post_update: bool = False
    skipped: bool = False  # stabilize for an engine that needs none
    #: Reopen only: closing the store before it, timed apart; ``seconds`` is the open alone,
    #: as the reference times reopen (it does not time the dispose).
    close_seconds: float | None = None
    #: Per-operation latency (ns): count, min, p50, p90, p99, p99_9, max, mean, and
    #: ``histogram``, the HdrHistogram in its standard compressed base64 encoding.
    latency: dict[str, Any] | None = None
    #: Write phases: (t_s, ops, p50_ns, p99_ns, max_ns) per time slice, to show stalls.
    latency_over_time: list[list[float]] | None = None
    retries: int = 0  # writes the engine retried after a transient conflict (Engine.take_retries)

    @property
    def ops_per_s(self) -> float:
        return self.ops / self.seconds if self.seconds > 0 else 0.0


@dataclass
class EngineResult:
    engine: str
    status: Status = Status.OK
    phase: str | None = None  # where a non-ok status happened (None: before or after the phases)
    detail: str | None = None  # the error, the timeout, the signal
    phases: list[PhaseResult] = field(default_factory=list)
    run_seconds: float = 0.0
    storage_bytes: int | None = None
    peak_rss_bytes: int | None = None
    initial_rss_bytes: int | None = None
    facts: EngineFacts = field(default_factory=EngineFacts)
    notes: list[str] = field(default_factory=list)
    repeat: int = 0  # which repeat of this engine (0-based, interleaved A B C A B C ...)
    warmup: bool = False  # a declared warm-up repeat: kept here, left out of the statistics

    @property
    def ok(self) -> bool:
        return self.status is Status.OK

    @property
    def broken(self) -> bool:
        """Failed or timed out: the run as a whole failed."""
        return self.status in (Status.FAILED, Status.TIMED_OUT, Status.RUNNING)

    def set_status(self, status: Status, phase: str | None = None, detail: str | None = None) -> None:
        self.status, self.phase, self.detail = status, phase, detail

    def status_text(self) -> str:
        """One human line for the console and the report."""
        where = self.phase or "start-up"
        if self.status is Status.OK:
            return "ok"
        if self.status is Status.FAILED:
            return f"Failed: {where}: {self.detail}"
        if self.status is Status.TIMED_OUT:
            return f"Timed out after {self.detail}; interrupted: {where}"
        if self.status is Status.INTERRUPTED:
            return f"Interrupted during {where}" + (f" ({self.detail})" if self.detail else "")
        if self.status is Status.SKIPPED:
            return f"Skipped: {self.detail}"
        return f"Running: {where}"

    def phase_at(self, index: int) -> PhaseResult | None:
        return next((p for p in self.phases if p.index == index), None)

    @property
    def final_checksum(self) -> str | None:
        return next((p.checksum for p in self.phases if p.action == "verify"), None)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def to_json(self) -> bytes:
        return orjson.dumps(self.to_dict())

    @classmethod
    def from_dict(cls, doc: Any) -> EngineResult:
        loaded: EngineResult = _load(cls, doc, "engine")
        return loaded


@dataclass
class RunResult:
    name: str
    started_utc: str
    profiles: int
    parallelism: int
    seed: int
    limit: int
    batch_size: int
    timeout_seconds: float | None
    counts: dict[str, int]
    phases: list[dict[str, Any]]  # the plan's phase specs, in order
    source: str
    environment: dict[str, Any] = field(default_factory=dict)
    engines: list[EngineResult] = field(default_factory=list)
    interrupted: str | None = None
    isolated: bool = False  # each engine ran in its own child process
    repeat: int = 1  # runs per engine; ``engines`` holds every one (EngineResult.repeat)
    warmup: int = 0  # leading repeats left out of the statistics
    #: Per engine, per operation phase: throughput statistics over the measured repeats
    #: (median, min, max, 95% Student-t interval, spread); written with the result.
    throughput: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    #: The workload's compiled kernels were in use; False: the pure-Python fallback ran and
    #: its timings are not comparable with compiled runs.
    accelerated: bool = True
    schema: int = SCHEMA

    def to_json(self) -> bytes:
        return orjson.dumps(asdict(self), option=orjson.OPT_INDENT_2)

    @classmethod
    def from_json(cls, data: bytes) -> RunResult:
        try:
            doc = orjson.loads(data)
        except orjson.JSONDecodeError as exc:
            raise ResultError(f"not JSON ({exc})") from None
        if not isinstance(doc, dict):
            raise ResultError(f"not a result object (a JSON {type(doc).__name__})")
        schema = doc.get("schema")
        if schema != SCHEMA:
            raise ResultError(
                f"result schema {schema!r} is not the schema this asyncbench reads ({SCHEMA}); "
                "re-run the benchmark with this version"
            )
        loaded: RunResult = _load(cls, doc, "result")
        return loaded

    def failed(self) -> bool:
        return any(e.broken for e in self.engines)

    def skipped(self) -> list[EngineResult]:
        """Engines that did not run here (an optional engine whose library or server is absent)."""
        return [e for e in self.engines if e.status is Status.SKIPPED]

    def without_skipped(self) -> RunResult:
        """This run with skipped engines left out: tables and charts show only engines that
        ran, and the report says once, in one line, which were skipped."""
        gone = {e.engine for e in self.skipped()}
        env = dict(self.environment)
        if gone and isinstance(env.get("engine_versions"), dict):  # their "unavailable" rows too
            env["engine_versions"] = {
                k: v for k, v in env["engine_versions"].items() if k.split(":", 1)[0] not in gone
            }
        return dataclasses.replace(
            self, engines=[e for e in self.engines if e.status is not Status.SKIPPED], environment=env
        )


def exit_code(runs: list[RunResult], checksums_agree: bool, interrupted: bool) -> int:
    """The program's one exit-code rule: 130 interrupted, 1 a failure, timeout or checksum
    mismatch, else 0 (bad input, 2, is decided before anything runs)."""
    if interrupted:
        return EXIT_INTERRUPTED
    if not checksums_agree or any(r.failed() for r in runs):
        return EXIT_FAILED
    return EXIT_OK


# --- typed loading of the dataclass tree (one generic reader, no hand-listed fields) -----


def _load(tp: Any, value: Any, where: str) -> Any:
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        args = typing.get_args(tp)
        if value is None and type(None) in args:
            return None
        errors = []
        for arg in (a for a in args if a is not type(None)):
            try:
                return _load(arg, value, where)
            except ResultError as exc:
                errors.append(str(exc))
        raise ResultError(errors[0] if errors else f"{where}: unexpected {value!r}")
    if dataclasses.is_dataclass(tp):
        if not isinstance(value, dict):
            raise ResultError(f"{where}: expected an object, got {type(value).__name__}")
        hints = typing.get_type_hints(tp)
        names = {f.name for f in dataclasses.fields(tp) if f.init}
        unknown = set(value) - names
        if unknown:
            raise ResultError(f"{where}: unknown field {sorted(unknown)[0]!r}")
        kwargs = {k: _load(hints[k], v, f"{where}.{k}") for k, v in value.items()}
        try:
            return typing.cast(Any, tp)(**kwargs)  # is_dataclass narrowed tp to an instance type
        except TypeError as exc:
            raise ResultError(f"{where}: {exc}") from None
    if origin is list:
        if not isinstance(value, list):
            raise ResultError(f"{where}: expected a list, got {type(value).__name__}")
        (arg,) = typing.get_args(tp)
        return [_load(arg, v, f"{where}[{i}]") for i, v in enumerate(value)]
    if origin is dict:
        if not isinstance(value, dict):
            raise ResultError(f"{where}: expected an object, got {type(value).__name__}")
        _, arg = typing.get_args(tp)
        return {k: _load(arg, v, f"{where}.{k}") for k, v in value.items()}
    if isinstance(tp, type) and issubclass(tp, Enum):
        try:
            return tp(value)
        except ValueError:
            raise ResultError(f"{where}: {value!r} is not one of {', '.join(m.value for m in tp)}") from None
    if tp is Any:
        return value
    if tp is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ResultError(f"{where}: expected a number, got {value!r}")
        return float(value)
    if tp is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ResultError(f"{where}: expected an integer, got {value!r}")
        return value
    if tp in (str, bool):
        if not isinstance(value, tp):
            raise ResultError(f"{where}: expected {tp.__name__}, got {value!r}")
        return value
    raise ResultError(f"{where}: cannot read a value of type {tp!r}")
