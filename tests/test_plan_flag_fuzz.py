"""Fuzz the plan file and the run command's flags (issue 23, "Done when").

Whatever a plan holds and whatever flags follow it, ``python -m asyncbench PLAN [flags]``
ends with exit 0 (a valid plan: it would start) or 2 (bad input) and never a traceback.
Exit 2 says which file or flag, which key and what is wrong (``asyncbench: PLAN: key:
problem``, ``asyncbench: command line: --flag: problem``, or argparse's own usage error),
and creates nothing: the temporary directory the example runs in is unchanged.

The CLI runs in-process (fast: several hundred examples in seconds). ``confirm_start``,
the step right after every check, is replaced by one that records the validated config
and declines, so a valid plan is checked completely but nothing runs.

Messages of our own quote no input raw (a control character is written as an escape).

Plans are mutations of a small valid plan (so most examples get past the TOML parser and
reach the deeper checks): any [run], [counts], [[phase]] or [engines.*] key set to a value
of any TOML type, including the awkward ones (huge and negative integers, nan and inf,
Unicode digits, control and bidi characters, empty and nested containers), plus some
plans that are not TOML at all.
"""

from __future__ import annotations

import contextlib
import io
import math
import os
import tempfile
from pathlib import Path
from typing import Any
from unittest import mock

from hypothesis import HealthCheck, event, example, given, settings
from hypothesis import strategies as st

from asyncbench.cli.main import main
from asyncbench.config import RUN_KEYS
from asyncbench.parse import check_printable
from asyncbench.workloads.profile_store.phases import PHASES
from asyncbench.workloads.profile_store.plan import COUNT_NAMES

EXAMPLES = int(os.environ.get("ASYNCBENCH_FUZZ_EXAMPLES", "200"))
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

# --- values -----------------------------------------------------------------------------------

_tricky_text = st.sampled_from(
    [
        "", " ", "1_000", "_1", "1__0", "1_", "１２", "٣", "2M", "20k", "1.5M", "-1", "0", "1e3", "nan", "inf",
        "all", "memory", "lsm,memory", "nosuch", "\x1b[31m", "a\rb", "\u202e", "\u2028", "x" * 300, "/", ".",
        "..", "/dev/null", "results", "data", "\x00",
    ]
)  # fmt: skip
_text = _tricky_text | st.text(max_size=12)
_scalar = (
    st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.sampled_from([0, 1, 2, 7, 1000, 10**10, -1, 2**31, 2**63 - 1])
    | st.floats(allow_nan=True, allow_infinity=True)
    | _text
)
_value = st.recursive(
    _scalar,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_text, inner, max_size=3),
    max_leaves=5,
)


