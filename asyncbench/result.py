"""The machine-readable result of a run (written as JSON, read back by ``report``)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import orjson


@dataclass
class PhaseResult:
    name: str
    kind: str
    role: str  # ops | stabilize | settle | reopen | verify
    ops: int
    seconds: float
    checksum: str | None = None
    skipped: bool = False  # stabilize for an engine that needs none

    @property
    def ops_per_s(self) -> float:
        return self.ops / self.seconds if self.seconds > 0 else 0.0


@dataclass
class EngineResult:
    engine: str
    status: str = (
        "ok"  # ok | "Timed out after N seconds; interrupted: <phase>" | "Failed: ..." | "Skipped: ..."
    )
    phases: list[PhaseResult] = field(default_factory=list)
    run_seconds: float = 0.0
    storage_bytes: int | None = None
    peak_rss_bytes: int | None = None
    initial_rss_bytes: int | None = None
    settings: dict[str, str] = field(default_factory=dict)
    durability: str = ""
    versions: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    def to_json(self) -> bytes:
        return orjson.dumps(asdict(self))

    @classmethod
    def from_dict(cls, doc: dict[str, Any]) -> EngineResult:
        doc = dict(doc)
        phases = [PhaseResult(**p) for p in doc.pop("phases", [])]
        return cls(phases=phases, **doc)

    def phase(self, name: str) -> PhaseResult | None:
        return next((p for p in self.phases if p.name == name), None)

    @property
    def final_checksum(self) -> str | None:
        return next((p.checksum for p in self.phases if p.role == "verify"), None)


@dataclass
class RunResult:
    name: str
    started_utc: str
    profiles: int
    parallelism: int
    seed: int
    limit: int
    batch_size: int
    timeout_seconds: float
    counts: dict[str, int]
    phases: list[dict[str, Any]]
    source: str
    environment: dict[str, str] = field(default_factory=dict)
    engines: list[EngineResult] = field(default_factory=list)
    interrupted: str | None = None
    isolated: bool = False  # each engine ran in its own child process
    schema: int = 1

    def to_json(self) -> bytes:
        return orjson.dumps(asdict(self), option=orjson.OPT_INDENT_2)

    @classmethod
    def from_json(cls, data: bytes) -> RunResult:
        doc = orjson.loads(data)
        engines = [EngineResult.from_dict(e) for e in doc.pop("engines", [])]
        return cls(engines=engines, **doc)


def write_atomic(path: Path, data: bytes) -> None:
    """Write via a temporary file + rename so a reader never sees half a file."""
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_bytes(data)
    tmp.replace(path)
