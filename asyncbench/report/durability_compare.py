"""``compare``'s durability view: per engine and crash (phase, how, point), base against new
for the acknowledged writes lost and the torn records (docs/durability.md).

A crash's figures are counts, not timings: a run that lost more acknowledged writes than
the other, tore a record, or whose store no longer opened is a **regression** of the
engine's durability, whatever its speed, and fails ``compare`` as a slower phase does.
Each side's figure is the worst of its runs (repeats and files pooled, warm-ups left out):
one run that lost a write is the finding, an average would hide it. A crash on one side
only is shown, never called. Results without crash rows add nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from asyncbench import fmt
from asyncbench.result import DurabilityRow, RunResult

__all__ = ["TITLE", "DurabilityChange", "durability_changes", "json_rows", "markdown_lines", "text_lines"]

TITLE = "Durability after a crash (worst run of each side; more acknowledged writes lost, a torn record or a store that no longer opens is a regression):"

#: (engine, crashed phase, how, crash point): one crash both sides can have made.
CrashKey = tuple[str, str, str, int]


@dataclass(frozen=True)
class Worst:
    """One side's worst run of a crash."""

    acknowledged: int
    lost: int
    torn: int
    opened: bool
    promise: str

    def text(self) -> str:
        if not self.opened:
            return "did not open"
        torn = f", {fmt.count(self.torn)} torn" if self.torn else ""
        return f"lost {fmt.count(self.lost)} of {fmt.count(self.acknowledged)}{torn}"


@dataclass(frozen=True)
class DurabilityChange:
    engine: str
    crash: str  # "kill in load after 1_500"
    base: Worst | None  # None: no such crash on that side
    new: Worst | None

    @property
    def regressed(self) -> bool:
        """More acknowledged writes lost, a torn record, or a store that stopped opening."""
        if self.base is None or self.new is None:
            return False
        n, b = self.new, self.base
        return (b.opened and not n.opened) or n.torn > 0 or (n.opened and b.opened and n.lost > b.lost)

    def verdict(self) -> str:
        if self.base is None or self.new is None:
            return "one side only"
        if self.regressed:
            return "REGRESSED"
        return "improved" if self.new.lost < self.base.lost else "same"


def _badness(w: Worst) -> tuple[bool, int, int]:
    return (not w.opened, w.torn, w.lost)


def _worse(a: DurabilityRow, b: Worst | None) -> Worst:
    mine = Worst(a.acknowledged, a.acknowledged_lost, a.torn, a.opened, a.promise)
    return mine if b is None else max(mine, b, key=_badness)


def _side(runs: Sequence[RunResult], engines: set[str] | None) -> dict[CrashKey, Worst]:
    out: dict[CrashKey, Worst] = {}
    for run in runs:
        for e in run.engines:
            if e.warmup or (engines and e.engine not in engines):
                continue
            for d in e.durability:
                key = (e.engine, d.phase, d.how, d.after)
                out[key] = _worse(d, out.get(key))
    return out


def durability_changes(
    base: Sequence[RunResult], new: Sequence[RunResult], engines: set[str] | None = None
) -> list[DurabilityChange]:
    """Every crash either side made, per engine, base and new worst runs (base's order,
    then the new side's own)."""
    a, b = _side(base, engines), _side(new, engines)
    out = []
    for key in [*a, *(k for k in b if k not in a)]:
        engine, phase, how, after = key
        out.append(DurabilityChange(engine, f"{how} in {phase} after {fmt.count(after)}", a.get(key), b.get(key)))
    return out


def _cell(w: Worst | None) -> str:
    return "-" if w is None else w.text()


def text_lines(changes: list[DurabilityChange]) -> list[str]:
    """The console table (nothing without a crash)."""
    if not changes:
        return []
    lines = [TITLE]
    for c in changes:
        lines.append(f"  {c.engine} {c.crash}: base {_cell(c.base)}; new {_cell(c.new)}: {c.verdict()}")
    return lines


def markdown_lines(changes: list[DurabilityChange], escape: Callable[[str], str]) -> list[str]:
    """The Markdown table (nothing without a crash)."""
    if not changes:
        return []
    lines = ["", "", TITLE, "", "| Engine | Crash | Base | New | Verdict |", "| --- | --- | --- | --- | --- |"]
    for c in changes:
        cells = (c.engine, c.crash, _cell(c.base), _cell(c.new), c.verdict())
        lines.append("| " + " | ".join(escape(x) for x in cells) + " |")
    return lines


def _json(w: Worst | None) -> dict[str, object] | None:
    if w is None:
        return None
    return {"acknowledged": w.acknowledged, "acknowledged_lost": w.lost, "torn": w.torn, "opened": w.opened, "promise": w.promise}


def json_rows(changes: list[DurabilityChange]) -> list[dict[str, object]]:
    return [
        {"engine": c.engine, "crash": c.crash, "base": _json(c.base), "new": _json(c.new), "regressed": c.regressed}
        for c in changes
    ]
