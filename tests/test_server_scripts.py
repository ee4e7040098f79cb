"""The throw-away server scripts: private state, verified stop, a working server.

``scripts/mysql-server`` and ``scripts/postgres-server`` keep their state (the path of the
``mktemp -d`` work dir, its marker token, the server's pid and start tick) in a private
state dir and must never delete a directory or signal a process they did not create. Each
test points the scripts at its own state dir (``ASYNCBENCH_STATE_DIR``), so a server that CI
or a developer started is never touched.

The fast tests need no server: the state dir checks, ``stop``/``start`` faced with a
state file that points at a sentinel dir or at an unrelated ``sleep``, and ``stop`` finding
fake servers (a copy of bash named like the server, with its data dir argument) by their
work dir whatever the state file says, never another state dir's. The slow ones start
real servers (small memory) per script, log in with the password, tamper with the state
while a server runs, and stop it.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import pwd
import re
import secrets
import signal
import stat
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCRIPTS = ROOT / "scripts"
# What each script calls its work dirs, and settings that keep a test server small.
SERVERS = {
    "mysql-server": {
        "prefix": "asyncbench-mysql",
        "env": {"MYSQL_SERVER_BUFFER_POOL": "128M", "MYSQL_SERVER_LOG_FILE_SIZE": "48M"},
    },
    "postgres-server": {
        "prefix": "asyncbench-postgres",
        "env": {"POSTGRES_SERVER_SHARED_BUFFERS": "128MB"},
    },
}
EXPORT_LINE = re.compile(r"^export [A-Z_]+=(?:[A-Za-z0-9_.:,-]*|'[^']*')$")
as_root = pytest.mark.skipif(os.geteuid() != 0, reason="chown to another user needs root")


def run(script: str, command: str, state_dir: Path, timeout: float = 240) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "ASYNCBENCH_STATE_DIR": str(state_dir), **SERVERS[script]["env"]}
    return subprocess.run(
        [str(SCRIPTS / script), command],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def temp_base() -> Path:
    return Path(os.environ.get("TMPDIR") or "/tmp").resolve()


def read_state(path: Path) -> dict[str, str]:
    return dict(line.split("=", 1) for line in path.read_text().splitlines() if "=" in line)


def write_state(path: Path, state: dict[str, str]) -> None:
    path.write_text("".join(f"{k}={v}\n" for k, v in state.items()))
    path.chmod(0o600)


def proc_start(pid: int) -> str:
    """Field 22 of /proc/PID/stat: the clock tick at which the process started."""
    rest = Path(f"/proc/{pid}/stat").read_text().rsplit(") ", 1)[1].split()
    return rest[19]


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie has exited: only its parent's wait is missing.
    return Path(f"/proc/{pid}/stat").read_text().rsplit(") ", 1)[1].split()[0] != "Z"


def mode(path: Path) -> int:
    return stat.S_IMODE(path.lstat().st_mode)


@pytest.fixture
def sentinel(tmp_path: Path) -> Path:
    """A directory the scripts did not create, with a file that must survive."""
    d = tmp_path / "sentinel"
    d.mkdir()
    (d / "keep.txt").write_text("precious")
    return d


@pytest.fixture
def lookalike(script: str) -> Iterator[Path]:
    """A dir named and placed like a work dir (0700, ours, a marker) but with another token."""
    d = temp_base() / f"{SERVERS[script]['prefix']}.{secrets.token_hex(5)}"
    d.mkdir(mode=0o700)
    (d / ".asyncbench-marker").write_text(f"asyncbench {script} {'0' * 32}\n")
    (d / ".asyncbench-marker").chmod(0o600)
    (d / "keep.txt").write_text("precious")
    yield d
    subprocess.run(["rm", "-rf", "--", str(d)], check=True)


@pytest.fixture
def sleeper() -> Iterator[subprocess.Popen[bytes]]:
    """An unrelated process of ours that must not be killed."""
    proc = subprocess.Popen(["sleep", "600"])
    yield proc
    proc.kill()
    proc.wait()


def private_state_dir(tmp_path: Path) -> Path:
    d = tmp_path / "state"
    d.mkdir(mode=0o700)
    return d


# --- the state dir ---------------------------------------------------------------------


@pytest.mark.parametrize("script", SERVERS)
def test_state_dir_is_created_private(script: str, tmp_path: Path) -> None:
    state = tmp_path / "state"
    result = run(script, "status", state)
    assert result.returncode == 1, result.stderr  # nothing runs
    assert "not running" in result.stderr
    assert result.stdout == ""
    assert state.is_dir() and not state.is_symlink()
    assert mode(state) == 0o700
    assert state.stat().st_uid == os.geteuid()


@pytest.mark.parametrize("script", SERVERS)
@pytest.mark.parametrize("command", ["start", "stop", "status", "env"])
def test_symlinked_state_dir_is_refused(script: str, command: str, tmp_path: Path) -> None:
    target = private_state_dir(tmp_path)
    link = tmp_path / "link"
    link.symlink_to(target)
    result = run(script, command, link)
    assert result.returncode != 0
    assert "symlink" in result.stderr
    assert list(target.iterdir()) == []  # nothing written through the link


@as_root
@pytest.mark.parametrize("script", SERVERS)
@pytest.mark.parametrize("command", ["start", "stop", "status"])
def test_state_dir_of_another_user_is_refused(script: str, command: str, tmp_path: Path) -> None:
    state = private_state_dir(tmp_path)
    nobody = pwd.getpwnam("nobody")
    os.chown(state, nobody.pw_uid, nobody.pw_gid)
    result = run(script, command, state)
    assert result.returncode != 0
    assert f"owned by uid {nobody.pw_uid}" in result.stderr
    assert list(state.iterdir()) == []


@pytest.mark.parametrize("script", SERVERS)
def test_state_dir_open_to_others_is_refused(script: str, tmp_path: Path) -> None:
    state = private_state_dir(tmp_path)
    state.chmod(0o755)
    result = run(script, "stop", state)
    assert result.returncode != 0
    assert "mode 755" in result.stderr


@pytest.mark.parametrize("script", SERVERS)
def test_state_file_that_is_a_symlink_is_refused(script: str, tmp_path: Path, sentinel: Path) -> None:
    state = private_state_dir(tmp_path)
    elsewhere = tmp_path / "elsewhere.state"
    write_state(elsewhere, {"dir": str(sentinel), "token": "0" * 32, "uid": str(os.geteuid())})
    (state / f"{script}.state").symlink_to(elsewhere)
    result = run(script, "stop", state)
    assert result.returncode != 0
    assert "symlink" in result.stderr
    assert (sentinel / "keep.txt").read_text() == "precious"


# --- stop (and start, which clears old state first) with a tampered state file ----------


@pytest.mark.parametrize("script", SERVERS)
@pytest.mark.parametrize("command", ["stop", "start"])
def test_stop_refuses_a_dir_it_did_not_create(
    script: str, command: str, tmp_path: Path, sentinel: Path
) -> None:
    state = private_state_dir(tmp_path)
    write_state(
        state / f"{script}.state", {"dir": str(sentinel), "token": "0" * 32, "uid": str(os.geteuid())}
    )
    result = run(script, command, state)
    assert result.returncode == 1
    assert "refusing" in result.stderr
    assert (sentinel / "keep.txt").read_text() == "precious"
    assert (state / f"{script}.state").exists()  # left for the user to inspect


@pytest.mark.parametrize("script", SERVERS)
def test_stop_refuses_a_lookalike_work_dir(script: str, lookalike: Path, tmp_path: Path) -> None:
    """Right place, right name pattern, ours, 0700, a marker: only the token differs."""
    state = private_state_dir(tmp_path)
    write_state(
        state / f"{script}.state", {"dir": str(lookalike), "token": "1" * 32, "uid": str(os.geteuid())}
    )
    result = run(script, "stop", state)
    assert result.returncode == 1
    assert "token" in result.stderr
    assert (lookalike / "keep.txt").read_text() == "precious"


@pytest.mark.parametrize("script", SERVERS)
@pytest.mark.parametrize("same_start_tick", [False, True], ids=["reused-pid", "forged-start"])
def test_stop_never_signals_a_pid_it_did_not_start(
    script: str, same_start_tick: bool, tmp_path: Path, sleeper: subprocess.Popen[bytes]
) -> None:
    """The recorded pid is an unrelated `sleep` of ours: it must stay alive.

    ``reused-pid``: the start tick differs, the pid is simply another process now (a server
    that died, its pid reused): nothing to refuse, the stale state is cleared. With
    ``forged-start`` even the start tick matches the sleep, so only the executable and the
    data dir argument tell it apart from the server: a decoy, refused (exit 1, the state kept
    for inspection), and ``start`` will not start beside it.
    """
    state = private_state_dir(tmp_path)
    gone = temp_base() / f"{SERVERS[script]['prefix']}.{secrets.token_hex(5)}"  # no such dir
    write_state(
        state / f"{script}.state",
        {
            "dir": str(gone),
            "token": "0" * 32,
            "uid": str(os.geteuid()),
            "pid": str(sleeper.pid),
            "start": proc_start(sleeper.pid) if same_start_tick else "1",
        },
    )
    commands = ("stop", "start") if same_start_tick else ("stop",)  # a cleared state would start one
    for command in commands:
        result = run(script, command, state)
        assert result.returncode == (1 if same_start_tick else 0), result.stderr
        assert ("refusing" in result.stderr) == same_start_tick, result.stderr
        time.sleep(0.2)
        assert alive(sleeper.pid), f"{command} killed an unrelated process"
    assert (state / f"{script}.state").exists() == same_start_tick


# --- stop with a missing, stale or garbage pid (issue 23 item 13) ------------------------

#: Per script: work dir prefix, the server executable's name, and the data dir arguments
#: its server processes carry (one per node).
FAKE_SERVERS = {
    "mysql-server": ("asyncbench-mysql", "mariadbd", ["--datadir={dir}/data"]),
    "postgres-server": ("asyncbench-postgres", "postgres", ["{dir}/data"]),
    "galera-cluster": ("asyncbench-galera", "mariadbd", [f"--datadir={{dir}}/n{n}/data" for n in (1, 2, 3)]),
}


def _default_int_and_quit() -> None:
    """A test run started in the background of a non-interactive shell (``.ci/run &``)
    inherits SIGINT and SIGQUIT ignored, and a shell that starts with a signal ignored
    cannot trap it: the fake postgres then ignored the script's SIGINT (PostgreSQL's fast
    shutdown) and each stop test waited out the 60 s stop timeout before SIGKILL."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGQUIT, signal.SIG_DFL)


