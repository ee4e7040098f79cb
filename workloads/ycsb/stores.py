"""Which YCSB store runs over an engine's primitives: the workload's mappings, picked once.

An engine gives primitives (:mod:`asyncbench.store`) and knows no usertable; this module
builds YCSB's store over them, once per set of primitives (a SQL worker's store keeps the
table it made on first use):

- key/value primitives: :class:`~.kv_store.KvYcsbStore` over the engine's store named
  ``usertable`` (an engine of a fixed set of stores gives its first: a YCSB run writes
  nothing else), placed as the engine places its batches;
- SQL primitives: :class:`~.sql_store.SqlYcsbStore` (the ``usertable`` made by the load
  in the engine's column types);
- in-process primitives (the memory engine): an ordered dict of records
  (:class:`~.kv_store.DictKv`), its batches on the event loop.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from asyncbench.store import InProcess, KvPrimitives, Placement, SqlPrimitives, build_once
from asyncbench.workloads.ycsb.sql_store import USERTABLE
from asyncbench.workloads.ycsb.store import YcsbStore

__all__ = ["ycsb_store"]

NAME = "ycsb"


async def _here(body: Callable[..., Any], *args: Any) -> Any:
    return body(*args)


def ycsb_store(primitives: Any) -> YcsbStore:
    """YCSB's store over ``primitives`` (built on first use); TypeError naming what the
    engine gave when it is none of the kinds this workload maps."""
    from asyncbench.workloads.ycsb.kv_store import DictKv, KvYcsbStore

    if isinstance(primitives, KvPrimitives):
        return build_once(primitives, NAME, lambda: KvYcsbStore(primitives.store(USERTABLE), primitives.place))
    if isinstance(primitives, SqlPrimitives):
        from asyncbench.workloads.ycsb.sql_store import SqlYcsbStore

        return build_once(primitives, NAME, lambda: SqlYcsbStore(primitives))
    if isinstance(primitives, InProcess):
        return build_once(primitives, NAME, lambda: KvYcsbStore(DictKv(), Placement.everywhere(_here)))
    raise TypeError(
        f"the engine's worker gave {type(primitives).__name__}, not key/value, SQL or in-process "
        "primitives (asyncbench.store): this engine cannot run the ycsb workload "
        "(docs/workloads.md: where the records live)"
    )
