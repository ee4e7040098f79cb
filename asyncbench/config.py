"""Loading and validating a TOML benchmark plan (plus command-line overrides).

Everything is checked before anything runs or is written: a bad file or flag raises
``ConfigError`` naming the file, the key and the reason, and the CLI exits with code 2.
"""

from __future__ import annotations

import dataclasses
import ipaddress
import math
import re
import tomllib
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from asyncbench import fmt
from asyncbench.limits import INT32_MAX, INT32_MIN, MAX_PARALLELISM, MAX_PROFILES, MAX_TIMEOUT_SECONDS
from asyncbench.parse import check_printable, escape_unprintable, parse_int, parse_seconds
from asyncbench.slo import PERCENTILES, make_slo, parse_requirement, parse_slo_text
from asyncbench.workload import Action, Group, PhaseKind, SettingError
from asyncbench.workloads import DEFAULT as DEFAULT_WORKLOAD
from asyncbench.workloads import REGISTRY as WORKLOADS
from asyncbench.workloads import select, workload

#: An engine name is also its data directory's name: one plain path component.
ENGINE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")

PHASE_KEYS = {"kind", "name", "stream", "count", "rate", "arrivals", "over_time", "capacity"}
#: The highest target rate a phase may set (operations per second, all workers).
MAX_RATE = 100_000_000
TOP_KEYS = {"run", "counts", "engines", "phase", "slo"}
#: The largest plan file read: the reference plan is 2 KB; a plan of megabytes is not one
#: a person wrote, and parsing it would take the time and memory its size says.
MAX_PLAN_BYTES = 1024 * 1024
#: The most phases a plan runs, after a rate sweep expands its phases: the reference plan
#: has 17; thousands are a generated mistake whose run would never end.
MAX_PHASES = 1000


def default_engines() -> tuple[str, ...]:
    """The engines a plan without ``engines`` runs: the registry's serverless defaults."""
    from asyncbench.engines import DEFAULT_ENGINES

    engines: tuple[str, ...] = DEFAULT_ENGINES
    return engines


class ConfigError(ValueError):
    """A problem in a plan file or flag: ``where`` is the file (or "command line"), ``key`` the key."""

    def __init__(self, where: str, key: str, reason: str) -> None:
        # what a message quotes from the input (a key, a path) never reaches a terminal raw
        super().__init__(escape_unprintable(f"{where}: {key}: {reason}"))
        self.where, self.key, self.reason = where, key, reason


@dataclass(frozen=True)
class PhaseSpec:
    """One validated ``[[phase]]``: its identity is (position, kind, stream, count)."""

    kind: str
    name: str
    stream: str | None = None
    count: int | None = None
    post_update: bool = False  # consumes a post-update stream, or comes after an update phase
    rate: float | None = None  # target operations per second over all workers (open loop); None: closed loop
    arrivals: str = "uniform"  # spacing of the intended start times under a rate: uniform or poisson
    #: A saturation sweep's level: the plan index of the sweep's first level (its levels
    #: follow it in rising rate); a level after one whose achieved rate dipped is skipped.
    sweep: int | None = None
    #: Draw this phase's latency-over-time chart (write phases and phases at a rate always
    #: get one): the phase's own ``over_time = true`` or the run's ``over_time`` selection.
    over_time: bool = False
    #: Search this phase's capacity under the SLO (asyncbench.run.capacity) instead of running it once.
    capacity: bool = False
    #: The workload's own keys of this phase (YCSB's proportions and distribution), checked
    #: by the workload (``Workload.phase_params``), as sorted (key, value) pairs.
    params: tuple[tuple[str, Any], ...] = ()