def _pid_of(command_line_part: str, within: float = 20.0) -> int:
    """The newest process whose command line holds ``command_line_part``, waiting for it:
    ``setsid -f`` returns before its child has exec'd, and on a loaded CI machine pgrep
    found nothing yet (exit 1) in one run."""
    deadline = time.monotonic() + within
    while True:
        found = subprocess.run(["pgrep", "-n", "-f", "--", command_line_part], capture_output=True, text=True)
        if found.returncode == 0:
            return int(found.stdout)
        if time.monotonic() > deadline:
            raise AssertionError(f"no process with {command_line_part!r} in its command line after {within} s")
        time.sleep(0.02)


def _fake_servers(
    tmp_path: Path, script: str, tie: Path | None = None, made: list[Path | int] | None = None
) -> tuple[Path, str, list[int]]:
    """A genuine work dir (the shape, marker and token ``start`` makes) and processes that
    look like its servers to ``stop``: an executable of the server's name (a copy of bash
    waiting in a builtin loop) with the data dir argument. ``tie``: the state dir the marker
    names, as ``start`` writes it (None: a marker from before the tie existed). ``made``
    collects the dir and each pid as soon as they exist (see the ``fakes`` fixture)."""
    prefix, exe_name, args = FAKE_SERVERS[script]
    work = temp_base() / f"{prefix}.{secrets.token_hex(5)}"
    work.mkdir(mode=0o700)
    made = [] if made is None else made
    made.append(work)
    token = secrets.token_hex(16)
    tie_line = "" if tie is None else f"state_dir={tie.resolve()}\n"
    (work / ".asyncbench-marker").write_text(f"asyncbench {script} {token}\n{tie_line}")
    (work / ".asyncbench-marker").chmod(0o600)
    (work / "data").mkdir()
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    exe = bin_dir / exe_name
    if not exe.exists():  # a second set of fakes shares it (a running one cannot be copied over)
        subprocess.run(["cp", "/bin/bash", str(exe)], check=True)
    # The builtin read waits on a FIFO opened read-write (never data, never EOF): on stdin
    # (/dev/null) it returned at once and the loop spun a core for as long as it lived.
    fifo = bin_dir / "wait.fifo"
    if not fifo.exists():
        os.mkfifo(fifo)
    loop = f"trap 'exit 0' INT TERM; exec 3<>'{fifo}'; while :; do read -r -t 1 -u 3 _ || :; done"
    pids = []
    for arg in args:  # detached (setsid -f: reparented at once, never a zombie of ours;
        # signals not ignored as a shell's background job's SIGINT would be)
        data = arg.format(dir=work)
        subprocess.run(
            ["setsid", "-f", str(exe), "-c", loop, exe_name, data],
            stdin=subprocess.DEVNULL,
            check=True,
            preexec_fn=_default_int_and_quit,
        )
        pids.append(_pid_of(data))
        made.append(pids[-1])
    return work, token, pids


