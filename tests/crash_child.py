"""Child process of the durability tests: ``python tests/crash_child.py '<json spec>'``.

Opens an engine the way the runner does (``opened(engine, reset=True)``), inserts
profiles 1..n in batches through ``insert()`` and prints ``insert <last uid>`` after each
acknowledged batch; with ``"update": true`` it then updates 1..n in order the same way
(``update <last uid>``). The parent SIGKILLs it at some point, or the child kills itself
at a chosen write (``"die"``), which leaves one profile's writes cut at an exact place.

Spec keys: engine, data, n, batch, seed, settings (engine settings), update (bool),
die: {"phase": "insert"|"update", "store": "<store name>", "method": "put"|"upsert"|
"delete", "at": k} -- SIGKILL before the k-th such call on that store in that phase.
"""

from __future__ import annotations

import json
import os
import signal
import sys
from pathlib import Path
from typing import Any

import anyio

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from conftest import store_of  # noqa: E402

from asyncbench.engine import Engine, EngineConfig, opened  # noqa: E402
from asyncbench.engines import engine_class  # noqa: E402
from asyncbench.workloads.profile_store.generate import create_many  # noqa: E402
from asyncbench.workloads.profile_store.kv_store import STORE_NAMES as PROFILE_STORES  # noqa: E402
from asyncbench.workloads.profile_store.profiles import update  # noqa: E402

#: Store name -> the attribute of the profile store built over the engine's key/value primitives.
STORE_ATTRS = {
    "profiles": "profiles",
    "email-index": "emails",
    "country-status-index": "country_status",
    "created-at-index": "created_at",
    "reputation-index": "reputation",
}


class Tripwire:
    """Stands in for one store: the ``at``-th call of ``method`` kills the process first."""

    def __init__(self, target: Any, method: str, at: int) -> None:
        self._target, self._method, self._left = target, method, at

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._target, name)
        if name != self._method:
            return attr

        def call(*args: Any) -> Any:
            self._left -= 1
            if self._left == 0:
                os.kill(os.getpid(), signal.SIGKILL)
            return attr(*args)

        return call


def arm(engine: Engine, store: str, method: str, at: int) -> None:
    kv = store_of(engine)  # the workload's store over the engine's primitives
    attr = STORE_ATTRS[store]
    setattr(kv, attr, Tripwire(getattr(kv, attr), method, at))


async def run(spec: dict[str, Any]) -> None:
    name, n, batch, seed = spec["engine"], spec["n"], spec["batch"], spec["seed"]
    config = EngineConfig(name, Path(spec["data"]), spec.get("settings", {}), seed=seed, stores=PROFILE_STORES)
    engine = engine_class(name)(config)
    die = spec.get("die")

    def transform(p: Any) -> Any:
        return update(p, seed)

    async with opened(engine, reset=True):
        if die and die["phase"] == "insert":
            arm(engine, die["store"], die["method"], die["at"])
        for start in range(1, n + 1, batch):
            count = min(batch, n - start + 1)
            await store_of(engine).insert(create_many(start, count, seed), [])
            print("insert", start + count - 1, flush=True)
        if spec.get("update"):
            if die and die["phase"] == "update":
                arm(engine, die["store"], die["method"], die["at"])
            for start in range(1, n + 1, batch):
                uids = list(range(start, min(n, start + batch - 1) + 1))
                await store_of(engine).update(uids, transform, [])
                print("update", uids[-1], flush=True)
    print("done", flush=True)


if __name__ == "__main__":
    anyio.run(run, json.loads(sys.argv[1]))
