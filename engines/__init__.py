"""Engine adapters, looked up by name and imported lazily.

Lazy import keeps ``--help`` free of every engine library, and lets a missing optional
dependency fail only for the engine that needs it.

Where engines come from, in this order (a name is taken once):
- :data:`BUILTIN`: the engines shipped in this package, in report order;
- the ``asyncbench.engines`` entry-point group: an engine installed as its own package
  declares ``[project.entry-points."asyncbench.engines"] mine = "mypackage.module:MyEngine"``
  in its ``pyproject.toml`` (the ecosystem's plug-in convention, as pytest's ``pytest11``);
- ``ASYNCBENCH_ENGINES="name=module:Class,..."``. Kept beside the entry points because it
  needs no install: a module on ``PYTHONPATH`` (a file being written, docs/extending.md's example,
  the test suite's deliberately broken engines) becomes an engine, and, being in the
  environment, it reaches the child process that runs each engine of an isolated run as
  it is. It may name a built-in engine to replace it; an entry point may not.

Which engines ``--engine all`` and a plan without ``engines`` run is not a list kept here:
each engine class states it (``Engine.in_all``, ``Engine.needs_server``,
``Engine.harness_floor``), and :func:`all_engines`, :func:`default_engines` and
:func:`harness_floor` derive the sets from the built-in classes (a plug-in joins no set:
``all`` means what ships).
"""

from __future__ import annotations

import importlib
import importlib.metadata
import os
from typing import Any

from asyncbench.engine import Engine, EngineUnavailable
from asyncbench.limits import ENGINE_NAME, MAX_NAME_CHARS

#: The shipped engines, name -> "module:Class", in report order.
BUILTIN: dict[str, str] = {
    "lsm": "asyncbench.engines.lsm.adapter:LsmEngine",
    "rocksdb": "asyncbench.engines.rocksdb:RocksDbEngine",
    "leveldb": "asyncbench.engines.leveldb:LevelDbEngine",
    "sqlite": "asyncbench.engines.sqlite:SqliteEngine",
    "lmdb": "asyncbench.engines.lmdb:LmdbEngine",
    "mysql": "asyncbench.engines.mysql:MySqlEngine",
    "postgres": "asyncbench.engines.postgres:PostgresEngine",
    "redis": "asyncbench.engines.redis_engine:RedisEngine",
    "memory": "asyncbench.engines.memory:MemoryEngine",
}
#: Every engine this process knows: name -> "module:Class" (built-ins, then plug-ins).
REGISTRY: dict[str, str] = dict(BUILTIN)

#: The entry-point group an installed package declares its engines in.
ENTRY_POINT_GROUP = "asyncbench.engines"
#: Extra engines without an install: ``ASYNCBENCH_ENGINES="name=module:Class,..."``.
ENV_VAR = "ASYNCBENCH_ENGINES"

#: Plug-in name -> where it was registered, for messages (``ASYNCBENCH_ENGINES`` or the
#: entry points of a distribution); a user's own code: never "pip install" advice.
PLUGINS: dict[str, str] = {}
#: Malformed or clashing plug-in entries; the CLI refuses to run (exit 2) while any exist.
PLUGIN_ERRORS: list[str] = []


def name_problem(name: str) -> str | None:
    """Why a plug-in's engine name is refused, or None: it names the engine's data
    directory, so it is one plain path component (no ``../``, ``/``, NUL or newline),
    as the plan reader and the result loader require (``asyncbench.limits``)."""
    if len(name) > MAX_NAME_CHARS or not ENGINE_NAME.fullmatch(name):
        return (
            "the engine name is not a plain name (letters, digits, '_', '-', '.', starting with a letter "
            f"or digit, at most {MAX_NAME_CHARS} characters): it names the engine's data directory"
        )
    return None


def _register_entry_points() -> None:
    for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
        dist = ep.dist.name if ep.dist is not None else "an unknown distribution"
        origin = f"the {ENTRY_POINT_GROUP} entry points of {dist}"
        if ep.name in REGISTRY:
            other = f"by {PLUGINS[ep.name]}" if ep.name in PLUGINS else "by a built-in engine"
            PLUGIN_ERRORS.append(f"{origin}: {ep.name} = {ep.value}: the engine name {ep.name!r} is taken {other}")
            continue
        problem = name_problem(ep.name)
        if problem is not None:
            PLUGIN_ERRORS.append(f"{origin}: {ep.name[:80]!r}: {problem}")
            continue
        module, colon, cls = ep.value.partition(":")
        if not colon or not module.strip() or not cls.strip():
            PLUGIN_ERRORS.append(f"{origin}: {ep.name} = {ep.value!r} is not module:Class")
            continue
        REGISTRY[ep.name] = ep.value.replace(" ", "")
        PLUGINS[ep.name] = origin