def _wait_gone(pid: int, seconds: float = 10) -> bool:
    deadline = time.monotonic() + seconds
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not alive(pid)


@pytest.mark.parametrize("script", list(FAKE_SERVERS))
@pytest.mark.parametrize("pid", ["", "notapid", "dead"], ids=["missing", "garbage", "stale"])
def test_stop_with_a_bad_recorded_pid_stops_the_server_before_deleting(
    script: str, pid: str, tmp_path: Path
) -> None:
    """Before: ``stop`` printed "stopped", exited 0 and deleted the work dir while the
    server kept running. Now it finds the server by its data directory and stops it first."""
    work, token, procs = _fake_servers(tmp_path, script)
    try:
        dead = subprocess.Popen(["true"])
        dead.wait()
        state = {"dir": str(work), "token": token, "uid": str(os.geteuid())}
        bad = {"": None, "notapid": "notapid", "dead": str(dead.pid)}[pid]
        for n in range(1, len(procs) + 1):
            key = "pid" if script != "galera-cluster" else f"pid{n}"
            if bad is not None:
                state[key] = bad
                state[key.replace("pid", "start")] = "1"
        state_dir = private_state_dir(tmp_path)
        write_state(state_dir / f"{script}.state", state)
        env = {**os.environ, "ASYNCBENCH_STATE_DIR": str(state_dir)}
        result = subprocess.run(
            [str(SCRIPTS / script), "stop"], env=env, capture_output=True, text=True, timeout=120, check=False
        )
        assert result.returncode == 0, result.stderr
        assert "found by its data directory" in result.stderr
        assert all(_wait_gone(pid) for pid in procs)
        assert not work.exists()
    finally:
        for pid in procs:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        subprocess.run(["rm", "-rf", "--", str(work)], check=True)


