"""The ``<report-stem>.traceback`` file beside a run's report: each failed engine's whole
Python traceback, which the console, the report and the log's ``detail`` give as one line.

A failure's one line (``IndexError: array index out of range``) does not say where it was
raised; the traceback does, and a run may take minutes to fail again (issue 51). Written
with the report, from the result (so ``report RESULT.json`` writes it again), and only
when some engine failed: its absence says none did.
"""

from __future__ import annotations

from pathlib import Path

from asyncbench.fs.ownership import TRACEBACK_MARKER
from asyncbench.result import EngineResult, RunResult, Status

__all__ = ["failed_engines", "render", "traceback_path"]

#: What a failed engine's section says when its result holds no traceback: the failure was
#: not an exception raised in the engine's run (a child process killed, a setup step), or
#: the result was written before tracebacks were kept.
NO_TRACEBACK = "(no traceback recorded: the failure was not raised as an exception in the engine's run)"


def traceback_path(md_path: Path) -> Path:
    """The traceback file beside a Markdown report (same stamp, ``.traceback``)."""
    return md_path.with_suffix(".traceback")


def failed_engines(run: RunResult) -> list[EngineResult]:
    """The engine runs (every repeat) that failed, in run order."""
    return [e for e in run.engines if e.status is Status.FAILED]


def render(run: RunResult) -> str | None:
    """The file's text: per failed engine a header (engine, repeat, phase), its status line,
    then its traceback; None when no engine failed (no file is written then)."""
    failed = failed_engines(run)
    if not failed:
        return None
    lines = [TRACEBACK_MARKER]
    for e in failed:
        lines += [
            "",
            f"== {e.engine} · repeat {e.repeat + 1} · phase {e.phase or 'start-up'}",
            e.status_text(),
            "",
            (e.traceback or NO_TRACEBACK).rstrip("\n"),
        ]
    return "\n".join(lines) + "\n"