@dataclass
class BenchConfig:
    """The validated plan (file plus flags). Every ``[run]`` key is a field of the same name,
    described once in :data:`RUN_KEYS`; what one (profiles, parallelism) level runs at is a
    :class:`Level` from :meth:`levels`."""

    source: str
    name: str = "profile-store"
    workload: str = DEFAULT_WORKLOAD  # the registry name of the workload the plan runs
    #: The workload's own section (YCSB's ``[ycsb]``), checked by the workload.
    workload_settings: dict[str, Any] = field(default_factory=dict)
    profiles: list[int] = field(default_factory=lambda: [2_000_000])
    parallelism: list[int] = field(default_factory=lambda: [1])  # every level, run in order
    seed: int = 570123434
    limit: int = 50
    batch_size: int = 1_000
    timeout_seconds: float | None = 120_000.0  # None (0 in a plan or flag): no timeout
    engines: list[str] = field(default_factory=lambda: list(default_engines()))
    output: Path = Path("results")
    data: Path = Path("data")
    isolate: bool = True  # each engine in its own child process
    clean_data: bool = True  # delete each engine's store after its run (the reference's --clean-data)
    reuse_data: bool = False  # run on the store an earlier --keep-data run built (asyncbench.run.reuse)
    repeat: int = 1  # runs per engine, interleaved A B C A B C ...
    warmup: int = 0  # leading repeats kept in the JSON but left out of the statistics
    processes: int | None = None  # client processes on this host for client/server engines (None: this one)
    cluster: str | None = None  # a Dask scheduler's address: its workers are the client processes
    #: Target rate(s) for every operation phase without one of its own: one rate paces them
    #: (open loop); several rising ones sweep each phase that can repeat (see :func:`pace_phases`).
    rate: list[float] = field(default_factory=list)
    arrivals: str = "uniform"  # how those phases' intended start times are spaced
    #: Phase kinds or names (or ``all``) whose latency-over-time chart is drawn (see :func:`chart_phases`).
    over_time: list[str] = field(default_factory=list)
    #: Capacity under a latency bound (asyncbench.run.capacity; see :func:`check_capacity`):
    #: search every read, scan and query phase; the bounds for every phase kind
    #: (percentile -> "2ms"), and per kind from ``[slo.KIND]``; the rates required (gates).
    capacity: bool = False
    slo: dict[str, str] = field(default_factory=dict)
    slo_kinds: dict[str, dict[str, str]] = field(default_factory=dict)
    require_rate: dict[str, float] = field(default_factory=dict)
    capacity_repeats: int = 1
    capacity_range: list[float] = field(default_factory=lambda: [100.0, 1_000_000.0])
    optional_engines: set[str] = field(default_factory=set)  # from "all": skipped when unavailable
    counts: dict[str, int] = field(default_factory=dict)  # explicit overrides only
    engine_settings: dict[str, dict[str, Any]] = field(default_factory=dict)
    phases: list[PhaseSpec] = field(default_factory=list)

    def levels(self) -> list[Level]:
        """Every (profiles, parallelism) level the plan runs, in order: one result each."""
        return [Level(n, p, self.counts_for(n)) for n in self.profiles for p in self.parallelism]

    def level(self, profiles: int, parallelism: int) -> Level:
        """One level of this plan by its numbers (what an isolated engine's process runs)."""
        for level in self.levels():
            if (level.profiles, level.parallelism) == (profiles, parallelism):
                return level
        raise ValueError(f"{profiles:_d} profiles at P{parallelism} is not a level of {self.source}")

    def counts_for(self, profiles: int) -> Any:
        """Spec defaults rescaled to ``profiles``, with the file's explicit counts on top."""
        return workload().counts(profiles, self.limit, self.counts, self.workload_settings)


@dataclass(frozen=True)
class Level:
    """One (profiles, parallelism) level of a plan, derived from it: the settings that
    differ between the runs of one invocation. Everything else is the plan's."""

    profiles: int
    parallelism: int  # P: concurrent workers per phase
    counts: Any  # the workload's plan counts at this profile count

    @property
    def workers(self) -> int:
        """How many workers a phase runs, so how many handles an engine opens: derived here
        once, handed to the engine (``EngineConfig.workers``) and read back from it."""
        return self.parallelism


# --- small typed readers ----------------------------------------------------------------


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _int(where: str, key: str, v: Any, lo: int, hi: int) -> int:
    if not _is_int(v):
        raise ConfigError(where, key, f"must be an integer, got {type(v).__name__} {v!r}")
    if not lo <= v <= hi:
        raise ConfigError(where, key, f"must be between {lo:_d} and {hi:_d}, got {v:_d}")
    return int(v)


def _str(where: str, key: str, v: Any) -> str:
    if not isinstance(v, str) or not v:
        raise ConfigError(where, key, f"must be a non-empty string, got {v!r}")
    return v


def _shown(where: str, key: str, v: str) -> str:
    """A name the console and reports show: no control or format characters (parse.py)."""
    problem = check_printable(v)
    if problem is not None:
        raise ConfigError(where, key, f"{v!r}: {problem}")
    return v


def _seconds(where: str, key: str, v: Any) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise ConfigError(where, key, f"must be a number, got {type(v).__name__} {v!r}")
    if not v > 0:
        raise ConfigError(where, key, f"must be positive, got {v!r}")
    if not math.isfinite(v) or v > MAX_TIMEOUT_SECONDS:
        raise ConfigError(where, key, f"must be at most {MAX_TIMEOUT_SECONDS:_.0f} seconds (a year), got {v!r}")
    return float(v)


def parse_rate(where: str, key: str, v: Any) -> float:
    """A target rate: a positive number of operations per second, or a count string with
    a k or M suffix (``"20k"``)."""
    if isinstance(v, str):
        try:
            v = fmt.parse_count(v)
        except ValueError as exc:
            raise ConfigError(where, key, f"must be operations per second: {exc}") from None
    if not _is_int_or_float(v):
        raise ConfigError(where, key, f"must be operations per second (a number), got {type(v).__name__} {v!r}")
    if not (v > 0 and math.isfinite(v)) or v > MAX_RATE:
        raise ConfigError(where, key, f"must be between 0 and {MAX_RATE:_d} operations per second, got {v!r}")
    return float(v)


def parse_rates(where: str, key: str, v: Any) -> list[float]:
    """One rate, or a saturation sweep's rising rates: a list, or a comma-separated string
    (``"2k,4k,8k"``)."""
    items = v.split(",") if isinstance(v, str) else v if isinstance(v, list) else [v]
    if not items:
        raise ConfigError(where, key, "needs at least one rate")
    rates = [parse_rate(where, key, x) for x in items]  # no strip: parse.py refuses whitespace
    if any(b <= a for a, b in zip(rates, rates[1:], strict=False)):
        raise ConfigError(where, key, f"a sweep's rates must rise, got {', '.join(f'{r:g}' for r in rates)}")
    return rates