# --- stop finds its server by the work dir, whatever the state file says (issue 34) -------

#: How a state file can fail to lead ``stop`` to the server: gone, not a state file, a
#: symlink (to a state naming a dir that is not ours), a live pid that is another process
#: (its start tick forged), a recorded dir that is not ours. Only "missing" is not refused.
STATE_CASES = ["missing", "garbage", "symlink", "decoy-pid", "foreign-dir"]
#: The signal each script stops its server with.
STOP_SIGNALS = {"mysql-server": "TERM", "postgres-server": "INT", "galera-cluster": "TERM"}


def _pid_keys(script: str) -> list[str]:
    return ["pid1", "pid2", "pid3"] if script == "galera-cluster" else ["pid"]


def _tamper(
    case: str, script: str, state_file: Path, good: dict[str, str], decoy: int, sentinel: Path
) -> None:
    """Leaves ``state_file`` as ``case`` (STATE_CASES) says; ``good`` is the true state."""
    if state_file.exists() or state_file.is_symlink():
        state_file.unlink()
    if case == "garbage":
        state_file.write_text("this is not a state file\n")
        state_file.chmod(0o600)
    elif case == "symlink":
        elsewhere = sentinel.parent / "elsewhere.state"
        write_state(elsewhere, {**good, "dir": str(sentinel)})
        state_file.symlink_to(elsewhere)
    elif case == "decoy-pid":
        forged = dict(good)
        for key in _pid_keys(script):
            forged[key], forged[key.replace("pid", "start")] = str(decoy), proc_start(decoy)
        write_state(state_file, forged)
    elif case == "foreign-dir":
        write_state(state_file, {**good, "dir": str(sentinel)})
    else:
        assert case == "missing"


