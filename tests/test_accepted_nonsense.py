"""Issue 52 item 8: nonsense that was accepted. Each is now refused with the key and the
problem named (exit 2 from the command line, nothing created), or, for files asyncbench
reads back (a result, a ledger, a store marker), not taken for one of its own."""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
from pathlib import Path

import orjson
import pytest
from conftest import ROOT

from asyncbench.cli.main import main
from asyncbench.fs import ledger
from asyncbench.parse import load_json, parse_seconds
from asyncbench.result import ResultError, RunResult

QUICK = ROOT / "benchmarks" / "quick.toml"
SAMPLE = (ROOT / "tests" / "fixtures" / "result-sample.json").read_text()


def _run(tmp_path: Path, *args: str, plan: Path = QUICK) -> int:
    out, data = tmp_path / "out", tmp_path / "data"
    code = main([str(plan), "--engine", "memory", "--output", str(out), "--data", str(data), "--yes", *args])
    assert not out.exists() and not data.exists()  # refused before anything was made
    return code


@pytest.mark.parametrize("text", ["1e-400", "1e-320", "-1e-400", "0.0000e-999"])
def test_an_underflowing_number_of_seconds_is_refused(text: str) -> None:
    if text == "0.0000e-999":  # zero as written: zero
        assert parse_seconds(text) == 0.0
        return
    with pytest.raises(ValueError, match="underflows"):
        parse_seconds(text)


@pytest.mark.parametrize(
    ("args", "named"),
    [
        (("--timeout-seconds", "1e-400"), "underflows"),  # read as 0: "no timeout"
        (("--timeout-seconds", "1e-300"), "must be at least 0.001 seconds"),
        (("--timeout-seconds", "1e-9"), "must be at least 0.001 seconds"),
        (("--capacity", "--slo", "p99=2ms", "--require-rate", "read_by_id=5k,read_by_id=6k"), "names phase kind 'read_by_id' twice"),
    ],
)
def test_the_command_line_refuses(tmp_path: Path, capfd, args: tuple[str, ...], named: str) -> None:
    assert _run(tmp_path, *args) == 2
    assert named in capfd.readouterr().err


@pytest.mark.parametrize(("key", "value"), [("rate", "1e-9"), ("timeout_seconds", "1e-300")])
def test_a_plan_refuses_a_vanishing_rate_or_time(tmp_path: Path, capfd, key: str, value: str) -> None:
    plan = tmp_path / "plan.toml"
    text = "".join(line for line in QUICK.read_text().splitlines(keepends=True) if not line.startswith(f"{key} ="))
    plan.write_text(text.replace("[run]\n", f"[run]\n{key} = {value}\n", 1))
    assert _run(tmp_path, plan=plan) == 2
    err = capfd.readouterr().err
    assert str(plan) in err and key in err and "must be at least 0.001" in err, err


def test_capacity_on_an_insert_only_plan_is_refused(tmp_path: Path, capfd) -> None:
    plan = ROOT / "benchmarks" / "lsm-insert.toml"
    assert _run(tmp_path, "--capacity", "--slo", "p99=2ms", plan=plan) == 2
    assert "no capacity to search" in capfd.readouterr().err


def test_a_key_twice_in_a_result_is_refused_and_an_empty_second_engines_with_it() -> None:
    text = SAMPLE.rstrip().removesuffix("}") + ', "engines": []}'
    assert json.loads(text)["engines"] == []  # what a lenient reader (and the loader before) took
    with pytest.raises(ResultError, match="key 'engines' appears twice in one object"):
        RunResult.from_json(text.encode())
    doc = json.loads(SAMPLE)
    nested = orjson.dumps(doc["engines"][0]).decode().replace('"engine":', '"status":"ok","engine":', 1)
    doc2 = copy.deepcopy(doc)
    doc2["engines"] = []
    text2 = orjson.dumps(doc2).decode().replace('"engines":[]', f'"engines":[{nested}]')
    with pytest.raises(ResultError, match="key 'status' appears twice"):
        RunResult.from_json(text2.encode())


def test_a_key_twice_in_a_ledger_or_a_store_marker_is_no_file_of_ours(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="appears twice"):
        load_json(b'{"format": 1, "files": {}, "files": {"x": 1}}')
    (tmp_path / ledger.LEDGER).write_bytes(b'{"files": {}, "format": 1, "files": {}}\n')
    with pytest.raises(ledger.LedgerError):
        ledger.check_directory(tmp_path)


@pytest.mark.parametrize("name", ["../evil", "a/b", ".hidden"])
def test_a_plug_in_engine_name_that_is_no_plain_name_is_refused(tmp_path: Path, name: str) -> None:
    env = dict(os.environ, ASYNCBENCH_ENGINES=f"{name}=asyncbench.engines.memory:MemoryEngine")
    done = subprocess.run(
        [sys.executable, "-m", "asyncbench", str(QUICK), "--engine", "memory", "--output", str(tmp_path / "o")],
        env=env, capture_output=True, text=True, timeout=120, check=False,
    )
    assert done.returncode == 2, done.stderr
    assert f"ASYNCBENCH_ENGINES: '{name}=" in done.stderr and "is not a plain name" in done.stderr, done.stderr
    assert not (tmp_path / "o").exists()
