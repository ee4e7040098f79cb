"""The ``[[phase]]`` list: each phase checked against the workload's phase kinds, then the
run-wide steps that change the phases after the flags (a run rate, its sweeps, the charts).

Apart from the ``[run]`` table because a phase's keys and order rules are the workload's
vocabulary (kinds, streams), and sweeps expand the list the runner walks.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from asyncbench import fmt
from asyncbench.config.crash import check_crash_sizes, check_crashes, read_crash
from asyncbench.config.durations import check_kind, read_duration
from asyncbench.config.errors import ConfigError
from asyncbench.config.model import BenchConfig, PhaseSpec
from asyncbench.config.readers import parse_rates, read_arrivals, read_bool, read_int, read_shown, read_str
from asyncbench.limits import MAX_NAME_CHARS, MAX_PROFILES
from asyncbench.workload import Action, Group, PhaseKind, SettingError, Workload
from asyncbench.workload_capabilities import PhaseParams, phase_params, stream_count

PHASE_KEYS = {"kind", "name", "stream", "count", "rate", "arrivals", "over_time", "capacity", "duration", "crash"}
#: The most phases a plan runs, after a rate sweep expands its phases: the reference plan
#: has 17; thousands are a generated mistake whose run would never end.
MAX_PHASES = 1000


def read_phases(where: str, items: object, wl: Workload, settings: Mapping[str, object] | None = None) -> list[PhaseSpec]:
    """The plan's ``[[phase]]`` list of workload ``wl`` (the plan's ``[run] workload``), each phase checked by one validator per concern (in
    the order a person fixes them: the kind, its own keys, stream and count, its place in
    the plan, its name, its pacing, its charts and capacity), a sweep expanded."""
    order, names = _Order(), _Names(where)
    phases: list[PhaseSpec] = []
    for i, table in enumerate(_check_list(where, items)):
        key = f"phase[{i}]"
        spec, rates = _phase(where, key, table, wl, settings or {}, order, names)
        phases.extend(_levels(spec, rates, first=len(phases)))
    check_phase_total(phases, where, "phase")
    check_crashes(phases, where, wl)
    return phases


def _check_list(where: str, items: object) -> list[object]:
    if not isinstance(items, list) or not items:
        raise ConfigError(where, "phase", "needs at least one [[phase]] table")
    if len(items) > MAX_PHASES:
        raise ConfigError(where, "phase", f"{len(items):_d} phases; a plan runs at most {MAX_PHASES:_d}")
    return items


def _phase(
    where: str, key: str, table: object, wl: Workload, settings: Mapping[str, object], order: _Order, names: _Names
) -> tuple[PhaseSpec, list[float]]:
    """One phase, checked; with its rates (none: closed loop; one: open loop; more: a sweep)."""
    if not isinstance(table, dict):
        raise ConfigError(where, key, "must be a table")
    kind_name, kind = _kind(where, key, table, wl.phases)
    params = _params(where, key, kind, table, wl, settings)
    stream = _stream(where, key, kind_name, kind, table)
    count = _count(where, key, kind_name, kind, table)
    order.place(where, key, kind_name, kind, params)
    use = kind.use(stream if kind.takes_stream else None, after_update=order.seen_update)
    if kind.rewrites:
        order.seen_update = True
    name = names.name(key, table, use.name)
    post = use.post_update if kind.takes_stream else order.seen_update and not kind.rewrites
    rates = _rates(where, key, kind_name, kind, table)
    capacity = _capacity(where, key, kind_name, kind, table, rates)
    duration = _duration(where, key, kind_name, kind, table, capacity, wl.phases)
    order.after_duration(where, key, kind_name, kind, duration)
    spec = PhaseSpec(
        kind=kind_name,
        name=name,
        stream=stream,
        count=count,
        post_update=post,
        rate=rates[0] if rates else None,
        arrivals=read_arrivals(where, f"{key}.arrivals", table["arrivals"]) if "arrivals" in table else "uniform",
        over_time=_over_time(where, key, kind_name, kind, table),
        capacity=capacity,
        params=tuple(sorted(params.items())),
        duration=duration,
        crash=read_crash(where, key, kind_name, kind, table["crash"], wl, params) if "crash" in table else None,
    )
    return spec, rates


def _duration(
    where: str,
    key: str,
    kind_name: str,
    kind: PhaseKind,
    table: Mapping[str, object],
    capacity: bool,
    kinds: Mapping[str, PhaseKind],
) -> float | None:
    """``duration``: run for this long at most (seconds), on a kind that can stop early."""
    if "duration" not in table:
        return None
    seconds = read_duration(where, f"{key}.duration", table["duration"])
    check_kind(where, f"{key}.duration", kind_name, kind, capacity, kinds)
    return seconds


def _kind(where: str, key: str, table: Mapping[str, object], kinds: Mapping[str, PhaseKind]) -> tuple[str, PhaseKind]:
    """``kind``: required, and one of the workload's phase kinds (``kinds``)."""
    if "kind" not in table:
        raise ConfigError(where, f"{key}.kind", "is required")
    kind_name = table["kind"]
    if not isinstance(kind_name, str) or kind_name not in kinds:
        raise ConfigError(where, f"{key}.kind", f"unknown phase kind {kind_name!r}; known: {', '.join(kinds)}")
    return kind_name, kinds[kind_name]


