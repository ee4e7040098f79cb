"""``compare``: verdicts on hand-made results (faster, slower, not significant, one run),
bad input, and a real regression made by a test engine that spins 20 µs per read."""

from __future__ import annotations

import copy
import subprocess
import sys
from pathlib import Path

import orjson
import pytest
from conftest import ROOT, run_asyncbench

from asyncbench.cli.main import main
from asyncbench.result import RunResult

FIXTURE = Path(__file__).parent / "fixtures" / "result-sample.json"
READ = 2  # plan position of "read by user id" in the fixture


def sample() -> RunResult:
    return RunResult.from_json(FIXTURE.read_bytes())


def with_repeats(run: RunResult, engine: str, factors: list[float], phase: int = READ) -> RunResult:
    """``run`` with ``engine`` repeated once per factor; each repeat's ``phase`` takes
    ``factor`` times as long (other phases unchanged)."""
    out = copy.deepcopy(run)
    base = next(e for e in out.engines if e.engine == engine)
    out.engines = [e for e in out.engines if e.engine != engine]
    for i, f in enumerate(factors):
        e = copy.deepcopy(base)
        e.repeat = i
        e.phase_at(phase).seconds *= f
        out.engines.append(e)
    out.repeat = len(factors)
    return out


def write(tmp: Path, name: str, run: RunResult) -> Path:
    path = tmp / f"asyncbench-{name}.json"
    path.write_bytes(run.to_json())
    return path


def compare_json(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict]:
    code = main(["compare", *args, "--json"])
    return code, orjson.loads(capsys.readouterr().out)


def verdict(doc: dict, engine: str, phase: str) -> str:
    return next(r["verdict"] for r in doc["rows"] if r["engine"] == engine and r["phase"] == phase)


def test_slower_with_spread_exits_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base = write(tmp_path, "a", with_repeats(sample(), "sqlite", [1.00, 1.01, 0.99, 1.00]))
    new = write(tmp_path, "b", with_repeats(sample(), "sqlite", [1.30, 1.31, 1.29, 1.30]))
    code, doc = compare_json(capsys, str(base), str(new), "--engine", "sqlite")
    assert code == 1
    assert verdict(doc, "sqlite", "read by user id") == "slower"
    assert verdict(doc, "sqlite", "lookup by email") == "same"
    row = next(r for r in doc["rows"] if r["phase"] == "read by user id")
    assert row["with_spread"] and row["p_value"] < 0.05 and row["checksums_equal"] is True


