"""Capacity under a latency bound, as a person reads it: the console line of a searched
phase, the scorecard (engines ranked by capacity per phase, cost per operation beside it),
the gates (``--require-rate``), and the report's section.

Its own module so the console (run layer), the run command and the Markdown report all
use the same words and the same ranking; the search itself is ``asyncbench.run.capacity.capacity``.
"""

from __future__ import annotations

import dataclasses
import textwrap
from collections.abc import Callable
from dataclasses import dataclass

from asyncbench import fmt
from asyncbench.measure.stats import Summary
from asyncbench.result import NO_SERVER, Capacity, PhaseResult, RunResult
from asyncbench.slo import bounds_text

__all__ = [
    "ScoreRow",
    "capacity_line",
    "capacity_text",
    "gate_failures",
    "gate_inconclusive",
    "markdown_lines",
    "scorecard",
    "scorecard_lines",
    "unmeasured_reason",
]


#: The console's width: a scorecard line never wraps.
WIDTH = 80


def _rate(x: float) -> str:
    return f"{fmt.count(round(x))}/s"


def limit_name(limited_by: str | None) -> str:
    """What limited a capacity, in one word: a percentile, ``rate`` or ``backlog``."""
    return limited_by.split(":", 1)[0] if limited_by else "-"


def capacity_text(cap: Capacity) -> str:
    """``11_314/s (95% 10_902-11_725)``, ``≥ 64_000/s``, ``< 100/s``, ``inconclusive from
    22_361/s (passed 11_180/s)`` or ``interrupted after 12 probes``."""
    low, high = cap.rate_range or (0.0, 0.0)
    if cap.interrupted:
        passed = [p.rate for p in cap.probes if p.limit is None]
        best = f", passed up to {_rate(max(passed))}" if passed else ""
        return f"interrupted after {len(cap.probes)} probes{best}"
    if cap.inconclusive is not None:
        where = "" if cap.inconclusive_from is None else f" from {_rate(cap.inconclusive_from)}"
        below = "" if cap.lower_bound is None else f" (passed {_rate(cap.lower_bound)})"
        return f"inconclusive{where}{below}"
    if cap.capacity is None:
        return f"< {_rate(low)}"
    text = ("≥ " if cap.at_ceiling else "") + _rate(cap.capacity)
    if cap.ci_low is not None and cap.ci_high is not None:
        text += f" (95% {fmt.count(round(max(cap.ci_low, 0)))}-{fmt.count(round(cap.ci_high))})"
    return text


def capacity_line(result: PhaseResult) -> str:
    """The console's second line of a searched phase (at most 80 columns in the usual case)."""
    cap = result.capacity
    assert cap is not None
    searches = len(cap.capacities)
    probes = f"{len(cap.probes)} probes" + (f", {searches} searches" if searches > 1 else "")
    return (
        f"    capacity {capacity_text(cap)} · {bounds_text(cap.slo_ns)}"
        f" · limit {limit_name(cap.limited_by)} · {probes}"
    )


def unmeasured_reason(cap: Capacity) -> str | None:
    """Why a capacity is no measurement to rank (None: it is one): the search was stopped,
    the client decided a verdict (inconclusive), or the engine failed at the range's lowest
    rate (the capacity is below the range: how far below is not measured)."""
    if cap.interrupted:
        return "the run stopped during the search"
    if cap.inconclusive is not None:
        return cap.inconclusive
    if cap.capacity is None:
        low = (cap.rate_range or [0.0])[0]
        return f"failed at the range's lowest rate, {_rate(low)}: the capacity is somewhere below"
    return None


@dataclass(frozen=True)
class ScoreRow:
    """One engine in one searched phase of the scorecard. ``rank``: its place among the
    measured capacities, None for one that is no measurement (``reason`` says why: an
    inconclusive search, one below the range, one stopped), shown unranked after them."""

    phase: str
    kind: str
    engine: str
    capacity: float | None  # the mean over every measured repeat's searches; None: not measured
    text: str
    limit: str
    bounds: str
    cpu_us_per_op: float | None
    write_bytes_per_op: float | None
    rank: int | None = None
    reason: str | None = None
    inconclusive: bool = False  # the client decided it: neither a measurement nor the engine's failure


