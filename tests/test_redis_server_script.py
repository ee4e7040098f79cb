"""``scripts/redis-server``: a loopback, password-protected throw-away Redis with the
persistence mode asked for, its state private, and ``stop`` removing the server and its
dir. (The stop-safety checks it shares with the other server scripts live in
scripts/lib/server-common.sh and are tested with them in tests/test_server_scripts.py.)
Needs Debian's redis-server installed (the script installs it when missing, as root);
skipped when it is not there and this is not CI."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
import redis

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "scripts" / "redis-server"

pytestmark = pytest.mark.skipif(
    not (shutil.which("redis-server") or os.environ.get("CI")), reason="no redis-server installed (apt-get install redis-server)"
)


def run(command: str, state: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(SCRIPT), command],
        env={**os.environ, "ASYNCBENCH_STATE_DIR": str(state), **env},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def exports(stdout: str) -> dict[str, str]:
    out = {}
    for line in stdout.splitlines():
        assert line.startswith("export "), stdout  # only the export lines on stdout
        name, _, value = line.removeprefix("export ").partition("=")
        out[name] = value.strip("'")
    return out


@pytest.mark.parametrize(("mode", "appendonly", "appendfsync", "save"), [
    ("none", "no", None, ""), ("aof-always", "yes", "always", ""),
])  # fmt: skip
def test_start_gives_a_private_loopback_server_with_the_persistence_asked_and_stop_removes_it(
    mode: str, appendonly: str, appendfsync: str | None, save: str, tmp_path: Path
) -> None:
    state = tmp_path / "state"
    started = run("start", state, REDIS_SERVER_PERSISTENCE=mode)
    try:
        assert started.returncode == 0, started.stderr
        env = exports(started.stdout)
        assert env["REDIS_HOST"] == "127.0.0.1" and env["REDIS_DB"] == "0"
        assert env["REDIS_SERVER_SETTINGS"] == f"persistence={mode}"
        assert (state / "redis-server.env").stat().st_mode & 0o077 == 0
        port = int(env["REDIS_PORT"])
        with redis.Redis(host="127.0.0.1", port=port) as anonymous, pytest.raises(redis.AuthenticationError):
            anonymous.ping()  # a password is required
        with redis.Redis(host="127.0.0.1", port=port, password=env["REDIS_PASSWORD"], decode_responses=True) as client:
            config = client.config_get("*")
            assert config["bind"] == "127.0.0.1" and config["appendonly"] == appendonly and config["save"] == save
            if appendfsync:
                assert config["appendfsync"] == appendfsync
            work = Path(config["dir"]).parent
            pid = int(client.info("server")["process_id"])
        assert run("env", state).stdout == started.stdout
        assert run("status", state).returncode == 0
    finally:
        stopped = run("stop", state)
    assert stopped.returncode == 0, stopped.stderr
    assert not work.exists() and not Path(f"/proc/{pid}").exists()
    assert run("status", state).returncode == 1


def test_an_unknown_persistence_mode_is_refused_before_anything_starts(tmp_path: Path) -> None:
    state = tmp_path / "state"
    result = run("start", state, REDIS_SERVER_PERSISTENCE="sometimes")
    assert result.returncode != 0 and "REDIS_SERVER_PERSISTENCE" in result.stderr and not result.stdout
    assert not (state / "redis-server.state").exists()