def test_faster_exits_0(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base = write(tmp_path, "a", with_repeats(sample(), "sqlite", [1.00, 1.01, 0.99]))
    new = write(tmp_path, "b", with_repeats(sample(), "sqlite", [0.70, 0.71, 0.69]))
    code, doc = compare_json(capsys, str(base), str(new), "--engine", "sqlite")
    assert code == 0 and verdict(doc, "sqlite", "read by user id") == "faster"


def test_noisy_difference_is_not_significant(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # medians 6% apart, but the repeats overlap widely: Welch cannot tell them apart
    base = write(tmp_path, "a", with_repeats(sample(), "sqlite", [0.80, 1.00, 1.25]))
    new = write(tmp_path, "b", with_repeats(sample(), "sqlite", [0.85, 1.06, 1.35]))
    code, doc = compare_json(capsys, str(base), str(new), "--engine", "sqlite")
    assert verdict(doc, "sqlite", "read by user id") == "not significant"
    assert code == 0


def test_single_runs_call_no_winner_on_the_threshold(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base = write(tmp_path, "a", sample())
    slow = with_repeats(sample(), "sqlite", [1.10])
    new = write(tmp_path, "b", slow)
    code, doc = compare_json(capsys, str(base), str(new), "--engine", "sqlite", "--threshold", "5%")
    row = next(r for r in doc["rows"] if r["phase"] == "read by user id")
    assert row["verdict"] == "one run" and not row["with_spread"] and code == 0  # issue 39
    code, doc = compare_json(capsys, str(base), str(new), "--engine", "sqlite", "--threshold", "15%")
    assert verdict(doc, "sqlite", "read by user id") == "same" and code == 0


def test_directories_pool_repeats_and_differences_are_named(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir(), b.mkdir()
    for i, f in enumerate([1.0, 1.01]):
        write(a, f"a{i}", with_repeats(sample(), "sqlite", [f]))
    other = with_repeats(sample(), "sqlite", [1.0])
    other.environment["hostname"] = "elsewhere"
    write(b, "b0", other)
    code, doc = compare_json(capsys, str(a), str(b), "--engine", "sqlite")
    row = next(r for r in doc["rows"] if r["phase"] == "read by user id")
    assert row["base"]["n"] == 2 and row["new"]["n"] == 1
    assert any(d.startswith("host:") for d in doc["differences"])


def test_differing_checksums_exit_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = sample()
    next(e for e in bad.engines if e.engine == "sqlite").phase_at(READ).checksum = "0000000000000000"
    code, doc = compare_json(capsys, str(write(tmp_path, "a", sample())), str(write(tmp_path, "b", bad)))
    assert code == 1
    assert any(r["checksums_equal"] is False and r["phase"] == "read by user id" for r in doc["rows"])


@pytest.mark.parametrize(
    "args",
    [
        ["missing.json", "missing.json"],
        ["{tmp}", "{tmp}"],
        ["{bad}", "{bad}"],
        ["{good}", "{good}", "--threshold", "x"],
    ],
)
def test_bad_input_exits_2(tmp_path: Path, args: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("null")
    good = write(tmp_path / "", "good", sample()) if args[0] == "{good}" else None
    empty = tmp_path / "empty"
    empty.mkdir()
    subst = {"{tmp}": str(empty), "{bad}": str(bad), "{good}": str(good)}
    assert main(["compare", *[subst.get(a, a) for a in args]]) == 2
    assert "asyncbench:" in capsys.readouterr().err


def run_quick(tmp: Path, env_engines: str | None) -> Path:
    quick = str(ROOT / "benchmarks" / "quick.toml")
    proc = run_asyncbench(
        tmp, quick, "--engine", "memory", "--profiles", "20000", "--repeat", "4", engines=env_engines
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return tmp / "out"


def test_a_slowed_engine_is_caught_and_named(tmp_path: Path) -> None:
    base = run_quick(tmp_path / "base", None)
    new = run_quick(tmp_path / "new", "memory=engines_latency:SlowReadsEngine")
    proc = subprocess.run(
        [sys.executable, "-m", "asyncbench", "compare", str(base), str(new)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 1, proc.stdout + proc.stderr
    slower = proc.stdout.split("slower: ", 1)[1]  # the summary names every regressed phase
    assert "memory read by user id" in slower or "memory post-update read by user id" in slower
    same = subprocess.run(
        [sys.executable, "-m", "asyncbench", "compare", str(base), str(base)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert same.returncode == 0, same.stdout + same.stderr


def test_help_explains_the_exit_rule_and_the_summary_interval(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["compare", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "exit codes: 0 no phase slower and every checksum equal; 1 at least one phase slower" in text
    assert "Welch's t test" in text and "the threshold alone decides nothing" in text
    assert "geometric mean" in text and "95% Student t interval of the mean log ratio" in text


@pytest.mark.parametrize("threshold", ["٥%", "5%%", "%5", "1e1", "5 %%", "", "inf", "nan%", "+5%", "５%", ".%", "5..%", "100%"])
def test_a_threshold_not_plain_ascii_digits_and_one_percent_is_refused(
    tmp_path: Path, threshold: str, capsys: pytest.CaptureFixture[str]
) -> None:
    good = str(write(tmp_path, "good", sample()))
    assert main(["compare", good, good, "--threshold", threshold]) == 2
    err = capsys.readouterr().err
    assert "command line: --threshold" in err and repr(threshold) in err


@pytest.mark.parametrize("threshold", ["5%", "5", "2.5%", "0%", " 7 % ", ".5%", "5.%"])
def test_a_plain_threshold_is_read(tmp_path: Path, threshold: str, capsys: pytest.CaptureFixture[str]) -> None:
    good = str(write(tmp_path, "good", sample()))
    code, doc = compare_json(capsys, good, good, "--threshold", threshold)
    assert code == 0 and doc["threshold"] == float(threshold.strip().rstrip("%")) / 100


def test_an_engine_in_no_result_is_refused_naming_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    good = str(write(tmp_path, "good", sample()))
    assert main(["compare", good, good, "--engine", "memory,nosuch"]) == 2
    err = capsys.readouterr().err
    assert "command line: --engine" in err and "'nosuch'" in err and "memory, rocksdb, sqlite" in err


def test_a_vanishing_or_unreadable_entry_in_a_directory_is_skipped_with_a_warning(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Entries that vanish mid-walk (a temporary directory of another process) or cannot
    be read are skipped with a warning, never a traceback; an over-long path likewise."""
    import os

    side = tmp_path / "side"
    (side / "gone").mkdir(parents=True)
    (side / "locked").mkdir()
    good = write(side, "good", sample())
    real_scandir = os.scandir

    def scandir(path):  # type: ignore[no-untyped-def]
        name = os.path.basename(os.fspath(path))
        if name == "gone":
            raise FileNotFoundError(2, "No such file or directory", os.fspath(path))
        if name == "locked":
            raise PermissionError(13, "Permission denied", os.fspath(path))
        return real_scandir(path)

    monkeypatch.setattr(os, "scandir", scandir)
    code = main(["compare", str(side), str(good), "--json"])
    captured = capsys.readouterr()
    assert code == 0 and orjson.loads(captured.out)["rows"]
    err = captured.err
    assert "skipped" in err and "gone" in err and "locked" in err and "Traceback" not in err


@pytest.mark.parametrize("variant", ["directory", "file"])
def test_a_path_longer_than_path_max_is_skipped_not_a_traceback(
    tmp_path: Path, variant: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """A tree deeper than PATH_MAX (4096): a directory whose path is too long to list, or a
    listable directory holding a result whose path is too long to open (both raised
    ``OSError: [Errno 36]`` out of ``rglob`` or the read)."""
    import os

    side = tmp_path / "side"
    side.mkdir()
    write(side, "good", sample())
    name = "asyncbench-" + "x" * 200 + ".json"
    length = len(str(side))
    fd = os.open(side, os.O_RDONLY)
    try:  # build the chain through relative mkdirat/openat: the full path is never used
        while length < (5000 if variant == "directory" else 4000):
            part = "d" * min(200, 4000 - length - 1) if variant == "file" else "d" * 200
            os.mkdir(part, dir_fd=fd)
            nfd = os.open(part, os.O_RDONLY, dir_fd=fd)
            os.close(fd)
            fd, length = nfd, length + 1 + len(part)
        with open(os.open(name, os.O_WRONLY | os.O_CREAT, dir_fd=fd), "wb") as f:
            f.write(b"{}")
    finally:
        os.close(fd)
    code = main(["compare", str(side), str(side), "--json"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert "skipped" in captured.err and "File name too long" in captured.err


def test_a_directory_that_is_not_a_results_directory_is_bounded(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``compare /`` would walk the whole filesystem: the walk stops after a bounded number
    of entries and refuses, naming the directory and the bound."""
    from asyncbench.report.compare import inputs as compare_inputs

    side = tmp_path / "big"
    for i in range(30):
        (side / f"sub{i}").mkdir(parents=True)
    monkeypatch.setattr(compare_inputs, "MAX_WALK_ENTRIES", 20)
    assert main(["compare", str(side), str(side)]) == 2
    err = capsys.readouterr().err
    assert str(side) in err and "20" in err and "not a results directory" in err


def test_a_result_file_that_vanishes_after_the_walk_is_skipped_with_a_warning(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Found by walking a directory, gone (or unreadable) when read: skipped, said; a file
    named on the command line that cannot be read is still an error (exit 2)."""
    import errno

    from asyncbench.fs.inputs import InputError, read_input
    from asyncbench.report.compare import inputs as compare_inputs

    side = tmp_path / "side"
    side.mkdir()
    good = write(side, "good", sample())
    gone = write(side, "gone", sample())

    def flaky(path: Path) -> bytes:
        if path == gone:
            raise InputError("does not exist", errno.ENOENT)
        return read_input(path)

    monkeypatch.setattr(compare_inputs, "read_input", flaky)
    code = main(["compare", str(side), str(good), "--json"])
    captured = capsys.readouterr()
    assert code == 0 and orjson.loads(captured.out)["rows"]
    assert f"skipped {gone}: does not exist" in captured.err
    assert main(["compare", str(gone), str(good)]) == 2
    assert f"{gone}: does not exist" in capsys.readouterr().err


@pytest.mark.parametrize("name", ["a" * 300, "a/" * 3000])
def test_a_named_path_too_long_to_look_up_is_bad_input(
    tmp_path: Path, name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    good = str(write(tmp_path, "good", sample()))
    assert main(["compare", str(tmp_path / name), good]) == 2
    assert "File name too long" in capsys.readouterr().err


def test_results_of_two_workloads_are_refused_naming_both(run_cli, tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    """Issue 54: YCSB's ``mixed`` and the profile store's ``mixed`` share a phase kind's name;
    compare set one against the other and called their checksums different (exit 1)."""
    code, _, out = run_cli("run", "-P", "workloadc", "-p", "recordcount=1000", "-p", "operationcount=2000", "--engine", "memory", "--no-isolate")
    assert code == 0, out
    (ycsb,) = (tmp_path / "out").glob("records-*/asyncbench-*.json")
    code, _, out = run_cli(str(ROOT / "benchmarks" / "profile-mix.toml"), "--engine", "memory", "--profiles", "1k", "--no-isolate")
    assert code == 0, out
    (profiles,) = (tmp_path / "out").glob("profiles-*/asyncbench-*.json")
    for a, b in ((ycsb, profiles), (profiles, ycsb)):
        assert main(["compare", str(a), str(b)]) == 2
        err = capfd.readouterr().err
        assert "two workloads, " in err and "ycsb" in err and "profile_store" in err and str(b.name) in err
    assert main(["compare", str(tmp_path / "out"), str(ycsb)]) == 2  # a side that holds both
    assert "two workloads" in capfd.readouterr().err
    assert main(["compare", str(ycsb), str(ycsb)]) == 0
