"""Loading an LSM tree under a running maintainer, the way an insert phase does: writes
on the loop, a turn for the background work every 500, then a stabilization."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import anyio

from asyncbench.engines.lsm.maintainer import Maintainer
from asyncbench.engines.lsm.tree import LsmTree


def load_and_stabilize(tree: LsmTree, n: int, then: Callable[[], Awaitable[None]] | None = None) -> None:
    """With a maintainer running, upsert keys ``k0000000``.. with values ``v0``.. (``n`` of
    them), wait until every flush, merge and log write is done, then await ``then()``."""

    async def run() -> None:
        maint = Maintainer([tree], 60_000)
        async with anyio.create_task_group() as tg:
            maint.start(tg)
            for i in range(n):
                tree.upsert(b"k%07d" % i, b"v%d" % i)
                if i % 500 == 0:
                    await maint.throttle()
                    await anyio.sleep(0)
            await maint.wait_idle()
            if then is not None:
                await then()
            maint.stop()
            tg.cancel_scope.cancel()

    anyio.run(run)