def _check_stopped_by_work_dir(
    case: str, result: subprocess.CompletedProcess[str], state_file: Path, work: Path, pids: list[int],
    decoy: int, sentinel: Path,
) -> None:  # fmt: skip
    """What ``stop`` must have done in ``case``: the servers found by their data directory and
    stopped, their work dir deleted; the decoy alive, the sentinel intact; a refused state
    file kept (exit 1, saying so), a missing one not an error."""
    assert result.returncode == (0 if case == "missing" else 1), result.stderr
    assert "found by its data directory" in result.stderr, result.stderr
    assert all(_wait_gone(pid) for pid in pids), f"the server still runs:\n{result.stderr}"
    assert not work.exists()
    assert alive(decoy), "stop killed an unrelated process"
    assert (sentinel / "keep.txt").read_text() == "precious"
    if case == "missing":
        assert not state_file.exists()
    else:
        assert state_file.exists() or state_file.is_symlink(), "a state file it did not trust was deleted"
        assert "inspect it and delete it by hand" in result.stderr


def _stop(script: str, state_dir: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "ASYNCBENCH_STATE_DIR": str(state_dir)}
    return subprocess.run(
        [str(SCRIPTS / script), "stop"], env=env, capture_output=True, text=True, timeout=120, check=False
    )


@pytest.fixture
def fakes(tmp_path: Path) -> Iterator[list[Path | int]]:
    """What ``_fake_servers(..., made=fakes)`` made: killed and removed after the test,
    also when it failed half-way."""
    made: list[Path | int] = []
    yield made
    for item in made:
        if isinstance(item, int):
            with contextlib.suppress(ProcessLookupError):
                os.kill(item, signal.SIGKILL)
        else:
            subprocess.run(["rm", "-rf", "--", str(item)], check=True)


@pytest.mark.parametrize("script", list(FAKE_SERVERS))
@pytest.mark.parametrize("case", STATE_CASES)
def test_stop_finds_its_server_whatever_the_state_file_says(
    script: str, case: str, tmp_path: Path, sleeper: subprocess.Popen[bytes], sentinel: Path,
    fakes: list[Path | int],
) -> None:  # fmt: skip
    """Before: a missing state file made ``stop`` exit 0 saying "not running", and the other
    cases refused with exit 1 — all leaving the server running with no way to stop it. Now
    ``stop`` finds the work dir whose marker names its state dir, and its servers."""
    state_dir = private_state_dir(tmp_path)
    work, token, pids = _fake_servers(tmp_path, script, tie=state_dir, made=fakes)
    state_file = state_dir / f"{script}.state"
    good = {"dir": str(work), "token": token, "uid": str(os.geteuid())}
    _tamper(case, script, state_file, good, sleeper.pid, sentinel)
    result = _stop(script, state_dir)
    _check_stopped_by_work_dir(case, result, state_file, work, pids, sleeper.pid, sentinel)


@pytest.mark.parametrize("script", list(FAKE_SERVERS))
@pytest.mark.parametrize("recorded", [False, True], ids=["no-state-file", "state-file"])
def test_stop_never_touches_another_state_dirs_server(
    script: str, recorded: bool, tmp_path: Path, fakes: list[Path | int]
) -> None:
    """Three servers of the same script: one of state dir X, one of state dir Y, one from a
    marker without a state dir (an older script's). ``stop`` with X stops X's only."""
    x = private_state_dir(tmp_path)
    y = tmp_path / "other-state"
    y.mkdir(mode=0o700)
    work_x, token_x, pids_x = _fake_servers(tmp_path, script, tie=x, made=fakes)
    work_y, _, pids_y = _fake_servers(tmp_path, script, tie=y, made=fakes)
    work_old, _, pids_old = _fake_servers(tmp_path, script, made=fakes)
    if recorded:
        write_state(x / f"{script}.state", {"dir": str(work_x), "token": token_x, "uid": str(os.geteuid())})
    result = _stop(script, x)
    assert result.returncode == 0, result.stderr
    assert all(_wait_gone(pid) for pid in pids_x)
    assert not work_x.exists()
    time.sleep(0.2)
    assert all(alive(pid) for pid in pids_y + pids_old), "stop touched another state dir's server"
    assert (work_y / ".asyncbench-marker").is_file() and (work_old / ".asyncbench-marker").is_file()
    assert str(work_y) not in result.stderr


