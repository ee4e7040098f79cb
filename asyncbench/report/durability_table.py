"""The report's "Durability After A Crash" table: one row per crash the plan made, what the
store held when opened again (record by record against the plan) beside the promise the
engine states, and the verdict (:func:`asyncbench.measure.verdicts.judge_run`'s)."""

from __future__ import annotations

from collections.abc import Callable

from asyncbench import fmt
from asyncbench.measure.verdicts import durability_failed, durability_text
from asyncbench.report.columns import Column, markdown
from asyncbench.result import DurabilityRow, EngineResult, RunResult

__all__ = ["DURABILITY_NOTE", "markdown_lines"]

DURABILITY_NOTE = (
    "A `kill` crash is SIGKILL of the engine's process once the crash point's operations are "
    "acknowledged: it loses what the engine itself buffered, never what reached the operating "
    "system. A `power` crash is the same kill with the store on a filesystem that then drops every "
    "write not yet synced, as a power cut does (docs/durability.md). Acknowledged writes lost FAIL "
    "an engine that promises synced commits; a store that does not open, or a torn or corrupt "
    "record, FAILs any engine."
)

Row = tuple[EngineResult, DurabilityRow]


def _verdict(e: EngineResult, d: DurabilityRow) -> str:
    return "**FAIL**" if durability_failed(d) else "PASS"


def markdown_lines(run: RunResult, text: Callable[[str], str]) -> list[str]:
    """The section's table and each non-PASS row's reason; [] without a crash."""
    rows: list[Row] = [(e, d) for e in run.engines for d in e.durability]
    if not rows:
        return []
    repeats = run.repeat > 1
    columns: list[Column[Row]] = [
        Column("Engine", "l", lambda r: text(f"{r[0].engine}#{r[0].repeat + 1}" if repeats else r[0].engine)),
        Column("Crash", "l", lambda r: text(f"{r[1].how} in {r[1].phase}, {r[1].crash_seconds:.2f} s in")),
        Column("Acknowledged", "r", lambda r: fmt.count(r[1].acknowledged)),
        Column("Lost", "r", lambda r: fmt.count(r[1].acknowledged_lost) if r[1].opened else "-"),
        Column("Window lost", "r", lambda r: "-" if r[1].lost_seconds is None else f"{r[1].lost_seconds:.2f} s"),
        Column("Unacked present", "r", lambda r: fmt.count(r[1].unacknowledged_present) if r[1].opened else "-"),
        Column("Torn", "r", lambda r: fmt.count(r[1].torn) if r[1].opened else "-"),
        Column("Opened", "l", lambda r: "yes" if r[1].opened else "**no**"),
        Column("Promise (synced)", "l", lambda r: text(r[1].promise or "not stated")),
        Column("Verdict", "l", lambda r: _verdict(*r)),
    ]
    out = [DURABILITY_NOTE, ""] + markdown(columns, rows) + [""]
    for e, d in rows:
        if _verdict(e, d) != "PASS":
            out.append(f"- {text(e.engine)}: {text(durability_text(d))}")
        out += [f"  - {text(t)}" for t in d.torn_examples]
    return out + ([""] if out[-1] else [])
