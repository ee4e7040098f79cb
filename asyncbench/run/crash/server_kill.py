"""A server engine's kill crash: prove the server is a throw-away one, SIGKILL it, start it again.

Why a proof: killing a process is irreversible, and a server a user runs (their database,
with their data) must never be killed by a benchmark. So the tool kills only a server that
one of this project's scripts (``scripts/mysql-server``, ``scripts/postgres-server``,
``scripts/redis-server``) started in its private state directory, and only when every fact
agrees (:func:`prove_script_server`):

- the state directory (``$ASYNCBENCH_STATE_DIR``, else the scripts' own fallbacks) is a real
  directory of ours with no group/other permission bits;
- its ``<script>.state`` and ``<script>.env`` are regular files of ours, mode 0600, and
  parse as the scripts write them (``key=value``; ``export NAME=value``);
- the state's work dir carries the marker with the state's token (the dir the script made);
- the state's pid is alive, is ours, started at the recorded clock tick (no pid reuse),
  runs the server's executable, and has the state's data directory argument;
- the env file's port is the engine's one endpoint, on loopback, and that pid listens there.

Anything else (a user's server, a cluster, a state file naming another pid or port) is
refused with the reason and what to do instead. The restart goes through the script
(``<script> restart``), which checks the same facts again before it starts the server on
the same data directory, port and password.
"""

from __future__ import annotations

import contextlib
import os
import signal
import stat
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil

__all__ = ["SCRIPTS", "ScriptServer", "ServerRefused", "kill_server", "prove_script_server", "restart_server"]


@dataclass(frozen=True)
class _Script:
    """What one server script writes, and how its server process looks."""

    name: str
    port_variable: str
    executables: tuple[str, ...]
    data_arg: str  # the data directory argument, "{dir}" the work dir (the scripts' node_arg)


#: Engine name -> the script that starts its throw-away server.
SCRIPTS: dict[str, _Script] = {
    "mysql": _Script("mysql-server", "MYSQL_PORT", ("mariadbd", "mysqld"), "--datadir={dir}/data"),
    "postgres": _Script("postgres-server", "PGPORT", ("postgres", "postmaster"), "{dir}/data"),
    # redis-server is a link to redis-check-rdb on Debian: /proc/PID/exe names the target (as the script allows)
    "redis": _Script("redis-server", "REDIS_PORT", ("redis-server", "redis-check-rdb", "redis-check-aof"), "{dir}/redis.conf"),
}

#: The repository's scripts directory (this file is asyncbench/run/crash/server_kill.py).
SCRIPTS_DIR = Path(__file__).resolve().parents[3] / "scripts"

RESTART_TIMEOUT_S = 180.0
KILL_WAIT_S = 30.0


class ServerRefused(RuntimeError):
    """The server may not be killed: the message says why and what to do instead."""


@dataclass(frozen=True)
class ScriptServer:
    """A server proven to be a throw-away one of ``script``: the facts the proof checked."""

    script: str
    state_dir: Path
    pid: int
    start_tick: str
    port: int
    work_dir: Path


def state_dir() -> Path:
    """Where the scripts keep their state (scripts/lib/server-common.sh ``init_state_dir``)."""
    if os.environ.get("ASYNCBENCH_STATE_DIR"):
        return Path(os.environ["ASYNCBENCH_STATE_DIR"])
    xdg = os.environ.get("XDG_RUNTIME_DIR")
    if xdg and Path(xdg).is_dir() and not Path(xdg).is_symlink() and Path(xdg).stat().st_uid == os.geteuid():
        return Path(xdg) / "asyncbench"
    return Path.home() / ".cache" / "asyncbench"


def _private(path: Path, what: str, directory: bool = False, owner: int | None = None) -> None:
    """Refuse unless ``path`` is a real file (or directory) of ``owner`` (default: us)
    without group/other bits."""
    owner = os.geteuid() if owner is None else owner
    try:
        st = path.lstat()
    except OSError as exc:
        raise ServerRefused(f"{what} {path} is missing ({exc.strerror})") from exc
    kind_ok = stat.S_ISDIR(st.st_mode) if directory else stat.S_ISREG(st.st_mode)
    if not kind_ok:
        raise ServerRefused(f"{what} {path} is not a real {'directory' if directory else 'file'}")
    if st.st_uid != owner:
        raise ServerRefused(f"{what} {path} belongs to uid {st.st_uid}, not to uid {owner}")
    if st.st_mode & 0o077:
        raise ServerRefused(f"{what} {path} has mode {st.st_mode & 0o777:o}: not private")