def _params(
    where: str, key: str, kind: PhaseKind, table: Mapping[str, object], wl: Workload, settings: Mapping[str, object]
) -> dict[str, object]:
    """The keys beyond :data:`PHASE_KEYS`, checked by the workload (an unknown one names ours)."""
    own = {k: v for k, v in table.items() if k not in PHASE_KEYS}
    try:
        return phase_params(wl, kind, own, settings)
    except SettingError as exc:
        if exc.problem == "unknown key":
            allowed = ", ".join(sorted(PHASE_KEYS))
            raise ConfigError(where, f"{key}.{exc.key}", f"unknown key; allowed: {allowed}") from None
        raise ConfigError(where, f"{key}.{exc.key}", exc.problem) from None


def _stream(where: str, key: str, kind_name: str, kind: PhaseKind, table: Mapping[str, object]) -> str | None:
    """``stream``: one of the kind's streams (default its first), only on a kind that takes one."""
    if "stream" not in table:
        return kind.streams[0] if kind.takes_stream else None
    if not kind.takes_stream:
        raise ConfigError(where, f"{key}.stream", f"phase kind {kind_name!r} takes no stream")
    stream = table["stream"]
    if stream not in kind.streams:
        raise ConfigError(
            where, f"{key}.stream", f"{stream!r} is not a stream of {kind_name!r}; use {' or '.join(kind.streams)}"
        )
    return str(stream)


def _count(where: str, key: str, kind_name: str, kind: PhaseKind, table: Mapping[str, object]) -> int | None:
    """``count``: the first N items of the stream, only on a kind that takes a stream."""
    count = table.get("count")
    if count is None:
        return None
    if not kind.takes_stream:
        raise ConfigError(where, f"{key}.count", f"phase kind {kind_name!r} takes no count")
    return read_int(where, f"{key}.count", count, 1, MAX_PROFILES * 10)


#: what may follow a mixed phase besides another mixed phase: its writes leave a store the
#: profile store's reference tables do not describe
_AFTER_MIXED = (Action.STABILIZE, Action.SETTLE, Action.REOPEN)


def _positive(value: object) -> bool:
    return isinstance(value, (int, float)) and value > 0


@dataclasses.dataclass
class _Order:
    """What the phases before this one did: a phase that needs data comes after the one
    insert, a stream-less phase after an update sees the updated store, and a plan runs
    one mixed phase with only maintenance after it."""

    seen_insert: bool = False
    seen_update: bool = False
    seen_mixed: str | None = None  # the first mixed phase's key
    mixed_inserts: str | None = None  # the first mixed phase that inserts
    timed: str | None = None  # the first phase with a duration

    def after_duration(self, where: str, key: str, kind_name: str, kind: PhaseKind, duration: float | None) -> None:
        """Only maintenance follows a phase with a duration: how far it ran differs between
        engines, so what a later phase would read (and its checksum) would differ too."""
        if self.timed is not None and kind.action not in _AFTER_MIXED:
            raise ConfigError(
                where,
                f"{key}.kind",
                f"{kind_name!r} comes after {self.timed}, which runs for a duration: how far it ran differs "
                "between engines, so this phase would read a different store on each; only stabilize, settle "
                "and reopen may follow it",
            )
        if duration is not None:
            self.timed = self.timed or key

    def place(self, where: str, key: str, kind_name: str, kind: PhaseKind, params: Mapping[str, object]) -> None:
        inserts = kind.mixes and _positive(params.get("insertproportion"))  # YCSB's mix key
        # recover: its own rule (directly after a crashed phase: asyncbench.config.crash)
        if self.seen_mixed is not None and not kind.mixes and kind.action not in (*_AFTER_MIXED, Action.RECOVER):
            raise ConfigError(where, f"{key}.kind", f"{kind_name!r} comes after the mixed phase {self.seen_mixed}, "
                              "whose writes change what it would read; only stabilize, settle, reopen and "
                              "mixed phases may follow")
        if inserts and self.mixed_inserts is not None:
            raise ConfigError(where, f"{key}.kind", f"a second mixed phase that inserts ({self.mixed_inserts} "
                              "inserts too): it draws the same operations again and would insert the same keys")
        if kind.mixes:
            self.seen_mixed = self.seen_mixed or key
            self.mixed_inserts = self.mixed_inserts or (key if inserts else None)
        if kind.needs_data and not self.seen_insert:
            raise ConfigError(where, f"{key}.kind", f"{kind_name!r} comes before any insert phase; insert first")
        if kind.inserts:
            if self.seen_insert:
                raise ConfigError(where, f"{key}.kind", "a plan inserts the profiles once; remove the second insert")
            self.seen_insert = True