def _cost(p: PhaseResult) -> tuple[float | None, float | None]:
    c = p.cost
    if c is None or not p.ops:
        return None, None
    # client + server; a part not measured makes the total not measured (as the cost table),
    # except where there is no server (an in-process engine: the client's is the whole)
    server = c.server_cpu_seconds
    if server is None and c.not_measured.get("server_cpu") == NO_SERVER:
        server = 0.0
    cpu = None if c.client_cpu_seconds is None or server is None else (c.client_cpu_seconds + server) / p.ops * 1e6
    written = c.write_bytes
    return cpu, (None if written is None else written / p.ops)


def scorecard(run: RunResult) -> dict[int, list[ScoreRow]]:
    """Per searched plan phase (by index): the engines, highest capacity first (an engine
    with none, below the range, last). Repeats of the run pool their searches."""
    out: dict[int, list[ScoreRow]] = {}
    by_engine: dict[tuple[int, str], list[PhaseResult]] = {}
    for e in run.engines:
        if e.warmup:
            continue
        for p in e.phases:
            if p.capacity is not None:
                by_engine.setdefault((p.index, e.engine), []).append(p)
    for (index, engine), phases in by_engine.items():
        caps = [p.capacity for p in phases if p.capacity is not None]
        first = caps[0]
        pooled = [c for cap in caps for c in cap.capacities]
        if len(caps) > 1:
            got = [c for c in pooled if c is not None]
            s = Summary.of(got) if got and len(got) == len(pooled) else None
            unsure = [c for c in caps if c.inconclusive is not None]
            lowest = min(unsure, key=lambda c: c.inconclusive_from or 0.0) if unsure else None
            merged = Capacity(
                first.slo_ns,
                pooled,
                None if s is None else s.mean,
                None if s is None else s.ci_low,
                None if s is None else s.ci_high,
                first.limited_by,
                any(c.at_ceiling for c in caps),
                rate_range=first.rate_range,
                probes=[p for c in caps for p in c.probes],
                inconclusive=None if lowest is None else lowest.inconclusive,
                inconclusive_from=None if lowest is None else lowest.inconclusive_from,
                lower_bound=None if lowest is None else lowest.lower_bound,
                interrupted=any(c.interrupted for c in caps),
            )
        else:
            merged = first
        reason = unmeasured_reason(merged)
        cpu, written = _cost(phases[0])
        out.setdefault(index, []).append(
            ScoreRow(
                phases[0].name,
                phases[0].kind.kind,
                engine,
                merged.capacity if reason is None else None,
                capacity_text(merged),
                limit_name(merged.limited_by),
                bounds_text(merged.slo_ns),
                cpu,
                written,
                reason=reason,
                inconclusive=merged.inconclusive is not None and not merged.interrupted,
            )
        )
    for index, rows in out.items():
        measured = sorted((r for r in rows if r.reason is None), key=lambda r: -(r.capacity or 0.0))
        others = [r for r in rows if r.reason is not None]
        out[index] = [dataclasses.replace(r, rank=n) for n, r in enumerate(measured, 1)] + others
    return dict(sorted(out.items()))


def _per_op(cpu: float | None, written: float | None) -> str:
    parts = []
    if cpu is not None:
        parts.append(f"{cpu:.1f} µs CPU")
    if written is not None:
        parts.append(f"{fmt.size(round(written))} written")
    return ", ".join(parts) + " per op" if parts else ""


def scorecard_lines(run: RunResult) -> list[str]:
    """The console's scorecard: per searched phase, the engines ranked by capacity."""
    board = scorecard(run)
    if not board:
        return []
    lines = ["", "capacity scorecard: the highest rate meeting every bound (mean of searches)"]
    for rows in board.values():
        lines.append(f"  {rows[0].phase} · {rows[0].bounds}")
        we = max(len(r.engine) for r in rows)
        ranked = [r for r in rows if r.rank is not None]
        wt = max((len(r.text) for r in ranked), default=0)
        wl = max((len(r.limit) for r in ranked), default=0)
        for r in ranked:
            cost = _per_op(r.cpu_us_per_op, r.write_bytes_per_op)
            line = f"    {r.rank}. {r.engine:<{we}}  {r.text:<{wt}}  limit {r.limit:<{wl}}"
            if len(line) + 2 + len(cost) <= WIDTH:
                lines.append(f"{line}  {cost}".rstrip())
            else:  # an 80-column terminal: the cost on a line of its own
                lines += [line.rstrip(), f"       {cost}"] if cost else [line.rstrip()]
        for r in rows:  # no measurement to rank: unranked, each with its reason
            if r.rank is None:
                lines += textwrap.wrap(
                    f"-  {r.engine:<{we}}  {r.text}: {r.reason}", WIDTH, initial_indent="    ", subsequent_indent="       "
                )
    return lines


