"""Which profile store runs over an engine's primitives: the workload's mappings, picked once.

An engine gives primitives (:mod:`asyncbench.store`) and knows no profile; this module
builds the profile store over them, once per set of primitives (a worker's store keeps
its state across phases):

- key/value primitives: :class:`~.kv_store.KvProfileStore` (five named stores, the spec's
  keys; the crash repair when the engine's last close was not clean);
- SQL primitives: :class:`~.sql_store.SqlProfileStore` (one ``profiles`` table, one
  statement per operation);
- in-process primitives (the memory engine): :class:`~.memory_store.MemoryProfileStore`;
- a plug-in engine whose ``worker(i)`` is itself a :class:`~.store.ProfileStore` (it
  implements the ten operations) is used as it is.
"""

from __future__ import annotations

import inspect
from typing import Any

from asyncbench.store import InProcess, KvPrimitives, SqlPrimitives, build_once
from asyncbench.workloads.profile_store.store import ProfileStore

__all__ = ["own_store_problem", "profile_store"]

NAME = "profile_store"


#: What the runner calls on a profile store: the ProfileStore protocol's methods.
STORE_METHODS = tuple(
    name for name, _ in inspect.getmembers(ProfileStore, inspect.isfunction) if not name.startswith("_")
)


def own_store_problem(engine_class: type) -> str | None:
    """What an engine that is its own profile store lacks of the ten operations and
    ``count`` (None: nothing)."""
    missing = [m for m in STORE_METHODS if not callable(getattr(engine_class, m, None))]
    if not missing:
        return None
    return (
        f"{engine_class.__name__} lacks the ProfileStore method(s) {', '.join(missing)} "
        "(workloads/profile_store/store.py)"
    )


def profile_store(primitives: Any, limit: int) -> ProfileStore:
    """The profile store over ``primitives`` (built on first use); TypeError naming what
    the engine gave when it is none of the kinds this workload maps."""
    if isinstance(primitives, KvPrimitives):
        from asyncbench.workloads.profile_store.kv_store import KvProfileStore

        return build_once(primitives, NAME, lambda: KvProfileStore(primitives, limit))
    if isinstance(primitives, SqlPrimitives):
        from asyncbench.workloads.profile_store.sql_store import SqlProfileStore

        return build_once(primitives, NAME, lambda: SqlProfileStore(primitives, limit))
    if isinstance(primitives, InProcess):
        from asyncbench.workloads.profile_store.memory_store import MemoryProfileStore

        return build_once(primitives, NAME, lambda: MemoryProfileStore(limit))
    if isinstance(primitives, ProfileStore):
        return primitives
    raise TypeError(
        f"the engine's worker gave {type(primitives).__name__}: neither key/value, SQL or in-process "
        "primitives (asyncbench.store) nor a profile store of its own "
        "(workloads/profile_store/store.py): it cannot run the profile_store workload"
    )
