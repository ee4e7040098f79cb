"""Process memory sampling: peak RSS per engine run, sampled on the event loop."""

from __future__ import annotations

import anyio
import psutil


class MemorySampler:
    """Samples this process's RSS every ``interval`` seconds while ``run`` is active."""

    def __init__(self, interval: float = 0.1) -> None:
        self.interval = interval
        self._proc = psutil.Process()
        self.peak = 0

    def sample(self) -> int:
        rss = self._proc.memory_info().rss
        if rss > self.peak:
            self.peak = rss
        return rss

    def reset(self) -> int:
        """Start a new peak from the current RSS (returned)."""
        self.peak = 0
        return self.sample()

    async def run(self) -> None:
        while True:
            self.sample()
            await anyio.sleep(self.interval)
