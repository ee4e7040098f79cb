"""Peak memory includes the kernel's high-water mark: a spike between two samples counts."""

from __future__ import annotations

import pytest

from asyncbench.measure.memory_sampler import MemorySampler, kernel_peak, reset_kernel_peak


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
