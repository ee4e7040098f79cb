"""``EngineResult.phase_at`` looks a phase up by its plan index through a map (a list scan
per call made ``report`` quadratic in the phases, issue 52 item 6). The map must never
answer from a stale list: a run appends phases as it goes, and a result's phases may be
replaced whole."""

from __future__ import annotations

import copy
from pathlib import Path

from asyncbench.result import RunResult

FIXTURE = Path(__file__).parent / "fixtures" / "result-sample.json"


def test_phase_at_follows_appends_and_replacements() -> None:
    e = RunResult.from_json(FIXTURE.read_bytes()).engines[0]
    phases = list(e.phases)
    assert [e.phase_at(p.index) for p in phases] == phases
    last = phases[-1]
    e.phases = phases[:-1]  # another list: the map is rebuilt
    assert e.phase_at(last.index) is None
    e.phases.append(last)  # the same list, longer: rebuilt
    assert e.phase_at(last.index) is last
    again = copy.copy(phases[0])
    e.phases.append(again)  # a second phase of index 0: the first is the answer, as a scan's
    assert e.phase_at(phases[0].index) is phases[0]
    assert e.phase_at(10_000) is None


def test_the_map_is_never_saved() -> None:
    run = RunResult.from_json(FIXTURE.read_bytes())
    before = run.to_json()
    run.engines[0].phase_at(0)
    assert run.to_json() == before and b"_phase_map" not in before
