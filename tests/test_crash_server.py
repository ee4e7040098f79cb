"""A server engine's kill crash (issue 57): only a throw-away server of this project's scripts
is killed, proven by its state file, process and port; any other server is refused before
anything is touched. The killed server is started again on its data directory and the
recover phase checks every acknowledged write (the slow tests, with real servers)."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from asyncbench.config.model import CrashPoint, PhaseSpec
from asyncbench.engine import Engine, EngineConfig
from asyncbench.engines import engine_class
from asyncbench.run.crash.crash import refusal
from asyncbench.run.crash.server_kill import SCRIPTS_DIR, ServerRefused, prove_script_server
from asyncbench.workloads.profile_store.kv_store import STORE_NAMES as PROFILE_STORES

PORT = 45_321  # nothing needs to listen here: the proof fails before it asks


def _engine(name: str, tmp_path: Path, **settings: Any) -> Engine:
    return engine_class(name)(EngineConfig(name, tmp_path, settings, limit=50, seed=1, stores=PROFILE_STORES))


def _private_dir(path: Path) -> Path:
    path.mkdir()
    path.chmod(0o700)
    return path


def _proc_start(pid: int) -> str:
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19]


@pytest.fixture
def sleeper() -> Iterator[subprocess.Popen[bytes]]:
    """A process that is not a server: what a state file may name by mistake or malice."""
    proc = subprocess.Popen(["sleep", "120"])
    yield proc
    proc.kill()
    proc.wait()


def _script_state(state_dir: Path, work: Path, pid: int, port: int) -> None:
    """A state dir as scripts/mysql-server writes it, naming ``pid`` and ``port``."""
    token = "ab" * 16
    (work / ".asyncbench-marker").write_text(f"asyncbench mysql-server {token}\nstate_dir={state_dir}\n")
    (work / ".asyncbench-marker").chmod(0o600)
    state = state_dir / "mysql-server.state"
    state.write_text(f"dir={work}\ntoken={token}\nuid={os.geteuid()}\npid={pid}\nstart={_proc_start(pid)}\n")
    env = state_dir / "mysql-server.env"
    env.write_text(f"export MYSQL_HOST=127.0.0.1\nexport MYSQL_PORT={port}\n")
    for f in (state, env):
        f.chmod(0o600)


def test_a_server_without_a_state_file_is_refused_naming_the_script(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A user's server (no state of the scripts names it): refused, saying how to start one."""
    monkeypatch.setenv("ASYNCBENCH_STATE_DIR", str(_private_dir(tmp_path / "state")))
    engine = _engine("mysql", tmp_path, host="127.0.0.1", port=PORT)
    with pytest.raises(ServerRefused) as err:
        prove_script_server(engine)
    message = str(err.value)
    assert f"127.0.0.1:{PORT} is not proven throw-away" in message and "state file" in message
    assert "scripts/mysql-server start" in message


@pytest.mark.parametrize("state_port", [PORT, PORT + 1], ids=["another-process", "another-port"])
def test_a_state_file_naming_another_process_or_port_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, sleeper: subprocess.Popen[bytes], state_port: int
) -> None:
    """The state's pid is alive, ours and started when recorded, but it is no server (or the
    state is another port's): refused, and the process is left alone."""
    state_dir = _private_dir(tmp_path / "state")
    _script_state(state_dir, _private_dir(tmp_path / "work"), sleeper.pid, state_port)
    monkeypatch.setenv("ASYNCBENCH_STATE_DIR", str(state_dir))
    engine = _engine("mysql", tmp_path, host="127.0.0.1", port=PORT)
    with pytest.raises(ServerRefused) as err:
        prove_script_server(engine)
    why = str(err.value)
    if state_port == PORT:
        assert f"pid {sleeper.pid} runs sleep, not one of mariadbd, mysqld" in why
    else:
        assert f"holds the server of port {PORT + 1}, not {PORT}" in why
    assert sleeper.poll() is None  # not signalled


def test_a_server_off_loopback_or_a_cluster_is_refused(tmp_path: Path) -> None:
    remote = _engine("mysql", tmp_path, host="192.0.2.7", port=PORT)
    with pytest.raises(ServerRefused, match="not on loopback"):
        prove_script_server(remote)
    cluster = _engine("mysql", tmp_path, hosts="127.0.0.1:3307,127.0.0.1:3308")
    with pytest.raises(ServerRefused, match="cluster's crash .Galera. is not built"):
        prove_script_server(cluster)


def test_a_server_engine_takes_kill_at_one_point_only(tmp_path: Path) -> None:
    """A power cut needs the data directory on the power-cut filesystem, several points
    copies of it: neither is built for servers, and both are refused saying so."""
    engine = _engine("postgres", tmp_path)
    spec = PhaseSpec(kind="insert", name="insert profiles", crash=CrashPoint(after=100))
    assert refusal(engine, spec) is None
    power = PhaseSpec(kind="insert", name="insert profiles", crash=CrashPoint(after=100, how="power"))
    assert "power-cut filesystem" in (refusal(engine, power) or "")
    points = PhaseSpec(kind="insert", name="insert profiles", crash=CrashPoint(after=100, points=3))
    assert "crash.points = 1" in (refusal(engine, points) or "")


