"""The published reference checksums ship as data; a matching run says so in Correctness,
and --check-reference turns a difference into exit code 1."""

from __future__ import annotations

import orjson
import pytest
from conftest import ROOT, unescaped

from asyncbench.cli.main import main
from asyncbench.measure.correctness import judge, reference_identity
from asyncbench.result import RunResult
from asyncbench.workloads.profile_store import published
from asyncbench.workloads.profile_store.published import load_published, published_configurations

PLAN = str(ROOT / "benchmarks.toml")


def test_table_holds_17_checksums_per_configuration() -> None:
    doc = load_published()
    assert "reproduced by this tool" in doc["note"]
    configs = published_configurations()
    assert (100_000, 1, 50) in configs and (100_000, 16, 50) in configs and (100_000, 1, 100) in configs
    for row in doc["configurations"]:
        assert len(row["checksums"]) == 17
        assert all(len(c) == 16 and c == c.upper() for c in row["checksums"].values())


def test_100k_p1_run_matches_the_published_reference(run_cli, tmp_path) -> None:
    code, (run,), output = run_cli(PLAN, "--engine", "memory", "--profiles", "100k", "--no-isolate", "--yes")
    assert code == 0, output
    assert "memory matches the published reference (17/17)." in output
    md = unescaped(next((tmp_path / "out" / "profiles-100000-p1").glob("*.md")).read_text())
    correctness = md.split("## Correctness", 1)[1].split("\n## ", 1)[0]
    assert "memory matches the published reference (17/17)." in correctness


def _fake_table(monkeypatch: pytest.MonkeyPatch, checksums: dict[str, str]) -> None:
    doc = {
        "note": "test",
        "seed": 570123434,
        "configurations": [{"profiles": 1000, "parallelism": 1, "limit": 50, "checksums": checksums}],
    }
    monkeypatch.setattr(published, "load_published", lambda: doc)


def test_a_difference_is_named_and_fails_only_with_check_reference(monkeypatch, run_cli, tmp_path) -> None:
    code, (run,), _ = run_cli(PLAN, "--engine", "memory", "--profiles", "1k", "--no-isolate")
    result = RunResult.from_json(orjson.dumps(run))
    good = {reference_identity(p): p.checksum for p in result.engines[0].phases if p.checksum}
    assert len(good) == 17
    _fake_table(monkeypatch, {**good, "update profiles": "0000000000000000"})
    verdict = judge(result)
    assert verdict.published_mismatch == ["memory"]
    assert "memory differs from the published reference in 1 phase(s): update profiles (16/17 match)" in (
        verdict.failures
    )
    assert run_cli(PLAN, "--engine", "memory", "--profiles", "1k", "--no-isolate")[0] == 0
    assert run_cli(PLAN, "--engine", "memory", "--profiles", "1k", "--no-isolate", "--check-reference")[0] == 1
    _fake_table(monkeypatch, good)
    assert run_cli(PLAN, "--engine", "memory", "--profiles", "1k", "--no-isolate", "--check-reference")[0] == 0


def test_check_reference_refuses_an_unpublished_configuration(tmp_path, capsys) -> None:
    code = main([PLAN, "--engine", "memory", "--profiles", "3k", "--check-reference", "--output", str(tmp_path)])
    assert code == 2
    assert "no published reference for 3_000 profiles, P1, limit 50" in capsys.readouterr().err
    assert not list(tmp_path.iterdir())


def test_update_latest_writes_latest_json_per_level(run_cli, tmp_path) -> None:
    code, results, _ = run_cli(PLAN, "--engine", "memory", "--profiles", "1k", "--parallelism", "1,2", "--update-latest", charts=True)
    assert code == 0
    for p in (1, 2):
        latest = orjson.loads((tmp_path / "out" / f"profiles-1000-p{p}" / "latest.json").read_bytes())
        assert latest["parallelism"] == p and latest["profiles"] == 1000
