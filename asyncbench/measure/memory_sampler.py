"""Process memory sampling: peak RSS per engine run, sampled on the event loop, plus the
kernel's own high-water mark.

The reference adds the OS high-water mark to its 100 ms sampling, so a spike shorter than
a sampling interval still counts. Here the kernel's ``VmHWM`` is reset when an engine's
run starts (``/proc/self/clear_refs``) and read at every sample; where that is not
available, only the samples count (the report's figure is then a sampled peak).

Each sample also splits the RSS as the kernel counts it (``RssAnon`` and ``RssFile`` +
``RssShmem`` in ``/proc/self/status``): anonymous pages are the process's own memory
(the engine's memtables, caches and indexes, and the harness's share), file-backed ones
are pages of mapped files, which an engine that reads its files through ``mmap`` has in
its RSS as it touches them and the kernel can drop under pressure. Why: a peak RSS that
counts a store's mapped files is not the same claim as one of heap memory (issue 40
item 3). The kernel keeps no high-water mark per kind, so these are sampled peaks.
"""

from __future__ import annotations

import anyio
import psutil

STATUS = "/proc/self/status"
CLEAR_REFS = "/proc/self/clear_refs"


def status_fields(*names: str) -> dict[str, int]:
    """The ``kB`` fields ``names`` of ``/proc/self/status`` in bytes (those present; empty
    where the file is not there)."""
    out: dict[str, int] = {}
    try:
        with open(STATUS) as fh:
            for line in fh:
                name, _, rest = line.partition(":")
                if name in names:
                    out[name] = int(rest.split()[0]) * 1024
    except (OSError, ValueError, IndexError):
        return {}
    return out


def kernel_peak() -> int | None:
    """This process's RSS high-water mark (VmHWM) in bytes, or None where unknown."""
    return status_fields("VmHWM").get("VmHWM")


def rss_split() -> tuple[int, int] | None:
    """(anonymous, file-backed) resident bytes of this process, or None where the kernel
    does not say (file-backed includes shared memory, which is file-backed too)."""
    return _split_of(status_fields("RssAnon", "RssFile", "RssShmem"))


def _split_of(f: dict[str, int]) -> tuple[int, int] | None:
    """:func:`rss_split` from status fields already read (a sample reads them once)."""
    if "RssAnon" not in f or "RssFile" not in f:
        return None
    return f["RssAnon"], f["RssFile"] + f.get("RssShmem", 0)


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
        #: Sampled peaks of the anonymous and the file-backed RSS (None: not known here).
        self.peak_anon: int | None = None
        self.peak_file: int | None = None
        self.kernel = False  # the kernel's high-water mark is part of the peak

    def sample(self) -> int:
        """One read of ``/proc/self/status`` gives the RSS, the kernel's high-water mark
        and the split. Why one: the sampler runs on the event loop, and each file it
        opens and reads releases the GIL and takes it back, which waits behind any other
        thread that holds it. The LSM's 10M insert spent 2.6 s of its loop time in the
        three reads this made before (``psutil``'s statm and status twice), against 0.08 ms
        a sample alone (docs/results/scaling.md, "Where the 10M insert's time goes").
        Where there is no status file, ``psutil`` gives the RSS."""
        f = status_fields("VmRSS", "VmHWM", "RssAnon", "RssFile", "RssShmem")
        rss = f.get("VmRSS")
        if rss is None:
            rss = self._proc.memory_info().rss
        high = f.get("VmHWM") if self.kernel else None
        self.peak = max(self.peak, rss, high or 0)
        split = _split_of(f)
        if split is not None:
            anon, file = split
            self.peak_anon = max(self.peak_anon or 0, anon)
            self.peak_file = max(self.peak_file or 0, file)
        return rss

    def reset(self) -> int:
        """Start a new peak from the current RSS (returned)."""
        self.peak = 0
        self.peak_anon = self.peak_file = None
        self.kernel = reset_kernel_peak()
        return self.sample()

    async def run(self) -> None:
        while True:
            self.sample()
            await anyio.sleep(self.interval)