def _arrivals(where: str, key: str, v: Any) -> str:
    if v not in ("uniform", "poisson"):
        raise ConfigError(where, key, f"must be 'uniform' or 'poisson', got {v!r}")
    return str(v)


def _is_int_or_float(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


# --- engines ------------------------------------------------------------------------------


def validate_engine_names(where: str, key: str, names: Any) -> tuple[list[str], set[str]]:
    """The engine list, and which of them came only from ``all`` (skipped, not failed, when absent)."""
    from asyncbench.engines import ALL_ENGINES, REGISTRY

    if isinstance(names, str):
        names = [n.strip() for n in names.split(",")]
    if not isinstance(names, list) or not names:
        raise ConfigError(where, key, f"must be a non-empty list of engine names, got {names!r}")
    if "all" in names and len(names) > 1:  # "all,memory": both all and one, or a typo?
        raise ConfigError(where, key, f"'all' stands alone (every engine); got {', '.join(map(repr, names))}")
    out: list[str] = []
    explicit: set[str] = set()
    for n in names:
        if not isinstance(n, str):
            raise ConfigError(where, key, f"engine names are strings, got {n!r}")
        if n == "all":
            out.extend(e for e in ALL_ENGINES if e not in out)
            continue
        if n not in REGISTRY:
            raise ConfigError(where, key, f"unknown engine {n!r}; known: {', '.join(sorted(REGISTRY))}, all")
        if not ENGINE_NAME.fullmatch(n):
            raise ConfigError(
                where, key, f"engine name {n!r} is not a plain directory name (letters, digits, '_', '-', '.')"
            )
        explicit.add(n)
        if n not in out:
            out.append(n)
        _check_plugin(where, key, n)
    return out, set(out) - explicit


def _check_plugin(where: str, key: str, name: str) -> None:
    """A plug-in engine (ASYNCBENCH_ENGINES) must import and be complete before anything runs."""
    from asyncbench.engines import PLUGINS, engine_class
    from asyncbench.engines.plugins import PluginError

    if name in PLUGINS:
        try:
            engine_class(name)
        except PluginError as exc:
            raise ConfigError(where, key, str(exc)) from None


def _engine_settings(where: str, table: Any) -> dict[str, dict[str, Any]]:
    from asyncbench.engine import EngineUnavailable
    from asyncbench.engines import REGISTRY, engine_class

    if not isinstance(table, dict):
        raise ConfigError(where, "engines", "must be a table of [engines.<name>] tables")
    out: dict[str, dict[str, Any]] = {}
    for name, settings in table.items():
        key = f"engines.{name}"
        if name not in REGISTRY:
            raise ConfigError(where, key, f"unknown engine {name!r}; known: {', '.join(sorted(REGISTRY))}")
        if not isinstance(settings, dict):
            raise ConfigError(where, key, "must be a table of settings")
        try:
            defaults = engine_class(name).default_settings
        except EngineUnavailable:
            out[name] = dict(settings)  # cannot check what we cannot import; the run reports it
            continue
        for k, v in settings.items():
            if k not in defaults:
                known = ", ".join(sorted(defaults)) or "none"
                raise ConfigError(where, f"{key}.{k}", f"unknown setting; known: {known}")
            want = defaults[k]
            ok = (
                isinstance(v, bool)
                if isinstance(want, bool)
                else (
                    _is_int(v)
                    if isinstance(want, int)
                    else isinstance(v, (int, float)) and not isinstance(v, bool)
                    if isinstance(want, float)
                    else isinstance(v, type(want))
                )
            )
            if not ok:
                raise ConfigError(
                    where, f"{key}.{k}", f"must be {type(want).__name__}, got {type(v).__name__} {v!r}"
                )
            if _is_int(v) and v < 0:
                raise ConfigError(where, f"{key}.{k}", f"must not be negative, got {v}")
        try:
            engine_class(name).check_settings({**defaults, **settings})
        except ValueError as exc:
            text = str(exc)  # the key the message starts with, else the first one it names
            named = next((k for k in settings if text.startswith(f"{k} ")), None) or next(
                (k for k in settings if k in text), None
            )
            raise ConfigError(where, f"{key}.{named}" if named else key, str(exc)) from None
        out[name] = dict(settings)
    return out


# --- the [run] table: one row per key ---------------------------------------------------


@dataclass(frozen=True)
class ValueType:
    """How a ``[run]`` value is checked (from the plan) and read (from a flag's text)."""

    def read(self, where: str, key: str, v: Any) -> Any:
        raise NotImplementedError

    def from_text(self, where: str, flag: str, text: str) -> Any:
        """A flag's text as a plan value (``read`` checks it next, named as the flag)."""
        return text


def _count_text(where: str, flag: str, text: str) -> int:
    try:
        return fmt.parse_count(text)
    except (ValueError, IndexError) as exc:
        raise ConfigError(where, flag, str(exc)) from None


@dataclass(frozen=True)
class Int(ValueType):
    lo: int
    hi: int
    signed: bool = False  # flag text is a plain signed integer (a seed), not a count like 20k

    def read(self, where: str, key: str, v: Any) -> int:
        return _int(where, key, v, self.lo, self.hi)

    def from_text(self, where: str, flag: str, text: str) -> int:
        if not self.signed:
            return _count_text(where, flag, text)
        try:
            return parse_int(text)  # strict: ASCII digits, _ only between digits (parse.py)
        except ValueError as exc:
            raise ConfigError(where, flag, str(exc)) from None


@dataclass(frozen=True)
class IntList(ValueType):
    """One value or a list (``1,16`` on the command line): distinct, each within bounds."""

    lo: int
    hi: int
    what: str  # what a value is, for the messages
    #: the reason when a value repeats; {n}: the first repeated one, {values}: all of them
    twice: str = "{n:_d} is listed twice; each {what} runs once"

    def read(self, where: str, key: str, v: Any) -> list[int]:
        values = v if isinstance(v, list) else [v]
        if not values:
            raise ConfigError(where, key, f"must name at least one {self.what}")
        out = [_int(where, key, x, self.lo, self.hi) for x in values]
        twice = sorted({n for n in out if out.count(n) > 1})
        if twice:
            # each profile count writes DATA/profiles-N and OUTPUT/profiles-N: a second run
            # would reset the first one's store and replace its result files
            raise ConfigError(where, key, self.twice.format(n=twice[0], values=out, what=self.what))
        return out

    def from_text(self, where: str, flag: str, text: str) -> list[int]:
        return [_count_text(where, flag, t) for t in text.split(",")]


@dataclass(frozen=True)
class Text(ValueType):
    def read(self, where: str, key: str, v: Any) -> str:
        return _str(where, key, v)


@dataclass(frozen=True)
class Name(ValueType):
    """A name the console and reports show: no control or format characters."""

    def read(self, where: str, key: str, v: Any) -> str:
        return _shown(where, key, _str(where, key, v))


@dataclass(frozen=True)
class PathValue(ValueType):
    """A directory the run writes under: no control or format character (a newline or an
    escape in a name is a mistake, and every message and report would have to carry it)."""

    def read(self, where: str, key: str, v: Any) -> Path:
        text = _str(where, key, v)
        try:
            text.encode("utf-8")  # a name in other bytes says so, not "cannot be shown"
        except UnicodeEncodeError:
            raise ConfigError(
                where, key, f"{text!r} contains bytes that are not UTF-8; results and logs record paths "
                "as text, so use a UTF-8 name"
            ) from None
        return Path(_shown(where, key, text))


#: A host name (RFC 1123 labels) or an IPv4 address; an IPv6 address goes in brackets.
_HOST = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*", re.ASCII)
#: The schemes a Dask scheduler listens on over a network.
CLUSTER_SCHEMES = ("tcp", "tls")


@dataclass(frozen=True)
class ClusterAddress(ValueType):
    """A Dask scheduler's address, ``tcp://HOST:PORT`` (or ``tls://``; no scheme is tcp):
    checked before the run, since a malformed one failed only once the engine's run had
    started, after the report files were written."""

    def read(self, where: str, key: str, v: Any) -> str:
        text = _shown(where, key, _str(where, key, v))
        form = "the form tcp://HOST:PORT"
        scheme, sep, rest = text.partition("://")
        if not sep:
            scheme, rest = "tcp", text
        if scheme not in CLUSTER_SCHEMES:
            raise ConfigError(where, key, f"{text!r}: the scheme must be {' or '.join(CLUSTER_SCHEMES)}, in {form}")
        host, colon, port = rest.rpartition(":")
        if not colon or not port:
            raise ConfigError(where, key, f"{text!r} has no port; a scheduler address has {form}")
        if host.startswith("[") and host.endswith("]"):
            try:
                ipaddress.IPv6Address(host[1:-1])
            except ValueError:
                raise ConfigError(where, key, f"{text!r}: {host} is not an IPv6 address") from None
        elif not _HOST.fullmatch(host):
            raise ConfigError(where, key, f"{text!r}: {host!r} is not a host name or address; use {form}")
        if not (port.isascii() and port.isdigit() and len(port) <= 5 and 1 <= int(port) <= 65535):
            raise ConfigError(where, key, f"{text!r}: the port must be a number from 1 to 65535, got {port!r}")
        return text


@dataclass(frozen=True)
class Bool(ValueType):
    def read(self, where: str, key: str, v: Any) -> bool:
        if not isinstance(v, bool):
            raise ConfigError(where, key, f"must be true or false, got {v!r}")
        return v


@dataclass(frozen=True)
class Rates(ValueType):
    """One target rate, or a sweep's rising rates (a list, or ``2k,4k,8k``)."""

    def read(self, where: str, key: str, v: Any) -> list[float]:
        return parse_rates(where, key, v)


@dataclass(frozen=True)
class SloBounds(ValueType):
    """Percentile bounds: a table ``{p99 = "2ms"}`` or the flag's ``p99=2ms,p999=10ms``."""

    def read(self, where: str, key: str, v: Any) -> dict[str, str]:
        return _slo_bounds(where, key, v)


@dataclass(frozen=True)
class RateRequirements(ValueType):
    """Gates: a table ``{read_by_id = "5k"}`` or the flag's ``read_by_id=5k,scan_created_at=1k``."""

    def read(self, where: str, key: str, v: Any) -> dict[str, float]:
        if isinstance(v, str):
            out: dict[str, float] = {}
            for item in v.split(","):
                try:
                    kind, rate = parse_requirement(item)
                except ValueError as exc:
                    raise ConfigError(where, key, str(exc)) from None
                out[kind] = rate
            v = out
        if not isinstance(v, dict) or not v:
            raise ConfigError(where, key, "must name phase kinds and rates, e.g. read_by_id=5k")
        req = {}
        for kind, rate in v.items():
            phases = workload().phases
            if kind not in phases or not searchable(phases[kind]):
                raise ConfigError(where, f"{key}.{kind}", "is not a read, scan or query phase kind, whose capacity is searched")
            req[kind] = parse_rate(where, f"{key}.{kind}", rate)
        return req


@dataclass(frozen=True)
class CapacityRange(ValueType):
    """The rates a capacity search stays within: ``[low, high]`` or ``100,200k``."""

    def read(self, where: str, key: str, v: Any) -> list[float]:
        items = v.split(",") if isinstance(v, str) else v
        if not isinstance(items, list) or len(items) != 2:
            raise ConfigError(where, key, "must be two rates, the lowest and highest to search (e.g. 100,200k)")
        low, high = (parse_rate(where, key, x) for x in items)
        if high <= low:
            raise ConfigError(where, key, f"is an empty rate range: {low:g} to {high:g}; the second must be higher")
        return [low, high]


def _slo_bounds(where: str, key: str, v: Any) -> dict[str, str]:
    """Validated percentile bounds (as written: the child's copy of the config reads them again)."""
    try:
        if isinstance(v, str):
            slo = parse_slo_text(v)
        elif isinstance(v, dict):
            bad = [k for k, x in v.items() if not isinstance(x, str)]
            if bad:
                raise ValueError(f"{bad[0]}: {v[bad[0]]!r} is not a duration: write it as a string with a unit, e.g. \"2ms\"")
            slo = make_slo(v)
        else:
            raise ValueError("must be percentile bounds, e.g. p99 = \"2ms\"")
    except ValueError as exc:
        raise ConfigError(where, key, str(exc)) from None
    return {b.name: _bound_text(b.ns) for b in slo.bounds}


def _bound_text(ns: int) -> str:
    return f"{ns}ns" if ns % 1000 else f"{ns // 1000}us"


@dataclass(frozen=True)
class ArrivalsValue(ValueType):
    def read(self, where: str, key: str, v: Any) -> str:
        return _arrivals(where, key, v)


@dataclass(frozen=True)
class Timeout(ValueType):
    """Seconds, at most a year; 0 disables the timeout (stored as None), as in the reference."""

    def read(self, where: str, key: str, v: Any) -> float | None:
        return None if _is_int_or_float(v) and v == 0 else _seconds(where, key, v)

    def from_text(self, where: str, flag: str, text: str) -> float:
        try:
            return parse_seconds(text)  # strict digits; inf/nan/sign reach read's range check
        except ValueError as exc:
            raise ConfigError(where, flag, str(exc)) from None


@dataclass(frozen=True)
class PhaseSelection(ValueType):
    """Phase kinds or names, or ``all`` (a list, or ``read_by_id,update`` on the command line);
    checked against the plan's phases by :func:`chart_phases`."""

    def read(self, where: str, key: str, v: Any) -> list[str]:
        values = v if isinstance(v, list) else [v]
        if not values:
            raise ConfigError(where, key, "must name at least one phase kind or name, or all")
        return [_shown(where, key, _str(where, key, x)) for x in values]

    def from_text(self, where: str, flag: str, text: str) -> list[str]:
        return [t.strip() for t in text.split(",")]


@dataclass(frozen=True)
class WorkloadName(ValueType):
    """A registered workload's name (asyncbench.workloads); reading it selects it, so the
    plan's sections and phases are checked against that workload's vocabulary."""

    def read(self, where: str, key: str, v: Any) -> str:
        name = _str(where, key, v)
        if name not in WORKLOADS:
            raise ConfigError(where, key, f"unknown workload {name!r}; known: {', '.join(sorted(WORKLOADS))}")
        select(name)
        return name


@dataclass(frozen=True)
class EngineNames(ValueType):
    """Engine names or ``all``; also sets ``optional_engines`` (see :func:`validate_engine_names`)."""

    def read(self, where: str, key: str, v: Any) -> tuple[list[str], set[str]]:
        return validate_engine_names(where, key, v)


@dataclass(frozen=True)
class RunKey:
    """One ``[run]`` key: its type and bounds, its flag, and its labels. The plan's field of
    the same name holds it; the parser, the flag overrides, the child's copy of the config
    and compare's list of differing settings all come from this row."""

    name: str
    type: ValueType
    help: str
    flag: str | None = None  # the command-line flag; a bool key gets --x / --no-x
    report: str | None = None  # its row in the report's Configuration table
    compare: str | None = None  # its name where compare lists what differs between two sides
    result: str | None = None  # the RunResult field that records it (compare reads that)

    @property
    def dest(self) -> str:
        """The argparse destination of the flag."""
        return (self.flag or self.name).lstrip("-").replace("-", "_")

    def apply(self, cfg: BenchConfig, where: str, key: str, v: Any) -> None:
        value = self.type.read(where, key, v)
        if isinstance(self.type, EngineNames):
            cfg.engines, cfg.optional_engines = value
        else:
            setattr(cfg, self.name, value)


RUN_KEYS: dict[str, RunKey] = {
    k.name: k
    for k in (
        RunKey("name", Name(), "the plan's name (results of one plan are compared by it)"),
        RunKey(
            "workload",
            WorkloadName(),
            "the workload the plan runs: profile_store (the default) or ycsb (docs/workloads.md)",
            report="Workload",
        ),
        RunKey("engines", EngineNames(), "engines to run, comma separated, or all", flag="--engine"),
        RunKey(
            "profiles",
            IntList(1, MAX_PROFILES, "profile count"),
            "profile count(s), e.g. 20k, 2M, 2_000_000 or 1M,2M; rescales default counts (the ycsb workload: its record count)",
            flag="--profiles",
            report="Profiles",
            compare="profiles",
            result="profiles",
        ),
        RunKey(
            "parallelism",
            IntList(1, MAX_PARALLELISM, "level", twice="repeats a level: {values}"),
            "concurrent workers per phase (P), or a list 1,16: one run and report per level",
            flag="--parallelism",
            report="Parallelism",
            compare="parallelism",
            result="parallelism",
        ),
        RunKey(
            "seed",
            Int(INT32_MIN, INT32_MAX, signed=True),
            "signed 32-bit seed of the generator and the plan",
            flag="--seed",
            report="Seed",
            compare="seed",
            result="seed",
        ),
        RunKey(
            "limit",
            Int(1, 1_000_000),
            "rows returned per scan/query",
            flag="--limit",
            report="Query limit",
            compare="limit",
            result="limit",
        ),
        RunKey(
            "batch_size",
            Int(1, 10_000_000),
            "operations per batch (one event-loop/thread hop per batch)",
            flag="--batch-size",
            report="Batch size",
            compare="batch size",
            result="batch_size",
        ),
        RunKey(
            "timeout_seconds",
            Timeout(),
            "per-engine timeout in seconds; 0: no timeout",
            flag="--timeout-seconds",
            report="Timeout per engine",
        ),
        RunKey(
            "output", PathValue(), "directory for results (default from the plan, else ./results)", flag="--output"
        ),
        RunKey(
            "data", PathValue(), "directory for engine data (default from the plan, else ./data)", flag="--data"
        ),
        RunKey(
            "isolate",
            Bool(),
            "run each engine in its own child process so peak memory is that engine's alone "
            "(default from the plan: on unless run.isolate = false)",
            flag="--isolate",
            report="Engine isolation",
        ),
        RunKey(
            "repeat",
            Int(1, 1000),
            "run each engine N times (fresh store each), interleaved A B C A B C; default 1",
            flag="--repeat",
            report="Repeats",
        ),
        RunKey(
            "warmup",
            Int(0, 999),
            "leading repeats kept in the JSON but left out of the statistics",
            flag="--warmup",
        ),
        RunKey(
            "processes",
            Int(1, 1024),
            "run the P workers of a client/server engine across K client processes on this host "
            "(a Dask LocalCluster); embedded engines refuse K > 1",
            flag="--processes",
        ),
        RunKey(
            "cluster",
            ClusterAddress(),
            "run the P workers of a client/server engine on the worker processes of the Dask "
            "cluster whose scheduler is at this address (tcp://HOST:8786): --processes of its workers, "
            "else all of them; embedded engines refuse it",
            flag="--cluster",
        ),
        RunKey(
            "clean_data",
            Bool(),
            "delete each engine's store (its own files or tables only) after its run; the default. "
            "--no-clean-data keeps them under DATA/profiles-N/<engine>",
            flag="--clean-data",
        ),
        RunKey(
            "reuse_data",
            Bool(),
            "run on the stores an earlier --keep-data run of the same engine, seed and counts built "
            "(checked by their fingerprint, and intact): no insert or update, only the phases that read "
            "what the store holds; the stores are kept (docs/stores.md)",
            flag="--reuse-data",
        ),
        RunKey(
            "rate",
            Rates(),
            "target operations per second (all workers) of every operation phase without a rate of its own: "
            "open loop, response time from each intended start; a rising list 2k,4k,8k sweeps each "
            "read, scan and query phase (inserts, updates and mixed phases then run closed loop)",
            flag="--rate",
        ),
        RunKey(
            "arrivals",
            ArrivalsValue(),
            "spacing of intended start times under --rate: uniform (default) or poisson (seeded apart from the plan)",
            flag="--arrivals",
        ),
        RunKey(
            "over_time",
            PhaseSelection(),
            "also draw the latency-over-time chart (per second) of these phases: phase kinds or names, "
            "comma separated, or all (write phases and phases at a rate always get one)",
            flag="--over-time",
        ),
        RunKey(
            "capacity",
            Bool(),
            "search the capacity of every read, scan and query phase: the highest rate whose response time "
            "meets the SLO (--slo), achieved within 5 percent, backlog bounded (docs/capacity.md)",
            flag="--capacity",
        ),
        RunKey(
            "slo",
            SloBounds(),
            "response-time bounds of the capacity search for every phase kind: p99=2ms,p999=10ms (us, ms or s); "
            "[slo.KIND] in the plan for one kind",
            flag="--slo",
        ),
        RunKey(
            "require_rate",
            RateRequirements(),
            "exit 1 when an engine's capacity of a phase kind is below the rate: read_by_id=5k (comma list)",
            flag="--require-rate",
        ),
        RunKey(
            "capacity_repeats",
            Int(1, 100),
            "searches per engine and phase, for the capacity's confidence interval (default 1)",
            flag="--capacity-repeats",
        ),
        RunKey(
            "capacity_range",
            CapacityRange(),
            "lowest and highest rate a capacity search probes (default 100,1M)",
            flag="--capacity-range",
        ),
    )
}


# --- phases -------------------------------------------------------------------------------


def _phases(where: str, items: Any, settings: dict[str, Any] | None = None) -> list[PhaseSpec]:
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
            count = _int(where, f"{key}.count", count, 1, MAX_PROFILES * 10)
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
            name = _shown(where, f"{key}.name", _str(where, f"{key}.name", table["name"]))
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
        arrivals = _arrivals(where, f"{key}.arrivals", table["arrivals"]) if "arrivals" in table else "uniform"
        over_time = False
        if "over_time" in table:
            over_time = Bool().read(where, f"{key}.over_time", table["over_time"])
            if over_time and kind.action is not Action.OPERATIONS:
                raise ConfigError(where, f"{key}.over_time", f"phase kind {kind_name!r} runs no operations to chart")
        capacity = False
        if "capacity" in table:
            capacity = Bool().read(where, f"{key}.capacity", table["capacity"])
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


# --- loading ------------------------------------------------------------------------------


def load(path: str | Path) -> BenchConfig:
    """Parse and validate a plan file."""
    from asyncbench.fs.inputs import InputError, read_input

    where = str(path)
    try:
        raw = read_input(Path(path), MAX_PLAN_BYTES, "a plan")
    except InputError as exc:
        raise ConfigError(where, "file", exc.reason) from None
    try:
        text = raw.decode("utf-8-sig")  # a UTF-8 byte order mark is not part of the TOML
    except UnicodeDecodeError:
        raise ConfigError(where, "file", "is not UTF-8 text") from None
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(where, "syntax", str(exc)) from None
    except RecursionError:
        raise ConfigError(where, "syntax", "arrays or tables are nested too deeply") from None
    return from_document(doc, where)


def from_document(doc: dict[str, Any], where: str) -> BenchConfig:
    select(DEFAULT_WORKLOAD)  # until [run] names another
    run = doc.get("run", {})
    if isinstance(run, dict) and "workload" in run:  # first: it decides the other keys' vocabulary
        apply_run_key(BenchConfig(source=where), where, "run.workload", "workload", run["workload"])
    section = workload().section
    allowed = TOP_KEYS | ({section} if section else set())
    unknown = set(doc) - allowed
    if unknown:
        raise ConfigError(
            where, sorted(unknown)[0], f"unknown top-level key; allowed: {', '.join(sorted(allowed))}"
        )
    cfg = BenchConfig(source=where)
    if not isinstance(run, dict):
        raise ConfigError(where, "run", "must be a table")
    for k, v in run.items():
        apply_run_key(cfg, where, f"run.{k}", k, v)
    if section:
        table = doc.get(section)
        if not isinstance(table, dict):
            raise ConfigError(where, section, f"the {cfg.workload} workload needs a [{section}] table")
        try:
            cfg.workload_settings = workload().settings(table)
        except SettingError as exc:
            raise ConfigError(where, f"{section}.{exc.key}", exc.problem) from None
        size = workload().size(cfg.workload_settings)
        if size is not None and "profiles" not in run:
            cfg.profiles = [size]  # the workload's size; --profiles overrides it
    counts = doc.get("counts", {})
    if not isinstance(counts, dict):
        raise ConfigError(where, "counts", "must be a table")
    for k, v in counts.items():
        if k not in workload().count_names:
            raise ConfigError(where, f"counts.{k}", f"unknown count; known: {', '.join(workload().count_names)}")
        cfg.counts[k] = _int(where, f"counts.{k}", v, 1, MAX_PROFILES * 10)
    cfg.engine_settings = _engine_settings(where, doc.get("engines", {}))
    cfg.phases = _phases(where, doc.get("phase"), cfg.workload_settings)
    if "slo" in doc:
        _slo_table(cfg, where, doc["slo"])
    check_phase_counts(cfg, where)
    check_repeats(cfg, where)
    return cfg


def apply_run_key(cfg: BenchConfig, where: str, key: str, name: str, v: Any) -> None:
    """Set one ``[run]`` value (from the file or a flag) after checking it."""
    if name not in RUN_KEYS:
        raise ConfigError(where, key, f"unknown key; allowed: {', '.join(sorted(RUN_KEYS))}")
    RUN_KEYS[name].apply(cfg, where, key, v)


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


def check_pacing(cfg: BenchConfig, where: str, key: str) -> None:
    """``arrivals`` spaces the start times of the phases the run's ``rate`` paces: without
    a rate it changes nothing, and the run would be closed loop while the user asked for
    an arrival process (a phase's own rate takes its own ``arrivals``)."""
    if cfg.arrivals != "uniform" and not cfg.rate:
        raise ConfigError(
            where, key, f"paces the phases of --rate or run.rate, and there is none; {cfg.arrivals!r} needs a rate"
        )


def check_repeats(cfg: BenchConfig, where: str) -> None:
    """At least one measured repeat must remain after the warm-ups."""
    if cfg.warmup >= cfg.repeat:
        raise ConfigError(
            where, "warmup", f"{cfg.warmup} warm-up repeat(s) leave nothing to measure of repeat = {cfg.repeat}"
        )


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


def to_json(cfg: BenchConfig) -> bytes:
    """The effective (validated, flag-overridden) config, for a child process to run exactly:
    every field, so a new ``[run]`` key travels without an edit here."""
    import orjson

    def encode(v: Any) -> Any:
        if isinstance(v, Path):
            return str(v)
        if isinstance(v, set):
            return sorted(v)
        if isinstance(v, list):
            return [encode(x) for x in v]
        if isinstance(v, PhaseSpec):
            return dataclasses.asdict(v)
        return v

    return orjson.dumps({f.name: encode(getattr(cfg, f.name)) for f in dataclasses.fields(cfg)})


def from_json(data: bytes) -> BenchConfig:
    """The config :func:`to_json` wrote, field by field from the dataclass's own types."""
    import orjson

    doc = orjson.loads(data)
    select(doc.get("workload", DEFAULT_WORKLOAD))  # this process runs the plan's workload
    hints = typing.get_type_hints(BenchConfig)
    for name, value in doc.items():
        hint = hints[name]
        if hint is Path:
            doc[name] = Path(value)
        elif typing.get_origin(hint) is set:
            doc[name] = set(value)
        elif hint == list[PhaseSpec]:
            doc[name] = [PhaseSpec(**{**p, "params": tuple(map(tuple, p.get("params", ())))}) for p in value]
    return BenchConfig(**doc)


# --- capacity under a latency bound -------------------------------------------------------


def _slo_table(cfg: BenchConfig, where: str, table: Any) -> None:
    """``[slo]``: percentile bounds for every kind, ``[slo.KIND]`` tables for one kind,
    ``require = {KIND = RATE}`` (gates), ``repeats`` and ``range`` of the search."""
    if not isinstance(table, dict):
        raise ConfigError(where, "slo", "must be a table")
    bounds = {k: v for k, v in table.items() if k in PERCENTILES}
    for k, v in table.items():
        key = f"slo.{k}"
        if k in PERCENTILES:
            continue
        if k == "require":
            cfg.require_rate = RUN_KEYS["require_rate"].type.read(where, key, v)
        elif k in workload().phases:
            if not searchable(workload().phases[k]):
                raise ConfigError(where, key, f"phase kind {k!r} is no read, scan or query phase: it has no capacity to search")
            cfg.slo_kinds[k] = _slo_bounds(where, key, v)
        else:
            raise ConfigError(
                where, key, f"unknown key; allowed: a percentile ({', '.join(PERCENTILES)}), a phase kind, require"
            )
    if bounds:
        cfg.slo = _slo_bounds(where, "slo", bounds)


def slo_for(cfg: BenchConfig, kind: str) -> dict[str, str]:
    """The bounds a phase kind's capacity is judged by: its own ``[slo.KIND]``, else the run's."""
    return cfg.slo_kinds.get(kind) or cfg.slo


def check_capacity(cfg: BenchConfig, where: str) -> None:
    """After the flags: ``capacity`` marks every read, scan and query phase; a searched
    phase needs bounds; a gate needs a searched phase of its kind."""
    if cfg.capacity:
        cfg.phases = [
            dataclasses.replace(s, capacity=True)
            if searchable(workload().phases[s.kind]) and s.rate is None
            else s
            for s in cfg.phases
        ]
    searched = {s.kind for s in cfg.phases if s.capacity}
    if searched and cfg.rate:
        raise ConfigError(where, "capacity", "a capacity search chooses its own rates; it contradicts the run's rate")
    for kind in sorted(searched):
        if not slo_for(cfg, kind):
            raise ConfigError(
                where, "slo", f"the capacity of {kind!r} is searched under a latency bound, and none is set: "
                "give one (--slo p99=2ms, or [slo] p99 = \"2ms\")"
            )
    for kind in cfg.require_rate:
        if kind not in searched:
            raise ConfigError(
                where, "require_rate", f"requires a capacity of {kind!r}, and no {kind!r} phase is searched "
                "(capacity = true on the phase, or --capacity)"
            )
