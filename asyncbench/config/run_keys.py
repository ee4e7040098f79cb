"""The ``[run]`` table: one ``RunKey`` row per key (its type and bounds, flag and labels).

The parser, the command-line flags, the child's copy of the config and the report's labels
all read this table, so a new key is one row here and one field of ``BenchConfig``.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, TypeVar

from asyncbench import fmt
from asyncbench.config.counts import count_text
from asyncbench.config.engines import validate_engine_names
from asyncbench.config.errors import ConfigError
from asyncbench.config.model import BenchConfig
from asyncbench.config.phases import searchable
from asyncbench.config.readers import (
    is_number,
    parse_rate,
    parse_rates,
    read_arrivals,
    read_bool,
    read_int,
    read_seconds,
    read_shown,
    read_str,
)
from asyncbench.limits import INT32_MAX, INT32_MIN, MAX_PARALLELISM, MAX_PROFILES
from asyncbench.parse import parse_int, parse_seconds
from asyncbench.slo import make_slo, parse_requirement, parse_slo_text
from asyncbench.workload import PhaseKind
from asyncbench.workloads import REGISTRY as WORKLOADS
from asyncbench.workloads import workload

#: What a value type's ``read`` gives (an int, a list of rates, a path...): each row's own.
T_co = TypeVar("T_co", covariant=True)
T = TypeVar("T")


@dataclass(frozen=True)
class ValueType(Generic[T_co]):
    """How a ``[run]`` value is checked (from the plan) and read (from a flag's text)."""

    def read(self, where: str, key: str, v: object) -> T_co:
        raise NotImplementedError

    def read_in(self, cfg: BenchConfig, where: str, key: str, v: object) -> T_co:
        """``read`` for the plan ``cfg``: a type whose values name the plan's workload's
        vocabulary (phase kinds) checks them against ``cfg.workload_impl``."""
        return self.read(where, key, v)

    def from_text(self, where: str, flag: str, text: str) -> object:
        """A flag's text as a plan value (``read`` checks it next, named as the flag)."""
        return text


@dataclass(frozen=True)
class Int(ValueType[int]):
    lo: int
    hi: int
    signed: bool = False  # flag text is a plain signed integer (a seed), not a count like 20k

    def read(self, where: str, key: str, v: object) -> int:
        return read_int(where, key, v, self.lo, self.hi)

    def from_text(self, where: str, flag: str, text: str) -> int:
        if not self.signed:
            return count_text(where, flag, text)
        try:
            return parse_int(text)  # strict: ASCII digits, _ only between digits (parse.py)
        except ValueError as exc:
            raise ConfigError(where, flag, str(exc)) from None


@dataclass(frozen=True)
class IntList(ValueType[list[int]]):
    """One value or a list (``1,16`` on the command line): distinct, each within bounds."""

    lo: int
    hi: int
    what: str  # what a value is, for the messages
    #: the reason when a value repeats; {n}: the first repeated one, {values}: all of them
    twice: str = "{n:_d} is listed twice; each {what} runs once"

    def read(self, where: str, key: str, v: object) -> list[int]:
        values = v if isinstance(v, list) else [v]
        if not values:
            raise ConfigError(where, key, f"must name at least one {self.what}")
        out = [read_int(where, key, x, self.lo, self.hi) for x in values]
        twice = sorted({n for n in out if out.count(n) > 1})
        if twice:
            # each profile count writes DATA/profiles-N and OUTPUT/profiles-N: a second run
            # would reset the first one's store and replace its result files
            raise ConfigError(where, key, self.twice.format(n=twice[0], values=out, what=self.what))
        return out

    def from_text(self, where: str, flag: str, text: str) -> list[int]:
        return [count_text(where, flag, t) for t in text.split(",")]


@dataclass(frozen=True)
class Checked(ValueType[T]):
    """A value one reader checks whole (``readers.py``: a rate or a sweep's rates, arrivals;
    percentile bounds), its flag's text read as the plan's value: no class per reader."""

    reader: Callable[[str, str, object], T]

    def read(self, where: str, key: str, v: object) -> T:
        return self.reader(where, key, v)


@dataclass(frozen=True)
class Name(ValueType[str]):
    """A name the console and reports show: no control or format characters."""

    def read(self, where: str, key: str, v: object) -> str:
        return read_shown(where, key, read_str(where, key, v))


@dataclass(frozen=True)
class PathValue(ValueType[Path]):
    """A directory the run writes under: no control or format character (a newline or an
    escape in a name is a mistake, and every message and report would have to carry it)."""

    def read(self, where: str, key: str, v: object) -> Path:
        text = read_str(where, key, v)
        try:
            text.encode("utf-8")  # a name in other bytes says so, not "cannot be shown"
        except UnicodeEncodeError:
            raise ConfigError(
                where, key, f"{text!r} contains bytes that are not UTF-8; results and logs record paths "
                "as text, so use a UTF-8 name"
            ) from None
        return Path(read_shown(where, key, text))


#: A host name (RFC 1123 labels) or an IPv4 address; an IPv6 address goes in brackets.
_HOST = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*", re.ASCII)
#: The schemes a Dask scheduler listens on over a network.
CLUSTER_SCHEMES = ("tcp", "tls")


@dataclass(frozen=True)
class ClusterAddress(ValueType[str]):
    """A Dask scheduler's address, ``tcp://HOST:PORT`` (or ``tls://``; no scheme is tcp):
    checked before the run, since a malformed one failed only once the engine's run had
    started, after the report files were written."""

    def read(self, where: str, key: str, v: object) -> str:
        text = read_shown(where, key, read_str(where, key, v))
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
class Bool(ValueType[bool]):
    def read(self, where: str, key: str, v: object) -> bool:
        return read_bool(where, key, v)


@dataclass(frozen=True)
class RateRequirements(ValueType[dict[str, float]]):
    """Gates: a table ``{read_by_id = "5k"}`` or the flag's ``read_by_id=5k,scan_created_at=1k``."""

    def read(self, where: str, key: str, v: object) -> dict[str, float]:
        """The kinds and rates as written, the kinds unchecked: :meth:`read_in` checks
        them against the plan's workload (a plan is always at hand where it is read)."""
        return self._read(where, key, v, None)

    def read_in(self, cfg: BenchConfig, where: str, key: str, v: object) -> dict[str, float]:
        return self._read(where, key, v, cfg.workload_impl.phases)

    def _read(self, where: str, key: str, v: object, phases: Mapping[str, PhaseKind] | None) -> dict[str, float]:
        if isinstance(v, str):
            out: dict[str, float] = {}
            for item in v.split(","):
                try:
                    kind, rate = parse_requirement(item)
                except ValueError as exc:
                    raise ConfigError(where, key, str(exc)) from None
                if kind in out:
                    raise ConfigError(where, key, f"names phase kind {kind!r} twice; give each kind one rate")
                out[kind] = rate
            v = out
        if not isinstance(v, dict) or not v:
            raise ConfigError(where, key, "must name phase kinds and rates, e.g. read_by_id=5k")
        req = {}
        for kind, rate in v.items():
            if phases is not None and (kind not in phases or not searchable(phases[kind])):
                raise ConfigError(where, f"{key}.{kind}", "is not a read, scan, query or mixed phase kind, whose capacity is searched")
            req[kind] = parse_rate(where, f"{key}.{kind}", rate)
        return req


@dataclass(frozen=True)
class CapacityRange(ValueType[list[float]]):
    """The rates a capacity search stays within: ``[low, high]`` or ``100,200k``."""

    def read(self, where: str, key: str, v: object) -> list[float]:
        items = v.split(",") if isinstance(v, str) else v
        if not isinstance(items, list) or len(items) != 2:
            raise ConfigError(where, key, "must be two rates, the lowest and highest to search (e.g. 100,200k)")
        low, high = (parse_rate(where, key, x) for x in items)
        if high <= low:
            raise ConfigError(where, key, f"is an empty rate range: {low:g} to {high:g}; the second must be higher")
        return [low, high]


def slo_bounds(where: str, key: str, v: object) -> dict[str, str]:
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
    return {b.name: bound_text(b.ns) for b in slo.bounds}


def bound_text(ns: int) -> str:
    return f"{ns}ns" if ns % 1000 else f"{ns // 1000}us"


@dataclass(frozen=True)
class Timeout(ValueType[float | None]):
    """Seconds, at most a year; 0 disables the timeout (stored as None), as in the reference."""

    def read(self, where: str, key: str, v: object) -> float | None:
        return None if is_number(v) and v == 0 else read_seconds(where, key, v)

    def from_text(self, where: str, flag: str, text: str) -> float:
        try:
            return parse_seconds(text)  # strict digits; inf/nan/sign reach read's range check
        except ValueError as exc:
            raise ConfigError(where, flag, str(exc)) from None


@dataclass(frozen=True)
class ProbeSeconds(ValueType[float]):
    """The least duration of a capacity probe: seconds from 0 (off) to an hour."""

    def read(self, where: str, key: str, v: object) -> float:
        if is_number(v) and v == 0:
            return 0.0
        if is_number(v) and v < 0:  # (read_seconds would say "positive": 0 is allowed here)
            raise ConfigError(where, key, f"must be 0 (off) or a positive number of seconds, got {v!r}")
        seconds = read_seconds(where, key, v)
        if seconds > MAX_PROBE_SECONDS:
            raise ConfigError(where, key, f"must be at most {MAX_PROBE_SECONDS:_} seconds, got {v!r}")
        return seconds

    def from_text(self, where: str, flag: str, text: str) -> float:
        try:
            return parse_seconds(text)
        except ValueError as exc:
            raise ConfigError(where, flag, str(exc)) from None


#: A probe longer than an hour is no probe: a search runs a dozen of them.
MAX_PROBE_SECONDS = 3_600


@dataclass(frozen=True)
class PhaseSelection(ValueType[list[str]]):
    """Phase kinds or names, or ``all`` (a list, or ``read_by_id,update`` on the command line);
    checked against the plan's phases by :func:`chart_phases`."""

    def read(self, where: str, key: str, v: object) -> list[str]:
        values = v if isinstance(v, list) else [v]
        if not values:
            raise ConfigError(where, key, "must name at least one phase kind or name, or all")
        return [read_shown(where, key, read_str(where, key, x)) for x in values]

    def from_text(self, where: str, flag: str, text: str) -> list[str]:
        return [t.strip() for t in text.split(",")]


@dataclass(frozen=True)
class WorkloadName(ValueType[str]):
    """A registered workload's name (asyncbench.workloads): the plan carries it
    (``BenchConfig.workload``), and its sections and phases are checked against that
    workload's vocabulary."""

    def read(self, where: str, key: str, v: object) -> str:
        name = read_str(where, key, v)
        if name not in WORKLOADS:
            raise ConfigError(where, key, f"unknown workload {name!r}; known: {', '.join(sorted(WORKLOADS))}")
        try:
            workload(name)  # a plug-in workload is loaded here: one that cannot be is refused naming the key
        except (ImportError, AttributeError, TypeError) as exc:
            raise ConfigError(where, key, f"{type(exc).__name__}: {exc}") from None
        return name


@dataclass(frozen=True)
class EngineNames(ValueType[tuple[list[str], set[str]]]):
    """Engine names or ``all``; also sets ``optional_engines`` (see :func:`validate_engine_names`)."""

    def read(self, where: str, key: str, v: object) -> tuple[list[str], set[str]]:
        return validate_engine_names(where, key, v)


def _shown(value: object) -> str:
    """A recorded value as the report shows it by default: a number grouped as counts are
    (``2_000_000``), anything else as text."""
    return fmt.count(value) if isinstance(value, int) and not isinstance(value, bool) else str(value)


@dataclass(frozen=True)
class RunKey:
    """One ``[run]`` key: its type and bounds, its flag, and its labels. The plan's field of
    the same name holds it; the parser, the flag overrides, the child's copy of the config
    compare's list of differing settings and the report's Configuration rows all come from
    this row."""

    name: str
    type: ValueType[object]
    help: str
    flag: str | None = None  # the command-line flag; a bool key gets --x / --no-x
    report: str | None = None  # its row in the report's Configuration table (needs ``result``)
    compare: str | None = None  # its name where compare lists what differs between two sides
    result: str | None = None  # the RunResult field that records it (compare and the report read that)
    metavar: str | None = None  # the flag's value in --help, where its name would overflow 80 columns
    #: the recorded value as the report's Configuration table shows it; None: no row this run
    shown: Callable[[Any], str | None] = _shown  # Any: each row's own value type (the table is heterogeneous)
    #: Other spellings of the key in a plan's [run] table and of its flag, kept working as
    #: they were; a plan or command line giving two spellings of one key is refused. (The
    #: store's size is ``records``/``--records`` for every workload; ``profiles``/``--profiles``,
    #: the first workload's word, is its other spelling and the field's name.)
    plan_aliases: tuple[str, ...] = ()
    flag_aliases: tuple[str, ...] = ()

    @property
    def dest(self) -> str:
        """The argparse destination of the flag."""
        return (self.flag or self.name).lstrip("-").replace("-", "_")

    def apply(self, cfg: BenchConfig, where: str, key: str, v: object) -> None:
        if isinstance(self.type, EngineNames):  # two fields: the list, and which came from "all"
            cfg.engines, cfg.optional_engines = self.type.read(where, key, v)
        else:
            setattr(cfg, self.name, self.type.read_in(cfg, where, key, v))


# how the report shows a recorded value (RunKey.shown), where plain text is not enough


def _timeout_shown(seconds: float | None) -> str:
    return "none" if seconds is None else f"{fmt.count(round(seconds))} s"


def _isolation_shown(isolated: bool) -> str:
    return "a child process per engine" if isolated else "none (one process)"


def _repeats_shown(repeat: int) -> str:
    return f"{repeat} per engine, interleaved"


def _warmup_shown(warmup: int) -> str | None:
    return f"{warmup} of the repeats, left out of the statistics" if warmup else None


RUN_KEYS: dict[str, RunKey] = {
    k.name: k
    for k in (
        RunKey("name", Name(), "the plan's name (results of one plan are compared by it)"),
        RunKey(
            "workload",
            WorkloadName(),
            "the workload the plan runs: profile_store (the default) or ycsb (docs/workloads.md)",
            report="Workload",
            result="workload",
        ),
        RunKey("engines", EngineNames(), "engines to run, comma separated, or all", flag="--engine"),
        RunKey(
            "profiles",
            IntList(1, MAX_PROFILES, "record count"),
            "records in the store, every workload's size (the profile store's profiles, YCSB's recordcount), "
            "e.g. 20k, 2M, 2_000_000 or 1M,2M; rescales default counts",
            flag="--records",
            report="Profiles",
            compare="records",
            result="profiles",
            plan_aliases=("records",),
            flag_aliases=("--profiles",),
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
            shown=str,  # a seed is typed as written, not grouped like a count
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
            result="timeout_seconds",
            shown=_timeout_shown,
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
            result="isolated",
            shown=_isolation_shown,
        ),
        RunKey(
            "charts",
            Bool(),
            "draw the charts (SVG) when the run ends; --no-charts writes the JSON, Markdown and HTML "
            "reports without them, seconds sooner per run (asyncbench report RESULT.json draws them later)",
            flag="--charts",
        ),
        RunKey(
            "repeat",
            Int(1, 1000),
            "run each engine N times (fresh store each), interleaved A B C A B C; default 1",
            flag="--repeat",
            report="Repeats",
            result="repeat",
            shown=_repeats_shown,
        ),
        RunKey(
            "warmup",
            Int(0, 999),
            "leading repeats kept in the JSON but left out of the statistics",
            flag="--warmup",
            report="Warm-up repeats",
            result="warmup",
            shown=_warmup_shown,
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
            "--no-clean-data keeps them under DATA/profiles-N/<engine> (YCSB: DATA/records-N/<engine>)",
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
            Checked(parse_rates),  # one rate, or a sweep's rising rates (a list, or 2k,4k,8k)
            "target operations per second (all workers) of every operation phase without a rate of its own "
            "but the insert (load) phase, which loads unthrottled: open loop, response time from each intended start; a rising list 2k,4k,8k sweeps each "
            "read, scan and query phase (inserts, updates and mixed phases then run closed loop)",
            flag="--rate",
        ),
        RunKey(
            "arrivals",
            Checked(read_arrivals),
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
            "search the capacity of every read, scan, query and mixed phase: the highest rate whose response time "
            "meets the SLO (--slo), achieved within 5 percent, backlog bounded (docs/capacity.md)",
            flag="--capacity",
        ),
        RunKey(
            "slo",
            Checked(slo_bounds),  # a table {p99 = "2ms"} or the flag's p99=2ms,p999=10ms
            "response-time bounds, p99=2ms,p999=10ms (us, ms or s): a gate on every read, scan, query and mixed "
            "phase (PASS, FAIL or INCONCLUSIVE; exit 1 on a FAIL, 3 when only inconclusive: docs/verdicts.md), "
            "and the bound a capacity search meets; [slo.KIND] in the plan for one kind",
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
        RunKey(
            "capacity_probe_seconds",
            ProbeSeconds(),
            "least duration of a capacity probe in seconds (default 0: a probe is its operations); "
            "set it above the engine's stall period, so each probe sees its stalls as often as they come",
            flag="--capacity-probe-seconds",
            metavar="SECONDS",
        ),
    )
}


#: Every spelling of a [run] key in a plan -> its row's name (a row's name, and its aliases).
PLAN_KEYS: dict[str, str] = {
    spelling: k.name for k in RUN_KEYS.values() for spelling in (k.name, *k.plan_aliases)
}


def apply_run_key(cfg: BenchConfig, where: str, key: str, name: str, v: object) -> None:
    """Set one ``[run]`` value (from the file or a flag) after checking it; ``name`` is the
    key as spelled (``records`` sets the ``profiles`` row)."""
    if name not in PLAN_KEYS:
        raise ConfigError(where, key, f"unknown key; allowed: {', '.join(sorted(PLAN_KEYS))}")
    RUN_KEYS[PLAN_KEYS[name]].apply(cfg, where, key, v)


def one_spelling(where: str, given: Collection[str], flags: bool = False) -> None:
    """Refuse two spellings of one key among ``given`` (a plan's [run] keys, or with
    ``flags`` the flags on a command line), naming both: which one was meant cannot be told."""
    for row in RUN_KEYS.values():
        spellings = [row.flag, *row.flag_aliases] if flags else [row.name, *row.plan_aliases]
        both = [s if flags else f"run.{s}" for s in spellings if s is not None and s in given]
        if len(both) > 1:
            raise ConfigError(where, both[0], f"is {both[1]} spelled another way; give one of them")
