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

__all__ = ["BUILTIN", "DEFAULT", "ENTRY_POINT_GROUP", "REGISTRY", "workload"]

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


def workload(name: str) -> Workload:
    """The workload registered as ``name`` (imported on first use; KeyError: unknown).

    The name always comes from the value in hand (a plan's ``BenchConfig.workload``, a
    result's ``RunResult.workload``), never from process state: one process may hold a
    profile-store plan and a YCSB result at once, and each must read its own phase kinds.
    """
    return _load(name)


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
