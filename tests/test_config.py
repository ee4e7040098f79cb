"""Plan validation: every malformed input gets one clear message (file, key, reason),
exit code 2, and leaves nothing behind."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import ROOT

from asyncbench.cli.main import main
from asyncbench.config import ConfigError, load

GOOD_RUN = '[run]\nprofiles = 100\n[[phase]]\nkind = "insert"\n[[phase]]\nkind = "verify"\n'

# (id, TOML text, expected key in message, expected words in reason)
BAD_FILES = [
    ("syntax", "[run\nprofiles = 1", "syntax", "Expected"),
    ("unknown-top-key", GOOD_RUN + "[extra]\nx = 1\n", "extra", "unknown top-level key"),
    ("unknown-run-key", "[run]\nprofile = 10\n" + GOOD_RUN[6:], "run.profile", "unknown key"),
    ("profiles-string", '[run]\nprofiles = "many"\n[[phase]]\nkind = "insert"\n', "run.profiles", "integer"),
    ("profiles-negative", '[run]\nprofiles = -5\n[[phase]]\nkind = "insert"\n', "run.profiles", "between"),
    ("profiles-zero", '[run]\nprofiles = 0\n[[phase]]\nkind = "insert"\n', "run.profiles", "between"),
    ("profiles-float", '[run]\nprofiles = 1.5\n[[phase]]\nkind = "insert"\n', "run.profiles", "integer"),
    ("profiles-bool", '[run]\nprofiles = true\n[[phase]]\nkind = "insert"\n', "run.profiles", "integer"),
    (
        "profiles-empty-list",
        '[run]\nprofiles = []\n[[phase]]\nkind = "insert"\n',
        "run.profiles",
        "at least one",
    ),
    ("limit-zero", "[run]\nlimit = 0\n" + GOOD_RUN[6:], "run.limit", "between"),
    ("batch-zero", "[run]\nbatch_size = 0\n" + GOOD_RUN[6:], "run.batch_size", "between"),
    ("seed-too-big", "[run]\nseed = 2147483648\n" + GOOD_RUN[6:], "run.seed", "between"),
    ("seed-too-small", "[run]\nseed = -2147483649\n" + GOOD_RUN[6:], "run.seed", "between"),
    ("parallelism-absurd", "[run]\nparallelism = 100000\n" + GOOD_RUN[6:], "run.parallelism", "between"),
    ("parallelism-zero", "[run]\nparallelism = 0\n" + GOOD_RUN[6:], "run.parallelism", "between"),
    ("timeout-negative", "[run]\ntimeout_seconds = -1\n" + GOOD_RUN[6:], "run.timeout_seconds", "positive"),
    ("timeout-string", '[run]\ntimeout_seconds = "1h"\n' + GOOD_RUN[6:], "run.timeout_seconds", "number"),
    (
        "unknown-engine",
        '[run]\nengines = ["lsm", "oracle"]\n' + GOOD_RUN[6:],
        "run.engines",
        "unknown engine 'oracle'",
    ),
    ("engines-empty", "[run]\nengines = []\n" + GOOD_RUN[6:], "run.engines", "non-empty"),
    ("count-negative", GOOD_RUN + "[counts]\nreads = -1\n", "counts.reads", "between"),
    ("count-zero", GOOD_RUN + "[counts]\nqueries = 0\n", "counts.queries", "between"),
    ("count-unknown", GOOD_RUN + "[counts]\nwrites = 5\n", "counts.writes", "unknown count"),
    ("no-phases", "[run]\nprofiles = 10\n", "phase", "at least one"),
    (
        "phase-unknown-kind",
        GOOD_RUN + '[[phase]]\nkind = "delete_all"\n',
        "phase[2].kind",
        "unknown phase kind",
    ),
    ("phase-no-kind", GOOD_RUN + '[[phase]]\nname = "x"\n', "phase[2].kind", "required"),
    (
        "phase-unknown-key",
        GOOD_RUN + '[[phase]]\nkind = "settle"\nspeed = 3\n',
        "phase[2].speed",
        "unknown key",
    ),
    (
        "verify-before-insert",
        '[[phase]]\nkind = "verify"\n[[phase]]\nkind = "insert"\n',
        "phase[0].kind",
        "before any insert",
    ),
    ("read-before-insert", '[[phase]]\nkind = "read_by_id"\n', "phase[0].kind", "before any insert"),
    ("double-insert", '[[phase]]\nkind = "insert"\n[[phase]]\nkind = "insert"\n', "phase[1].kind", "once"),
    (
        "bad-stream",
        GOOD_RUN + '[[phase]]\nkind = "read_by_id"\nstream = "updates"\n',
        "phase[2].stream",
        "not a stream",
    ),
    (
        "stream-on-settle",
        GOOD_RUN + '[[phase]]\nkind = "settle"\nstream = "reads"\n',
        "phase[2].stream",
        "takes no stream",
    ),
    (
        "phase-count-too-big",
        GOOD_RUN + '[[phase]]\nkind = "read_by_id"\ncount = 101\n',
        "phase[2].count",
        "exceeds",
    ),
    (
        "phase-count-zero",
        GOOD_RUN + '[[phase]]\nkind = "read_by_id"\ncount = 0\n',
        "phase[2].count",
        "between",
    ),
    (
        "engine-setting-unknown",
        GOOD_RUN + "[engines.sqlite]\nwarp = 9\n",
        "engines.sqlite.warp",
        "unknown setting",
    ),
    (
        "engine-setting-type",
        GOOD_RUN + '[engines.sqlite]\ncache_size_mb = "big"\n',
        "engines.sqlite.cache_size_mb",
        "must be int",
    ),
    (
        "engine-setting-negative",
        GOOD_RUN + "[engines.sqlite]\ncache_size_mb = -4\n",
        "engines.sqlite.cache_size_mb",
        "negative",
    ),
    ("engine-table-unknown", GOOD_RUN + "[engines.oracle]\nx = 1\n", "engines.oracle", "unknown engine"),
    ("run-not-table", 'run = 5\n[[phase]]\nkind = "insert"\n', "run", "must be a table"),
    ("isolate-not-bool", "[run]\nisolate = 1\n" + GOOD_RUN[6:], "run.isolate", "true or false"),
]


@pytest.mark.parametrize(("text", "key", "reason"), [c[1:] for c in BAD_FILES], ids=[c[0] for c in BAD_FILES])
def test_bad_plan_file_is_rejected_with_file_key_and_reason(
    tmp_path: Path, capsys, text, key, reason
) -> None:
    plan = tmp_path / "plan.toml"
    plan.write_text(text)
    with pytest.raises(ConfigError) as info:
        load(plan)
    assert info.value.key == key
    assert reason in info.value.reason
    # Through the CLI: exit 2, one message naming the file and key, nothing written.
    out, data = tmp_path / "out", tmp_path / "data"
    assert main([str(plan), "--output", str(out), "--data", str(data)]) == 2
    err = capsys.readouterr().err
    assert f"{plan}: {key}:" in err and reason in err
    assert not out.exists() and not data.exists()


BAD_FLAGS = [
    (["--profiles", "lots"], "--profiles", "not a count"),
    (["--profiles", "0"], "--profiles", "between"),
    (["--profiles", "1.5"], "--profiles", "whole number"),
    (["--engine", "oracle"], "--engine", "unknown engine"),
    (["--seed", "x1"], "--seed", "not an integer"),
    (["--seed", "99999999999"], "--seed", "between"),
    (["--parallelism", "5000"], "--parallelism", "between"),
    (["--timeout-seconds", "-3"], "--timeout-seconds", "positive"),
    (["--batch-size", "0"], "--batch-size", "between"),
    (["--limit", "0"], "--limit", "between"),
]


@pytest.mark.parametrize(
    ("flags", "key", "reason"), BAD_FLAGS, ids=[f[0][0] + "=" + f[0][1] for f in BAD_FLAGS]
)
def test_bad_flags_exit_2(tmp_path: Path, capsys, flags, key, reason) -> None:
    out = tmp_path / "out"
    code = main(
        [str(ROOT / "benchmarks" / "quick.toml"), *flags, "--output", str(out), "--data", str(tmp_path / "d")]
    )
    assert code == 2
    err = capsys.readouterr().err
    assert f"command line: {key}:" in err and reason in err
    assert not out.exists()


def test_output_dir_that_is_a_file_is_rejected(tmp_path: Path, capsys) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    code = main(
        [
            str(ROOT / "benchmarks" / "quick.toml"),
            "--output",
            str(blocker / "sub"),
            "--data",
            str(tmp_path / "d"),
        ]
    )
    assert code == 2
    assert "output" in capsys.readouterr().err
    assert blocker.read_text() == "x"


def test_data_dir_that_is_a_file_is_rejected(tmp_path: Path, capsys) -> None:
    blocker = tmp_path / "data"
    blocker.write_text("x")
    code = main(
        [str(ROOT / "benchmarks" / "quick.toml"), "--output", str(tmp_path / "o"), "--data", str(blocker)]
    )
    assert code == 2
    assert "data:" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()


def test_unwritable_output_dir_is_rejected(tmp_path: Path, capsys) -> None:
    # /proc is the kernel's, not storage (and refuses new files even to root).
    code = main(
        [
            str(ROOT / "benchmarks" / "quick.toml"),
            "--output",
            "/proc/asyncbench-out",
            "--data",
            str(tmp_path / "d"),
        ]
    )
    assert code == 2
    assert "command line: output: /proc/asyncbench-out is on a pseudo file system" in capsys.readouterr().err
    assert not (tmp_path / "d").exists()


def test_missing_plan_file(tmp_path: Path, capsys) -> None:
    assert main([str(tmp_path / "nope.toml")]) == 2
    assert "does not exist" in capsys.readouterr().err


def test_reference_plan_loads_with_reference_values() -> None:
    cfg = load(ROOT / "benchmarks.toml")
    assert cfg.profiles == [2_000_000] and cfg.parallelism == [1] and cfg.seed == 570123434
    assert cfg.limit == 50 and cfg.timeout_seconds == 120_000
    counts = cfg.counts_for(2_000_000)
    assert counts.reads == counts.updates == counts.post_email_reads == 2_000_000
    assert counts.queries == counts.post_queries == 500_000
    assert cfg.engine_settings["lsm"]["mutable_segment_max_item_count"] == 250_000
    assert cfg.engine_settings["rocksdb"]["write_buffer_size_mb"] == 1024
    assert cfg.engine_settings["sqlite"]["journal_mode"] == "WAL"
    kinds = [p.kind for p in cfg.phases]
    assert kinds[0] == "insert" and kinds[-3:] == ["settle", "reopen", "verify"]
    assert [p.name for p in cfg.phases if p.kind == "stabilize"] == [
        "pre-read stabilization",
        "post-update stabilization",
    ]


def test_profiles_flag_rescales_default_counts_but_keeps_explicit_ones(tmp_path: Path) -> None:
    plan = tmp_path / "p.toml"
    plan.write_text(GOOD_RUN + "[counts]\nreads = 7\n")
    cfg = load(plan)
    c = cfg.counts_for(20_000)
    assert c.reads == 7 and c.updates == 20_000 and c.queries == 5_000


def test_repeated_phase_gets_a_distinct_name(tmp_path: Path) -> None:
    plan = tmp_path / "p.toml"
    plan.write_text(GOOD_RUN + '[[phase]]\nkind = "read_by_id"\n[[phase]]\nkind = "read_by_id"\n')
    names = [p.name for p in load(plan).phases]
    assert names[-2:] == ["read by user id", "read by user id (2)"]


@pytest.mark.parametrize(
    ("table", "key", "reason"),
    [
        ('[engines.sqlite]\nsynchronous = "SOMETIMES"\n', "engines.sqlite.synchronous", "synchronous"),
        ('[engines.rocksdb]\ncompression = "zip"\n', "engines.rocksdb.compression", "compression"),
        ('[engines.lsm]\nwal_mode = "maybe"\n', "engines.lsm.wal_mode", "wal_mode"),
        ("[engines.lsm]\nsparse_array_step = 0\n", "engines.lsm.sparse_array_step", "sparse_array_step"),
        ("[engines.lsm]\ncompression_threshold_mb = 2_000_000\n", "engines.lsm.compression_threshold_mb", "compression_threshold_mb"),
    ],
)
def test_engine_setting_values_are_checked_before_running(tmp_path: Path, capsys, table, key, reason) -> None:
    plan = tmp_path / "plan.toml"
    plan.write_text(GOOD_RUN + table)
    with pytest.raises(ConfigError) as info:
        load(plan)
    assert info.value.key == key and reason in info.value.reason


def test_timeout_zero_means_none_in_file_and_flag(tmp_path: Path, run_cli) -> None:
    plan = tmp_path / "plan.toml"
    plan.write_text("[run]\ntimeout_seconds = 0\n" + GOOD_RUN[6:])
    assert load(plan).timeout_seconds is None
    code, (run,), _ = run_cli(str(plan), "--engine", "memory", "--timeout-seconds", "0")
    assert code == 0 and run["timeout_seconds"] is None
    md = next((tmp_path / "out").glob("profiles-*/asyncbench-*.md")).read_text()
    assert "| Timeout per engine | none |" in md