class _Names:
    """Display names differ: an explicit ``name`` is unique, and an automatic one (the
    kind's use, numbered when repeated) may not take an explicit one's."""

    def __init__(self, where: str) -> None:
        self.where = where
        self.explicit: dict[str, str] = {}  # explicit display name -> key that set it
        self.auto: dict[str, int] = {}

    def name(self, key: str, table: Mapping[str, object], default: str) -> str:
        where = self.where
        if "name" in table:
            name = read_shown(where, f"{key}.name", read_str(where, f"{key}.name", table["name"]))
            if len(name) > MAX_NAME_CHARS:
                raise ConfigError(
                    where, f"{key}.name", f"{name[:40]!r}... is {len(name):_d} characters, at most {MAX_NAME_CHARS}"
                )
            if name in self.explicit or name in self.auto:
                raise ConfigError(where, f"{key}.name", f"{name!r} is already the name of another phase; names must differ")
            self.explicit[name] = key
            return name
        name = default
        self.auto[name] = self.auto.get(name, 0) + 1
        if self.auto[name] > 1:
            name = f"{name} ({self.auto[name]})"
        if name in self.explicit:
            raise ConfigError(
                where, f"{self.explicit[name]}.name", f"{name!r} is also the automatic name of {key}; choose another name"
            )
        self.auto.setdefault(name, 1)
        return name


def _rates(where: str, key: str, kind_name: str, kind: PhaseKind, table: Mapping[str, object]) -> list[float]:
    """``rate`` and ``arrivals``: only on an operation phase, arrivals only with a rate, a
    sweep only of a phase that can repeat."""
    if "rate" not in table and "arrivals" not in table:
        return []
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
    return rates


def _over_time(where: str, key: str, kind_name: str, kind: PhaseKind, table: Mapping[str, object]) -> bool:
    """``over_time``: a chart of operations, so only on an operation phase."""
    if "over_time" not in table:
        return False
    over_time = read_bool(where, f"{key}.over_time", table["over_time"])
    if over_time and kind.action is not Action.OPERATIONS:
        raise ConfigError(where, f"{key}.over_time", f"phase kind {kind_name!r} runs no operations to chart")
    return over_time


def _capacity(
    where: str, key: str, kind_name: str, kind: PhaseKind, table: Mapping[str, object], rates: list[float]
) -> bool:
    """``capacity``: a search repeats the phase at rates of its own, so only a searchable
    phase without a rate."""
    if "capacity" not in table:
        return False
    capacity = read_bool(where, f"{key}.capacity", table["capacity"])
    if capacity and not searchable(kind):
        raise ConfigError(
            where, f"{key}.capacity", f"phase kind {kind_name!r} is no read, scan, query or mixed phase: it has no capacity to search"
        )
    if capacity and rates:
        raise ConfigError(where, f"{key}.capacity", "a capacity search chooses its own rates; remove the phase's rate")
    return capacity


def _levels(spec: PhaseSpec, rates: list[float], first: int) -> list[PhaseSpec]:
    """The phase, or a saturation sweep: the same phase at each rate, rising (``sweep`` is
    the plan index ``first`` of its first level)."""
    if len(rates) < 2:
        return [spec]
    return [
        dataclasses.replace(spec, name=f"{spec.name} @ {fmt.count(round(level))}/s", rate=level, sweep=first)
        for level in rates
    ]


