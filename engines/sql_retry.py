"""The retry of a SQL write that lost a conflict, counted for the engine's figures.

A SQL engine says which errors are transient conflicts (MySQL error 1213: a deadlock
victim, or on Galera a write that failed certification; a PostgreSQL serialization
failure); the workload's store hands every failed write to this retry
(``SqlPrimitives.retry``), which runs it again after a short pause, up to
:data:`MAX_ATTEMPTS` in all, and counts each retry. The engine reports the count per
phase (``Engine.take_retries``). Reads are never sent here: in autocommit they take no
write locks and cannot fail certification.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import anyio

__all__ = ["MAX_ATTEMPTS", "RETRY_PAUSE_S", "Retrier"]

#: Attempts of one write (or update unit) that keeps failing with a retryable error.
MAX_ATTEMPTS = 20
#: Pause before retry n: RETRY_PAUSE_S * n (a conflicting writer on another node commits first).
RETRY_PAUSE_S = 0.001


class Retrier:
    """``await retrier(exc, op, *args)``: called with the first failure of ``op(*args)``;
    re-raises it unless ``retryable(exc)``, else runs ``op`` again (counting each retry in
    ``retries``) up to :data:`MAX_ATTEMPTS` in all."""

    def __init__(self, retryable: Callable[[BaseException], bool] | None) -> None:
        self.retryable = retryable
        self.retries = 0

    async def __call__(self, exc: Exception, op: Callable[..., Awaitable[Any]], *args: Any) -> Any:
        for attempt in range(1, MAX_ATTEMPTS):
            if self.retryable is None or not self.retryable(exc):
                raise exc
            self.retries += 1
            await anyio.sleep(RETRY_PAUSE_S * attempt)
            try:
                return await op(*args)
            except Exception as again:
                exc = again
        raise exc
