"""Loading and validating a TOML benchmark plan (plus command-line overrides).

Everything is checked before anything runs or is written: a bad file or flag raises
``ConfigError`` naming the file, the key and the reason, and the CLI exits with code 2.
"""

from __future__ import annotations

import math
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from asyncbench.workloads.profile_store.phases import PHASES, STREAM_COUNT
from asyncbench.workloads.profile_store.plan import COUNT_NAMES, Counts

INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1
MAX_PARALLELISM = 1024
MAX_PROFILES = 1_000_000_000
#: A per-engine timeout beyond a year is a typo (and ``inf`` cannot be stored in JSON).
MAX_TIMEOUT_SECONDS = 366 * 24 * 3600.0
#: An engine name is also its data directory's name: one plain path component.
ENGINE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")

RUN_KEYS = {
    "name",
    "profiles",
    "parallelism",
    "seed",
    "limit",
    "batch_size",
    "timeout_seconds",
    "engines",
    "output",
    "data",
    "isolate",
    "repeat",
    "warmup",
    "clean_data",
}
PHASE_KEYS = {"kind", "name", "stream", "count"}
TOP_KEYS = {"run", "counts", "engines", "phase"}


def default_engines() -> tuple[str, ...]:
    """The engines a plan without ``engines`` runs: the registry's serverless defaults."""
    from asyncbench.engines import DEFAULT_ENGINES

    return DEFAULT_ENGINES


class ConfigError(ValueError):
    """A problem in a plan file or flag: ``where`` is the file (or "command line"), ``key`` the key."""

    def __init__(self, where: str, key: str, reason: str) -> None:
        super().__init__(f"{where}: {key}: {reason}")
        self.where, self.key, self.reason = where, key, reason


@dataclass(frozen=True)
class PhaseSpec:
    """One validated ``[[phase]]``: its identity is (position, kind, stream, count)."""

    kind: str
    name: str
    stream: str | None = None
    count: int | None = None
    post_update: bool = False  # consumes a post-update stream, or comes after an update phase


@dataclass
class BenchConfig:
    source: str
    name: str = "profile-store"
    profiles: list[int] = field(default_factory=lambda: [2_000_000])
    parallelism: int = 1  # the level running now (the first of ``parallelisms`` until then)
    parallelisms: list[int] = field(default_factory=lambda: [1])  # every level, run in order
    seed: int = 570123434
    limit: int = 50
    batch_size: int = 1_000
    timeout_seconds: float | None = 120_000.0  # None (0 in a plan or flag): no timeout
    engines: list[str] = field(default_factory=lambda: list(default_engines()))
    output: Path = Path("results")
    data: Path = Path("data")
    isolate: bool = True  # each engine in its own child process
    clean_data: bool = True  # delete each engine's store after its run (the reference's --clean-data)
    repeat: int = 1  # runs per engine, interleaved A B C A B C ...
    warmup: int = 0  # leading repeats kept in the JSON but left out of the statistics
    optional_engines: set[str] = field(default_factory=set)  # from "all": skipped when unavailable
    counts: dict[str, int] = field(default_factory=dict)  # explicit overrides only
    engine_settings: dict[str, dict[str, Any]] = field(default_factory=dict)
    phases: list[PhaseSpec] = field(default_factory=list)

    def levels(self) -> list[tuple[int, int]]:
        """Every (profiles, parallelism) pair the plan runs, in order: one result each."""
        return [(n, p) for n in self.profiles for p in self.parallelisms]

    def at_level(self, parallelism: int) -> BenchConfig:
        """This config running at one parallelism level (what a runner and a child use)."""
        import dataclasses

        return dataclasses.replace(self, parallelism=parallelism)

    def counts_for(self, profiles: int) -> Counts:
        """Spec defaults rescaled to ``profiles``, with the file's explicit counts on top."""
        return Counts.for_profiles(profiles, limit=self.limit, **self.counts)


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


