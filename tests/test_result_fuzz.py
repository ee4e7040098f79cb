"""Fuzz ``report`` and ``compare`` with mutated real results (issue 23, item 11).

Whatever a result file holds, both commands end with exit 0, 1 or 2 and never a
traceback: the typed loader refuses what the report could not use, naming the file and
the key. The base document is a real run (two engines, two repeats, latency histograms
and latency over time, throughput rows); each example applies a few mutations that keep
or change a value's type: delete a key or element, negate or enlarge a number, put
another phase kind or a damaged histogram in a string, add a key, duplicate an element.

Charts are drawn in a second, smaller test: they cost seconds each, the model they read
is the same.
"""

from __future__ import annotations

import copy
import json
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from asyncbench.cli.main import main
from asyncbench.report import outputs

FIXTURES = Path(__file__).parent / "fixtures"
BASE = FIXTURES / "result-repeats-latency.json"
DOC = json.loads(BASE.read_text())

_scalars = (
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=12)
    | st.sampled_from(["", "ops", "insert", "verify", "maintenance", "bogus_kind", "settle", "reads", "#zz"])
)
_values = st.recursive(
    _scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=6,
)


def _same_type(value: Any) -> st.SearchStrategy[Any]:
    """Another value of the same JSON type: what passes a type check and can still be wrong."""
    if isinstance(value, bool):
        return st.booleans()
    if isinstance(value, int):
        return st.sampled_from([-value - 1, -1, 0, value + 1, 2**40, 2**63 - 1]) | st.integers(-5, 50)
    if isinstance(value, float):
        return st.sampled_from([-value - 1.0, 0.0, -0.5, 1e308, 1e-300])
    if isinstance(value, str):
        damaged = [
            value[:-1],
            value[: len(value) // 2],
            value + "A",
            value[:1] + "!" + value[2:],
            value[::-1],
        ]
        return st.sampled_from(damaged) | st.text(max_size=8) | st.sampled_from(["insert", "verify", "nope"])
    if isinstance(value, list):
        return st.sampled_from([[], value[:1], value[1:], value + value[:1], value[::-1]])
    return _values


@st.composite
def _mutated(draw: st.DrawFn) -> dict[str, Any]:
    doc = copy.deepcopy(DOC)
    for _ in range(draw(st.integers(1, 3))):
        parent: Any = None
        key: Any = None
        node: Any = doc
        while isinstance(node, (dict, list)) and node and draw(st.integers(0, 5)) > 0:
            keys = list(node) if isinstance(node, dict) else list(range(len(node)))
            key = draw(st.sampled_from(keys))
            parent, node = node, node[key]
        if parent is None:
            continue
        action = draw(st.sampled_from(["delete", "same_type", "any", "add_key", "duplicate"]))
        if action == "delete":
            del parent[key]
        elif action == "same_type":
            parent[key] = draw(_same_type(node))
        elif action == "any":
            parent[key] = draw(_values)
        elif action == "add_key" and isinstance(node, dict):
            node[draw(st.text(min_size=1, max_size=6))] = draw(_scalars)
        elif action == "duplicate" and isinstance(parent, list):
            parent.append(copy.deepcopy(node))
    return doc


def _check(doc: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "asyncbench-fuzz.json"
        path.write_text(json.dumps(doc))
        code = main(["report", str(path)])
        err = capsys.readouterr().err
        assert code in (0, 1, 2), err
        if code == 2:
            assert str(path) in err and "Traceback" not in err, err
        code = main(["compare", str(BASE), str(path)])
        err = capsys.readouterr().err
        assert code in (0, 1, 2), err
        if code == 2:
            assert "Traceback" not in err and err.startswith("asyncbench: "), err


def test_the_base_result_renders_and_compares_cleanly(capsys: pytest.CaptureFixture[str]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "asyncbench-base.json"
        path.write_bytes(BASE.read_bytes())
        assert main(["report", str(path)]) == 0
        assert main(["compare", str(BASE), str(path)]) == 0


@settings(
    max_examples=300,
    deadline=None,
    derandomize=True,  # the same cases in CI every time
    phases=[Phase.explicit, Phase.generate],  # no shrinking: a whole result shrinks for minutes
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.function_scoped_fixture,
    ],
)
@given(doc=_mutated())
def test_mutated_results_never_traceback(
    doc: dict[str, Any], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(outputs, "chart_files", lambda run, directory, stamp: [])
    _check(doc, capsys)


@settings(
    max_examples=12,
    deadline=None,
    derandomize=True,
    phases=[Phase.explicit, Phase.generate],
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.function_scoped_fixture,
    ],
)
@given(doc=_mutated())
def test_mutated_results_never_traceback_with_charts(
    doc: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    _check(doc, capsys)


def _damage(case: str) -> tuple[dict[str, Any], str]:
    """(the base result with one kind of damage the type checks pass, the key it names)."""
    doc = copy.deepcopy(DOC)
    insert = doc["engines"][0]["phases"][0]  # a write phase: latency and latency over time
    if case == "throughput-row-without-index":
        del doc["throughput"]["memory"][0]["index"]
        return doc, "result.throughput.memory[0]: missing field 'index'"
    if case == "histogram-bad-base64":
        insert["latency"]["histogram"] = "!!not base64!!"
        return doc, "result.engines[0].phases[0].latency.histogram"
    if case == "histogram-not-hdr":
        insert["latency"]["histogram"] = "aGVsbG8gd29ybGQsIG5vdCBhIGhpc3RvZ3JhbQ=="
        return doc, "result.engines[0].phases[0].latency.histogram"
    if case == "latency-over-time-short-row":
        insert["latency_over_time"][3] = [1.0, 2.0]
        return doc, "result.engines[0].phases[0].latency_over_time[3]"
    if case == "unknown-phase-kind":
        doc["phases"][2]["kind"] = "teleport"
        return doc, "result.phases[2].kind: unknown phase kind 'teleport'"
    if case == "negative-ops":
        insert["ops"] = -5
        return doc, "result.engines[0].phases[0].ops: -5 is below 0"
    if case == "phase-of-another-kind":
        insert["kind"] = "update"
        return doc, "result.engines[0].phases[0].kind: 'update', but plan phase 0 is 'insert'"
    if case == "colour-not-a-colour":
        doc["engines"][1]["facts"]["colour"] = "#zz"
        return doc, "result.engines[1].facts.colour: '#zz' is not a #rrggbb colour"
    if case == "seconds-zero-with-ops":
        insert["seconds"] = 0
        return doc, "result.engines[0].phases[0].seconds: 0 seconds for"
    if case == "p99-above-max":
        insert["latency"]["p99"] = insert["latency"]["max"] + 1
        return doc, "result.engines[0].phases[0].latency.p99"
    if case == "percentiles-not-monotone":
        insert["latency"]["p50"] = insert["latency"]["p90"] + 1
        return doc, "result.engines[0].phases[0].latency.p50"
    if case == "parallelism-huge":
        doc["parallelism"] = 10**9
        return doc, "result.parallelism: 1000000000 is above 1024"
    if case == "start-time-bogus":
        doc["started_utc"] = "yesterday-ish"
        return doc, "result.started_utc: 'yesterday-ish' is not an ISO 8601 time"
    if case == "start-time-implausible":
        doc["started_utc"] = "1970-01-01T00:00:00+00:00"
        return doc, "result.started_utc: '1970-01-01T00:00:00+00:00' is before"
    if case == "start-time-in-the-future":
        doc["started_utc"] = "2999-01-01T00:00:00+00:00"
        return doc, "result.started_utc: '2999-01-01T00:00:00+00:00' is in the future"
    if case == "over-time-p99-above-max":
        row = insert["latency_over_time"][3]
        row[3] = row[4] + 1
        return doc, "result.engines[0].phases[0].latency_over_time[3].p99_ns"
    raise AssertionError(case)


@pytest.mark.parametrize(
    "case",
    [
        "throughput-row-without-index",
        "histogram-bad-base64",
        "histogram-not-hdr",
        "latency-over-time-short-row",
        "unknown-phase-kind",
        "negative-ops",
        "phase-of-another-kind",
        "colour-not-a-colour",
        "seconds-zero-with-ops",
        "p99-above-max",
        "percentiles-not-monotone",
        "parallelism-huge",
        "start-time-bogus",
        "start-time-implausible",
        "start-time-in-the-future",
        "over-time-p99-above-max",
    ],
)
def test_damage_that_passes_the_type_checks_is_refused_by_file_and_key(
    case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    doc, key = _damage(case)
    path = tmp_path / "asyncbench-damaged.json"
    path.write_text(json.dumps(doc))
    assert main(["report", str(path)]) == 2
    err = capsys.readouterr().err
    assert str(path) in err and key in err and "Traceback" not in err, err
    assert not (tmp_path / "asyncbench-damaged.md").exists()
    assert main(["compare", str(BASE), str(path)]) == 2
    err = capsys.readouterr().err
    assert str(path) in err and key in err, err