@pytest.mark.parametrize("script", list(FAKE_SERVERS))
def test_stop_names_a_server_it_cannot_tie_to_its_state_dir(
    script: str, tmp_path: Path, fakes: list[Path | int]
) -> None:
    """A server started by an older script (its marker names no state dir) and no state
    file: ``stop`` cannot prove it is this state dir's, so it leaves it running, but names
    it and says how to stop it (before: "not running", nothing else)."""
    state_dir = private_state_dir(tmp_path)
    work, _, pids = _fake_servers(tmp_path, script, made=fakes)
    result = _stop(script, state_dir)
    assert result.returncode == 0, result.stderr
    for pid in pids:
        assert f"pid {pid} " in result.stderr and f"kill -{STOP_SIGNALS[script]} {pid}," in result.stderr
    assert str(work) in result.stderr
    time.sleep(0.2)
    assert all(alive(pid) for pid in pids)
    assert work.is_dir()


# --- a real server -----------------------------------------------------------------------


class Server:
    def __init__(self, script: str, state_dir: Path, env: dict[str, str], stdout: str) -> None:
        self.script, self.state_dir, self.env, self.stdout = script, state_dir, env, stdout
        self.state_file = state_dir / f"{script}.state"
        self.env_file = state_dir / f"{script}.env"
        self.state = read_state(self.state_file)
        self.pid = int(self.state["pid"])
        self.work_dir = Path(self.state["dir"])

    def run(self, command: str) -> subprocess.CompletedProcess[str]:
        return run(self.script, command, self.state_dir)


def parse_exports(stdout: str) -> dict[str, str]:
    env = {}
    for line in stdout.splitlines():
        name, value = line.removeprefix("export ").split("=", 1)
        env[name] = value.strip("'")
    return env


