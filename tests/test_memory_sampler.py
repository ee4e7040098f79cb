"""Peak memory includes the kernel's high-water mark: a spike between two samples counts."""

from __future__ import annotations

import pytest

from asyncbench.measure.memory_sampler import MemorySampler, kernel_peak, reset_kernel_peak, rss_split


@pytest.mark.skipif(not reset_kernel_peak(), reason="no resettable VmHWM on this system")
def test_a_spike_between_samples_is_in_the_peak() -> None:
    sampler = MemorySampler()
    before = sampler.reset()
    spike = bytearray(150 * 1024 * 1024)  # touched pages: 150 MB of RSS, then freed
    for i in range(0, len(spike), 4096):
        spike[i] = 1
    del spike
    after = sampler.sample()
    assert after < before + 100 * 1024 * 1024  # the sample itself no longer sees it
    assert sampler.peak >= before + 140 * 1024 * 1024


def test_reset_restarts_the_kernel_peak() -> None:
    if not reset_kernel_peak():
        pytest.skip("no resettable VmHWM on this system")
    big = bytearray(80 * 1024 * 1024)
    for i in range(0, len(big), 4096):
        big[i] = 1
    del big
    high = kernel_peak()
    assert reset_kernel_peak()
    assert kernel_peak() < high


@pytest.mark.skipif(rss_split() is None, reason="no RssAnon/RssFile in /proc/self/status")
def test_the_peak_is_split_into_anonymous_and_mapped_file_pages(tmp_path) -> None:
    """Touched pages of a mapped file count as file-backed, a touched buffer as anonymous
    (issue 40 item 3: how much of a peak is mapped segments, how much the engine's own)."""
    import mmap

    sampler = MemorySampler()
    sampler.reset()
    anon0, file0 = sampler.peak_anon, sampler.peak_file
    assert anon0 is not None and file0 is not None
    path = tmp_path / "mapped"
    size = 96 * 1024 * 1024
    with open(path, "wb") as fh:
        fh.write(b"\x01" * size)
    with open(path, "rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mm:
        touched = sum(mm[i] for i in range(0, size, 4096))  # read every page of the mapping
        sampler.sample()
    assert touched == size // 4096
    assert sampler.peak_file >= file0 + 80 * 1024 * 1024
    assert sampler.peak_anon < anon0 + 40 * 1024 * 1024
    buf = bytearray(96 * 1024 * 1024)
    for i in range(0, len(buf), 4096):
        buf[i] = 1
    sampler.sample()
    del buf
    assert sampler.peak_anon >= anon0 + 80 * 1024 * 1024


def test_a_sample_reads_the_status_file_once_and_agrees_with_psutil(monkeypatch) -> None:
    """A sample runs on the event loop; each file it reads releases the GIL and waits to
    take it back behind any busy thread (the LSM's flushes at 10M). One read of
    /proc/self/status gives everything a sample needs; it made three reads before."""
    import builtins
    from pathlib import Path

    import psutil

    if not Path("/proc/self/status").exists():
        pytest.skip("no /proc/self/status here")
    sampler = MemorySampler()
    sampler.reset()
    real_open = builtins.open
    opened: list[str] = []

    def counting_open(file, *args, **kwargs):  # type: ignore[no-untyped-def]
        opened.append(str(file))
        return real_open(file, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", counting_open)
    reads_of_proc = []
    real_proc_open = psutil._common.open_binary  # psutil's own reads of /proc

    def counting_proc_open(fname, *args, **kwargs):  # type: ignore[no-untyped-def]
        reads_of_proc.append(fname)
        return real_proc_open(fname, *args, **kwargs)

    monkeypatch.setattr(psutil._common, "open_binary", counting_proc_open)
    monkeypatch.setattr(psutil._pslinux, "open_binary", counting_proc_open, raising=False)
    rss = sampler.sample()
    monkeypatch.undo()
    assert opened == ["/proc/self/status"] and reads_of_proc == [], (opened, reads_of_proc)
    assert abs(rss - psutil.Process().memory_info().rss) < 16 * 1024 * 1024
    assert sampler.peak >= rss