def _register_from_env() -> None:
    for item in filter(None, (x.strip() for x in os.environ.get(ENV_VAR, "").split(","))):
        name, sep, target = item.partition("=")
        name, target = name.strip(), target.strip()
        module, colon, cls = target.partition(":")
        if not sep or not name or not colon or not module or not cls:
            PLUGIN_ERRORS.append(f"{ENV_VAR}: {item!r} is not name=module:Class")
            continue
        problem = name_problem(name)
        if problem is not None:
            PLUGIN_ERRORS.append(f"{ENV_VAR}: {item[:80]!r}: {problem}")
            continue
        REGISTRY[name] = target
        PLUGINS[name] = ENV_VAR


_register_entry_points()
_register_from_env()


def engine_class(name: str) -> type[Engine]:
    try:
        target = REGISTRY[name]
    except KeyError:
        raise KeyError(f"unknown engine {name!r}; known: {', '.join(sorted(REGISTRY))}") from None
    module_name, _, class_name = target.partition(":")
    if name in PLUGINS:
        from asyncbench.engines.plugins import load_plugin

        return load_plugin(name, module_name, class_name, PLUGINS[name])
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name and exc.name.split(".")[0] in ("engines", "asyncbench", "workloads"):
            raise EngineUnavailable(f"engine {name!r} is not available in this build ({exc})") from exc
        raise EngineUnavailable(
            f"engine {name!r} needs the Python package {exc.name!r}: pip install {exc.name}"
        ) from exc
    cls = getattr(module, class_name)
    if not (isinstance(cls, type) and issubclass(cls, Engine)):  # a registry entry naming something else
        raise TypeError(f"engine {name!r}: {target} is not a subclass of asyncbench.engine.Engine")
    return cls


def plugin_load_errors() -> list[str]:
    """Why each registered plug-in cannot be an engine (one line each, naming where it was
    registered and the entry), or nothing: every plug-in imported and checked. A command
    that runs engines calls this before it starts, so an entry naming a function, a module
    attribute or a missing module is refused up front, not when (or whether) a run
    reaches it."""
    from asyncbench.engines.plugins import PluginError

    errors = []
    for name in PLUGINS:
        try:
            engine_class(name)
        except PluginError as exc:
            errors.append(str(exc))
    return errors


# --- membership: derived from the built-in classes -----------------------------------------


def _builtin_classes() -> dict[str, type[Engine] | None]:
    """Each built-in engine's class (None: its library is missing here). A plug-in that
    replaced a built-in name (``ASYNCBENCH_ENGINES``) is looked up as that plug-in."""
    out: dict[str, type[Engine] | None] = {}
    for name in BUILTIN:
        try:
            out[name] = engine_class(name)
        except EngineUnavailable:
            out[name] = None
    return out


def all_engines() -> tuple[str, ...]:
    """What ``--engine all`` means, in report order: the built-in engines whose class says
    ``in_all``. One whose library is missing is included (its row says what to install)."""
    return tuple(n for n, cls in _builtin_classes().items() if cls is None or cls.in_all)


def default_engines() -> tuple[str, ...]:
    """What a plan without ``engines`` runs: the ``all`` engines that need no server (one
    whose library is missing here is left out: nothing says it needs no server)."""
    classes = _builtin_classes()
    return tuple(n for n in all_engines() if (cls := classes[n]) is not None and not cls.needs_server)


def harness_floor() -> str:
    """The built-in engine whose checksums are the workload's own (no store in between):
    what scripts run to reproduce reference checksums quickly."""
    (name,) = (n for n, cls in _builtin_classes().items() if cls is not None and cls.harness_floor)
    return name


_DERIVED = {"ALL_ENGINES": all_engines, "DEFAULT_ENGINES": default_engines, "HARNESS_FLOOR": harness_floor}


def __getattr__(name: str) -> Any:
    """``ALL_ENGINES``, ``DEFAULT_ENGINES`` and ``HARNESS_FLOOR``, derived when first read."""
    if name in _DERIVED:
        return _DERIVED[name]()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
