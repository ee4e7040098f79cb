"""Synchronous start-up work (an engine child's skip pass, before its event loop runs) is
cut short by the first stop signal: inside ``StopSignals.raising`` the handler raises
``StopRequested`` between two bytecodes; outside, a signal only records the stop."""

from __future__ import annotations

import signal
import time

import pytest

from asyncbench.run.observe.signals import StopRequested, StopSignals


@pytest.fixture
def stop():
    stop = StopSignals()
    stop.quiet = True
    stop.install()
    try:
        yield stop
    finally:
        stop.restore()


def test_a_signal_inside_raising_ends_the_work_between_two_calls(stop: StopSignals) -> None:
    calls = 0
    with pytest.raises(StopRequested), stop.raising():
        while calls < 1_000_000:  # stands for the skip pass's kernel calls
            calls += 1
            if calls == 3:
                signal.raise_signal(signal.SIGTERM)
            time.sleep(0.001)
    assert calls == 3 and stop.interrupted == "interrupted by SIGTERM"
    signal.raise_signal(signal.SIGTERM)  # a later signal is absorbed, not raised
    assert stop.received == 2


def test_a_stop_that_came_before_raises_at_once(stop: StopSignals) -> None:
    signal.raise_signal(signal.SIGINT)
    ran = False
    with pytest.raises(StopRequested), stop.raising():
        ran = True
    assert not ran


def test_outside_raising_a_signal_only_records_the_stop(stop: StopSignals) -> None:
    with stop.raising():
        pass
    signal.raise_signal(signal.SIGTERM)
    assert stop.interrupted == "interrupted by SIGTERM"
