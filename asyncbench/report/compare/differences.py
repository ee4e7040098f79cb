"""What the two sides of ``compare`` measured differently: a [run] setting, the counts,
the machine and software, client processes, a reused store, a phase's target rate, an
engine's setting. Named before any figure, since the figures may then not compare.
"""

from __future__ import annotations

import operator
from collections import defaultdict
from collections.abc import Callable

from asyncbench.config import RUN_KEYS
from asyncbench.report.compare.side import PhaseKey, Side, engines_of, pacing, phase_keys
from asyncbench.result import RunResult
from asyncbench.workload import Action

__all__ = ["RATE_PHASES_NAMED", "differences"]

#: Phases named in a "target rate" difference shared by many (the rest are counted).
RATE_PHASES_NAMED = 3


def differences(base: Side, new: Side) -> list[str]:
    """What is not the same between the sides (configuration, machine, software)."""

    def values(side: Side, get: Callable[[RunResult], object]) -> str:
        return ", ".join(sorted({str(get(r)) for r in side.runs}))

    # the [run] settings a result records and compare names come from the [run] table
    checks: list[tuple[str, Callable[[RunResult], object]]] = [
        (key.compare, operator.attrgetter(key.result))
        for key in RUN_KEYS.values()
        if key.compare is not None and key.result is not None
    ]
    checks += [
        ("counts", lambda r: sorted(r.counts.items())),
        ("compiled kernels", lambda r: r.accelerated),
        ("host", lambda r: r.environment.get("hostname")),
        ("CPU", lambda r: r.environment.get("cpu_model")),
        ("asyncbench", lambda r: (r.environment.get("asyncbench_version"), r.environment.get("git_commit"))),
        ("Python", lambda r: r.environment.get("python_version")),
    ]
    checks += [
        ("client processes (K)", lambda r: sorted({len(e.client_processes) or 1 for e in r.engines})),
        ("reused store (--reuse-data)", lambda r: "yes" if "--reuse-data" in r.environment.get("argv", ()) else "no"),
    ]
    out = []
    for label, get in checks:
        a, b = values(base, get), values(new, get)
        if a != b:
            out.append(f"{label}: base {a}; new {b}")
    out += _rates_differ(base, new)
    out += _settings_differ(base, new)
    return out


def _rates(side: Side) -> dict[PhaseKey, str]:
    """Per phase: its target rates over the side's runs and engines ("closed loop" without)."""
    found: dict[PhaseKey, set[str]] = defaultdict(set)
    for r in side.runs:
        keys = phase_keys(r)
        for e in r.engines:
            for p in e.phases:
                if p.index < len(keys) and p.action is Action.OPERATIONS:
                    found[keys[p.index]].add(pacing(p))
    return {k: ", ".join(sorted(v)) for k, v in found.items()}


def _rates_differ(base: Side, new: Side) -> list[str]:
    """A phase both sides ran at different target rates (or one of them closed loop)."""
    a, b = _rates(base), _rates(new)
    by_pair: dict[tuple[str, str], list[str]] = {}
    for k in a:
        if k in b and a[k] != b[k]:
            by_pair.setdefault((a[k], b[k]), []).append(new.names.get(k, base.names.get(k, "?")))
    out = []
    for (x, y), names in by_pair.items():  # one line per change, not one per phase
        if len(names) == 1:
            out.append(f"target rate: {names[0]}: base {x}; new {y}")
        else:
            shown = ", ".join(names[:RATE_PHASES_NAMED]) + (
                f" and {len(names) - RATE_PHASES_NAMED} more" if len(names) > RATE_PHASES_NAMED else ""
            )
            out.append(f"target rate: base {x}; new {y} in {len(names)} phases ({shown})")
    return out


def _settings_differ(base: Side, new: Side) -> list[str]:
    """Each engine setting whose value (effective, else configured) differs, by name, of
    the engines both sides compare: an engine on one side only is named as such already,
    and its every setting read "base WAL; new -" (six lines for one absent engine)."""
    both = set(engines_of(base)) & set(engines_of(new))
    values: dict[tuple[str, str], dict[str, set[str]]] = {}
    for label, side in (("base", base), ("new", new)):
        for r in side.runs:
            for e in r.engines:
                if e.engine not in both:
                    continue
                for s in e.facts.settings:
                    values.setdefault((e.engine, s.name), {}).setdefault(label, set()).add(
                        str(s.effective or s.configured)
                    )
    out = []
    for (engine, name), sides in values.items():
        a, b = sides.get("base", {"-"}), sides.get("new", {"-"})
        if a != b and ("base" in sides or "new" in sides):
            out.append(f"{engine} {name}: base {', '.join(sorted(a))}; new {', '.join(sorted(b))}")
    return out
