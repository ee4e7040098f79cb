"""The ``[[phase]]`` list: each phase checked against the workload's phase kinds, then the
run-wide steps that change the phases after the flags (a run rate, its sweeps, the charts).

Apart from the ``[run]`` table because a phase's keys and order rules are the workload's
vocabulary (kinds, streams), and sweeps expand the list the runner walks.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from asyncbench import fmt
from asyncbench.config.errors import ConfigError
from asyncbench.config.model import BenchConfig, PhaseSpec
from asyncbench.config.readers import parse_rates, read_arrivals, read_bool, read_int, read_shown, read_str
from asyncbench.limits import MAX_PROFILES
from asyncbench.workload import Action, Group, PhaseKind, SettingError
from asyncbench.workloads import workload

PHASE_KEYS = {"kind", "name", "stream", "count", "rate", "arrivals", "over_time", "capacity"}
#: The most phases a plan runs, after a rate sweep expands its phases: the reference plan
#: has 17; thousands are a generated mistake whose run would never end.
MAX_PHASES = 1000


def read_phases(where: str, items: Any, settings: dict[str, Any] | None = None) -> list[PhaseSpec]:
    settings = settings or {}
    if not isinstance(items, list) or not items:
        raise ConfigError(where, "phase", "needs at least one [[phase]] table")
    if len(items) > MAX_PHASES:
        raise ConfigError(where, "phase", f"{len(items):_d} phases; a plan runs at most {MAX_PHASES:_d}")
    phases: list[PhaseSpec] = []
    seen_insert = seen_update = False
    explicit: dict[str, str] = {}  # explicit display name -> key that set it
    auto: dict[str, int] = {}
    for i, table in enumerate(items):
        key = f"phase[{i}]"
        if not isinstance(table, dict):
            raise ConfigError(where, key, "must be a table")
        if "kind" not in table:
            raise ConfigError(where, f"{key}.kind", "is required")
        kind_name = table["kind"]
        if not isinstance(kind_name, str) or kind_name not in workload().phases:
            raise ConfigError(
                where, f"{key}.kind", f"unknown phase kind {kind_name!r}; known: {', '.join(workload().phases)}"
            )
        kind = workload().phases[kind_name]
        own = {k: v for k, v in table.items() if k not in PHASE_KEYS}
        try:
            params = workload().phase_params(kind, own, settings)
        except SettingError as exc:
            if exc.problem == "unknown key":
                allowed = ", ".join(sorted(PHASE_KEYS))
                raise ConfigError(where, f"{key}.{exc.key}", f"unknown key; allowed: {allowed}") from None
            raise ConfigError(where, f"{key}.{exc.key}", exc.problem) from None
        stream = kind.streams[0] if kind.takes_stream else None
        if "stream" in table:
            if not kind.takes_stream:
                raise ConfigError(where, f"{key}.stream", f"phase kind {kind_name!r} takes no stream")
            stream = table["stream"]
            if stream not in kind.streams:
                raise ConfigError(
                    where,
                    f"{key}.stream",
                    f"{stream!r} is not a stream of {kind_name!r}; use {' or '.join(kind.streams)}",
                )
        count = table.get("count")
        if count is not None:
            if not kind.takes_stream:
                raise ConfigError(where, f"{key}.count", f"phase kind {kind_name!r} takes no count")
            count = read_int(where, f"{key}.count", count, 1, MAX_PROFILES * 10)
        if kind.needs_data and not seen_insert:
            raise ConfigError(
                where, f"{key}.kind", f"{kind_name!r} comes before any insert phase; insert first"
            )
        if kind.inserts:
            if seen_insert:
                raise ConfigError(
                    where, f"{key}.kind", "a plan inserts the profiles once; remove the second insert"
                )
            seen_insert = True
        use = kind.use(stream if kind.takes_stream else None, after_update=seen_update)
        if kind.rewrites:
            seen_update = True
        if "name" in table:
            name = read_shown(where, f"{key}.name", read_str(where, f"{key}.name", table["name"]))
            if name in explicit or name in auto:
                raise ConfigError(
                    where, f"{key}.name", f"{name!r} is already the name of another phase; names must differ"
                )
            explicit[name] = key
        else:
            name = use.name
            auto[name] = auto.get(name, 0) + 1
            if auto[name] > 1:
                name = f"{name} ({auto[name]})"
            if name in explicit:
                raise ConfigError(
                    where,
                    f"{explicit[name]}.name",
                    f"{name!r} is also the automatic name of {key}; choose another name",
                )
            auto.setdefault(name, 1)
        post = use.post_update if kind.takes_stream else seen_update and not kind.rewrites
        rates: list[float] = []  # none: closed loop; one: open loop; more: a sweep
        if "rate" in table or "arrivals" in table:
            if kind.action is not Action.OPERATIONS:
                bad = "rate" if "rate" in table else "arrivals"
                raise ConfigError(where, f"{key}.{bad}", f"phase kind {kind_name!r} runs no operations to pace")
            if "rate" not in table:
                raise ConfigError(where, f"{key}.arrivals", "needs a rate on the same phase")
            rates = parse_rates(where, f"{key}.rate", table["rate"])
            if len(rates) > 1 and kind.runs_once:
                raise ConfigError(
                    where, f"{key}.rate", f"a sweep repeats the phase; {kind_name!r} changes the store, so it runs once"
                )
        arrivals = read_arrivals(where, f"{key}.arrivals", table["arrivals"]) if "arrivals" in table else "uniform"
        over_time = False
        if "over_time" in table:
            over_time = read_bool(where, f"{key}.over_time", table["over_time"])
            if over_time and kind.action is not Action.OPERATIONS:
                raise ConfigError(where, f"{key}.over_time", f"phase kind {kind_name!r} runs no operations to chart")
        capacity = False
        if "capacity" in table:
            capacity = read_bool(where, f"{key}.capacity", table["capacity"])
            if capacity and not searchable(kind):
                raise ConfigError(
                    where, f"{key}.capacity", f"phase kind {kind_name!r} is no read, scan or query phase: it has no capacity to search"
                )
            if capacity and rates:
                raise ConfigError(where, f"{key}.capacity", "a capacity search chooses its own rates; remove the phase's rate")
        spec = PhaseSpec(
            kind=kind_name,
            name=name,
            stream=stream,
            count=count,
            post_update=post,
            rate=rates[0] if rates else None,
            arrivals=arrivals,
            over_time=over_time,
            capacity=capacity,
            params=tuple(sorted(params.items())),
        )
        if len(rates) < 2:
            phases.append(spec)
            continue
        first = len(phases)
        for level in rates:  # a saturation sweep: the same phase at each rate, rising
            phases.append(
                dataclasses.replace(spec, name=f"{name} @ {fmt.count(round(level))}/s", rate=level, sweep=first)
            )
    check_phase_total(phases, where, "phase")
    return phases


def searchable(kind: PhaseKind) -> bool:
    """A capacity search probes a phase at many rates, so it repeats it: a read, scan or
    query phase that leaves the store as it found it (not YCSB's mixed phase, which writes)."""
    return kind.action is Action.OPERATIONS and kind.group is not Group.WRITE and not kind.runs_once


def check_phase_total(phases: list[PhaseSpec], where: str, key: str) -> None:
    """At most :data:`MAX_PHASES` phases once the sweeps (of ``key``) are expanded."""
    if len(phases) > MAX_PHASES:
        raise ConfigError(
            where, key, f"the rate sweep makes {len(phases):_d} phases; a plan runs at most {MAX_PHASES:_d}"
        )


def pace_phases(cfg: BenchConfig) -> None:
    """Apply the run's ``rate`` to every operation phase without a rate of its own (once,
    after the flags): one rate paces the phase; a sweep expands each phase that can repeat
    into one phase per rate (``name @ N/s``) and leaves inserts and updates closed loop."""
    if not cfg.rate:
        return
    out: list[PhaseSpec] = []
    for spec in cfg.phases:
        kind = workload().phases[spec.kind]
        if kind.action is not Action.OPERATIONS or spec.rate is not None:
            out.append(spec)
            continue
        if len(cfg.rate) == 1:
            out.append(dataclasses.replace(spec, rate=cfg.rate[0], arrivals=cfg.arrivals))
        elif kind.runs_once:
            out.append(spec)
        else:
            first = len(out)
            for level in cfg.rate:
                out.append(
                    dataclasses.replace(
                        spec, name=f"{spec.name} @ {fmt.count(round(level))}/s", rate=level, arrivals=cfg.arrivals, sweep=first
                    )
                )
    cfg.phases = _renumber_sweeps(out)  # a plan's own sweep may have moved with the expansion


def chart_phases(cfg: BenchConfig, where: str, key: str) -> None:
    """Mark the phases the run's ``over_time`` selects (once, after the flags and the rate;
    see :func:`selected_phases`)."""
    if cfg.over_time:
        chosen = selected_phases(
            cfg.over_time, [(s.kind, s.name, s.sweep) for s in cfg.phases], where, key
        )
        cfg.phases = [dataclasses.replace(s, over_time=True) if i in chosen else s for i, s in enumerate(cfg.phases)]


def selected_phases(words: list[str], phases: list[tuple[str, str, int | None]], where: str, key: str) -> set[int]:
    """The indexes of the operation phases ``words`` select among ``phases`` ((kind, name,
    sweep) each): ``all`` is every operation phase, a phase kind every phase of that kind,
    a name that phase (and, for a sweep, each of its levels). A word that selects nothing
    is an error naming what the plan runs: a typo would otherwise draw nothing, silently."""
    ops = [i for i, (kind, _, _) in enumerate(phases) if workload().phases[kind].action is Action.OPERATIONS]
    chosen: set[int] = set()
    for word in words:
        hit = {
            i
            for i in ops
            if word in ("all", phases[i][0], phases[i][1])
            or (phases[i][2] is not None and phases[i][1].rsplit(" @ ", 1)[0] == word)
        }
        if not hit:
            kinds = sorted({phases[i][0] for i in ops})
            raise ConfigError(
                where,
                key,
                f"{word!r} is not an operation phase kind or phase name of this plan; its kinds: "
                f"{', '.join(kinds) or 'none'}, or all",
            )
        chosen |= hit
    return chosen


def _renumber_sweeps(phases: list[PhaseSpec]) -> list[PhaseSpec]:
    """Each sweep's ``sweep`` is the index of its first level: recomputed after phases moved
    (a level follows its first level directly, with the same base name)."""
    out: list[PhaseSpec] = []
    first: dict[tuple[str, int | None], int] = {}
    for i, spec in enumerate(phases):
        if spec.sweep is None:
            out.append(spec)
            continue
        key = (spec.name.rsplit(" @ ", 1)[0], spec.sweep)
        start = first.setdefault(key, i)
        out.append(dataclasses.replace(spec, sweep=start))
    return out


def check_phase_counts(cfg: BenchConfig, where: str) -> None:
    """A phase ``count`` may not ask for more items than its stream holds at every profile count."""
    for i, ph in enumerate(cfg.phases):
        if ph.count is None or ph.stream is None:
            continue
        for profiles in cfg.profiles:
            available = getattr(cfg.counts_for(profiles), workload().stream_count(ph.stream))
            if ph.count > available:
                raise ConfigError(
                    where,
                    f"phase[{i}].count",
                    f"{ph.count:_d} exceeds the {available:_d} items of stream {ph.stream!r} at {profiles:_d} profiles",
                )
