"""Issue 52 items 6 and 8: what a result may hold is bounded when it is loaded, with an
error naming the key and the bound. ``report`` of a crafted result ran 562 s for 1,000
engines, did not finish in 15 minutes for 100k phases, took 3 GB for 250 MB; names with
``../``, NUL or newlines were rendered. Real results are a few hundred kB, a few engines
and tens of phases (``asyncbench/limits.py``).

Measured (``report`` of results generated from a 1k-profile memory run, on the shared
2-core machine under load): 16 / 64 / 256 engines 18.6 / 29.6 / 31.0 s (334 MB peak at
256); 250 / 1,000 phases 15.8 / 30.5 s; 1,000 engines refused in 2.1 s (was 562 s)."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from typing import Any

import orjson
import pytest
from conftest import ROOT

from asyncbench.limits import MAX_RESULT_BYTES, MAX_RESULT_ENGINES, MAX_RESULT_PHASES
from asyncbench.result import ResultError, RunResult

SAMPLE = json.loads((ROOT / "tests" / "fixtures" / "result-sample.json").read_text())


def _engines(n: int) -> Callable[[dict[str, Any]], None]:
    def apply(doc: dict[str, Any]) -> None:
        base = doc["engines"][0]
        doc["engines"] = [dict(copy.deepcopy(base), engine=f"memory{i}") for i in range(n)]

    return apply


def _phases(n: int) -> Callable[[dict[str, Any]], None]:
    def apply(doc: dict[str, Any]) -> None:
        doc["phases"] = [dict(doc["phases"][0], name=f"p{i}") for i in range(n)]

    return apply


def _engine_name(name: str) -> Callable[[dict[str, Any]], None]:
    def apply(doc: dict[str, Any]) -> None:
        doc["engines"][0]["engine"] = name

    return apply


def _phase_name(name: str, where: str) -> Callable[[dict[str, Any]], None]:
    def apply(doc: dict[str, Any]) -> None:
        if where == "plan":
            doc["phases"][0]["name"] = name
        else:
            doc["engines"][0]["phases"][0]["name"] = name

    return apply


@pytest.mark.parametrize(
    ("change", "named"),
    [
        (_engines(MAX_RESULT_ENGINES + 1), f"result.engines: 257 entries, more than the {MAX_RESULT_ENGINES}"),
        (_phases(MAX_RESULT_PHASES + 1), f"result.phases: 1_001 entries, more than the {MAX_RESULT_PHASES:_d}"),
        (_engine_name("../../etc"), "result.engines[0].engine: engine name '../../etc' is not a plain name"),
        (_engine_name("a\nb"), "result.engines[0].engine: engine name 'a\\nb' is not a plain name"),
        (_engine_name("x" * 101), "is not a plain name"),
        (_phase_name("a\0b", "plan"), "result.phases[0].name: 'a\\x00b': character 2 is U+0000"),
        (_phase_name("a\nb", "engine"), "result.engines[0].phases[0].name: 'a\\nb': character 2 is U+000A"),
        (_phase_name("x" * 141, "plan"), "result.phases[0].name: 141 characters, more than the 140"),
    ],
    ids=["engines", "phases", "engine-dotdot", "engine-newline", "engine-long", "phase-nul", "phase-newline", "phase-long"],
)
def test_a_result_past_a_bound_is_refused_naming_the_key(change: Callable[[dict[str, Any]], None], named: str) -> None:
    doc = copy.deepcopy(SAMPLE)
    change(doc)
    with pytest.raises(ResultError) as refused:
        RunResult.from_json(orjson.dumps(doc))
    assert named in str(refused.value), str(refused.value)


def test_a_result_past_the_size_bound_is_refused_before_it_is_parsed() -> None:
    with pytest.raises(ResultError, match=f"more than the {MAX_RESULT_BYTES:_d} a result may have"):
        RunResult.from_json(b" " * (MAX_RESULT_BYTES + 1))


def test_the_sample_and_a_result_at_the_bounds_load() -> None:
    RunResult.from_json(orjson.dumps(SAMPLE))
    doc = copy.deepcopy(SAMPLE)
    _engines(MAX_RESULT_ENGINES)(doc)
    assert len(RunResult.from_json(orjson.dumps(doc)).engines) == MAX_RESULT_ENGINES
