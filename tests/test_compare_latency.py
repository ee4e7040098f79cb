"""``compare``'s latency view and its pairing rules (issue 51, finding 10).

* p50/p99/p99.9 per engine and phase, base against new, with Welch's verdict when both
  sides have repeats (lower is better) and "one run" (not called) otherwise; the time it
  compares is the response time at a target rate, the service time closed loop.
* A phase at a target rate on one side and closed loop on the other is not compared
  (``224_884 -> 2_000 0.009x``): named per phase, in no table.
* An engine on one side only gets no "measured differently" settings lines (six
  ``sqlite journal_mode: base WAL; new -`` lines for an engine only the base ran).
"""

from __future__ import annotations

import copy
from pathlib import Path

import numpy as np
import pytest
from test_compare import READ, compare_json, sample, write

from asyncbench.cli.main import main
from asyncbench.measure.latency import LatencyHistogram
from asyncbench.rate import Arrivals
from asyncbench.result import LatencyStats, OpenLoop, RunResult

US = 1_000


def _stats(p99_us: float, seed: int) -> LatencyStats:
    """2_000 operations around 10 µs, their slowest 2 % near ``p99_us``."""
    rng = np.random.default_rng(seed)
    values = rng.normal(10 * US, US, 2_000)
    values[:40] = rng.normal(p99_us * US, p99_us * US / 50, 40)
    hist = LatencyHistogram()
    hist.record(np.maximum(values, 1).astype(np.int64))
    return hist.summary()


def _runs(p99s: list[float], engine: str = "sqlite", paced: float | None = None, seed: int = 0) -> RunResult:
    """The sample result with ``engine`` run once per p99: its read phase measured those
    latencies (the response time at ``paced``, when given)."""
    out = copy.deepcopy(sample())
    one = next(e for e in out.engines if e.engine == engine)
    out.engines = [e for e in out.engines if e.engine != engine]
    for i, p99 in enumerate(p99s):
        e = copy.deepcopy(one)
        e.repeat = i
        read = e.phase_at(READ)
        if paced is None:
            read.latency = _stats(p99, seed + i)
        else:
            read.latency = _stats(12, seed + i)
            read.open_loop = OpenLoop(rate=paced, arrivals=Arrivals.UNIFORM, response=_stats(p99, seed + i))
            read.seconds = read.ops / paced
        out.engines.append(e)
    out.repeat = len(p99s)
    return out


def _row(doc: dict, phase: str, pct: str) -> dict:
    return next(r for r in doc["latency"] if r["engine"] == "sqlite" and r["phase"] == phase and r["percentile"] == pct)


def test_a_tail_that_grew_shows_with_its_significance(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base = write(tmp_path, "a", _runs([100, 102, 98]))
    new = write(tmp_path, "b", _runs([300, 310, 290], seed=10))
    code, doc = compare_json(capsys, str(base), str(new), "--engine", "sqlite")
    p99 = _row(doc, "read by user id", "p99")
    assert p99["measure"] == "service" and p99["verdict"] == "higher" and p99["p_value"] < 0.05
    assert 2.5 < p99["ratio"] < 3.5 and p99["base_us"]["n"] == 3 and p99["new_us"]["n"] == 3
    assert _row(doc, "read by user id", "p50")["verdict"] == "same"
    assert {r["percentile"] for r in doc["latency"]} == {"p50", "p99", "p99.9"}
    assert code == 0  # informational: the exit code stays the throughput verdict's
    assert main(["compare", str(base), str(new), "--engine", "sqlite"]) == 0
    text = capsys.readouterr().out
    assert "Latency, µs" in text and "  read by user id: service time" in text.splitlines()
    line = next(ln for ln in text.splitlines() if ln.strip().startswith("p99 "))
    assert "higher +" in line and " p<0.001" in line or " p=0.0" in line, line
    assert all(len(ln) <= 80 for ln in text.splitlines()), text
    assert main(["compare", str(base), str(new), "--engine", "sqlite", "--markdown"]) == 0
    assert "| sqlite | read by user id | service | p99 |" in capsys.readouterr().out


def test_one_run_a_side_is_not_called(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base = write(tmp_path, "a", _runs([100]))
    new = write(tmp_path, "b", _runs([300], seed=10))
    _code, doc = compare_json(capsys, str(base), str(new), "--engine", "sqlite")
    p99 = _row(doc, "read by user id", "p99")
    assert p99["verdict"] == "one run" and p99["p_value"] is None and not p99["with_spread"]


def test_paced_phases_compare_their_response_time(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base = write(tmp_path, "a", _runs([1_000, 1_010, 990], paced=2_000.0))
    new = write(tmp_path, "b", _runs([400, 410, 390], paced=2_000.0, seed=10))
    _code, doc = compare_json(capsys, str(base), str(new), "--engine", "sqlite")
    p99 = _row(doc, "read by user id", "p99")
    assert p99["measure"] == "response" and p99["verdict"] == "lower" and not doc["not_compared"]


def test_a_paced_phase_is_not_paired_with_a_closed_loop_one(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base = write(tmp_path, "a", _runs([100, 102, 98]))
    new = write(tmp_path, "b", _runs([300, 310, 290], paced=2_000.0, seed=10))
    code, doc = compare_json(capsys, str(base), str(new), "--engine", "sqlite")
    assert not [r for r in doc["rows"] if r["phase"] == "read by user id"]
    assert not [r for r in doc["latency"] if r["phase"] == "read by user id"]
    (apart,) = doc["not_compared"]
    assert apart["engine"] == "sqlite" and apart["phase"] == "read by user id"
    assert (apart["base"], apart["new"]) == ("closed loop", "2_000/s")
    assert [r for r in doc["rows"] if r["phase"] == "lookup by email"]  # the other phases still compare
    assert code == 0
    assert main(["compare", str(base), str(new), "--engine", "sqlite"]) == 0
    text = capsys.readouterr().out
    flat = " ".join(text.split())
    assert "not compared, paced differently" in flat and "sqlite: base closed loop; new 2_000/s: read by user id" in flat
    assert not [ln for ln in text.splitlines() if ln.strip().startswith("read by user id ")], text


def test_settings_of_an_engine_on_one_side_only_are_not_listed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base = sample()
    new = copy.deepcopy(base)
    new.engines = [e for e in new.engines if e.engine != "sqlite"]
    for e in new.engines:
        if e.engine == "rocksdb":
            e.facts.settings[1].configured = e.facts.settings[1].effective = "zstd"  # an engine both ran: still named
    code, doc = compare_json(capsys, str(write(tmp_path, "a", base)), str(write(tmp_path, "b", new)))
    assert doc["only_in_base"]["engines"] == ["sqlite"]
    assert not [d for d in doc["differences"] if d.startswith("sqlite ")], doc["differences"]
    assert [d for d in doc["differences"] if d.startswith("rocksdb Compression")], doc["differences"]
