"""The workload registry: workloads looked up by name, imported lazily.

The framework (run, config, report, measure, cli) reaches a workload only through
:func:`workload`, as it reaches engines through :mod:`asyncbench.engines`; it names none
of a workload's modules (an import-linter contract in pyproject.toml says so). Where
workloads come from, in this order (a name is taken once):

- :data:`BUILTIN`: the workloads shipped in this package (the profile store, YCSB);
- the ``asyncbench.workloads`` entry-point group: a workload installed as its own package
  declares ``[project.entry-points."asyncbench.workloads"] mine = "mypackage.module:WORKLOAD"``,
  an object satisfying :class:`asyncbench.workload.Workload` (and the capability Protocols
  of :mod:`asyncbench.workload_capabilities` it has);
- :data:`ENV_VAR`, ``ASYNCBENCH_WORKLOADS="name=module:attribute,..."``: a workload without an
  install (a module on ``PYTHONPATH``), as ``ASYNCBENCH_ENGINES`` adds engines
  (``examples/counter_workload.py``). The attribute may be the workload's class: it is
  made with no arguments.

Malformed or clashing entries are kept in :data:`WORKLOAD_ERRORS`; the command line
refuses to run while any exist (exit 2), naming the variable or the distribution.
"""

from __future__ import annotations

import functools
import importlib
import importlib.metadata
import os
import re

from asyncbench.store import STORE_NAME
from asyncbench.workload import Action, Workload
from asyncbench.workload_capabilities import Verifies

__all__ = ["BUILTIN", "DEFAULT", "ENTRY_POINT_GROUP", "ENV_VAR", "REGISTRY", "WORKLOAD_ERRORS", "workload"]

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
#: Extra workloads without an install: ``ASYNCBENCH_WORKLOADS="name=module:attribute,..."``.
ENV_VAR = "ASYNCBENCH_WORKLOADS"
#: A workload's name and unit: plain lowercase names (the unit names its stores' folder,
#: ``DATA/<unit>-N``; the name is a plan's ``[run] workload``).
PLAIN_NAME = re.compile(r"[a-z][a-z0-9_]{0,39}")
#: Malformed or clashing ``ASYNCBENCH_WORKLOADS`` entries; the command line refuses to run.
WORKLOAD_ERRORS: list[str] = []


def _register_from_env() -> None:
    for item in filter(None, (x.strip() for x in os.environ.get(ENV_VAR, "").split(","))):
        name, sep, target = (part.strip() for part in item.partition("="))
        module, colon, attribute = target.partition(":")
        if not sep or not name or not colon or not module or not attribute:
            WORKLOAD_ERRORS.append(f"{ENV_VAR}: {item!r} is not name=module:attribute")
        elif not PLAIN_NAME.fullmatch(name):
            WORKLOAD_ERRORS.append(f"{ENV_VAR}: {item[:80]!r}: the workload name is not a plain lowercase name")
        elif name in BUILTIN:
            WORKLOAD_ERRORS.append(f"{ENV_VAR}: {item!r}: the workload name {name!r} is taken by a built-in workload")
        else:
            REGISTRY[name] = target


_register_from_env()


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
    if isinstance(found, type):  # a plug-in may name its class: made with no arguments
        found = found()
    if not isinstance(found, Workload):
        missing = [m for m in _members() if not hasattr(found, m)]
        raise TypeError(
            f"workload {name!r}: {target} does not implement asyncbench.workload.Workload"
            + (f" (it lacks {', '.join(missing)})" if missing else "")
        )
    verify_kinds = [k for k, row in found.phases.items() if row.action is Action.VERIFY]
    if verify_kinds and not isinstance(found, Verifies):
        raise TypeError(
            f"workload {name!r}: {target} has a verify phase kind ({', '.join(verify_kinds)}) but does not implement "
            "asyncbench.workload_capabilities.Verifies (verify_ops, verify_note, verify_checksum)"
        )
    stores = found.kv_stores
    if not isinstance(stores, tuple) or len(set(stores)) != len(stores) or not all(
        isinstance(s, str) and STORE_NAME.fullmatch(s) for s in stores
    ):  # a file engine makes a file or folder of each name: refused here, before any engine opens
        raise TypeError(
            f"workload {name!r}: {target} declares kv_stores {stores!r}: a tuple of distinct plain names "
            "(letters, digits, '.', '_' or '-', not starting with '.', '_' or '-', at most 128 characters)"
        )
    if found.name != name or not PLAIN_NAME.fullmatch(found.unit):
        raise TypeError(
            f"workload {name!r}: {target} names itself {found.name!r} with unit {found.unit!r}: its name must be "
            f"the registered one and its unit a plain lowercase name (it names the stores' folder)"
        )
    return found


def _members() -> list[str]:
    """What :class:`Workload` asks for: its attributes and methods, by name."""
    names = set(getattr(Workload, "__annotations__", {})) | {n for n in vars(Workload) if not n.startswith("_")}
    return sorted(names)
