"""The cost table: per engine, what its phases cost beyond their time (CPU µs per
operation of the client, the engine's threads and the server; device bytes; write and
space amplification; stalls), as rows the console, the Markdown report, the CSV and
``compare`` all draw from, so they agree.

Rows: every write and maintenance phase on its own (where the bytes are written), the
read phases summed by group (lookups, scans, queries: where CPU per operation matters),
and the whole run. A figure not measured is None here, "-" when shown, and the reasons
are listed once per engine (:func:`not_measured`), never a 0.
"""

from __future__ import annotations

import textwrap
from collections.abc import Callable
from dataclasses import dataclass, field

from asyncbench import fmt
from asyncbench.facts import StorageMethod
from asyncbench.result import ON_DISK_SHARE, EngineResult, PhaseCost, PhaseResult, off_disk
from asyncbench.workload import Action, Group

__all__ = ["COST_NOTE", "CostRow", "console_lines", "cost_rows", "markdown_lines", "not_measured", "off_disk_note"]

#: Read phases are summed by group under these labels.
_GROUP_LABELS = {
    Group.LOOKUP: "lookups (all)",
    Group.SCAN: "scans (all)",
    Group.QUERY: "queries (all)",
    Group.MIXED: "mixed (all)",
}
_FIGURE_LABELS = {
    "client_cpu": "client CPU",
    "engine_cpu": "engine CPU",
    "server_cpu": "server CPU",
    "client_io": "client I/O",
    "server_io": "server I/O",
    "counters": "engine counters",
    "storage": "storage",
}


def _add(a: float | None, b: float | None) -> float | None:
    return None if a is None and b is None else (a or 0) + (b or 0)


def _all(first: bool, total: float | None, v: float | None) -> float | None:
    """A measured figure summed over a row's phases: None once one phase's was not
    measured (the others' sum would pass for the whole)."""
    if first:
        return v
    return None if total is None or v is None else total + v


@dataclass
class NodeRow:
    """One cluster node's part of a cost row's server figures (None: not measured)."""

    cpu_s: float | None = None
    read_bytes: int | None = None
    write_bytes: int | None = None
    engine_written_bytes: int | None = None
    phases: int = 0  # added so far (a figure of a node missing from one: None)


