"""A config built in code gets the checks a plan and its flags get (issue 54 item 6):
:class:`Benchmark` runs :func:`asyncbench.run.checks.validate.validate` on the config it is given,
which is what the command line's ``apply_flags`` runs once the flags are in. Before, a
``BenchConfig(...)`` handed to ``Benchmark`` ran with none of the checks (a warm-up that
left nothing measured, arrivals without a rate, a reused store set to be deleted)."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_run_keys import PLANS

from asyncbench.config import BenchConfig, ConfigError, PhaseSpec, from_document
from asyncbench.run.checks.validate import check_values, validate
from asyncbench.run.observe.observers import Observer
from asyncbench.run.runner import Benchmark

PHASES = [PhaseSpec("insert", "insert profiles"), PhaseSpec("read_by_id", "read by user id", stream="reads")]


def in_code(**fields: object) -> BenchConfig:
    given: dict[str, object] = {"engines": ["memory"], "profiles": [200], "isolate": False, "phases": list(PHASES)}
    return BenchConfig(source="in code", **{**given, **fields})  # type: ignore[arg-type]


def benchmark(cfg: BenchConfig, tmp_path: Path) -> Benchmark:
    return Benchmark(cfg, Observer(), "2026-01-01T00:00:00+00:00", lambda _run: None, tmp_path / "log")


@pytest.mark.parametrize(
    ("fields", "key", "problem"),
    [
        ({"profiles": [0]}, "run.profiles", "between"),
        ({"parallelism": [1, 1]}, "run.parallelism", "repeats"),
        ({"engines": ["nope"]}, "run.engines", "unknown engine"),
        ({"repeat": 2, "warmup": 2}, "warmup", "leave nothing to measure"),
        ({"arrivals": "poisson"}, "run.arrivals", "needs a rate"),
        ({"rate": [2_000.0, 1_000.0]}, "run.rate", "must rise"),
        ({"reuse_data": True, "processes": 2}, "run.reuse_data", "distributed"),
        ({"reuse_data": True}, "run.reuse_data", "keeps no store to reuse"),
        ({"over_time": ["no_such_phase"]}, "run.over_time", ""),
        ({"phases": []}, "phase", "at least one"),
        ({"phases": [PhaseSpec("no_such_kind", "x")]}, "phase[0].kind", "unknown phase kind"),
        ({"counts": {"reads": -5}}, "counts.reads", "between"),
        ({"engine_settings": {"memory": {"no_such_setting": 1}}}, "engines.memory.no_such_setting", "unknown setting"),
    ],
    ids=[
        "size", "parallelism", "engine", "warmup", "arrivals", "sweep", "reuse-scaled", "reuse-memory", "over-time",
        "no-phase", "phase-kind", "count", "engine-setting",
    ],
)
def test_a_bad_config_built_in_code_is_refused_by_benchmark(
    tmp_path: Path, fields: dict[str, object], key: str, problem: str
) -> None:
    with pytest.raises(ConfigError) as refused:
        benchmark(in_code(**fields), tmp_path)
    assert str(refused.value).startswith(f"in code: {key}: ") and problem in str(refused.value)


def test_a_good_config_built_in_code_is_completed_as_the_command_line_completes_it(tmp_path: Path) -> None:
    """The run's rate paces the read phase (not the insert, which loads unthrottled), as
    ``apply_flags`` did; a second validation changes nothing."""
    cfg = in_code(rate=[1_000.0])
    bench = benchmark(cfg, tmp_path)
    assert [p.rate for p in bench.cfg.phases] == [None, 1_000.0]
    before = list(cfg.phases)
    validate(cfg)
    assert cfg.phases == before


@pytest.mark.parametrize("plan", PLANS, ids=["run", "capacity", "ycsb"])
def test_every_value_a_plan_can_set_passes_the_values_check(plan: dict[str, object]) -> None:
    """The values check reads a config's values again as a plan's: every [run] key's value
    a plan sets (these plans set every key) must read back, or every run would be refused."""
    check_values(from_document(plan, "plan.toml"))


def test_the_command_line_names_the_flag_and_code_names_the_key() -> None:
    cfg = in_code(arrivals="poisson")
    with pytest.raises(ConfigError, match=r"^command line: --arrivals: "):
        validate(cfg, flags={"arrivals": "--arrivals"})
    with pytest.raises(ConfigError, match=r"^in code: run.arrivals: "):
        validate(cfg)