def gate_failures(run: RunResult, required: dict[str, float]) -> list[str]:
    """``--require-rate``: one line per engine and searched phase whose capacity (the mean
    of its searches) is below the rate required of its kind."""
    out = []
    for rows in scorecard(run).values():
        for r in rows:
            need = required.get(r.kind)
            if need is None or (r.capacity is not None and r.capacity >= need) or r.inconclusive:
                continue  # (an inconclusive capacity is not the engine's: gate_inconclusive names it)
            out.append(
                f"CAPACITY BELOW REQUIRED: engine {r.engine}, phase {r.phase!r}: {r.text} under {r.bounds}, "
                f"required {_rate(need)} (--require-rate {r.kind}={fmt.count(round(need))}); limit {r.limit}"
            )
    return out


def gate_inconclusive(run: RunResult, required: dict[str, float]) -> list[str]:
    """``--require-rate`` on a capacity the client decided (inconclusive): neither met nor
    short, one line per engine and phase naming the reason."""
    out = []
    for rows in scorecard(run).values():
        for r in rows:
            need = required.get(r.kind)
            if need is not None and r.inconclusive:
                out.append(
                    f"CAPACITY INCONCLUSIVE: engine {r.engine}, phase {r.phase!r}: required {_rate(need)} "
                    f"(--require-rate {r.kind}={fmt.count(round(need))}), {r.text}: {r.reason}"
                )
    return out


def markdown_lines(run: RunResult, escape: Callable[[str], str]) -> list[str]:
    """The report's scorecard table (its chart is among the report's charts at the top)."""
    board = scorecard(run)
    if not board:
        return []
    lines = [
        "## Capacity under the latency bounds",
        "",
        "The highest target rate at which the achieved rate is within 5 % of the target, response time "
        "(from each operation's intended start) meets every bound, and the backlog stays bounded "
        "(docs/capacity.md in the asyncbench repository). Mean of the searches, with its 95 % interval "
        "when there are several.",
        "",
        "| phase | bounds | rank | engine | capacity | limited by | CPU µs/op | written/op |",
        "| --- | --- | ---: | --- | ---: | --- | ---: | ---: |",
    ]
    for rows in board.values():
        for r in rows:
            cpu = "" if r.cpu_us_per_op is None else f"{r.cpu_us_per_op:.1f}"
            wr = "" if r.write_bytes_per_op is None else fmt.size(round(r.write_bytes_per_op))
            rank = "-" if r.rank is None else str(r.rank)
            limit = r.limit if r.reason is None else escape(r.reason)
            lines.append(
                f"| {escape(r.phase)} | {r.bounds} | {rank} | {escape(r.engine)} | {r.text} | {limit} | {cpu} | {wr} |"
            )
    lines.append("")
    if any(r.rank is None for rows in board.values() for r in rows):
        lines += [
            "A rank of `-`: no capacity was measured (the reason in *limited by*): the client's own lateness "
            "decided a verdict (inconclusive), the engine failed at the range's lowest rate, or the run "
            "stopped during the search. These are not ranked against measured capacities.",
            "",
        ]
    sizes = sorted(
        {(p.index, p.name, p.capacity.warmup_ops, p.capacity.judged_ops, p.capacity.probe_bound, p.capacity.store_warmup_ops,
          p.capacity.probe_seconds)
         for e in run.engines for p in e.phases if p.capacity is not None}
    )  # fmt: skip (in plan order)
    for _, name, warmup, judged, bound, store, least in sizes:
        if least:  # a least probe duration: a probe is as many such slices as its rate needs
            judged_text = (
                f"{fmt.count(judged)} judged operations, at least {least:g} s of them "
                "(slices of that many run back to back)"
            )
        else:
            judged_text = f"{fmt.count(judged)} judged operations"
        warm = (
            f" before the searches, the store warmed by the phase's stream once, closed loop ({fmt.count(store)} operations)."
            if store
            else ""
        )
        lines.append(
            f"- {escape(name)}: each probe {fmt.count(warmup)} warm-up and {judged_text}; "
            f"at most {bound} probes per search;{warm}".rstrip(";") + ("" if warm else ".")
        )
    for e in run.engines:
        for p in e.phases:
            if p.capacity is not None and p.capacity.not_monotonic:
                lines.append(f"- **Not monotonic**: {escape(e.engine)}, {escape(p.name)}: {escape(p.capacity.not_monotonic)}.")
    lines.append("")
    return lines
