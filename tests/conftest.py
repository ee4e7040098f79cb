"""Shared fixtures: repository paths and a helper that runs the real CLI."""

from __future__ import annotations

import os
from pathlib import Path

import orjson
import pytest

from asyncbench.cli import main

ROOT = Path(__file__).resolve().parent.parent
REFERENCE_PLAN = ROOT / "benchmarks" / "reference.toml"


@pytest.fixture
def run_cli(tmp_path: Path, capfd: pytest.CaptureFixture[str]):
    """Run ``python -m asyncbench`` in-process with output and data under tmp_path.

    Returns (exit code, list of result dicts, captured stdout+stderr).
    """

    def run(*args: str) -> tuple[int, list[dict], str]:
        out, data = tmp_path / "out", tmp_path / "data"
        code = main([*args, "--output", str(out), "--data", str(data)])
        captured = capfd.readouterr()  # fd level: isolated engines print from child processes
        results = [orjson.loads(p.read_bytes()) for p in sorted(out.glob("profiles-*/asyncbench-*.json"))]
        return code, results, captured.out + captured.err

    return run


def mysql_configured() -> bool:
    return bool(os.environ.get("MYSQL_HOST") and os.environ.get("MYSQL_PORT"))


def postgres_expected() -> bool:
    """Whether the PostgreSQL tests run: a server is configured (``PGHOST``), or this is CI,
    where a missing server must fail the tests instead of skipping them."""
    return bool(os.environ.get("PGHOST") or os.environ.get("CI"))


def status_line(engine_doc: dict) -> str:
    """The human status line of an engine result as saved in JSON (status is data there:
    an enum plus phase and detail)."""
    from asyncbench.result import EngineResult

    return EngineResult.from_dict(engine_doc).status_text()
