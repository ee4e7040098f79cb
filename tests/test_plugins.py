"""Plug-in engines (ASYNCBENCH_ENGINES) are checked before anything runs: exit 2 with a
clear message; they are listed in --help and by ``asyncbench engines``."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from conftest import REFERENCE_PLAN, ROOT

PLUGIN_DIR = Path(__file__).parent / "plugins"


def run(tmp_path: Path, spec: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "ASYNCBENCH_ENGINES": spec}
    env["PYTHONPATH"] = os.pathsep.join([str(PLUGIN_DIR), str(ROOT / "examples"), str(ROOT)])
    env.pop("ASYNCBENCH_NO_PROGRESS", None)
    return subprocess.run(
        [sys.executable, "-m", "asyncbench", *args], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120
    )


def _plan_run(tmp_path: Path, spec: str, engine: str) -> subprocess.CompletedProcess[str]:
    return run(tmp_path, spec, str(REFERENCE_PLAN), "--engine", engine, "--output", "out", "--data", "data")


def test_unimportable_user_module_exits_2_before_running(tmp_path: Path) -> None:
    proc = _plan_run(tmp_path, "mine=my_missing_module:Engine", "mine")
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "cannot import module 'my_missing_module'" in proc.stderr and "PYTHONPATH" in proc.stderr
    assert "pip install" not in proc.stderr
    assert not (tmp_path / "out").exists() and not (tmp_path / "data").exists()


def test_incomplete_engine_is_refused_naming_what_is_missing(tmp_path: Path) -> None:
    proc = _plan_run(tmp_path, "nocount=broken_plugins:NoCount", "nocount")
    assert proc.returncode == 2
    assert "lacks the ProfileStore method(s) count" in proc.stderr
    proc = _plan_run(tmp_path, "odd=broken_plugins:NotAnEngine", "odd")
    assert proc.returncode == 2 and "is not a subclass of asyncbench.engine.Engine" in proc.stderr
    proc = _plan_run(tmp_path, "gone=broken_plugins:Nothing", "gone")
    assert proc.returncode == 2 and "has no attribute 'Nothing'" in proc.stderr


def test_malformed_variable_exits_2(tmp_path: Path) -> None:
    proc = _plan_run(tmp_path, "just-a-name", "memory")
    assert proc.returncode == 2
    assert "ASYNCBENCH_ENGINES: 'just-a-name' is not name=module:Class" in proc.stderr


def test_plugins_are_listed_in_help_and_engines_command(tmp_path: Path) -> None:
    spec = "sorted=sorted_list_engine:SortedListEngine"
    help_text = run(tmp_path, spec, "--help").stdout
    assert "plug-ins: sorted" in help_text
    proc = run(tmp_path, spec, "engines")
    assert proc.returncode == 0, proc.stderr
    assert "sorted  (plug-in from ASYNCBENCH_ENGINES: sorted_list_engine:SortedListEngine)" in proc.stdout
    assert "[engines.lsm] wal_mode = 'async-compressed'  (str)" in proc.stdout
    broken = run(tmp_path, "mine=my_missing_module:Engine", "engines")
    assert broken.returncode == 2 and "not available: engine 'mine'" in broken.stdout


PLUGIN_PYPROJECT = """\
[build-system]
requires = ["setuptools"]
build-backend = "setuptools.build_meta"

[project]
name = "asyncbench-test-plugin"
version = "1.0"

[project.entry-points."asyncbench.engines"]
plugged = "ab_test_plugin:SortedListEngine"