@dataclass
class CostRow:
    """One line of the cost table: a phase, a group of read phases, or the whole run."""

    label: str
    ops: int = 0
    seconds: float = 0.0
    client_cpu_s: float | None = None
    engine_cpu_s: float | None = None
    server_cpu_s: float | None = None
    read_bytes: int | None = None
    write_bytes: int | None = None
    logical_write_bytes: int | None = None
    space_amplification: float | None = None
    stall_s: float | None = None
    engine_written_bytes: int | None = None
    #: A cluster's nodes (endpoint -> its part of the server figures); empty otherwise.
    nodes: dict[str, NodeRow] = field(default_factory=dict)
    phases: int = 0  # added so far

    def per_op_us(self, seconds: float | None) -> float | None:
        return seconds / self.ops * 1e6 if seconds is not None and self.ops > 0 else None

    @property
    def write_amplification(self) -> float | None:
        """None when not measured or when the data did not reach the device (``off_disk``)."""
        if self.write_bytes is None or not self.logical_write_bytes or self.writes_off_disk:
            return None
        return self.write_bytes / self.logical_write_bytes

    @property
    def writes_off_disk(self) -> bool:
        return off_disk(self.write_bytes, self.logical_write_bytes)

    @property
    def read_bytes_per_op(self) -> float | None:
        return self.read_bytes / self.ops if self.read_bytes is not None and self.ops > 0 else None

    def add(self, p: PhaseResult, c: PhaseCost) -> None:
        first = self.phases == 0
        self.phases += 1
        self.ops += p.ops
        self.seconds += p.seconds
        self.client_cpu_s = _all(first, self.client_cpu_s, c.client_cpu_seconds)
        self.engine_cpu_s = _all(first, self.engine_cpu_s, c.engine_cpu_seconds)
        self.server_cpu_s = _all(first, self.server_cpu_s, c.server_cpu_seconds)
        self.read_bytes = _all(first, self.read_bytes, c.read_bytes)  # type: ignore[assignment]
        self.write_bytes = _all(first, self.write_bytes, c.write_bytes)  # type: ignore[assignment]
        self.logical_write_bytes = _add(self.logical_write_bytes, c.logical_write_bytes)  # type: ignore[assignment]
        self.stall_s = _add(self.stall_s, c.stall_seconds)
        if c.engine_written:
            self.engine_written_bytes = (self.engine_written_bytes or 0) + sum(c.engine_written.values())
        if _measured_space(c):  # the latest measured (None: not on disk yet)
            self.space_amplification = c.space_amplification
        for key in self.nodes.keys() - c.server_nodes.keys():  # a phase without the node
            self.nodes[key] = NodeRow(phases=self.phases)
        for key, n in c.server_nodes.items():
            node = self.nodes.setdefault(key, NodeRow(phases=self.phases - 1))  # new: missed those before
            was = node.phases == 0
            node.phases += 1
            node.cpu_s = _all(was, node.cpu_s, n.cpu_seconds)
            node.read_bytes = _all(was, node.read_bytes, n.read_bytes)  # type: ignore[assignment]
            node.write_bytes = _all(was, node.write_bytes, n.write_bytes)  # type: ignore[assignment]
            if n.engine_written:
                node.engine_written_bytes = (node.engine_written_bytes or 0) + sum(n.engine_written.values())

    def node_write_amplification(self, node: NodeRow) -> float | None:
        """A node's device bytes written over the phase's logical bytes (on Galera each
        node stores every write: replication's cost, node by node)."""
        if node.write_bytes is None or not self.logical_write_bytes:
            return None
        return node.write_bytes / self.logical_write_bytes


def cost_rows(e: EngineResult) -> list[CostRow]:
    """The engine's cost rows (empty when no phase has a cost: an older result)."""
    costed = [(p, p.cost) for p in e.phases if p.cost is not None and not p.skipped]
    if not costed:
        return []
    rows: list[CostRow] = []
    groups: dict[Group, CostRow] = {}
    total = CostRow("all phases")
    for p, c in costed:
        total.add(p, c)
        if p.group in _GROUP_LABELS:
            if p.group not in groups:
                groups[p.group] = CostRow(_GROUP_LABELS[p.group])
            groups[p.group].add(p, c)
            continue
        row = CostRow(p.name)
        row.add(p, c)
        if p.action is Action.VERIFY:
            continue  # four operations: nothing to read in it
        rows.append(row)
    # the read groups after the phases they follow in the plan: after the last write phase
    # the last measured, even when it is "not on disk yet" (None): an earlier figure would
    # pass for the store's at the end
    total.space_amplification = next((c.space_amplification for _, c in reversed(costed) if _measured_space(c)), None)
    return rows + [groups[g] for g in _GROUP_LABELS if g in groups] + [total]


def _measured_space(c: PhaseCost) -> bool:
    """The phase measured a storage figure against live data (a write phase, settle)."""
    return c.storage_bytes is not None and bool(c.logical_live_bytes)


def not_measured(e: EngineResult) -> dict[str, str]:
    """Figure label -> why it was not measured, over the engine's phases (first reason);
    an amplification whose data was not on disk yet (``off_disk``) among them."""
    out: dict[str, str] = {}
    for p in e.phases:
        if p.cost is None:
            continue
        for key, why in p.cost.not_measured.items():
            out.setdefault(_FIGURE_LABELS.get(key, key), why)
    note = off_disk_note(e)
    if note is not None:
        out.setdefault("amplification", note)
    return out


