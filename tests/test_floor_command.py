"""``python -m asyncbench floor``: the table it prints and its exit codes.

No timing is asserted (the figures belong to the command on a quiet machine); the test
checks that a small run prints one well-formed row per engine and phase kind, with every
ratio a positive number, and that a disagreement between A and B is an error, not a row.
"""

from __future__ import annotations

import re

import pytest

from asyncbench.cli.main import main
from asyncbench.tools import floor_engines

SMALL = [
    "--profiles", "1000", "--batch", "100", "--repeats", "2", "--slices", "2",
    "--point-ops", "200", "--update-ops", "100", "--query-ops", "20",
]  # fmt: skip
KINDS = ["read_by_id", "query_created_at", "update"]
HEADER = (
    "| phase kind | ops/round | A µs/op | B µs/op | A/B wall median (min–max) | A/B CPU median (min–max) "
    "| A/B of minima | engine share | A outside engine µs/batch | ≤ 1.10 |"
)
NUMBER = r"(\d[\d,]*(?:\.\d+)?)"
RANGE = re.compile(rf"^{NUMBER} \({NUMBER}–{NUMBER}\)$")


def _tables(out: str) -> dict[str, list[list[str]]]:
    """engine -> the rows (as cells) of its table."""
    tables: dict[str, list[list[str]]] = {}
    engine = None
    for line in out.splitlines():
        if m := re.match(r"## (\w+): store of", line):
            engine = m[1]
            tables[engine] = []
        elif engine and line.startswith("| ") and not line.startswith(("| phase kind", "| ---")):
            tables[engine].append([c.strip() for c in line.strip().strip("|").split("|")])
    return tables


def _positive(text: str) -> float:
    value = float(text.replace(",", "").rstrip("%"))
    assert value > 0, text
    return value


def test_floor_prints_one_row_per_engine_and_kind_with_positive_ratios(tmp_path, capsys) -> None:
    code = main(["floor", *SMALL, "--engine", "rocksdb,sqlite", "--kinds", ",".join(KINDS), "--dir", str(tmp_path)])
    out = capsys.readouterr().out
    assert code == 0
    assert out.startswith("command: python -m asyncbench floor --engine rocksdb,sqlite --profiles 1000 ")
    assert out.count(HEADER) == 2
    tables = _tables(out)
    assert list(tables) == ["rocksdb", "sqlite"]
    for engine, rows in tables.items():
        assert [r[0] for r in rows] == KINDS, engine  # the phase-table order, updates last
        for kind, ops, a_us, b_us, wall, cpu, minima, share, outside, target in rows:
            assert int(ops.replace("_", "")) == {"read_by_id": 200, "query_created_at": 20, "update": 100}[kind]
            _positive(a_us), _positive(b_us), _positive(minima), _positive(share)
            float(outside.replace(",", ""))  # may be negative in principle: a difference
            for cell in (wall, cpu):
                m = RANGE.match(cell)
                assert m, f"{engine} {kind}: {cell!r} is not 'median (min–max)'"
                median, lo, hi = (_positive(x) for x in m.groups())
                assert lo <= median <= hi
            assert target in ("ok", "MISS")
    assert list(tmp_path.iterdir()) == []  # the temporary stores are gone


def test_floor_a_only_times_a_alone(tmp_path, capsys) -> None:
    """--a-only (for a profiler): A's loop only, so every ratio reads exactly 1."""
    code = main(["floor", *SMALL, "--engine", "rocksdb", "--kinds", "read_by_id", "--a-only", "--dir", str(tmp_path)])
    out = capsys.readouterr().out
    assert code == 0
    [row] = _tables(out)["rocksdb"]
    assert row[0] == "read_by_id"
    assert row[4] == row[5] == "1.000 (1.000–1.000)" and row[6] == "1.000"


def test_floor_exits_1_when_b_disagrees_with_a(tmp_path, capsys, monkeypatch) -> None:
    honest = floor_engines.SqliteFloor.plain

    def one_short(self, kind):
        loop = honest(self, kind)
        return lambda items: loop(items)[:-1]

    monkeypatch.setattr(floor_engines.SqliteFloor, "plain", one_short)
    code = main(["floor", *SMALL, "--engine", "sqlite", "--kinds", "read_by_id", "--dir", str(tmp_path)])
    err = capsys.readouterr().err
    assert code == 1
    assert "sqlite read_by_id: B's checksum" in err
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--engine", "rocksdb,nosuch"], "nosuch: not one of rocksdb, sqlite"),
        (["--kinds", "read_by_id,nosuch"], "nosuch: not one of insert"),
        (["--profiles", "0"], "'0' is not a positive count"),
        (["--a-only", "--kinds", "read_by_id,update"], "--a-only times the read, scan and query kinds"),
        (["--a-only"], "--a-only times the read, scan and query kinds"),
        (["--dir", "/nonexistent/asyncbench-floor"], "not an existing directory"),
    ],
)
def test_floor_refuses_bad_flags_with_exit_2(flags, message, capsys) -> None:
    try:
        code = main(["floor", *flags])
    except SystemExit as exc:  # argparse's own refusal
        code = exc.code
    assert code == 2
    assert message in capsys.readouterr().err
