"""Capacity in the plan and on the command line: [slo], capacity = true, --slo, --capacity,
--require-rate; every bad input names the file (or command line), the key and the problem,
exits 2 and creates nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

from asyncbench.cli.main import main
from asyncbench.config import ConfigError, check_capacity, load, slo_for

HEAD = '[run]\nprofiles = 1000\nengines = ["memory"]\n[[phase]]\nkind = "insert"\n'


def test_plan_slo_and_capacity(tmp_path: Path) -> None:
    plan = tmp_path / "plan.toml"
    plan.write_text(
        HEAD + '[[phase]]\nkind = "read_by_id"\ncapacity = true\n[[phase]]\nkind = "scan_created_at"\ncapacity = true\n'
        '[slo]\np99 = "2ms"\np999 = "10ms"\nrequire = {read_by_id = "5k"}\n[slo.scan_created_at]\np99 = "500us"\n'
    )
    cfg = load(plan)
    check_capacity(cfg, str(plan))
    assert [p.capacity for p in cfg.phases] == [False, True, True]
    assert slo_for(cfg, "read_by_id") == {"p99": "2000us", "p999": "10000us"}
    assert slo_for(cfg, "scan_created_at") == {"p99": "500us"}
    assert cfg.require_rate == {"read_by_id": 5000.0}


@pytest.mark.parametrize(
    ("extra", "key", "reason"),
    [
        ('[[phase]]\nkind = "read_by_id"\ncapacity = true\n[slo]\np99 = "2"\n', "slo", "no unit"),
        ('[[phase]]\nkind = "read_by_id"\ncapacity = true\n[slo]\np99 = 2\n', "slo", "with a unit"),
        ('[[phase]]\nkind = "read_by_id"\ncapacity = true\n[slo]\np99 = "-2ms"\n', "slo", "positive"),
        ('[[phase]]\nkind = "read_by_id"\ncapacity = true\n[slo]\np97 = "2ms"\n', "slo.p97", "unknown key"),
        ('[[phase]]\nkind = "read_by_id"\ncapacity = true\n[slo]\np99 = "10ms"\np999 = "2ms"\n', "slo", "swapped"),
        ('[[phase]]\nkind = "update"\ncapacity = true\n[slo]\np99 = "2ms"\n', "phase[1].capacity", "no read, scan, query or mixed"),
        ('[[phase]]\nkind = "read_by_id"\ncapacity = true\nrate = 100\n[slo]\np99 = "2ms"\n', "phase[1].capacity", "own rates"),
        ('[[phase]]\nkind = "read_by_id"\n[slo.insert]\np99 = "2ms"\n', "slo.insert", "no read, scan, query or mixed"),
        ('[[phase]]\nkind = "read_by_id"\n[slo]\nrequire = {update = 5}\n', "slo.require.update", "not a read"),
    ],
)
def test_bad_capacity_plan_exit_2_nothing_created(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: str, key: str, reason: str
) -> None:
    plan = tmp_path / "plan.toml"
    plan.write_text(HEAD + extra)
    with pytest.raises(ConfigError) as info:
        load(plan)
    assert info.value.key == key and reason in info.value.reason, (info.value.key, info.value.reason)
    out, data = tmp_path / "out", tmp_path / "data"
    assert main([str(plan), "--output", str(out), "--data", str(data)]) == 2
    assert f"{plan}: {key}:" in capsys.readouterr().err
    assert not out.exists() and not data.exists()


@pytest.mark.parametrize(
    ("flags", "key", "reason"),
    [
        (["--capacity"], "slo", "none is set"),
        (["--capacity", "--slo", "p99=2"], "--slo", "no unit"),
        (["--capacity", "--slo", "p99=0ms"], "--slo", "positive"),
        (["--capacity", "--slo", "p98=2ms"], "--slo", "not a percentile"),
        (["--capacity", "--slo", "p99=2ms", "--capacity-range", "2k,1k"], "--capacity-range", "empty rate range"),
        (["--capacity", "--slo", "p99=2ms", "--capacity-range", "2k,2k"], "--capacity-range", "empty rate range"),
        (["--capacity", "--slo", "p99=2ms", "--require-rate", "insert=5k"], "--require-rate.insert", "not a read"),
        (["--capacity", "--slo", "p99=2ms", "--require-rate", "read_by_id"], "--require-rate", "KIND=RATE"),
        (["--slo", "p99=2ms", "--require-rate", "read_by_id=5k"], "require_rate", "no 'read_by_id' phase is searched"),
        (["--capacity", "--slo", "p99=2ms", "--rate", "1k"], "capacity", "own rates"),
        (["--capacity", "--slo", "p99=2ms", "--capacity-probe-seconds", "-1"], "--capacity-probe-seconds", "0 (off) or a positive"),
        (["--capacity", "--slo", "p99=2ms", "--capacity-probe-seconds", "2s"], "--capacity-probe-seconds", "not a number of seconds"),
        (["--capacity", "--slo", "p99=2ms", "--capacity-probe-seconds", "4000"], "--capacity-probe-seconds", "at most 3_600"),
    ],
)
def test_bad_capacity_flags_exit_2_nothing_created(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], flags: list[str], key: str, reason: str
) -> None:
    plan = tmp_path / "plan.toml"
    plan.write_text(HEAD + '[[phase]]\nkind = "read_by_id"\n')
    out, data = tmp_path / "out", tmp_path / "data"
    assert main([str(plan), *flags, "--output", str(out), "--data", str(data)]) == 2
    err = capsys.readouterr().err
    assert f"command line: {key}:" in err and reason in err, err
    assert not out.exists() and not data.exists()


def test_a_least_probe_duration_in_the_plan(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    plan = tmp_path / "plan.toml"
    plan.write_text(HEAD.replace("[run]\n", "[run]\ncapacity_probe_seconds = 2.5\n"))
    assert load(plan).capacity_probe_seconds == 2.5
    plan.write_text(HEAD.replace("[run]\n", '[run]\ncapacity_probe_seconds = "2"\n'))
    out, data = tmp_path / "out", tmp_path / "data"
    assert main([str(plan), "--output", str(out), "--data", str(data)]) == 2
    assert f"{plan}: run.capacity_probe_seconds: must be a number" in capsys.readouterr().err
    assert not out.exists() and not data.exists()