def off_disk_note(e: EngineResult) -> str | None:
    """Why the engine's write or space amplification (or storage) is not shown: the data
    was not on disk yet where it was measured; None when every figure measured the data."""
    if e.facts.storage_method is StorageMethod.NONE:
        stored = [p for p in e.phases if p.cost and (p.cost.storage_off_disk or p.cost.writes_off_disk)]
        return f"{e.engine} stores nothing on disk" if stored else None
    where: list[str] = []
    for p in e.phases:
        c = p.cost
        if c is None or p.skipped:
            continue
        if c.storage_off_disk:
            where.append(
                f"{p.name}: {fmt.size(c.storage_bytes)} stored for {fmt.size(c.logical_live_bytes)} of live data"
            )
        elif c.writes_off_disk:
            where.append(
                f"{p.name}: {fmt.size(c.write_bytes)} reached the device of {fmt.size(c.logical_write_bytes)} written"
            )
    if not where and not e.storage_off_disk:
        return None
    if not where:
        where.append(f"the end: {fmt.size(e.storage_bytes)} stored for {fmt.size(e.live_logical_bytes())} of live data")
    return (
        f"not on disk yet ({'; '.join(where)}: under {ON_DISK_SHARE:.0%} of the logical bytes, so the engine "
        "still held the data in memory then, e.g. in a memtable not flushed yet)"
    )


# --- the console's table (80 columns) ----------------------------------------------------

_NAME = 24
_HEAD1 = f"  {'cost':<{_NAME}}   CPU µs per operation    device MB   amplification"
_HEAD2 = f"  {'phase':<{_NAME}} {'client':>7} {'engine':>7} {'server':>7} {'read':>6} {'write':>6} {'write':>7} {'space':>6}"


def _us(r: CostRow, seconds: float | None) -> str:
    """µs per operation; a phase without operations (stabilize, settle) shows its CPU
    seconds instead (``1.25s``)."""
    if seconds is None:
        return "-"
    if r.ops == 0:
        return f"{seconds:.2f}s"
    v = seconds / r.ops * 1e6
    return f"{v:.1f}" if v < 1000 else f"{v:.0f}"


def _mb(v: int | None) -> str:
    if v is None:
        return "-"
    mb = v / (1024 * 1024)
    return f"{mb:.1f}" if mb < 1000 else f"{mb:.0f}"


def _x(v: float | None) -> str:
    return "-" if v is None else f"{v:.2f}" if v < 100 else f"{v:.0f}"


def console_lines(e: EngineResult, width: int = 80) -> list[str]:
    """The engine's cost table for the console, within ``width`` (at least 80) columns,
    then what was not measured and why (wrapped)."""
    rows = cost_rows(e)
    if not rows:
        return []
    out = [_HEAD1, _HEAD2]
    for r in rows:
        name = r.label if len(r.label) <= _NAME else r.label[: _NAME - 1] + "…"
        out.append(
            f"  {name:<{_NAME}} {_us(r, r.client_cpu_s):>7} {_us(r, r.engine_cpu_s):>7}"
            f" {_us(r, r.server_cpu_s):>7} {_mb(r.read_bytes):>6} {_mb(r.write_bytes):>6}"
            f" {_x(r.write_amplification):>7} {_x(r.space_amplification):>6}"
        )
    out += _console_nodes(rows)
    by_reason: dict[str, list[str]] = {}
    for label, why in not_measured(e).items():
        by_reason.setdefault(why, []).append(label)
    for why, labels in by_reason.items():
        text = f"{', '.join(labels)} not measured: {why}"
        out += textwrap.wrap(text, width=width - 2, initial_indent="  ", subsequent_indent="    ")
    return out


_ENDPOINT = 21