def _read_state(path: Path) -> dict[str, str]:
    """The state file's ``key=value`` lines, parsed as strictly as the scripts parse them."""
    _private(path, "the state file")
    out: dict[str, str] = {}
    for line in path.read_text().splitlines():
        if not line or line.startswith("#"):
            continue
        key, sep, value = line.partition("=")
        if not sep or not key or not all(c.islower() or c.isdigit() or c == "_" for c in key):
            raise ServerRefused(f"the state file {path} has a malformed line: {line!r}")
        out[key] = value
    return out


def _env_port(path: Path, variable: str) -> int:
    _private(path, "the env file")
    for line in path.read_text().splitlines():
        if line.startswith(f"export {variable}="):
            value = line.split("=", 1)[1]
            if value.isdigit() and 1 <= int(value) <= 65535:
                return int(value)
    raise ServerRefused(f"the env file {path} names no port ({variable})")


def _start_tick(pid: int) -> str | None:
    """Field 22 of /proc/PID/stat (the clock tick the process started at), as the scripts read it."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return text.rsplit(")", 1)[1].split()[19]


def _endpoints(engine: Any) -> list[tuple[str, int]]:
    """The engine's endpoints as (host, port): ``endpoints`` (mysql, postgres) or ``endpoint`` (redis)."""
    found = getattr(engine, "endpoints", None)
    if found is None:
        one = getattr(engine, "endpoint", None)
        found = [] if one is None else [one]
    return [(str(e.host), int(e.port)) for e in found]


def _how_to(script: str) -> str:
    return (
        f"a crash kills only a throw-away server of scripts/{script}: start one with "
        f'`export ASYNCBENCH_STATE_DIR=$(mktemp -d); eval "$(scripts/{script} start)"` and run with its settings'
    )


def _settings_mismatch(engine: Any) -> str | None:
    """Why the restarted server would not keep what the engine set at run time, or None.
    redis's ``persistence`` is a CONFIG SET at open, lost at a restart from the script's
    redis.conf (an AOF written under it would not even be read back): it must be the
    script's own (``REDIS_SERVER_SETTINGS`` in its env file)."""
    if engine.name != "redis":
        return None
    wanted = str(engine.settings.get("persistence") or "")
    env = state_dir() / "redis-server.env"
    lines = env.read_text().splitlines() if env.is_file() and not env.is_symlink() else []
    prefix = "export REDIS_SERVER_SETTINGS='persistence="
    has = next((line[len(prefix) :].rstrip("'") for line in lines if line.startswith(prefix)), "")
    if wanted and wanted != has:
        return (
            f"persistence {wanted!r} is set at run time, and a restarted server comes back with the script's "
            f"({has or 'unknown'}): start the server with REDIS_SERVER_PERSISTENCE={wanted} and leave "
            "[engines.redis] persistence empty"
        )
    return None


def prove_script_server(engine: Any) -> ScriptServer:
    """The proven server behind ``engine``, or ServerRefused naming the first fact that fails."""
    name = str(engine.name)
    script = SCRIPTS.get(name)
    if script is None:
        raise ServerRefused(f"{name}: no script of this project starts its server, so none may be killed")
    endpoints = _endpoints(engine)
    if len(endpoints) != 1:
        raise ServerRefused(
            f"{name} has {len(endpoints)} endpoints: a cluster's crash (Galera) is not built; crash one server"
        )
    host, port = endpoints[0]
    mismatch = _settings_mismatch(engine)
    if mismatch:
        raise ServerRefused(f"{name}: {mismatch}")
    if host not in ("127.0.0.1", "localhost", "::1"):
        raise ServerRefused(f"{name}'s server {host}:{port} is not on loopback; {_how_to(script.name)}")
    try:
        return _prove(script, port)
    except ServerRefused as exc:
        raise ServerRefused(
            f"{name}'s server at {host}:{port} is not proven throw-away: {exc}; {_how_to(script.name)}"
        ) from None


