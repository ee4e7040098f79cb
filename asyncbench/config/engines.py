"""The plan's engines: the ``engines`` list (names or ``all``) and ``[engines.NAME]`` settings.

Engines are reached only through their registry; a plug-in is imported here, before
anything runs, so a broken one is a bad-input error naming it, not a failed run.
"""

from __future__ import annotations

from typing import Any

from asyncbench.config.errors import ConfigError
from asyncbench.config.readers import is_int
from asyncbench.limits import (
    ENGINE_NAME as ENGINE_NAME,  # one plain path component (the result loader's rule too)
)


def validate_engine_names(where: str, key: str, names: object) -> tuple[list[str], set[str]]:
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


def engine_settings(where: str, table: object) -> dict[str, dict[str, Any]]:
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
                    is_int(v)
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
            if is_int(v) and v < 0:
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