# --- with real servers -------------------------------------------------------------------

PLAN = """[run]
profiles = 3_000
batch_size = 50
engines = ["{engine}"]
{settings}
[[phase]]
kind = "insert"
crash = {{ after = 1_000, how = "kill" }}

[[phase]]
kind = "recover"
"""


def _script(script: str, command: str, state_dir: Path, **env: str) -> str:
    done = subprocess.run(
        [str(SCRIPTS_DIR / script), command], capture_output=True, text=True, timeout=240, check=False,
        env={**os.environ, "ASYNCBENCH_STATE_DIR": str(state_dir), **env},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done.stdout


def _exports(text: str) -> dict[str, str]:
    out = {}
    for line in text.splitlines():
        if line.startswith("export "):
            key, value = line[len("export ") :].split("=", 1)
            out[key] = value.strip("'")
    return out


@pytest.fixture
def mysql_server(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest) -> Iterator[Path]:
    """A throw-away MariaDB of scripts/mysql-server (small buffers), its env in this process."""
    state_dir = _private_dir(tmp_path / "state")
    flush = str(request.param)
    env = _script("mysql-server", "start", state_dir, MYSQL_SERVER_BUFFER_POOL="256M",
                  MYSQL_SERVER_LOG_FILE_SIZE="128M", MYSQL_SERVER_FLUSH_LOG_AT_TRX_COMMIT=flush)  # fmt: skip
    try:
        monkeypatch.setenv("ASYNCBENCH_STATE_DIR", str(state_dir))
        for key, value in _exports(env).items():
            monkeypatch.setenv(key, value)
        yield state_dir
    finally:
        _script("mysql-server", "stop", state_dir)


def _dead(pid: int) -> bool:
    """Gone, or a zombie no one reaped yet (the script that started it has exited)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat.rsplit(")", 1)[1].split()[0] == "Z"


def _pid(state_dir: Path, script: str) -> int:
    lines = (state_dir / f"{script}.state").read_text().splitlines()
    return int(next(line for line in lines if line.startswith("pid="))[4:])


@pytest.mark.slow
@pytest.mark.parametrize("mysql_server", [1], indirect=True)
def test_mysql_synced_per_commit_loses_no_acknowledged_write(tmp_path: Path, mysql_server: Path, run_cli) -> None:  # type: ignore[no-untyped-def]
    """innodb_flush_log_at_trx_commit=1: the server is killed at the point and started again
    on its data dir; every acknowledged insert is there, and the engine promised it."""
    before = _pid(mysql_server, "mysql-server")
    plan = tmp_path / "plan.toml"
    plan.write_text(PLAN.format(engine="mysql", settings=""))
    code, (result,), output = run_cli(str(plan), "--no-progress")
    assert code == 0, output
    (engine,) = result["engines"]
    assert engine["status"] == "ok", output
    (d,) = engine["durability"]
    figures = (d["acknowledged"], d["acknowledged_present"], d["acknowledged_lost"], d["torn"], d["opened"])
    assert figures == (1000, 1000, 0, 0, True), d
    assert d["synced_commits"] and d["promise"] == "per commit", d
    after = _pid(mysql_server, "mysql-server")
    assert after != before and _dead(before)  # killed, and a new server runs
    report = next((tmp_path / "out").glob("profiles-*/asyncbench-*.md")).read_text()
    assert "| **PASS** | mysql | insert profiles | durability | kill crash: lost 0 of 1_000 acknowledged" in report


@pytest.mark.slow
@pytest.mark.parametrize("mysql_server", [2], indirect=True)
def test_mysql_flushed_once_a_second_is_reported_with_its_counts(tmp_path: Path, mysql_server: Path, run_cli) -> None:  # type: ignore[no-untyped-def]
    """innodb_flush_log_at_trx_commit=2 promises nothing per commit; a kill of the server
    alone keeps the OS page cache, so it may well lose nothing: only the counts are checked."""
    plan = tmp_path / "plan.toml"
    plan.write_text(PLAN.format(engine="mysql", settings=""))
    code, (result,), output = run_cli(str(plan), "--no-progress")
    assert code == 0, output
    (d,) = result["engines"][0]["durability"]
    assert d["opened"] and d["torn"] == 0 and not d["synced_commits"], d
    assert d["acknowledged_present"] + d["acknowledged_lost"] == d["acknowledged"] == 1000, d


@pytest.mark.slow
@pytest.mark.parametrize("mysql_server", [1], indirect=True)
def test_a_server_of_another_state_dir_is_refused_and_left_running(  # type: ignore[no-untyped-def]
    tmp_path: Path, mysql_server: Path, monkeypatch: pytest.MonkeyPatch, run_cli
) -> None:
    """The same server, seen from a state dir that did not start it (as a user's server is):
    the crash phase refuses it, naming why and what to do, and the server runs on."""
    before = _pid(mysql_server, "mysql-server")
    monkeypatch.setenv("ASYNCBENCH_STATE_DIR", str(_private_dir(tmp_path / "other-state")))
    plan = tmp_path / "plan.toml"
    plan.write_text(PLAN.format(engine="mysql", settings=""))
    code, (result,), output = run_cli(str(plan), "--no-progress")
    (engine,) = result["engines"]
    assert engine["status"] != "ok", output
    assert "is not proven throw-away" in output and "scripts/mysql-server start" in output, output
    assert not _dead(before) and _pid(mysql_server, "mysql-server") == before


@pytest.fixture
def script_server(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest) -> Iterator[Path]:
    """``(script, {variable: value})``: a throw-away server of that script started with those
    variables (small buffers), its exports in this process; stopped (data deleted) after."""
    script, start_env = request.param
    state_dir = _private_dir(tmp_path / "state")
    env = _script(script, "start", state_dir, **start_env)
    try:
        monkeypatch.setenv("ASYNCBENCH_STATE_DIR", str(state_dir))
        for key, value in _exports(env).items():
            monkeypatch.setenv(key, value)
        yield state_dir
    finally:
        _script(script, "stop", state_dir)


def _crash_row(tmp_path: Path, run_cli, engine: str, settings: str) -> dict[str, Any]:  # type: ignore[no-untyped-def]
    plan = tmp_path / "plan.toml"
    plan.write_text(PLAN.format(engine=engine, settings=settings))
    code, (result,), output = run_cli(str(plan), "--no-progress")
    assert code == 0, output
    assert result["engines"][0]["status"] == "ok", output
    (d,) = result["engines"][0]["durability"]
    assert d["opened"] and d["torn"] == 0, d
    assert d["acknowledged_present"] + d["acknowledged_lost"] == d["acknowledged"] == 1000, d
    return dict(d)


PG_SMALL = {"POSTGRES_SERVER_SHARED_BUFFERS": "128MB", "POSTGRES_SERVER_MAX_WAL_SIZE": "256MB"}


@pytest.mark.slow
@pytest.mark.parametrize("script_server", [("postgres-server", PG_SMALL)], indirect=True)
@pytest.mark.parametrize("synchronous_commit", ["on", "off"])
def test_postgres_kill_crash_by_synchronous_commit(  # type: ignore[no-untyped-def]
    tmp_path: Path, script_server: Path, run_cli, synchronous_commit: str
) -> None:
    """on: every acknowledged commit survives the postmaster's (and its backends') kill, as
    promised; off promises nothing per commit and is reported with its counts."""
    before = _pid(script_server, "postgres-server")
    d = _crash_row(tmp_path, run_cli, "postgres", f'[engines.postgres]\nsynchronous_commit = "{synchronous_commit}"\n')
    assert d["synced_commits"] == (synchronous_commit == "on"), d
    if synchronous_commit == "on":
        assert d["acknowledged_lost"] == 0, d
    assert _dead(before) and _pid(script_server, "postgres-server") != before


@pytest.mark.slow
@pytest.mark.parametrize(
    "script_server", [("redis-server", {"REDIS_SERVER_PERSISTENCE": "aof-always"})], indirect=True
)
def test_redis_aof_always_loses_no_acknowledged_write(tmp_path: Path, script_server: Path, run_cli) -> None:  # type: ignore[no-untyped-def]
    before = _pid(script_server, "redis-server")
    d = _crash_row(tmp_path, run_cli, "redis", "")
    assert d["synced_commits"] and d["acknowledged_lost"] == 0, d
    assert _dead(before) and _pid(script_server, "redis-server") != before


@pytest.mark.slow
@pytest.mark.parametrize(
    "script_server", [("redis-server", {"REDIS_SERVER_PERSISTENCE": "aof-everysec"})], indirect=True
)
def test_redis_persistence_set_at_run_time_is_refused(tmp_path: Path, script_server: Path, run_cli) -> None:  # type: ignore[no-untyped-def]
    """A CONFIG SET persistence would not survive the restart: refused, and the server runs on."""
    before = _pid(script_server, "redis-server")
    plan = tmp_path / "plan.toml"
    plan.write_text(PLAN.format(engine="redis", settings='[engines.redis]\npersistence = "aof-always"\n'))
    code, (result,), output = run_cli(str(plan), "--no-progress")
    assert result["engines"][0]["status"] != "ok", output
    assert "REDIS_SERVER_PERSISTENCE=aof-always" in output, output
    assert not _dead(before)
