"""Engine adapters, looked up by name and imported lazily.

Lazy import keeps ``--help`` and config validation free of every engine library, and
lets a missing optional dependency fail only for the engine that needs it.
"""

from __future__ import annotations

import importlib
import os

from asyncbench.engine import Engine, EngineUnavailable

#: name -> "module:Class"
REGISTRY: dict[str, str] = {
    "memory": "asyncbench.engines.memory:MemoryEngine",
    "lsm": "asyncbench.engines.lsm.adapter:LsmEngine",
    "rocksdb": "asyncbench.engines.rocksdb:RocksDbEngine",
    "sqlite": "asyncbench.engines.sqlite:SqliteEngine",
    "mysql": "asyncbench.engines.mysql:MySqlEngine",
    "postgres": "asyncbench.engines.postgres:PostgresEngine",
}

#: Extra engines without editing the package: ``ASYNCBENCH_ENGINES="name=module:Class,..."``
#: (the module must be importable; child processes of an isolated run inherit it).
ENV_VAR = "ASYNCBENCH_ENGINES"


#: Names registered through ``ASYNCBENCH_ENGINES`` (a user's own code: never "pip install" advice).
PLUGINS: set[str] = set()
#: Malformed ``ASYNCBENCH_ENGINES`` entries; the CLI refuses to run (exit 2) while any exist.
PLUGIN_ERRORS: list[str] = []


def _register_from_env() -> None:
    for item in filter(None, (x.strip() for x in os.environ.get(ENV_VAR, "").split(","))):
        name, sep, target = item.partition("=")
        name, target = name.strip(), target.strip()
        module, colon, cls = target.partition(":")
        if not sep or not name or not colon or not module or not cls:
            PLUGIN_ERRORS.append(f"{ENV_VAR}: {item!r} is not name=module:Class")
            continue
        REGISTRY[name] = target
        PLUGINS.add(name)


_register_from_env()

#: What ``--engine all`` means, in report order.
ALL_ENGINES = ("lsm", "rocksdb", "sqlite", "mysql", "postgres")
#: The in-memory engine whose checksums are the workload's own (no store in between):
#: what scripts run to reproduce reference checksums quickly.
HARNESS_FLOOR = "memory"
#: What a plan without ``engines`` runs: every shipped engine that needs no server.
DEFAULT_ENGINES = ("lsm", "rocksdb", "sqlite")


def engine_class(name: str) -> type[Engine]:
    try:
        target = REGISTRY[name]
    except KeyError:
        raise KeyError(f"unknown engine {name!r}; known: {', '.join(sorted(REGISTRY))}") from None
    module_name, _, class_name = target.partition(":")
    if name in PLUGINS:
        from asyncbench.engines.plugins import load_plugin

        return load_plugin(name, module_name, class_name)
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name and exc.name.split(".")[0] in ("engines", "asyncbench", "workloads"):
            raise EngineUnavailable(f"engine {name!r} is not available in this build ({exc})") from exc
        raise EngineUnavailable(
            f"engine {name!r} needs the Python package {exc.name!r}: pip install {exc.name}"
        ) from exc
    return getattr(module, class_name)