[tool.setuptools]
py-modules = ["ab_test_plugin"]
"""


def test_an_installed_package_is_found_through_the_entry_point_group(tmp_path: Path) -> None:
    """A separate package (the example engine, built and installed here) declares an
    ``asyncbench.engines`` entry point; with its install directory on the path, and no
    ASYNCBENCH_ENGINES, the engine is listed and reproduces the 17 reference checksums
    through the real CLI (isolated child included)."""
    import orjson

    from asyncbench.workloads.profile_store.reference import REFERENCE_CHECKSUMS

    src, site = tmp_path / "src", tmp_path / "site"
    src.mkdir()
    (src / "pyproject.toml").write_text(PLUGIN_PYPROJECT)
    (src / "ab_test_plugin.py").write_text((ROOT / "examples" / "sorted_list_engine.py").read_text())
    pip = [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation", "--no-index"]
    built = subprocess.run([*pip, "--target", str(site), str(src)], capture_output=True, text=True, timeout=300)
    assert built.returncode == 0, built.stdout + built.stderr
    env = {k: v for k, v in os.environ.items() if k not in ("ASYNCBENCH_ENGINES", "ASYNCBENCH_NO_PROGRESS")}
    env["PYTHONPATH"] = str(site)

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        cmd = [sys.executable, "-m", "asyncbench", *args]
        return subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)

    listed = cli("engines")
    assert listed.returncode == 0, listed.stdout + listed.stderr
    assert (
        "plugged  (plug-in from the asyncbench.engines entry points of asyncbench-test-plugin: "
        "ab_test_plugin:SortedListEngine)" in listed.stdout
    )
    proc = cli(str(REFERENCE_PLAN), "--engine", "plugged", "--output", "out", "--data", "data", "--no-progress")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (result,) = (tmp_path / "out").glob("profiles-*/asyncbench-*.json")
    (engine,) = orjson.loads(result.read_bytes())["engines"]
    assert engine["engine"] == "plugged"
    assert {p["name"]: p["checksum"] for p in engine["phases"] if p["checksum"]} == REFERENCE_CHECKSUMS


def test_every_registered_plug_in_is_checked_before_a_run_not_only_the_named_ones(tmp_path: Path) -> None:
    """An entry naming something that is not an engine (a function, a module attribute, a
    missing module) is refused up front by a command that runs engines, even when the run
    names other engines: exit 2, the variable and the entry named, nothing created."""
    for spec, problem in (
        ("x=json:loads", "loads is not a subclass of asyncbench.engine.Engine"),
        ("x=os:path", "path is not a subclass of asyncbench.engine.Engine"),
        ("x=my_missing_module:Engine", "cannot import module 'my_missing_module'"),
        ("memory=json:loads", "loads is not a subclass of asyncbench.engine.Engine"),  # replacing a built-in
    ):
        proc = _plan_run(tmp_path, f"sorted=sorted_list_engine:SortedListEngine,{spec}", "sorted")
        assert proc.returncode == 2, spec + proc.stdout + proc.stderr
        name, _, target = spec.partition("=")
        assert f"ASYNCBENCH_ENGINES: {name}={target}" in proc.stderr and problem in proc.stderr, proc.stderr
        assert "Traceback" not in proc.stderr
        assert not (tmp_path / "out").exists() and not (tmp_path / "data").exists()
        listed = run(tmp_path, spec, "engines")
        assert listed.returncode == 2 and f"ASYNCBENCH_ENGINES: {name}={target}" in listed.stdout + listed.stderr
        assert problem in listed.stdout + listed.stderr


def test_commands_that_load_no_engine_are_not_blocked_by_a_broken_plug_in(tmp_path: Path) -> None:
    """``compare`` and ``report`` read result files and never import an engine: a plug-in
    that does not load is no reason to refuse them."""
    sample = Path(__file__).parent / "fixtures" / "result-sample.json"
    proc = run(tmp_path, "x=json:loads", "compare", str(sample), str(sample))
    assert proc.returncode == 0, proc.stderr


def test_a_cost_growth_the_estimate_cannot_use_is_refused_before_the_run(tmp_path: Path) -> None:
    """``Engine.cost_growth`` is read by the run's estimate before anything starts; a
    plug-in's point at the knee or out of order made it divide by zero (a traceback, no
    message), a factor of 0 took the log of 0. Now: exit 2 naming the class, the attribute
    and the problem, nothing created."""
    for cls, problem in (
        ("GrowthAtTheKnee", "point 0: profiles 200_000 is not above the knee (200_000)"),
        ("GrowthOutOfOrder", "point 1: profiles 2_000_000 is not above point 0's 10_000_000"),
        ("GrowthOfZero", "point 0: factor 0.0 is not a finite number above 0"),
        ("GrowthNotANumber", "exponent nan is not a finite number"),
    ):
        proc = _plan_run(tmp_path, f"mine=broken_plugins:{cls}", "mine")
        assert proc.returncode == 2, cls + proc.stdout + proc.stderr
        assert f"{cls}.cost_growth: {problem}" in proc.stderr, proc.stderr
        assert "Traceback" not in proc.stderr
        assert not (tmp_path / "out").exists() and not (tmp_path / "data").exists()
