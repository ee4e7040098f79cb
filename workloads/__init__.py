"""The workload registry: workloads looked up by name, imported lazily.

The framework (run, config, report, measure, cli) reaches a workload only through
:func:`workload`, as it reaches engines through :mod:`asyncbench.engines`; it names none
of a workload's modules (an import-linter contract in pyproject.toml says so). Where
workloads come from, in this order (a name is taken once):

- :data:`BUILTIN`: the workloads shipped in this package (the profile store, YCSB);
- the ``asyncbench.workloads`` entry-point group: a workload installed as its own package
  declares ``[project.entry-points."asyncbench.workloads"] mine = "mypackage.module:WORKLOAD"``,
  an object satisfying :class:`asyncbench.workload.Workload`.
"""

from __future__ import annotations

import functools
import importlib
import importlib.metadata

from asyncbench.workload import Workload

__all__ = ["BUILTIN", "DEFAULT", "ENTRY_POINT_GROUP", "REGISTRY", "select", "selected", "workload"]

#: The shipped workloads, name -> "module:attribute".
BUILTIN: dict[str, str] = {
    "profile_store": "asyncbench.workloads.profile_store.workload:WORKLOAD",
    "ycsb": "asyncbench.workloads.ycsb.workload:WORKLOAD",
}
#: The workload a plan runs when its ``[run]`` names none: the profile store's.
DEFAULT = "profile_store"
#: The entry-point group an installed package declares its workloads in.
ENTRY_POINT_GROUP = "asyncbench.workloads"
#: Every workload this process knows: name -> "module:attribute".
REGISTRY: dict[str, str] = dict(BUILTIN)
for _ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
    REGISTRY.setdefault(_ep.name, _ep.value.replace(" ", ""))


#: The workload this process runs: one plan runs one workload, and every process that runs
#: a part of it (an isolated engine's child, a client process) loads the same plan, whose
#: ``[run] workload`` selects it (asyncbench.config), so a bare :func:`workload` is the plan's.
_selected = DEFAULT


def select(name: str) -> Workload:
    """Make ``name`` the workload a bare :func:`workload` returns (KeyError: unknown)."""
    global _selected
    found = _load(name)
    _selected = name
    return found


def selected() -> str:
    """The name of the workload a bare :func:`workload` returns."""
    return _selected


def workload(name: str | None = None) -> Workload:
    """The workload registered as ``name``, or the selected one (imported on first use)."""
    return _load(_selected if name is None else name)


@functools.cache
def _load(name: str) -> Workload:
    try:
        target = REGISTRY[name]
    except KeyError:
        raise KeyError(f"unknown workload {name!r}; known: {', '.join(sorted(REGISTRY))}") from None
    module_name, _, attribute = target.partition(":")
    found = getattr(importlib.import_module(module_name), attribute)
    if not isinstance(found, Workload):
        raise TypeError(f"workload {name!r}: {target} does not implement asyncbench.workload.Workload")
    return found
