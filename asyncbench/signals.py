"""Signals that stop a run gracefully, and the event-loop backend the run uses."""

from __future__ import annotations

import signal
from typing import Any

import anyio

__all__ = ["STOP_SIGNALS", "backend_options", "watch_signals"]

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


async def watch_signals(state: dict[str, Any], scope: anyio.CancelScope) -> None:
    """The first stop signal records itself in ``state['interrupted']`` and cancels ``scope``."""
    with anyio.open_signal_receiver(*STOP_SIGNALS) as signals:
        async for signum in signals:
            state["interrupted"] = f"interrupted by {signal.Signals(signum).name}"
            scope.cancel()
            return


def backend_options() -> dict[str, Any]:
    """uvloop where it is installed, else asyncio's own loop."""
    try:
        import uvloop

        return {"loop_factory": uvloop.new_event_loop}
    except ImportError:
        return {}
