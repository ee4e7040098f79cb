"""The result files a side of ``compare`` names, found and read into a :class:`Side`.

A side is one or more result JSON files or directories (every ``asyncbench-*.json`` below
them), comma-separated. A directory is walked without following symbolic links and with a
bound on its entries (``compare /`` would read the whole filesystem); what a walk found
that vanished or cannot be read since is skipped with a warning, a file named outright
that cannot be read is an error.
"""

from __future__ import annotations

from pathlib import Path

from asyncbench.fs.inputs import InputError, read_input
from asyncbench.fs.walk import TooManyEntries, find
from asyncbench.report.compare.side import Side, pool
from asyncbench.result import ResultError, RunResult

__all__ = ["MAX_WALK_ENTRIES", "RESULT_PATTERN", "load_side", "one_workload"]

#: A results directory holds a few files per run; a tree with more entries than this is
#: not one (``compare /`` would walk the whole filesystem) and is refused, not walked.
MAX_WALK_ENTRIES = 100_000
RESULT_PATTERN = "asyncbench-*.json"


def _files(arg: str, warn: list[str]) -> list[tuple[Path, bool]]:
    """(path, found by a walk) of every result a side names; what a walk skipped (an
    entry that vanished or cannot be read) goes to ``warn``."""
    out: list[tuple[Path, bool]] = []
    for part in filter(None, arg.split(",")):
        path = Path(part)
        try:
            is_dir, exists = path.is_dir(), path.exists()
        except OSError as exc:  # a name over NAME_MAX or PATH_MAX: pathlib raises, not False
            raise ResultError(f"{_short(path)}: cannot be read: {exc.strerror}") from None
        if is_dir:
            try:
                walk = find(path, RESULT_PATTERN, MAX_WALK_ENTRIES)
            except TooManyEntries as exc:
                raise ResultError(
                    f"{path}: more than {exc.seen:_d} entries below it: not a results directory "
                    f"(name the output directory of a run, or the result files)"
                ) from None
            warn += [f"skipped {_short(p)}: {reason}" for p, reason in walk.skipped]
            if not walk.found:
                raise ResultError(f"{path}: no {RESULT_PATTERN} result under this directory")
            out += [(p, True) for p in walk.found]
        elif exists:
            out.append((path, False))
        else:
            raise ResultError(f"{path}: does not exist")
    if not out:
        raise ResultError(f"{arg!r}: names no result file")
    return out


def _short(path: Path, keep: int = 300) -> str:
    """``path`` for a warning: whole, or its start and end around an ellipsis when longer
    than ``keep`` characters (a path past PATH_MAX would fill the screen)."""
    text = str(path)
    return text if len(text) <= keep else f"{text[: keep // 3]}…{text[-(keep - keep // 3):]}"


def load_side(arg: str, engines: set[str] | None, warn: list[str] | None = None) -> Side:
    """One side's results, pooled; a file found by walking a directory that vanished or
    cannot be read since is skipped (said in ``warn``), one named outright is an error."""
    warn = [] if warn is None else warn
    side = Side()
    for path, walked in _files(arg, warn):
        try:
            run = RunResult.from_json(read_input(path))  # a FIFO is refused, not waited on
        except InputError as exc:
            if walked and exc.errno is not None:
                warn.append(f"skipped {_short(path)}: {exc.reason}")
                continue
            raise ResultError(f"{path}: {exc.reason}") from None
        except ResultError as exc:
            raise ResultError(f"{path}: {exc}") from None
        pool(side, path, run, engines)
    return side


def one_workload(base: Side, new: Side) -> None:
    """Both sides hold results of one workload, or a :class:`ResultError` names the files.

    Phase kinds are a workload's vocabulary: YCSB's ``mixed`` and the profile store's
    ``mixed`` are different phases, and before this check ``compare`` set one against the
    other (and called their checksums different)."""
    first: dict[str, Path] = {}
    for side, label in ((base, "BASE"), (new, "NEW")):
        for path, run in zip(side.files, side.runs, strict=True):
            first.setdefault(run.workload, path)
            if len(first) > 1:
                (a, pa), (b, pb) = first.items()
                raise ResultError(
                    f"the results are of two workloads, {a} ({_short(pa)}) and {b} ({_short(pb)}, in {label}): "
                    "compare compares runs of one workload"
                )