def _prove(script: _Script, port: int) -> ScriptServer:
    sdir = state_dir()
    _private(sdir, "the state dir", directory=True)
    state = _read_state(sdir / f"{script.name}.state")
    env_port = _env_port(sdir / f"{script.name}.env", script.port_variable)
    if env_port != port:
        raise ServerRefused(f"the state dir {sdir} holds the server of port {env_port}, not {port}")
    # run as root, the scripts run the server (and own its work dir) as a system user: the state says which
    uid_text = state.get("uid", str(os.geteuid()))
    if not uid_text.isdigit():
        raise ServerRefused(f"the state's uid {uid_text!r} is not a uid")
    server_uid = int(uid_text)
    work = Path(state.get("dir", ""))
    if not work.is_absolute():
        raise ServerRefused(f"the state's work dir {str(work)!r} is not an absolute path")
    _private(work, "the work dir", directory=True, owner=server_uid)
    marker = work / ".asyncbench-marker"
    _private(marker, "the marker")
    if marker.read_text().splitlines()[:1] != [f"asyncbench {script.name} {state.get('token', '')}"]:
        raise ServerRefused(f"the marker in {work} does not carry the state's token")
    pid_text = state.get("pid", "")
    if not pid_text.isdigit() or int(pid_text) <= 0:
        raise ServerRefused(f"the state names no server pid ({pid_text!r})")
    pid = int(pid_text)
    tick = _start_tick(pid)
    if tick is None:
        raise ServerRefused(f"pid {pid} is not running")
    if tick != state.get("start"):
        raise ServerRefused(f"pid {pid} is not the process the script started (its start time differs)")
    try:
        proc = psutil.Process(pid)
        exe = Path(proc.exe()).name
        cmdline = proc.cmdline()
        uid = proc.uids().effective
        listening = {
            c.laddr.port for c in proc.net_connections(kind="inet") if c.status == psutil.CONN_LISTEN
        }
    except psutil.Error as exc:
        raise ServerRefused(f"pid {pid} cannot be inspected ({type(exc).__name__})") from exc
    if uid != server_uid:
        raise ServerRefused(f"pid {pid} runs as uid {uid}, not as the state's uid {server_uid}")
    if exe not in script.executables:
        raise ServerRefused(f"pid {pid} runs {exe}, not one of {', '.join(script.executables)}")
    if script.data_arg.format(dir=work) not in cmdline:
        raise ServerRefused(f"pid {pid} was not started on the state's data directory {work}")
    if port not in listening:
        raise ServerRefused(f"pid {pid} does not listen on port {port}")
    return ScriptServer(script.name, sdir, pid, tick, port, work)


def kill_server(server: ScriptServer) -> None:
    """SIGKILL the proven server and its own child processes (PostgreSQL's backends and
    writers: the server crashes as a whole, as a machine's OOM kill or a crash takes it), its
    identity checked again right before; wait until the server is gone."""
    if _start_tick(server.pid) != server.start_tick:
        raise ServerRefused(f"pid {server.pid} is no longer the proven server; nothing killed")
    try:
        children = psutil.Process(server.pid).children(recursive=True)
    except psutil.Error:
        children = []
    os.kill(server.pid, signal.SIGKILL)
    for child in children:  # psutil checks the pid is still that process (its creation time)
        with contextlib.suppress(psutil.Error):  # gone already
            child.send_signal(signal.SIGKILL)
    psutil.wait_procs(children, timeout=KILL_WAIT_S)
    deadline = time.monotonic() + KILL_WAIT_S
    while _start_tick(server.pid) == server.start_tick:  # gone (or reaped and reused: another tick)
        try:
            if psutil.Process(server.pid).status() == psutil.STATUS_ZOMBIE:
                break  # dead; its parent (the script's subshell) reaps it
        except psutil.NoSuchProcess:
            break
        if time.monotonic() > deadline:
            raise RuntimeError(
                f"the server (pid {server.pid}) did not die within {KILL_WAIT_S:.0f} s of SIGKILL"
            )
        time.sleep(0.01)


def restart_server(server: ScriptServer) -> None:
    """``scripts/<x>-server restart``: the same data directory, port and password."""
    env = {**os.environ, "ASYNCBENCH_STATE_DIR": str(server.state_dir)}
    done = subprocess.run(
        [str(SCRIPTS_DIR / server.script), "restart"],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        env=env, timeout=RESTART_TIMEOUT_S, check=False,
    )  # fmt: skip
    if done.returncode != 0:
        tail = done.stderr.decode(errors="replace").strip().splitlines()[-3:]
        raise RuntimeError(f"scripts/{server.script} restart failed ({done.returncode}): {' | '.join(tail)}")
