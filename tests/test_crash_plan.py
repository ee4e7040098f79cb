"""A crash in a plan (issue 57): ``crash = { after = N, how = "kill" }`` on a write phase and
the ``recover`` phase after it are checked like every plan key: one message naming the
file, the key and the problem, exit 2, nothing created."""

from __future__ import annotations

from pathlib import Path

import pytest

from asyncbench.cli.main import main
from asyncbench.config import ConfigError, from_json, load, to_json
from asyncbench.config.model import CrashPoint

RUN = "[run]\nprofiles = 100\nengines = [\"sqlite\"]\n"
INSERT_CRASH = '[[phase]]\nkind = "insert"\ncrash = { after = 50, how = "kill" }\n'
RECOVER = '[[phase]]\nkind = "recover"\n'

# (id, TOML text, key named, words of the reason)
BAD = [
    ("crash-on-read", RUN + '[[phase]]\nkind = "insert"\n[[phase]]\nkind = "read_by_id"\ncrash = { after = 5 }\n' + RECOVER,
     "phase[1].crash", "cannot crash"),
    ("crash-not-table", RUN + '[[phase]]\nkind = "insert"\ncrash = 5\n' + RECOVER, "phase[0].crash", "must be a table"),
    ("crash-unknown-key", RUN + '[[phase]]\nkind = "insert"\ncrash = { after = 5, when = 3 }\n' + RECOVER,
     "phase[0].crash.when", "unknown key"),
    ("crash-no-after", RUN + '[[phase]]\nkind = "insert"\ncrash = { how = "kill" }\n' + RECOVER,
     "phase[0].crash.after", "is required"),
    ("crash-after-zero", RUN + '[[phase]]\nkind = "insert"\ncrash = { after = 0 }\n' + RECOVER,
     "phase[0].crash.after", "between"),
    ("crash-after-beyond", RUN + '[[phase]]\nkind = "insert"\ncrash = { after = 101 }\n' + RECOVER,
     "phase[0].crash.after", "exceeds the phase's 100 operations"),
    ("crash-how-unknown", RUN + '[[phase]]\nkind = "insert"\ncrash = { after = 5, how = "unplug" }\n' + RECOVER,
     "phase[0].crash.how", "not a way to crash"),
    ("crash-points-zero", RUN + '[[phase]]\nkind = "insert"\ncrash = { after = 5, points = 0 }\n' + RECOVER,
     "phase[0].crash.points", "between"),
    ("crash-points-too-many", RUN + '[[phase]]\nkind = "insert"\ncrash = { after = 90, points = 101 }\n' + RECOVER,
     "phase[0].crash.points", "between"),
    ("crash-points-beyond-after", RUN + '[[phase]]\nkind = "insert"\ncrash = { after = 3, points = 4 }\n' + RECOVER,
     "phase[0].crash.points", "need at least 4 operations"),
    ("crash-without-recover", RUN + INSERT_CRASH, "phase[0].crash", "needs a 'recover' phase directly after it"),
    ("recover-without-crash", RUN + '[[phase]]\nkind = "insert"\n' + RECOVER, "phase[1].kind", "after a crash"),
    ("read-after-recover", RUN + INSERT_CRASH + RECOVER + '[[phase]]\nkind = "read_by_id"\n', "phase[2].kind",
     "after the recover phase"),
    ("crash-with-rate", RUN + '[[phase]]\nkind = "insert"\n[[phase]]\nkind = "update"\nrate = 100\n'
     "crash = { after = 5 }\n" + RECOVER, "phase[1].crash", "closed loop"),
    ("crash-second-update", RUN + '[[phase]]\nkind = "insert"\n[[phase]]\nkind = "update"\n[[phase]]\n'
     'kind = "update"\ncrash = { after = 5 }\n' + RECOVER, "phase[2].crash", "crash the first phase that rewrites"),
]  # fmt: skip


@pytest.mark.parametrize(("text", "key", "reason"), [b[1:] for b in BAD], ids=[b[0] for b in BAD])
def test_a_bad_crash_is_refused_naming_file_and_key(tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str,
                                                    key: str, reason: str) -> None:  # fmt: skip
    plan = tmp_path / "plan.toml"
    plan.write_text(text)
    with pytest.raises(ConfigError) as info:
        load(plan)
    assert (info.value.key, reason in info.value.reason) == (key, True), info.value
    out, data = tmp_path / "out", tmp_path / "data"
    assert main([str(plan), "--output", str(out), "--data", str(data)]) == 2
    err = capsys.readouterr().err
    assert f"{plan}: {key}:" in err and reason in err
    assert not out.exists() and not data.exists()


def test_a_crash_and_its_recovery_load_and_travel_to_the_child(tmp_path: Path) -> None:
    plan = tmp_path / "plan.toml"
    plan.write_text(RUN + '[[phase]]\nkind = "insert"\n[[phase]]\nkind = "update"\ncrash = { after = 7 }\n'
                    + RECOVER + '[[phase]]\nkind = "reopen"\n')  # fmt: skip
    cfg = load(plan)
    assert [p.crash for p in cfg.phases] == [None, CrashPoint(after=7, how="kill"), None, None]
    assert [p.kind for p in from_json(to_json(cfg)).phases] == ["insert", "update", "recover", "reopen"]
    assert from_json(to_json(cfg)).phases == cfg.phases  # the crash point reaches the isolated engine
    plan.write_text(RUN + '[[phase]]\nkind = "insert"\ncrash = { after = 7, how = "power" }\n' + RECOVER)
    assert load(plan).phases[0].crash == CrashPoint(after=7, how="power")
    assert CrashPoint(after=200, points=3).at() == [66, 133, 200]
    assert CrashPoint(after=7).at() == [7]


def test_the_run_rate_leaves_a_crashed_phase_closed_loop(tmp_path: Path) -> None:
    """``--rate`` paces every operation phase without a rate of its own, but a crashed
    phase's acknowledged prefix is exact only in plan order, closed loop."""
    from asyncbench.config.phases import pace_phases

    plan = tmp_path / "plan.toml"
    plan.write_text(RUN + '[[phase]]\nkind = "insert"\n[[phase]]\nkind = "update"\ncrash = { after = 7 }\n' + RECOVER)
    cfg = load(plan)
    cfg.rate = [500.0]
    pace_phases(cfg)
    assert cfg.phases[1].rate is None


def test_a_crash_is_refused_with_client_processes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Scaled-out client processes run phases of their own, with no crash: refused before
    anything starts (a server engine, which --processes accepts)."""
    plan = tmp_path / "plan.toml"
    plan.write_text(RUN.replace('"sqlite"', '"postgres"') + INSERT_CRASH + RECOVER)
    out = tmp_path / "out"
    assert main([str(plan), "--processes", "2", "--parallelism", "2", "--output", str(out), "--data", str(tmp_path / "d")]) == 2
    err = capsys.readouterr().err
    assert "phase[0].crash: a crash runs the engine in one process" in err
    assert not out.exists()
