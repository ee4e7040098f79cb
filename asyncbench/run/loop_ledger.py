"""How long the engine held the event loop, so a blocked loop is not called harness delay.

Under a rate, a worker that wakes late for its next operation is late either because of
the harness (its waits, its bookkeeping) or because something else held the event loop:
above all an engine whose batch call runs synchronously on the loop (an in-memory store, a
library without an async API) while another worker's operations came due. The open-loop
figures report the harness's own delay (issue 34): the engine's time on the loop belongs
to the engine.

A :class:`LoopLedger` is shared by the workers of one phase on one loop. Each engine batch
call runs through :meth:`LoopLedger.timed`, which times every step of the call's coroutine
(each stretch between two suspensions: the time it actually ran on the loop, not the time
it awaited I/O or a thread) and adds it to :attr:`LoopLedger.total`. A worker reads the
total when its call returns and again when it issues its next batch: the difference is the
engine time of the *other* workers that ran on the loop meanwhile, which
:class:`~asyncbench.measure.latency_recorder.PhaseRecorder` takes out of that batch's
delays. Engine work outside the batch calls (an engine's own background tasks on the loop)
is not seen, and still counts as harness delay.

Cost: two clock reads and a generator hop per step, under a rate only (a closed loop runs
the call as it is).
"""

from __future__ import annotations

from collections.abc import Awaitable, Generator
from typing import Any, TypeVar, cast

from asyncbench.measure.latency import CLOCK

__all__ = ["LoopLedger"]

T = TypeVar("T")


class LoopLedger:
    """The engine's time on one event loop (ns), summed over the batch calls run through it."""

    __slots__ = ("total",)

    def __init__(self) -> None:
        self.total = 0

    def timed(self, call: Awaitable[T]) -> Awaitable[T]:
        """``call``, with the time each of its steps runs on the loop added to :attr:`total`."""
        return _Timed(call, self)


class _Timed(Awaitable[T]):
    __slots__ = ("_call", "_ledger")

    def __init__(self, call: Awaitable[T], ledger: LoopLedger) -> None:
        self._call, self._ledger = call, ledger

    def __await__(self) -> Generator[Any, Any, T]:
        inner = self._call.__await__()
        ledger = self._ledger
        clock = CLOCK
        value: Any = None
        error: BaseException | None = None
        while True:
            t = clock()
            try:
                step = inner.send(value) if error is None else inner.throw(error)
            except StopIteration as done:
                ledger.total += clock() - t
                return cast(T, done.value)  # StopIteration.value is typed Any
            except BaseException:
                ledger.total += clock() - t
                raise
            ledger.total += clock() - t
            value, error = None, None
            try:
                value = yield step
            except GeneratorExit:
                close = getattr(inner, "close", None)
                if close is not None:
                    close()
                raise
            except BaseException as exc:  # cancellation and the like: the call's to handle
                error = exc
