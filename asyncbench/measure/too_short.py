"""Whether a phase ran long enough for its time to be compared with another engine's.

A phase's time is one wall-clock interval. On a busy machine the kernel may take the CPU
from the run for a scheduler time slice or more (a few ms on an idle machine, tens of ms at
a load average of 6, which is when a 35 ms phase was ranked "2.50x faster": issue 51), and
every phase pays fixed costs besides its operations (starting and joining its workers,
the first batch's cold caches, a garbage collection). A single such delay moves a phase
of 100 ms by a few percent and one of 35 ms by tens of percent: more than the ±5 % within
which the headline calls a tie, so such a time says nothing about the engine.

:data:`MIN_PHASE_SECONDS` is the floor: a phase below it is "too short to measure". Its
figures are still shown (marked), never ranked or raced. The fix is more operations
(``count``, ``--profiles``), not more repeats: each repeat is as short.
"""

from __future__ import annotations

from asyncbench.result import PhaseResult
from asyncbench.workload import Action

__all__ = ["MIN_PHASE_SECONDS", "TOO_SHORT", "too_short", "too_short_note"]

#: A timed phase shorter than this is too short to measure (see the module's docstring).
MIN_PHASE_SECONDS = 0.1
#: How the console, the phase tables and the report mark such a phase.
TOO_SHORT = "too short to measure"


def too_short(phase: PhaseResult) -> bool:
    """The phase was timed (not skipped, not the verify check, not a capacity search whose
    probes are timed one by one) and lasted under :data:`MIN_PHASE_SECONDS`: its time and
    throughput must not be compared with another engine's."""
    if phase.skipped or phase.action is Action.VERIFY or phase.capacity is not None:
        return False
    return phase.seconds < MIN_PHASE_SECONDS


def too_short_note() -> str:
    """The report's and console's one sentence on what the mark means."""
    return (
        f"{TOO_SHORT[0].upper()}{TOO_SHORT[1:]}: a phase under {MIN_PHASE_SECONDS:g} s, where one scheduler "
        "delay or the phase's fixed costs move its time by more than the ±5% of a tie; its figures are shown, "
        "not compared. Give it more operations (count, --profiles)."
    )
