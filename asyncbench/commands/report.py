"""``python -m asyncbench report RESULT.json``: re-render a saved result's report and charts.

It never modifies its input: the JSON is read, the Markdown and SVGs beside it rewritten.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from asyncbench.correctness import judge
from asyncbench.outputs import write_run
from asyncbench.result import EXIT_BAD_INPUT, ResultError, RunResult, exit_code

__all__ = ["report"]


def report(argv: list[str]) -> int:
    p = argparse.ArgumentParser(
        prog="python -m asyncbench report",
        description="Re-render the Markdown report (and charts) of a saved result JSON, beside it.",
    )
    p.add_argument("result", help="an asyncbench-<stamp>.json written by a run")
    args = p.parse_args(argv)
    path = Path(args.result)
    try:
        run = RunResult.from_json(path.read_bytes())
    except FileNotFoundError:
        print(f"asyncbench: {path}: file: does not exist", file=sys.stderr)
        return EXIT_BAD_INPUT
    except IsADirectoryError:
        print(f"asyncbench: {path}: file: is a directory, not a result JSON", file=sys.stderr)
        return EXIT_BAD_INPUT
    except OSError as exc:
        print(f"asyncbench: {path}: file: cannot be read: {exc.strerror}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except ResultError as exc:
        print(f"asyncbench: {path}: result: not an asyncbench result ({exc})", file=sys.stderr)
        return EXIT_BAD_INPUT
    stamp = path.stem.removeprefix("asyncbench-")
    _, md = write_run(run, path.parent, stamp, write_json=False)
    print(f"report: {md}")
    return exit_code([run], judge(run).ok, interrupted=False)