def _seconds(where: str, key: str, v: Any) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise ConfigError(where, key, f"must be a number, got {type(v).__name__} {v!r}")
    if not v > 0:
        raise ConfigError(where, key, f"must be positive, got {v!r}")
    if not math.isfinite(v) or v > MAX_TIMEOUT_SECONDS:
        raise ConfigError(where, key, f"must be at most {MAX_TIMEOUT_SECONDS:_.0f} seconds (a year), got {v!r}")
    return float(v)


def _is_int_or_float(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _profiles(where: str, key: str, v: Any) -> list[int]:
    values = v if isinstance(v, list) else [v]
    if not values:
        raise ConfigError(where, key, "must name at least one profile count")
    counts = [_int(where, key, x, 1, MAX_PROFILES) for x in values]
    twice = sorted({n for n in counts if counts.count(n) > 1})
    if twice:
        # each count writes DATA/profiles-N and OUTPUT/profiles-N: a second run would
        # reset the first one's store and replace its result files
        raise ConfigError(where, key, f"{twice[0]:_d} is listed twice; each profile count runs once")
    return counts


# --- engines ------------------------------------------------------------------------------


def validate_engine_names(where: str, key: str, names: Any) -> tuple[list[str], set[str]]:
    """The engine list, and which of them came only from ``all`` (skipped, not failed, when absent)."""
    from asyncbench.engines import ALL_ENGINES, REGISTRY

    if isinstance(names, str):
        names = [n.strip() for n in names.split(",")]
    if not isinstance(names, list) or not names:
        raise ConfigError(where, key, f"must be a non-empty list of engine names, got {names!r}")
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
            named = next((k for k in settings if k in str(exc)), None)
            raise ConfigError(where, f"{key}.{named}" if named else key, str(exc)) from None
        out[name] = dict(settings)
    return out


# --- phases -------------------------------------------------------------------------------


def _phases(where: str, items: Any) -> list[PhaseSpec]:
    if not isinstance(items, list) or not items:
        raise ConfigError(where, "phase", "needs at least one [[phase]] table")
    phases: list[PhaseSpec] = []
    seen_insert = seen_update = False
    explicit: dict[str, str] = {}  # explicit display name -> key that set it
    auto: dict[str, int] = {}
    for i, table in enumerate(items):
        key = f"phase[{i}]"
        if not isinstance(table, dict):
            raise ConfigError(where, key, "must be a table")
        unknown = set(table) - PHASE_KEYS
        if unknown:
            raise ConfigError(
                where, f"{key}.{sorted(unknown)[0]}", f"unknown key; allowed: {', '.join(sorted(PHASE_KEYS))}"
            )
        if "kind" not in table:
            raise ConfigError(where, f"{key}.kind", "is required")
        kind_name = table["kind"]
        if not isinstance(kind_name, str) or kind_name not in PHASES:
            raise ConfigError(
                where, f"{key}.kind", f"unknown phase kind {kind_name!r}; known: {', '.join(PHASES)}"
            )
        kind = PHASES[kind_name]
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
            name = _str(where, f"{key}.name", table["name"])
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
        phases.append(PhaseSpec(kind=kind_name, name=name, stream=stream, count=count, post_update=post))
    return phases


# --- loading ------------------------------------------------------------------------------


def load(path: str | Path) -> BenchConfig:
    """Parse and validate a plan file."""
    from asyncbench.fs.inputs import InputError, read_input

    where = str(path)
    try:
        raw = read_input(Path(path))
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
    unknown = set(doc) - TOP_KEYS
    if unknown:
        raise ConfigError(
            where, sorted(unknown)[0], f"unknown top-level key; allowed: {', '.join(sorted(TOP_KEYS))}"
        )
    cfg = BenchConfig(source=where)
    run = doc.get("run", {})
    if not isinstance(run, dict):
        raise ConfigError(where, "run", "must be a table")
    for k, v in run.items():
        apply_run_key(cfg, where, f"run.{k}", k, v)
    counts = doc.get("counts", {})
    if not isinstance(counts, dict):
        raise ConfigError(where, "counts", "must be a table")
    for k, v in counts.items():
        if k not in COUNT_NAMES:
            raise ConfigError(where, f"counts.{k}", f"unknown count; known: {', '.join(COUNT_NAMES)}")
        cfg.counts[k] = _int(where, f"counts.{k}", v, 1, MAX_PROFILES * 10)
    cfg.engine_settings = _engine_settings(where, doc.get("engines", {}))
    cfg.phases = _phases(where, doc.get("phase"))
    check_phase_counts(cfg, where)
    check_repeats(cfg, where)
    return cfg


def apply_run_key(cfg: BenchConfig, where: str, key: str, name: str, v: Any) -> None:
    """Set one ``[run]`` value (from the file or a flag) after checking it."""
    if name not in RUN_KEYS:
        raise ConfigError(where, key, f"unknown key; allowed: {', '.join(sorted(RUN_KEYS))}")
    if name == "name":
        cfg.name = _str(where, key, v)
    elif name == "profiles":
        cfg.profiles = _profiles(where, key, v)
    elif name == "parallelism":  # one level or a list (the reference's --parallelism 1,16)
        values = v if isinstance(v, list) else [v]
        if not values:
            raise ConfigError(where, key, "must name at least one level")
        levels = [_int(where, key, x, 1, MAX_PARALLELISM) for x in values]
        if len(set(levels)) != len(levels):
            raise ConfigError(where, key, f"repeats a level: {levels}")
        cfg.parallelisms, cfg.parallelism = levels, levels[0]
    elif name == "seed":
        cfg.seed = _int(where, key, v, INT32_MIN, INT32_MAX)
    elif name == "limit":
        cfg.limit = _int(where, key, v, 1, 1_000_000)
    elif name == "batch_size":
        cfg.batch_size = _int(where, key, v, 1, 10_000_000)
    elif name == "timeout_seconds":  # 0 disables the timeout, as in the reference
        cfg.timeout_seconds = None if _is_int_or_float(v) and v == 0 else _seconds(where, key, v)
    elif name == "engines":
        cfg.engines, cfg.optional_engines = validate_engine_names(where, key, v)
    elif name == "output":
        cfg.output = Path(_str(where, key, v))
    elif name == "data":
        cfg.data = Path(_str(where, key, v))
    elif name == "repeat":
        cfg.repeat = _int(where, key, v, 1, 1000)
    elif name == "warmup":
        cfg.warmup = _int(where, key, v, 0, 999)
    elif name == "clean_data":
        if not isinstance(v, bool):
            raise ConfigError(where, key, f"must be true or false, got {v!r}")
        cfg.clean_data = v
    elif name == "isolate":
        if not isinstance(v, bool):
            raise ConfigError(where, key, f"must be true or false, got {v!r}")
        cfg.isolate = v


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
            available = getattr(cfg.counts_for(profiles), STREAM_COUNT[ph.stream])
            if ph.count > available:
                raise ConfigError(
                    where,
                    f"phase[{i}].count",
                    f"{ph.count:_d} exceeds the {available:_d} items of stream {ph.stream!r} at {profiles:_d} profiles",
                )


def to_json(cfg: BenchConfig) -> bytes:
    """The effective (validated, flag-overridden) config, for a child process to run exactly."""
    import orjson

    doc = {
        **{
            k: getattr(cfg, k)
            for k in ("source", "name", "profiles", "parallelism", "parallelisms", "seed", "limit")
        },
        **{
            k: getattr(cfg, k)
            for k in ("batch_size", "timeout_seconds", "engines", "counts", "engine_settings")
        },
        "output": str(cfg.output),
        "data": str(cfg.data),
        "isolate": cfg.isolate,
        "clean_data": cfg.clean_data,
        "repeat": cfg.repeat,
        "warmup": cfg.warmup,
        "optional_engines": sorted(cfg.optional_engines),
        "phases": [vars(p) for p in cfg.phases],
    }
    return orjson.dumps(doc)


def from_json(data: bytes) -> BenchConfig:
    import orjson

    doc = orjson.loads(data)
    doc["output"], doc["data"] = Path(doc["output"]), Path(doc["data"])
    doc["optional_engines"] = set(doc["optional_engines"])
    doc["phases"] = [PhaseSpec(**p) for p in doc["phases"]]
    return BenchConfig(**doc)