def _console_nodes(rows: list[CostRow]) -> list[str]:
    """A cluster's server figures node by node, for the write phases and the whole run
    (the read groups' would add a line per node each: in the report)."""
    shown = [r for r in rows if r.nodes and (r.logical_write_bytes or r is rows[-1])]
    if not shown:
        return []
    out = [f"  {'server per node':<{_NAME}} {'endpoint':<{_ENDPOINT}} {'CPU µs/op':>9} {'write MB':>8} {'write amp.':>10}"]
    for r in shown:
        name = r.label if len(r.label) <= _NAME else r.label[: _NAME - 1] + "…"
        for i, (key, node) in enumerate(r.nodes.items()):
            endpoint = key if len(key) <= _ENDPOINT else key[: _ENDPOINT - 1] + "…"
            out.append(
                f"  {name if i == 0 else '':<{_NAME}} {endpoint:<{_ENDPOINT}} {_us(r, node.cpu_s):>9}"
                f" {_mb(node.write_bytes):>8} {_x(r.node_write_amplification(node)):>10}"
            )
    return out


def _markdown_nodes(rows: list[CostRow], escape: Callable[[str], str]) -> list[str]:
    """A cluster's server figures node by node, every row of the cost table."""
    if not any(r.nodes for r in rows):
        return []
    out = [
        "",
        "| Phase | node | CPU µs/op server | read MB | write MB | engine written MB | write amp. |",
        "|---|---|" + "---:|" * 5,
    ]
    for r in rows:
        for key, node in r.nodes.items():
            cells = [
                escape(r.label),
                escape(key),
                _cell_us(r, node.cpu_s),
                _mb(node.read_bytes),
                _mb(node.write_bytes),
                _mb(node.engine_written_bytes),
                _x(r.node_write_amplification(node)),
            ]
            out.append("| " + " | ".join(cells) + " |")
    return out


# --- the report's table --------------------------------------------------------------------

COST_NOTE = (
    "CPU per operation of the client process (every thread), of the engine's own background "
    "threads in it (a part of the client's) and of the server's processes on this machine; a "
    "phase without operations shows CPU seconds. Device bytes are /proc/PID/io read_bytes and "
    "write_bytes of those processes (counted when a page is dirtied, so a page rewritten before "
    "write-back counts once). Logical bytes: what the workload wrote in docs/workload.md's "
    "encoding (records and index entries); write amplification is device bytes written over "
    "them, space amplification the storage over the live data's logical bytes, after each "
    "write phase and at settle. Engine written: the bytes the engine says it wrote (log, "
    "flush, merge...). \"-\": not measured (why, below the table), never 0."
)


def _cell_us(r: CostRow, seconds: float | None) -> str:
    return _us(r, seconds)


def _opt(v: float | None, spec: str) -> str:
    return "-" if v is None else format(v, spec)


def markdown_lines(e: EngineResult, escape: Callable[[str], str]) -> list[str]:
    """The engine's cost table as Markdown (``escape``: the report's text escaping), then
    what was not measured and why, and what a figure leaves out."""
    rows = cost_rows(e)
    if not rows:
        return []
    head = (
        "| Phase | ops | CPU µs/op client | engine | server | read MB | write MB | engine written MB "
        "| logical MB | write amp. | space amp. | read B/op | stalls s |"
    )
    out = [head, "|---|" + "---:|" * 12]
    for r in rows:
        cells = [
            escape(r.label),
            f"{r.ops:_d}",
            _cell_us(r, r.client_cpu_s),
            _cell_us(r, r.engine_cpu_s),
            _cell_us(r, r.server_cpu_s),
            _mb(r.read_bytes),
            _mb(r.write_bytes),
            _mb(r.engine_written_bytes),
            _mb(r.logical_write_bytes),
            _x(r.write_amplification),
            _x(r.space_amplification),
            _opt(r.read_bytes_per_op, ".1f"),
            _opt(r.stall_s, ".2f"),
        ]
        out.append("| " + " | ".join(cells) + " |")
    out += _markdown_nodes(rows, escape)
    out.append("")
    for label, why in not_measured(e).items():
        out.append(f"- {escape(label)} not measured: {escape(why)}")
    notes = sorted({n for p in e.phases if p.cost is not None for n in p.cost.notes})
    out += [f"- {escape(n)}" for n in notes]
    return out
