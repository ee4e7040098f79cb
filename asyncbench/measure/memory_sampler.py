"""Process memory sampling: peak RSS per engine run, sampled on the event loop, plus the
kernel's own high-water mark.

The reference adds the OS high-water mark to its 100 ms sampling, so a spike shorter than
a sampling interval still counts. Here the kernel's ``VmHWM`` is reset when an engine's
run starts (``/proc/self/clear_refs``) and read at every sample; where that is not
available, only the samples count (the report's figure is then a sampled peak).
"""

from __future__ import annotations

import anyio
import psutil

STATUS = "/proc/self/status"
CLEAR_REFS = "/proc/self/clear_refs"


def kernel_peak() -> int | None:
    """This process's RSS high-water mark (VmHWM) in bytes, or None where unknown."""
    try:
        with open(STATUS) as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def reset_kernel_peak() -> bool:
    """Restart VmHWM from the current RSS ("5" to clear_refs); False where not possible."""
    try:
        with open(CLEAR_REFS, "w") as fh:
            fh.write("5")
    except OSError:
        return False
    return kernel_peak() is not None


class MemorySampler:
    """Samples this process's RSS every ``interval`` seconds while ``run`` is active; the
    peak also takes the kernel's high-water mark since the last ``reset``."""

    def __init__(self, interval: float = 0.1) -> None:
        self.interval = interval
        self._proc = psutil.Process()
        self.peak = 0
        self.kernel = False  # the kernel's high-water mark is part of the peak

    def sample(self) -> int:
        rss = self._proc.memory_info().rss
        high = kernel_peak() if self.kernel else None
        self.peak = max(self.peak, rss, high or 0)
        return rss

    def reset(self) -> int:
        """Start a new peak from the current RSS (returned)."""
        self.peak = 0
        self.kernel = reset_kernel_peak()
        return self.sample()

    async def run(self) -> None:
        while True:
            self.sample()
            await anyio.sleep(self.interval)
