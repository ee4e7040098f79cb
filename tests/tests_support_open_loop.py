"""Helpers of the open-loop tests: a plan with a rate on every operation phase, and the
CLI in a subprocess with the test engines registered."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

#: Operation phases of every group, an update and post-update reads, then verify.
PHASES = [
    ("insert", None),
    ("read_by_id", "reads"),
    ("lookup_by_email", "email_reads"),
    ("scan_country_status", "queries"),
    ("query_created_at", "ranges"),
    ("scan_top_reputation", "queries"),
    ("update", "updates"),
    ("read_by_id", "post_reads"),
    ("verify", None),
]


def plan_text(
    engines: list[str], profiles: int, rate: str | None = None, arrivals: str | None = None, parallelism: int = 1
) -> str:
    lines = ["[run]", f"profiles = {profiles}", f"engines = {engines!r}".replace("'", '"'), f"parallelism = {parallelism}"]
    for kind, stream in PHASES:
        lines += ["[[phase]]", f'kind = "{kind}"']
        if stream is not None:
            lines.append(f'stream = "{stream}"')
        if rate is not None and kind != "verify":
            lines.append(f"rate = {rate}")
            if arrivals is not None:
                lines.append(f'arrivals = "{arrivals}"')
    return "\n".join(lines) + "\n"


def cli(
    tmp: Path, *args: str, env: dict[str, str] | None = None, stalling: bool = False, charts: bool = False
) -> subprocess.CompletedProcess[str]:
    """The CLI in a subprocess; no charts unless ``charts`` (drawing them costs seconds a run)."""
    environ = dict(os.environ)
    environ.pop("ASYNCBENCH_ENGINES", None)
    if stalling:
        environ["ASYNCBENCH_ENGINES"] = "stalling=engines_for_tests:StallingEngine"
        environ["PYTHONPATH"] = os.pathsep.join([str(ROOT / "tests"), environ.get("PYTHONPATH", "")])
    environ.update(env or {})
    cmd = [sys.executable, "-m", "asyncbench", *args, *([] if charts else ["--no-charts"]), "--no-progress", "--output", str(tmp / "out"), "--data", str(tmp / "data")]
    return subprocess.run(cmd, cwd=ROOT, env=environ, capture_output=True, text=True, timeout=600)
