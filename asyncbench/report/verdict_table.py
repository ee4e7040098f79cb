"""The verdict table a run ends with, and the report's Verdicts section: one row per engine
and judged phase (rate held?, response time at the bounded percentile with the service time
and the client's own delay beside it, the verdict), then the reason of every verdict that is
not a PASS. The rows are :func:`asyncbench.measure.verdicts.judge_run`'s; this module only
lays them out, once for the console (80 columns) and once for Markdown, so both say the same.
"""

from __future__ import annotations

import textwrap
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from asyncbench import fmt
from asyncbench.measure.verdicts import Outcome, VerdictRow, judge_run, overall
from asyncbench.result import RunResult
from asyncbench.slo import bounds_text

__all__ = ["console_lines", "markdown_lines"]

#: What an exit status of a gated run means, printed under the table.
EXIT_NOTE = "exit status: 0 all PASS, 1 a FAIL, 3 no FAIL but an INCONCLUSIVE"


@dataclass
class _Cells:
    """One engine and phase: the figures of its slo and rate rows, and the worst verdict."""

    engine: str
    phase: str
    rate: str = "-"
    response: str = "-"
    service: str = "-"
    delay: str = "-"
    outcome: Outcome = Outcome.PASS
    gated: bool = False


def _cells(rows: Sequence[VerdictRow], repeats: bool) -> list[_Cells]:
    out: dict[tuple[str, int, int | None], _Cells] = {}
    for r in rows:
        if r.check not in ("slo", "rate", "capacity"):
            continue
        label = f"{r.engine}#{r.repeat + 1}" if repeats else r.engine
        c = out.setdefault((r.engine, r.repeat, r.index), _Cells(label, r.phase or "-"))
        f = r.figures
        if f is not None and r.check == "rate" and f.rate is not None and f.achieved is not None:
            held = "held" if r.outcome is Outcome.PASS else "MISSED"
            c.rate = f"{fmt.count(round(f.achieved))} {held}"
        if f is not None and r.check == "capacity":
            c.rate = "cap. " + ("-" if f.achieved is None else fmt.count(round(f.achieved)))
        if f is not None and (r.check == "slo" or c.response == "-"):
            if f.response_ns is not None:
                c.response = f"{f.percentile} {fmt.latency(f.response_ns)}"
            c.service = "-" if f.service_ns is None else fmt.latency(f.service_ns)
            c.delay = "-" if f.delay_ns is None else fmt.latency(f.delay_ns)
        if r.gating or not c.gated:  # a gated verdict decides the cell; an ungated one only alone
            if r.gating and not c.gated:
                c.outcome, c.gated = r.outcome, True
            else:
                c.outcome = max(c.outcome, r.outcome, key=lambda o: o.rank)
    return list(out.values())


def _title(run: RunResult, rows: Sequence[VerdictRow]) -> str:
    worst = overall(rows)
    what = []
    if run.gates.slo_ns:
        what.append(bounds_text(run.gates.slo_ns))
    what += [f"{k}: {bounds_text(b)}" for k, b in run.gates.slo_kinds_ns.items()]
    under = f" ({'; '.join(what)})" if what else ""
    return f"== verdict: {worst.value if worst else 'nothing gated'}{under}"


def _cut(name: str, room: int) -> str:
    """``name`` in ``room`` characters, its middle cut (the ends tell phases apart)."""
    if len(name) <= room:
        return name
    head = (room - 1 + 1) // 2
    return name[:head] + "…" + name[len(name) - (room - 1 - head) :]


def console_lines(run: RunResult, width: int = 80) -> list[str]:
    """The run's closing verdict table ([] when nothing was judged beyond the checksums and
    no engine failed: the headline says that)."""
    rows = judge_run(run)
    cells = _cells(rows, run.repeat > 1)
    failed = [r for r in rows if r.check in ("engine", "checksums") and r.outcome is not Outcome.PASS]
    if not cells and not failed:
        return []
    out = ["", _title(run, rows)]
    if cells:
        percentiles = {c.response.split(" ", 1)[0] for c in cells if c.response != "-"}
        one = next(iter(percentiles)) if len(percentiles) == 1 else None
        head = ("engine", "phase", "ops/s", f"{one} resp" if one else "response", "service", "delay", "verdict")
        table = [head] + [
            (c.engine, c.phase, c.rate, c.response.split(" ", 1)[1] if one and c.response != "-" else c.response,
             c.service, c.delay, c.outcome.value)
            for c in cells
        ]  # fmt: skip
        fixed = [max(len(r[i]) for r in table) for i in range(len(head))]
        spare = width - 2 - sum(fixed) - (len(head) - 1)
        if spare < 0:  # the phase name gives way first, as the phase lines' names do
            fixed[1] = max(8, fixed[1] + spare)
        for t in table:
            cols = [t[0].ljust(fixed[0]), _cut(t[1], fixed[1]).ljust(fixed[1])]
            cols += [x.rjust(w) for x, w in zip(t[2:6], fixed[2:6], strict=True)] + [t[6]]
            out.append(("  " + " ".join(cols)).rstrip())
    reasons = [r for r in rows if r.outcome is not Outcome.PASS]
    for r in reasons:
        out += textwrap.wrap(r.line(), width, initial_indent="  ", subsequent_indent="    ")
    if any(r.gating for r in rows if r.check in ("slo", "rate", "capacity")):
        out.append(f"  {EXIT_NOTE}")
    return out


def markdown_lines(run: RunResult, escape: Callable[[str], str]) -> list[str]:
    """The report's Verdicts section (without its heading): the overall verdict, a table of
    every judged engine and phase, and each verdict's reason; [] when nothing was judged."""
    rows = judge_run(run)
    if not rows:
        return []
    out = [f"**{escape(_title(run, rows).removeprefix('== '))}**", ""]
    out += ["| verdict | engine | phase | judged | reason |", "| --- | --- | --- | --- | --- |"]
    for r in rows:
        gated = "" if r.gating else " (not gated)"
        out.append(
            f"| **{r.outcome.value}** | {escape(r.engine)} | {escape(r.phase or '-')} | {r.check}{gated} | {escape(r.reason)} |"
        )
    return out + ["", escape(EXIT_NOTE) + "; 130 interrupted."]
