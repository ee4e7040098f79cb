"""Typed facts an engine states about itself; the report and charts format them.

Engines never write report prose and the report never tests an engine's name: whatever
the report must say differently for an engine (memory measured for the client only,
storage as a server estimate, the harness floor) is a field here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from enum import StrEnum

__all__ = ["Durability", "EngineFacts", "MemoryScope", "Setting", "StorageMethod"]


class MemoryScope(StrEnum):
    """Whose memory the peak-memory figure covers."""

    PROCESS = "process"  # the engine runs inside the measured process
    CLIENT_ONLY = "client-only"  # a server holds the data; only the client process is measured


class StorageMethod(StrEnum):
    """How the storage figure is obtained."""

    FILES = "files"  # bytes of every file under the engine's data directory after settle
    SERVER_ESTIMATE = "server-estimate"  # the server's own size figure for the engine's tables
    NONE = "none"  # the engine stores nothing durably


@dataclass
class Setting:
    """One engine setting: what the plan configured and what the engine actually runs with."""

    name: str
    configured: str
    effective: str | None = None  # None: not read back (the configured value is what runs)


@dataclass
class Durability:
    """What a crash can cost, as fields the report assembles into one line."""

    persistent: bool = True
    log: str = ""  # how acknowledged writes are logged, e.g. "write-ahead log"
    sync: str = ""  # when the log reaches the disk, e.g. "per write", "about once a second"
    write_unit: str = ""  # what one acknowledged write covers, e.g. "one transaction per insert"
    after_crash: str = ""  # what a crash loses or what open repairs
    parameters: dict[str, str] = field(default_factory=dict)  # effective knobs behind the above
    #: Every acknowledged write is synced before it is acknowledged: a crash may lose none
    #: (a crash test that finds one lost is a FAIL, asyncbench.measure.verdicts).
    synced_commits: bool = False


@dataclass
class EngineFacts:
    """Everything the report needs to know about an engine, beyond its timings."""

    settings: list[Setting] = field(default_factory=list)
    durability: Durability = field(default_factory=Durability)
    memory_scope: MemoryScope = MemoryScope.PROCESS
    storage_method: StorageMethod = StorageMethod.FILES
    versions: dict[str, str] = field(default_factory=dict)
    needs_stabilization: bool = False
    #: The in-memory reference engine: its times are the harness's own floor, not a store.
    harness_floor: bool = False
    #: Servers the engine's connections went to (client/server engines).
    endpoints: list[str] = field(default_factory=list)
    #: A multi-node target, as label -> text (e.g. nodes, workers, replication); empty: none.
    cluster: dict[str, str] = field(default_factory=dict)
    colour: str | None = None  # a fixed chart colour; None: picked from the name

    def check(self, where: str) -> None:
        """Called by the result loader: a colour the charts can draw (``#rrggbb``)."""
        if self.colour is not None and not re.fullmatch(r"#[0-9A-Fa-f]{6}", self.colour):
            raise ValueError(f"{where}.colour: {self.colour!r} is not a #rrggbb colour")
