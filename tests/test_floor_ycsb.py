"""``python -m asyncbench floor-ycsb``: one well-formed row per engine and phase (load and
run), and a disagreement between A and B is an error (exit 1), not a row. No timing is
asserted: the figures belong to the command on a quiet machine."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from asyncbench.cli.main import main
from asyncbench.tools import floor_ycsb

PLANS = Path(__file__).resolve().parent.parent / "benchmarks" / "ycsb"
SMALL = ["--records", "2000", "--operations", "2000", "--batch", "200", "--repeats", "2", "--slices", "2"]
ROW = re.compile(r"^\| (load|run) \| ([\d_]+) \| ([\d.]+) \| ([\d.]+) \| (-?[\d.]+) \| ([\d.]+) \(")


def _rows(out: str) -> dict[str, list[tuple[str, int, float]]]:
    rows: dict[str, list[tuple[str, int, float]]] = {}
    engine = ""
    for line in out.splitlines():
        if line.startswith("## "):
            engine = line[3:]
            rows[engine] = []
        elif m := ROW.match(line):
            rows[engine].append((m[1], int(m[2].replace("_", "")), float(m[6])))
    return rows


@pytest.mark.parametrize("plan", [None, "workloada.toml", "workloade.toml"])
def test_one_row_per_engine_and_phase_with_positive_ratios(tmp_path: Path, capsys: Any, plan: str | None) -> None:
    extra = [] if plan is None else ["--plan", str(PLANS / plan)]
    code = main(["floor-ycsb", *SMALL, *extra, "--engine", "memory,lsm", "--dir", str(tmp_path)])
    out = capsys.readouterr().out
    assert code == 0, out
    rows = _rows(out)
    assert list(rows) == ["memory", "lsm"]
    for engine, found in rows.items():
        assert [(phase, ops) for phase, ops, _ in found] == [("load", 2000), ("run", 2000)], engine
        assert all(ratio > 0 for _, _, ratio in found)


def test_b_reading_something_else_is_a_mismatch(tmp_path: Path, capsys: Any, monkeypatch: Any) -> None:
    real = floor_ycsb.plain_run

    def one_read_wrong(table: Any, ops: Any) -> list[Any]:
        out = real(table, ops)
        out[0] = b"not what the store holds"
        return out

    monkeypatch.setattr(floor_ycsb, "plain_run", one_read_wrong)
    code = main(["floor-ycsb", *SMALL, "--engine", "memory", "--dir", str(tmp_path)])
    assert code == 1
    assert "memory run: B's results fold to" in capsys.readouterr().err


def test_b_loading_a_record_short_is_a_mismatch(tmp_path: Path, capsys: Any, monkeypatch: Any) -> None:
    def short_load(table: Any, plan: Any) -> Any:
        def load(keys: Any) -> Any:
            for name, record in zip(plan.names(keys.keys), plan.values.encoded(keys.keys), strict=True):
                table.kv.put(name, record[:-1])
            return floor_ycsb.Sample(1.0, 1.0)

        return load

    monkeypatch.setattr(floor_ycsb, "plain_load", short_load)
    code = main(["floor-ycsb", *SMALL, "--engine", "memory", "--dir", str(tmp_path)])
    assert code == 1
    assert "memory load: A's and B's stores differ" in capsys.readouterr().err


def test_a_plan_without_a_run_phase_is_refused_naming_it(tmp_path: Path, capsys: Any) -> None:
    plan = tmp_path / "plan.toml"
    plan.write_text('[ycsb]\nfieldcount = 10\n\n[[phase]]\nkind = "load"\n')
    assert main(["floor-ycsb", "--plan", str(plan)]) == 2
    err = capsys.readouterr().err
    assert str(plan) in err and "no phase of kind 'mixed'" in err