def _string(text: str) -> str:
    """A TOML basic string: controls, quote and backslash escaped, everything else as is
    (JSON's escapes would write astral characters as surrogate pairs, which TOML refuses)."""
    out = []
    for ch in text:
        if ch in '"\\':
            out.append("\\" + ch)
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def _toml(value: Any) -> str:
    """A value as TOML (inline tables and arrays; any string, escaped where TOML needs it)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, str):
        return _string(value)
    if isinstance(value, list):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    return "{" + ", ".join(f"{_string(k)} = {_toml(v)}" for k, v in value.items()) + "}"


def _table(name: str, items: dict[str, Any]) -> str:
    return f"[{name}]\n" + "".join(f"{_string(k)} = {_toml(v)}\n" for k, v in items.items())


# --- plans ------------------------------------------------------------------------------------

BASE_RUN: dict[str, Any] = {"profiles": 1_000, "engines": ["memory"]}
BASE_PHASES: list[dict[str, Any]] = [
    {"kind": "insert"},
    {"kind": "read_by_id", "stream": "reads"},
    {"kind": "update", "stream": "updates"},
    {"kind": "verify"},
]
BASE_PLAN = _table("run", BASE_RUN) + "".join(
    "[[phase]]\n" + "".join(f"{k} = {_string(v)}\n" for k, v in p.items()) for p in BASE_PHASES
)
_run_keys = st.sampled_from(sorted(RUN_KEYS)) | _text
_count_keys = st.sampled_from(COUNT_NAMES) | _text
_kinds = st.sampled_from(sorted(PHASES)) | _text
_streams = st.sampled_from(sorted({s for k in PHASES.values() for s in k.streams})) | _text
_phase = st.fixed_dictionaries(
    {"kind": _kinds},
    optional={"stream": _streams | _value, "count": _value, "name": _text | _value, "extra": _value},
)
_engine_tables = st.dictionaries(
    st.sampled_from(["memory", "lsm", "sqlite", "rocksdb", "mysql", "postgres"]) | _text,
    st.dictionaries(
        st.sampled_from(["host", "port", "hosts", "schema", "lock_wait_seconds", "synchronous_commit"])
        | _text,
        _value,
        max_size=3,
    ),
    max_size=2,
)


@st.composite
def plans(draw: st.DrawFn) -> str:
    if draw(st.integers(0, 9)) == 0:  # not a plan at all
        return draw(
            st.text(max_size=60) | st.sampled_from(["[run", "[[phase]]\nkind=", "a = 1\na = 2", "\ufeff"])
        )
    run = dict(BASE_RUN)
    for key, value in draw(st.dictionaries(_run_keys, _value, max_size=3)).items():
        run[key] = value
    for key in draw(st.lists(st.sampled_from(sorted(BASE_RUN)), max_size=1)):
        run.pop(key, None)
    parts = [_table("run", run)]
    counts = draw(st.dictionaries(_count_keys, _value, max_size=2))
    if counts:
        parts.append(_table("counts", counts))
    phases = [dict(p) for p in BASE_PHASES]
    if draw(st.booleans()):  # change, add or drop phases
        for _ in range(draw(st.integers(1, 3))):
            what = draw(st.sampled_from(["set", "add", "drop"]))
            if what == "add" or not phases:
                phases.insert(draw(st.integers(0, len(phases))), draw(_phase))
            elif what == "drop":
                phases.pop(draw(st.integers(0, len(phases) - 1)))
            else:
                key = draw(st.sampled_from(["kind", "stream", "count", "name"]) | _text)
                phases[draw(st.integers(0, len(phases) - 1))][key] = draw(_value | _kinds | _streams)
    for phase in phases:
        parts.append("[[phase]]\n" + "".join(f"{_string(k)} = {_toml(v)}\n" for k, v in phase.items()))
    for engine, table in draw(_engine_tables).items():
        parts.append(_table(f"engines.{_string(engine)}", table))
    if draw(st.integers(0, 9)) == 0:
        extra = draw(_text.filter(lambda t: t not in ("run", "counts", "phase", "engines")))
        parts.append(_table(_string(extra), {"k": 1}))
    return "\n".join(parts)


# --- flags ------------------------------------------------------------------------------------


def _run_flags() -> tuple[list[str], list[str]]:
    """The run command's flags from its parser: those that take a value, and switches."""
    import argparse

    from asyncbench.cli import run_command

    p = argparse.ArgumentParser()
    run_command.add_arguments(p)
    valued, switches = [], []
    for action in p._actions:
        for flag in action.option_strings:
            if flag in ("-h", "--help"):
                continue
            (valued if action.nargs != 0 else switches).append(flag)
    return sorted(valued), sorted(switches)


VALUED, SWITCHES = _run_flags()
_flag_args = st.lists(
    st.one_of(
        st.tuples(st.sampled_from(VALUED), _text),
        st.tuples(st.sampled_from(VALUED), _tricky_text),
        st.tuples(st.sampled_from(VALUED), st.from_regex(r"[0-9_kKmM.,]{1,8}", fullmatch=True)),
        st.tuples(st.sampled_from(SWITCHES)),
        st.tuples(st.text(max_size=8).filter(lambda t: t not in ("-h", "--help")), _text),  # not a flag
    ),
    max_size=4,
)