def searchable(kind: PhaseKind) -> bool:
    """A capacity search probes a phase at many rates: a read, scan or query phase, which
    leaves the store as it found it, or a mixed phase (reads and writes in one stream: its
    probes take consecutive slices of it and never repeat one, docs/capacity.md); never a
    write-only phase."""
    if kind.action is not Action.OPERATIONS:
        return False
    return kind.mixes or (kind.group is not Group.WRITE and not kind.runs_once)


def check_phase_total(phases: list[PhaseSpec], where: str, key: str) -> None:
    """At most :data:`MAX_PHASES` phases once the sweeps (of ``key``) are expanded."""
    if len(phases) > MAX_PHASES:
        raise ConfigError(
            where, key, f"the rate sweep makes {len(phases):_d} phases; a plan runs at most {MAX_PHASES:_d}"
        )


def pace_phases(cfg: BenchConfig) -> None:
    """Apply the run's ``rate`` to every operation phase without a rate of its own (once,
    after the flags), except the insert phase (a YCSB load): one rate paces the phase; a
    sweep expands each phase that can repeat into one phase per rate (``name @ N/s``) and
    leaves inserts and updates closed loop.

    The insert phase builds the store the measured phases run on, so it loads unthrottled
    as YCSB's load does (YCSB applies ``-target`` to the run phase only): pacing it made a
    100k-record load take 10 s at ``--rate 10k`` and ``--check-rate`` fail a run on a load
    that nobody asked to measure at a rate. A plan that wants a paced load gives its insert
    phase a ``rate`` of its own."""
    if not cfg.rate:
        return
    out: list[PhaseSpec] = []
    for spec in cfg.phases:
        kind = cfg.workload_impl.phases[spec.kind]
        if kind.action is not Action.OPERATIONS or spec.rate is not None or kind.inserts or spec.crash is not None:
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
            cfg.over_time, [(s.kind, s.name, s.sweep) for s in cfg.phases], cfg.workload_impl.phases, where, key
        )
        cfg.phases = [dataclasses.replace(s, over_time=True) if i in chosen else s for i, s in enumerate(cfg.phases)]


def selected_phases(
    words: list[str], phases: list[tuple[str, str, int | None]], kinds: Mapping[str, PhaseKind], where: str, key: str
) -> set[int]:
    """The indexes of the operation phases ``words`` select among ``phases`` ((kind, name,
    sweep) each, of the phase kinds ``kinds``): ``all`` is every operation phase, a phase kind every phase of that kind,
    a name that phase (and, for a sweep, each of its levels). A word that selects nothing
    is an error naming what the plan runs: a typo would otherwise draw nothing, silently."""
    ops = [i for i, (kind, _, _) in enumerate(phases) if kinds[kind].action is Action.OPERATIONS]
    chosen: set[int] = set()
    for word in words:
        hit = {
            i
            for i in ops
            if word in ("all", phases[i][0], phases[i][1])
            or (phases[i][2] is not None and phases[i][1].rsplit(" @ ", 1)[0] == word)
        }
        if not hit:
            ran = sorted({phases[i][0] for i in ops})
            raise ConfigError(
                where,
                key,
                f"{word!r} is not an operation phase kind or phase name of this plan; its kinds: "
                f"{', '.join(ran) or 'none'}, or all",
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
    """A phase ``count`` may not ask for more items than its stream holds at every profile
    count, and a phase's own values must suit every profile count (YCSB's ``latest`` needs
    two records, a scan no longer than the records: ``PhaseParams.check_size``)."""
    check_crash_sizes(cfg, where)
    wl = cfg.workload_impl
    params = [(ph.kind, dict(ph.params)) for ph in cfg.phases]
    for profiles in cfg.profiles:
        try:
            if isinstance(wl, PhaseParams):
                wl.check_size(profiles, params)
        except SettingError as exc:
            i = next((i for i, ph in enumerate(cfg.phases) if exc.key in dict(ph.params)), None)
            key = f"phase[{i}].{exc.key}" if i is not None else exc.key
            raise ConfigError(where, key, f"{exc.problem} (at {profiles:_d} {wl.unit})") from None
    for i, ph in enumerate(cfg.phases):
        if ph.count is None or ph.stream is None:
            continue
        for profiles in cfg.profiles:
            available = getattr(cfg.counts_for(profiles), stream_count(wl, ph.stream))
            if ph.count > available:
                raise ConfigError(
                    where,
                    f"phase[{i}].count",
                    f"{ph.count:_d} exceeds the {available:_d} items of stream {ph.stream!r} at {profiles:_d} profiles",
                )
