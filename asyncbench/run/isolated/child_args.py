"""The isolated engine process's arguments, checked before it runs anything.

The parent starts each isolated engine run as ``python -m asyncbench.run.child CONFIG
--engine NAME --profiles N --parallelism P [--repeat R] --result-file F --log-file L [--parent-pipe FD]``
(run/isolated/isolation.py). Nobody should type these, but a wrong value must still end in a
clear message and exit 2, never a traceback (a missing config file, an int that is not
one, a level the plan does not have) and never a directory created for a log: each
argument is checked here and named in the error. Integers are read strictly
(asyncbench/parse.py: ``int()`` would take ``１２``).
"""

from __future__ import annotations

import argparse
import os
from dataclasses import dataclass
from pathlib import Path

from asyncbench.config import ConfigError, from_json
from asyncbench.parse import parse_int

__all__ = ["ChildArgs", "child_args"]

WHERE = "python -m asyncbench.run.child"


@dataclass(frozen=True)
class ChildArgs:
    config: Path
    engine: str
    profiles: int
    parallelism: int
    result_file: Path
    log_file: Path
    parent_pipe: int | None
    repeat: int = 0  # which repeat of the engine this is (0-based): the log's lines say so


def _int(flag: str, text: str, lo: int) -> int:
    try:
        value = parse_int(text)
    except ValueError as exc:
        raise ConfigError(WHERE, flag, str(exc)) from None
    if value < lo:
        raise ConfigError(WHERE, flag, f"must be at least {lo}, got {value}")
    return value


def _in_a_directory(flag: str, text: str) -> Path:
    if not text:
        raise ConfigError(WHERE, flag, "empty path")
    path = Path(text)
    if not path.parent.is_dir():
        raise ConfigError(WHERE, flag, f"{text!r}: its directory does not exist")
    return path


def child_args(args: argparse.Namespace) -> ChildArgs:
    """The arguments as values; ConfigError naming the first bad one."""
    config = Path(args.config)
    if not config.is_file():
        raise ConfigError(WHERE, "CONFIG", f"{args.config!r} is not a file")
    try:
        cfg = from_json(config.read_bytes())
    except (OSError, ValueError, TypeError, KeyError, AttributeError) as exc:
        raise ConfigError(
            WHERE, "CONFIG", f"{args.config!r} is not a run configuration written by asyncbench ({exc})"
        ) from None
    if args.engine not in cfg.engines:
        raise ConfigError(WHERE, "--engine", f"{args.engine!r} is not an engine of {args.config!r}")
    profiles = _int("--profiles", args.profiles, 1)
    parallelism = _int("--parallelism", args.parallelism, 1)
    try:
        cfg.level(profiles, parallelism)
    except ValueError as exc:
        raise ConfigError(WHERE, "--profiles/--parallelism", str(exc)) from None
    result_file = _in_a_directory("--result-file", args.result_file)
    log_file = _in_a_directory("--log-file", args.log_file)
    pipe = None
    if args.parent_pipe is not None:
        pipe = _int("--parent-pipe", args.parent_pipe, 0)
        try:
            os.fstat(pipe)
        except (OSError, OverflowError) as exc:
            raise ConfigError(
                WHERE, "--parent-pipe", f"{pipe} is not an open file descriptor ({exc})"
            ) from None
    repeat = _int("--repeat", args.repeat, 0) if getattr(args, "repeat", None) is not None else 0
    return ChildArgs(config, args.engine, profiles, parallelism, result_file, log_file, pipe, repeat)