# --- the check ------------------------------------------------------------------------------


def _files(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*")}


def _problem(message: str, plan: str) -> str:
    """What kind of refusal (for hypothesis's statistics: the fuzz reaches past the parser)."""
    lines = message.splitlines()
    ours = [line for line in lines if line.startswith("asyncbench: ")]
    if not ours:
        return "argparse usage" if "error:" in message else "?"
    return ":".join(ours[0].replace(plan, "PLAN").split(":")[:3])[:50]


def _invoke(plan_text: str | bytes, flags: list[str]) -> None:
    """Run the CLI on ``plan_text`` with ``flags`` in a fresh directory; assert the contract."""
    with tempfile.TemporaryDirectory(prefix="asyncbench-fuzz-") as tmp:
        root = Path(tmp)
        plan = root / "plan.toml"
        if isinstance(plan_text, bytes):
            plan.write_bytes(plan_text)
        else:
            plan.write_text(plan_text, encoding="utf-8", errors="surrogatepass")
        before = _files(root)
        seen: list[object] = []
        err, out = io.StringIO(), io.StringIO()
        cwd = os.getcwd()
        os.chdir(root)  # relative output/data/log paths land here, where the test can see them
        try:
            with (
                mock.patch("asyncbench.cli.run.confirm_start", lambda cfg, yes: seen.append(cfg) or False),
                contextlib.redirect_stderr(err),
                contextlib.redirect_stdout(out),
            ):
                try:
                    code = main([str(plan), *flags])
                except SystemExit as exc:  # argparse's own usage errors
                    code = exc.code if isinstance(exc.code, int) else 2
        finally:
            os.chdir(cwd)
        message = err.getvalue() + out.getvalue()
        assert _files(root) == before, f"created files: {_files(root) - before}\n{message}"
        assert "Traceback" not in message, message
        ours = "".join(line for line in message.splitlines() if line.startswith("asyncbench: "))
        assert check_printable(ours) is None, f"input quoted raw on the console: {message!r}"
        if code == 0:
            assert len(seen) == 1, message  # got to the start, with a validated config
            event("valid: would start")
            return
        event(f"exit {code}: " + _problem(message, str(plan)))
        assert code == 2, (code, message)
        assert not seen
        named = (f"asyncbench: {plan}: ", "asyncbench: command line: ", "error: ")
        assert any(n in message for n in named), message


@FUZZ
@given(plans())
@example(BASE_PLAN.replace("[run]\n", '[run]\noutput = "\\u0000"\n'))  # a NUL in a path: no traceback
@example(BASE_PLAN.replace("[run]\n", '[run]\n"\\u001b[2J" = 1\n'))  # an unknown key quoted back escaped
@example(BASE_PLAN + '[[phase]]\nkind = "verify"\nname = "a\\u001b[31m"\n')
def test_fuzzed_plans_exit_0_or_2_with_a_message_naming_file_and_key(plan_text: str) -> None:
    _invoke(plan_text, [])  # output and data: the plan's, relative to the example's directory


@FUZZ
@given(_flag_args)
@example([("--data", "\x00")])  # found by this fuzz: os.lstat's ValueError (embedded null byte)
@example([("--log-file", "a\x00b")])
@example([("--seed", "٣"), ("--profiles", "１２")])
def test_fuzzed_flags_exit_0_or_2_with_a_message_naming_the_flag(pairs: list[tuple[str, ...]]) -> None:
    flags = [part for pair in pairs for part in pair]
    _invoke(BASE_PLAN, ["--output", "out", "--data", "data", *flags])


@settings(max_examples=max(50, EXAMPLES // 5), deadline=None)
@given(st.binary(max_size=80))
def test_a_plan_of_arbitrary_bytes_exits_0_or_2(data: bytes) -> None:
    _invoke(data, ["--output", "out", "--data", "data"])