@pytest.fixture(scope="module", params=list(SERVERS))
def server(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    script = request.param
    state_dir = tmp_path_factory.mktemp(script) / "state"
    started = run(script, "start", state_dir)
    assert started.returncode == 0, f"{script} start failed:\n{started.stderr}"
    server = Server(script, state_dir, parse_exports(started.stdout), started.stdout)
    yield server
    run(script, "stop", state_dir)


@pytest.mark.slow
def test_start_prints_only_exports_and_keeps_its_files_private(server: Server) -> None:
    lines = server.stdout.splitlines()
    assert lines and all(EXPORT_LINE.match(line) for line in lines), server.stdout
    if server.script == "mysql-server":
        assert {
            "MYSQL_HOST",
            "MYSQL_PORT",
            "MYSQL_DATABASE",
            "MYSQL_USER",
            "MYSQL_PASSWORD",
        } <= server.env.keys()
        host = server.env["MYSQL_HOST"]
    else:
        assert {"PGHOST", "PGPORT", "PGDATABASE", "PGUSER", "PGPASSWORD"} <= server.env.keys()
        host = server.env["PGHOST"]
    assert host == "127.0.0.1"
    assert mode(server.state_dir) == 0o700
    assert mode(server.env_file) == 0o600
    assert mode(server.state_file) == 0o600
    assert server.env_file.stat().st_uid == os.geteuid()
    assert mode(server.work_dir) == 0o700
    assert server.work_dir.parent == temp_base()
    assert server.run("status").returncode == 0
    again = server.run("env")
    assert again.returncode == 0 and again.stdout == server.stdout
    assert server.run("start").stdout == server.stdout  # already running: same server


async def mysql_checks(env: dict[str, str]) -> dict[str, str]:
    import asyncmy
    from asyncmy.errors import OperationalError, ProgrammingError

    conn = await asyncmy.connect(
        host=env["MYSQL_HOST"], port=int(env["MYSQL_PORT"]), user=env["MYSQL_USER"],
        password=env["MYSQL_PASSWORD"], database=env["MYSQL_DATABASE"], autocommit=True,
    )  # fmt: skip
    try:
        async with conn.cursor() as cur:
            await cur.execute("SHOW VARIABLES WHERE Variable_name IN "
                              "('log_bin', 'sync_binlog', 'innodb_flush_log_at_trx_commit', 'bind_address')")  # fmt: skip
            settings = {name: value for name, value in await cur.fetchall()}
            # What the engine and the tests do: their own databases, tables, FLUSH TABLES t.
            await cur.execute("CREATE DATABASE IF NOT EXISTS asyncbench_test_scripts")
            await cur.execute("CREATE TABLE asyncbench_test_scripts.t (id INT PRIMARY KEY)")
            await cur.execute("INSERT INTO asyncbench_test_scripts.t VALUES (1)")
            await cur.execute("FLUSH TABLES asyncbench_test_scripts.t")
            await cur.execute("DROP DATABASE asyncbench_test_scripts")
            for forbidden in ("CREATE DATABASE other_db", "CREATE DATABASE asyncbenchx",
                              "SELECT user FROM mysql.user"):  # fmt: skip
                with pytest.raises((OperationalError, ProgrammingError)):
                    await cur.execute(forbidden)
    finally:
        await conn.ensure_closed()
    return settings


async def postgres_checks(env: dict[str, str]) -> dict[str, str]:
    import asyncpg

    conn = await asyncpg.connect(
        host=env["PGHOST"], port=int(env["PGPORT"]), user=env["PGUSER"],
        password=env["PGPASSWORD"], database=env["PGDATABASE"],
    )  # fmt: skip
    try:
        settings = {name: await conn.fetchval(f"SHOW {name}") for name in ("fsync", "synchronous_commit")}
        assert await conn.fetchval("SELECT rolsuper FROM pg_roles WHERE rolname = current_user") is False
        await conn.execute("CHECKPOINT")  # the postgres engine's settle: granted via pg_checkpoint
        await conn.execute("CREATE TABLE t (id int PRIMARY KEY)")
        await conn.execute("INSERT INTO t VALUES (1)")
        assert await conn.fetchval("SELECT count(*) FROM t") == 1
        await conn.execute("DROP TABLE t")
        await conn.execute("CREATE DATABASE asyncbench_test_scripts")
        await conn.execute("DROP DATABASE asyncbench_test_scripts")
    finally:
        await conn.close()
    with pytest.raises(asyncpg.InvalidPasswordError):
        await asyncpg.connect(
            host=env["PGHOST"], port=int(env["PGPORT"]), user=env["PGUSER"],
            password="wrong", database=env["PGDATABASE"],
        )  # fmt: skip
    return settings


@pytest.mark.slow
def test_password_login_and_settings(server: Server) -> None:
    if server.script == "mysql-server":
        settings = asyncio.run(mysql_checks(server.env))
        assert settings == {
            "log_bin": "OFF",
            "sync_binlog": "0",
            "innodb_flush_log_at_trx_commit": "2",
            "bind_address": "127.0.0.1",
        }
    else:
        settings = asyncio.run(postgres_checks(server.env))
        assert settings == {"fsync": "on", "synchronous_commit": "on"}


@pytest.mark.slow
def test_stop_stops_its_own_server_and_deletes_its_dir(server: Server) -> None:
    result = server.run("stop")
    assert result.returncode == 0, result.stderr
    deadline = time.monotonic() + 10
    while alive(server.pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not alive(server.pid)
    assert not server.work_dir.exists()
    assert not server.state_file.exists() and not server.env_file.exists()
    assert server.run("status").returncode == 1
    assert server.run("stop").returncode == 0  # nothing left to stop


# --- a real server's stop, whatever its state file says (issue 34) -------------------------


def _start_server(script: str, state_dir: Path, started: list[Server]) -> Server:
    result = run(script, "start", state_dir)
    assert result.returncode == 0, f"{script} start failed:\n{result.stderr}"
    server = Server(script, state_dir, parse_exports(result.stdout), result.stdout)
    started.append(server)
    return server


@pytest.fixture
def own_servers() -> Iterator[list[Server]]:
    """The real servers a test started (``_start_server``): whatever the test did to their
    state, each is stopped afterwards by its own pid (checked by its start tick), and its
    work dir deleted; nothing else is touched."""
    started: list[Server] = []
    yield started
    for server in started:
        with contextlib.suppress(FileNotFoundError, ProcessLookupError):
            if alive(server.pid) and proc_start(server.pid) == server.state["start"]:
                os.kill(server.pid, getattr(signal, "SIG" + STOP_SIGNALS[server.script]))
                if not _wait_gone(server.pid, 30):
                    os.kill(server.pid, signal.SIGKILL)
                    _wait_gone(server.pid)
        subprocess.run(["rm", "-rf", "--", str(server.work_dir)], check=True)


def _running_servers() -> set[int]:
    """The MariaDB and PostgreSQL servers running now (whoever started them): the processes
    of those executables with a data directory argument."""
    found = set()
    for proc in Path("/proc").iterdir():
        try:
            exe = os.readlink(proc / "exe").removesuffix(" (deleted)")
            args = (proc / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if Path(exe).name in ("mariadbd", "mysqld", "postgres") and (
            b"-D" in args or any(a.startswith(b"--datadir=") for a in args)
        ):
            found.add(int(proc.name))
    return found


@pytest.mark.slow
@pytest.mark.parametrize("script", SERVERS)
@pytest.mark.parametrize("case", STATE_CASES)
def test_real_server_stop_finds_it_whatever_the_state_file_says(
    script: str, case: str, tmp_path: Path, sleeper: subprocess.Popen[bytes], sentinel: Path,
    own_servers: list[Server],
) -> None:  # fmt: skip
    """The fake-server test above, with the server ``start`` makes: its marker ties its work
    dir to the state dir, so ``stop`` finds and stops it without a usable state file."""
    server = _start_server(script, private_state_dir(tmp_path), own_servers)
    _tamper(case, script, server.state_file, server.state, sleeper.pid, sentinel)
    result = server.run("stop")
    _check_stopped_by_work_dir(
        case, result, server.state_file, server.work_dir, [server.pid], sleeper.pid, sentinel
    )
    assert server.env_file.exists() == (case != "missing")  # kept with a refused state file
    again = server.run("stop")  # nothing runs: "not running", or the kept state refused again
    assert again.returncode == (0 if case == "missing" else 1), again.stderr
    assert "found by its data directory" not in again.stderr


@pytest.mark.slow
@pytest.mark.parametrize("script", SERVERS)
def test_real_server_stop_never_touches_another_state_dirs_server(
    script: str, tmp_path: Path, own_servers: list[Server]
) -> None:
    """Two servers of one script, of state dirs X and Y; X's state file lost. ``stop`` with
    X stops X's server only: Y's runs on, and so does every server that was running before
    the test (CI's, other users')."""
    before = _running_servers()
    x = _start_server(script, tmp_path / "x", own_servers)
    y = _start_server(script, tmp_path / "y", own_servers)
    x.state_file.unlink()
    result = x.run("stop")
    assert result.returncode == 0, result.stderr
    assert "found by its data directory" in result.stderr
    assert _wait_gone(x.pid) and not x.work_dir.exists()
    assert alive(y.pid) and y.run("status").returncode == 0
    assert all(alive(pid) for pid in before), "stop touched a server it did not start"
    assert y.run("stop").returncode == 0
    assert _wait_gone(y.pid) and not y.work_dir.exists()


@pytest.mark.slow
@pytest.mark.parametrize("script", SERVERS)
def test_real_server_start_stops_the_server_whose_state_was_lost(
    script: str, tmp_path: Path, own_servers: list[Server]
) -> None:
    """Before: with the state file lost, ``start`` started a second server beside the first,
    which ran on unreachable. Now it stops the first (found by its work dir), as ``stop``
    would, and starts one."""
    state_dir = private_state_dir(tmp_path)
    first = _start_server(script, state_dir, own_servers)
    first.state_file.unlink()
    second = _start_server(script, state_dir, own_servers)
    assert _wait_gone(first.pid) and not first.work_dir.exists()
    assert second.pid != first.pid and alive(second.pid)
    assert second.run("status").returncode == 0
    assert second.run("stop").returncode == 0
    assert _wait_gone(second.pid)
