"""Shared fixtures: repository paths and a helper that runs the real CLI."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest

from asyncbench.cli.main import main

ROOT = Path(__file__).resolve().parent.parent
REFERENCE_PLAN = ROOT / "benchmarks" / "reference.toml"
#: The flag a test's run gets for ``charts`` (True: drawn, the tool's default).
NO_CHARTS: dict[bool, tuple[str, ...]] = {True: (), False: ("--no-charts",)}


@contextlib.contextmanager
def run_environment_restored() -> Iterator[None]:
    """A run in this process with ``--no-progress``/``--quiet`` sets their environment
    variables (so an isolated engine's child inherits them); put them back afterwards, so
    a later test's terminal observers are not silenced by an earlier run."""
    from asyncbench.run.observe.progress import NO_PROGRESS_ENV
    from asyncbench.run.observe.status import QUIET_ENV

    saved = {name: os.environ.get(name) for name in (NO_PROGRESS_ENV, QUIET_ENV)}
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


@pytest.fixture(autouse=True)
def _run_environment_restored() -> Iterator[None]:
    """Every test: :func:`run_environment_restored` (a plan or result carries its own
    workload: there is no process-wide selection to restore)."""
    with run_environment_restored():
        yield


@pytest.fixture
def run_cli(tmp_path: Path, capfd: pytest.CaptureFixture[str]):
    """Run ``python -m asyncbench`` in-process with output and data under tmp_path.

    Returns (exit code, list of result dicts, captured stdout+stderr). The run draws no
    charts (``--no-charts``) unless ``charts=True``: drawing them takes seconds a run, and
    only the tests of the charts look at them.
    """

    def run(*args: str, charts: bool = False) -> tuple[int, list[dict], str]:
        out, data = tmp_path / "out", tmp_path / "data"
        code = main([*args, *NO_CHARTS[charts], "--output", str(out), "--data", str(data)])
        captured = capfd.readouterr()  # fd level: isolated engines print from child processes
        results = [orjson.loads(p.read_bytes()) for p in sorted(out.glob("*-*-p*/asyncbench-*.json"))]
        return code, results, captured.out + captured.err

    return run


def mysql_configured() -> bool:
    return bool(os.environ.get("MYSQL_HOST") and os.environ.get("MYSQL_PORT"))


def postgres_expected() -> bool:
    """Whether the PostgreSQL tests run: a server is configured (``PGHOST``), or this is CI,
    where a missing server must fail the tests instead of skipping them."""
    return bool(os.environ.get("PGHOST") or os.environ.get("CI"))


def redis_expected() -> bool:
    """Whether the Redis tests run: a server is configured (``REDIS_HOST``, exported by
    ``eval "$(scripts/redis-server start)"``), or this is CI, where a missing server must
    fail the tests instead of skipping them."""
    return bool(os.environ.get("REDIS_HOST") or os.environ.get("CI"))


def unescaped(markdown: str) -> str:
    """A report's text with the backslash escapes of ``asyncbench.markdown`` removed (what a
    reader sees rendered)."""
    import re

    return re.sub(r"\\(.)", r"\1", markdown)


def status_line(engine_doc: dict, workload: str = "profile_store") -> str:
    """The human status line of an engine result as saved in JSON (status is data there:
    an enum plus phase and detail); ``workload``: the run's (its phase kinds), the profile
    store's in every test that calls this."""
    from asyncbench.result import EngineResult

    return EngineResult.from_dict(engine_doc, workload).status_text()


def run_asyncbench(
    tmp: Path,
    *args: str,
    engines: str | None = None,
    env_extra: dict[str, str] | None = None,
    timeout: int = 300,
    charts: bool = False,
) -> subprocess.CompletedProcess[str]:
    """``python -m asyncbench ARGS --no-progress --output TMP/out --data TMP/data`` in a
    subprocess from the repository root; ``engines`` registers plug-ins (the tests
    directory is put on PYTHONPATH so test engines import). No charts unless ``charts``
    (as :func:`run_cli`)."""
    env = dict(os.environ)
    env.pop("ASYNCBENCH_ENGINES", None)
    if engines:
        env["ASYNCBENCH_ENGINES"] = engines
        env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "tests"), env.get("PYTHONPATH", "")])
    env.update(env_extra or {})
    cmd = [
        sys.executable,
        "-m",
        "asyncbench",
        *args,
        *NO_CHARTS[charts],
        "--no-progress",
        "--output",
        str(tmp / "out"),
        "--data",
        str(tmp / "data"),
    ]
    return subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)


def run_result(tmp: Path, *args: str, profiles: int, charts: bool = False) -> Path:
    """``run_asyncbench(tmp, *args)``, which must succeed, and the one result JSON it wrote
    (at ``profiles``, P1)."""
    proc = run_asyncbench(tmp, *args, charts=charts)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (result,) = (tmp / "out").glob(f"profiles-{profiles}-p1/asyncbench-*.json")
    return result


def copy_result_set(result: Path, tmp: Path) -> Path:
    """A result's JSON copied into ``tmp``, with its report and charts rendered there by
    ``report`` (a copy of them would not be asyncbench's own: it refuses to replace a
    copy), so a test has its own set; the copy's JSON path."""
    (tmp / result.name).write_bytes(result.read_bytes())
    proc = subprocess.run(
        [sys.executable, "-m", "asyncbench", "report", str(tmp / result.name)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return tmp / result.name


def store_of(engine, index: int = 0):  # type: ignore[no-untyped-def]
    """The profile store over ``engine``'s worker ``index`` (its primitives, mapped by the
    workload, as a run does: asyncbench.run.phase.stores)."""
    from asyncbench.workloads.profile_store.stores import profile_store

    return profile_store(engine.worker(index), engine.limit)


def reference_engines() -> list[str]:
    """Every shipped engine, with MySQL, PostgreSQL and Redis when they run here (a
    configured server; under CI a missing PostgreSQL or Redis fails instead of being left out)."""
    engines = ["memory", "lsm", "rocksdb", "leveldb", "lmdb", "sqlite"]
    engines += ["mysql"] if mysql_configured() else []
    engines += ["postgres"] if postgres_expected() else []
    engines += ["redis"] if redis_expected() else []
    return engines


@pytest.fixture(scope="session")
def reference_run_p1(tmp_path_factory: pytest.TempPathFactory) -> tuple[int, list[dict], str]:
    """The reference plan at P1 through the real CLI, every engine of :func:`reference_engines`
    in one run (each in its own child): (exit code, result dicts, stdout+stderr). One run for
    the tests that check different facts of it (each engine's 17 checksums, agreement with
    memory), as a run per test cost a minute and a half of CI for the same output."""
    tmp = tmp_path_factory.mktemp("reference-p1")
    engines = ",".join(reference_engines())
    proc = run_asyncbench(tmp, str(REFERENCE_PLAN), "--engine", engines, "--parallelism", "1", timeout=900)
    results = [orjson.loads(p.read_bytes()) for p in sorted((tmp / "out").glob("*-*-p*/asyncbench-*.json"))]
    return proc.returncode, results, proc.stdout + proc.stderr


@pytest.fixture
def lsm_compiled() -> None:
    """For a test that needs the LSM's compiled code (``pytest.mark.usefixtures``): runs
    it, skips it under ``ASYNCBENCH_LSM_PURE``, fails it when the build is missing or stale
    (``tests/compiled.py``)."""
    from compiled import require_lsm

    require_lsm()
