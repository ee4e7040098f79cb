"""The plans a user can run from here, for the usage text printed without a plan argument.

Running the 2M reference plan by accident costs hours and gigabytes, so a bare
``python -m asyncbench`` lists what there is instead of picking a default.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from asyncbench import fmt
from asyncbench.config import ConfigError, load
from asyncbench.parse import escape_unprintable

#: Where plans live, relative to the directory a user runs in (the repository root).
PLAN_GLOBS = ("benchmarks.toml", "benchmarks/*.toml", "*.toml")


def find_plans(root: Path | None = None) -> list[Path]:
    root = root or Path.cwd()
    seen: dict[Path, None] = {}
    for pattern in PLAN_GLOBS:
        for path in sorted(root.glob(pattern)):
            if path.name != "pyproject.toml":
                seen.setdefault(path, None)
    return list(seen)


def describe(path: Path) -> str:
    """``benchmarks/quick.toml  20_000 profiles, P1: lsm, rocksdb, sqlite``."""
    try:
        cfg = load(path)
    except ConfigError as exc:
        return f"(not a valid plan: {escape_unprintable(exc.reason)})"
    counts = ", ".join(fmt.count(n) for n in cfg.profiles)
    return f"{counts} {cfg.workload_impl.unit}, P{','.join(map(str, cfg.parallelism))}, engines {', '.join(cfg.engines)}"


def usage(parser: argparse.ArgumentParser, root: Path | None = None) -> str:
    root = root or Path.cwd()
    lines = [parser.format_usage().rstrip(), "", "Give a plan file to run. Plans here:"]
    plans = find_plans(root)
    if not plans:
        lines.append("  none found in this directory (run from the repository's root)")
    names = {path: escape_unprintable(str(path.relative_to(root))) for path in plans}  # a file named with ESC
    width = max((len(name) for name in names.values()), default=0)
    for path in plans:
        lines.append(f"  {names[path]:<{width}}  {describe(path)}")
    lines += [
        "",
        "A first run: python -m asyncbench benchmarks/quick.toml",
        "Every flag: python -m asyncbench --help",
    ]
    return "\n".join(lines)
