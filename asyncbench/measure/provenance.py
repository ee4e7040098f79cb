"""Provenance of a run: what ran, where, on what, for the JSON result and the report.

Why: a number without its context cannot be compared or reproduced. :func:`collect`
gathers, at the start of a run, the exact command line, the plan file's sha256, the
asyncbench version and git commit (with a dirty flag), the host, kernel, CPU model and
frequency governor, the load average, the data directory's filesystem and free space,
the engine and library versions and the Python build; :func:`mark_end` adds the load
average at the end. Everything is best effort: a missing ``git``, a source tree that is
not a checkout, a kernel without cpufreq, a data directory that does not exist yet,
all give ``None`` for that field, never an exception.

Numbers stay numbers (bytes, Hz, load averages, ``sys.flags``); :func:`format_rows` is
the only place they become text, for the report's Environment table.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import os
import platform
import shlex
import shutil
import socket
import subprocess
import sys
import sysconfig
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypedDict

import psutil

import asyncbench
from asyncbench import fmt
from asyncbench.measure.stats import read_governors

__all__ = [
    "SUPPORT_LIBRARIES",
    "Provenance",
    "collect",
    "file_sha256",
    "filesystem_of",
    "format_rows",
    "git_state",
    "library_versions",
    "mark_end",
    "python_build_flags",
]

#: Libraries that shape every engine's numbers (event loop, thread hops, measurement).
SUPPORT_LIBRARIES = ("anyio", "uvloop", "numpy", "hdrhistogram", "psutil", "orjson")

_GIT_TIMEOUT_S = 5.0


class Provenance(TypedDict):
    """The provenance record (JSON-ready; ``None`` where a fact is unavailable)."""

    command: str  # the command line, shell-quoted
    argv: list[str]
    plan_path: str | None
    plan_sha256: str | None
    asyncbench_version: str
    git_commit: str | None
    git_dirty: bool | None  # tracked files modified (untracked files do not count)
    hostname: str
    os: str
    kernel: str
    kernel_version: str
    architecture: str
    cpu_model: str
    logical_cpus: int
    physical_cpus: int | None
    cpu_governor: str | None  # distinct governors, comma separated; None without cpufreq
    cpu_freq_current_hz: float | None
    cpu_freq_min_hz: float | None
    cpu_freq_max_hz: float | None
    memory_total_bytes: int
    load_avg_start: list[float]  # 1, 5, 15 minutes
    load_avg_end: list[float] | None  # set by mark_end
    data_dir: str
    data_fs_type: str | None
    data_mountpoint: str | None
    data_free_bytes: int | None
    data_total_bytes: int | None
    python_implementation: str
    python_version: str
    python_compiler: str
    python_build: list[str]  # build name and date
    python_build_flags: list[str]  # short form: PGO, LTO, shared, debug, free-threaded, -O3, ...
    python_config_args: str | None
    python_sys_flags: dict[str, int]
    engine_versions: dict[str, str]
    library_versions: dict[str, str]


# --- pieces --------------------------------------------------------------------------------------


def file_sha256(path: Path) -> str | None:
    try:
        h = hashlib.sha256()
        with open(path, "rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                h.update(block)
        return h.hexdigest()
    except OSError:
        return None


def _git(repo: Path, *args: str) -> str | None:
    try:
        done = subprocess.run(
            ["git", "-C", str(repo), *args],
            capture_output=True,
            text=True,
            timeout=_GIT_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout if done.returncode == 0 else None


def git_state(repo: Path) -> tuple[str | None, bool | None]:
    """(HEAD commit, dirty) of the checkout containing ``repo``; (None, None) without git."""
    head = _git(repo, "rev-parse", "HEAD")
    if head is None:
        return None, None
    status = _git(repo, "status", "--porcelain", "--untracked-files=no")
    return head.strip(), (None if status is None else bool(status.strip()))


def _existing(path: Path) -> Path:
    """``path`` or its nearest existing ancestor (the data directory may not exist yet)."""
    p = path.resolve()
    while not p.exists() and p != p.parent:
        p = p.parent
    return p


def filesystem_of(path: Path) -> tuple[str | None, str | None]:
    """(filesystem type, mountpoint) holding ``path``: the longest matching mountpoint."""
    target = str(_existing(path))
    best: tuple[str | None, str | None] = (None, None)
    best_len = -1
    try:
        parts = psutil.disk_partitions(all=True)
    except OSError:
        return best
    for part in parts:
        mp = part.mountpoint
        inside = target == mp or target.startswith(mp.rstrip("/") + "/")
        if inside and len(mp) >= best_len:  # ">=": the later mount over the same point wins
            best, best_len = (part.fstype or None, mp), len(mp)
    return best


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _cpu_freq_hz() -> tuple[float | None, float | None, float | None]:
    """(current, min, max) in Hz; psutil reports MHz and 0 for unknown."""
    try:
        f = psutil.cpu_freq()
    except (OSError, NotImplementedError):
        f = None
    if f is None:
        return None, None, None

    def hz(mhz: float) -> float | None:
        return mhz * 1e6 if mhz else None

    return hz(f.current), hz(f.min), hz(f.max)


def python_build_flags(
    config_args: str | None = None, cflags: str | None = None, config: Mapping[str, object] | None = None
) -> list[str]:
    """Short form of how this interpreter was built: PGO, LTO, shared, debug, free-threaded,
    then the optimisation level and notable code-generation flags from CFLAGS."""
    if config is None:
        config = sysconfig.get_config_vars()
    if config_args is None:
        config_args = str(config.get("CONFIG_ARGS") or "")
    if cflags is None:
        cflags = str(config.get("CFLAGS") or "")
    try:
        args = shlex.split(config_args)
    except ValueError:
        args = config_args.split()
    out = []
    for option, label in (
        ("--enable-optimizations", "PGO"),
        ("--with-lto", "LTO"),
        ("--enable-shared", "shared"),
        ("--with-pydebug", "debug"),
        ("--disable-gil", "free-threaded"),
        ("--enable-experimental-jit", "JIT"),
    ):
        if any(a == option or a.startswith(option + "=") for a in args) and label not in out:
            out.append(label)
    if config.get("Py_DEBUG") and "debug" not in out:
        out.append("debug")
    if config.get("Py_GIL_DISABLED") and "free-threaded" not in out:
        out.append("free-threaded")
    flags = cflags.split()
    levels = [f for f in flags if f.startswith("-O")]
    if levels:
        out.append(levels[-1])  # the last -O wins, as for the compiler
    for f in flags:
        if (
            f.startswith(("-march=", "-mtune=")) or f in ("-fno-omit-frame-pointer", "-flto")
        ) and f not in out:
            out.append(f)
    return out


def library_versions(names: Iterable[str]) -> dict[str, str]:
    """Installed version of each distribution (``not installed`` when absent)."""
    out = {}
    for name in names:
        try:
            out[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            out[name] = "not installed"
    return out


# --- the record ----------------------------------------------------------------------------------


def typed_command(argv: Sequence[str]) -> str:
    """The command line as a person typed it: ``python -m asyncbench`` leaves the path of the
    package's ``__main__.py`` in ``argv[0]`` and a console script its full path; both read
    as what was typed (``python -m asyncbench ...``, ``asyncbench ...``)."""
    if not argv:
        return ""
    first = Path(argv[0])
    if first.name == "__main__.py" and first.parent.name == "asyncbench":
        head = ["python", "-m", "asyncbench"]
    elif first.name == "asyncbench":
        head = ["asyncbench"]
    else:
        head = [argv[0]]
    return shlex.join([*head, *argv[1:]])


def collect(
    argv: Sequence[str],
    plan_path: Path | str | None,
    data_dir: Path | str,
    engine_versions: Mapping[str, str],
    *,
    repo: Path | None = None,
) -> Provenance:
    """Everything about this run's context, at its start (call :func:`mark_end` at the end).

    ``engine_versions`` comes from the engines themselves (each engine class's
    ``library_versions()``, asked through the registry by the caller: this module names
    no engine);
    ``repo`` is the source checkout to describe (default: the one holding asyncbench).
    """
    plan = Path(plan_path) if plan_path is not None else None
    data = Path(data_dir)
    commit, dirty = git_state(repo if repo is not None else Path(asyncbench.__file__).resolve().parent.parent)
    governors = read_governors()
    current_hz, min_hz, max_hz = _cpu_freq_hz()
    fs_type, mountpoint = filesystem_of(data)
    free: int | None
    total: int | None
    try:
        usage = shutil.disk_usage(_existing(data))
        free, total = int(usage.free), int(usage.total)
    except OSError:
        free = total = None
    config = sysconfig.get_config_vars()
    return Provenance(
        command=typed_command(argv),
        argv=list(argv),
        plan_path=str(plan) if plan is not None else None,
        plan_sha256=file_sha256(plan) if plan is not None else None,
        asyncbench_version=asyncbench.__version__,
        git_commit=commit,
        git_dirty=dirty,
        hostname=socket.gethostname(),
        os=platform.system(),
        kernel=platform.release(),
        kernel_version=platform.version(),
        architecture=platform.machine(),
        cpu_model=_cpu_model(),
        logical_cpus=os.cpu_count() or 1,
        physical_cpus=psutil.cpu_count(logical=False),
        cpu_governor=", ".join(sorted(set(governors.values()))) or None,
        cpu_freq_current_hz=current_hz,
        cpu_freq_min_hz=min_hz,
        cpu_freq_max_hz=max_hz,
        memory_total_bytes=int(psutil.virtual_memory().total),
        load_avg_start=list(os.getloadavg()),
        load_avg_end=None,
        data_dir=str(data),
        data_fs_type=fs_type,
        data_mountpoint=mountpoint,
        data_free_bytes=free,
        data_total_bytes=total,
        python_implementation=platform.python_implementation(),
        python_version=platform.python_version(),
        python_compiler=platform.python_compiler(),
        python_build=list(platform.python_build()),
        python_build_flags=python_build_flags(config=config),
        python_config_args=(str(config["CONFIG_ARGS"]) if config.get("CONFIG_ARGS") else None),
        python_sys_flags={name: int(getattr(sys.flags, name)) for name in _sys_flag_names()},
        engine_versions=dict(engine_versions),
        library_versions=library_versions(SUPPORT_LIBRARIES),
    )


def _sys_flag_names() -> tuple[str, ...]:
    """The named fields of ``sys.flags``, in their order (a struct sequence)."""
    return tuple(getattr(type(sys.flags), "__match_args__", ()))


def mark_end(env: Provenance | dict[str, Any]) -> None:
    """Record the load average at the end of the run."""
    env["load_avg_end"] = list(os.getloadavg())


# --- report --------------------------------------------------------------------------------------


def _load(values: Sequence[float] | None) -> str:
    return " / ".join(f"{v:.2f}" for v in values) if values else "-"


def _ghz(hz: float | None) -> str:
    return f"{hz / 1e9:.2f} GHz" if hz else "-"


def _versions(versions: Mapping[str, str]) -> str:
    return ", ".join(f"{k} {v}" for k, v in versions.items()) or "-"


#: sys.flags values of a plain ``python`` run; only the others are shown in the report.
_DEFAULT_SYS_FLAGS = {"hash_randomization": 1, "int_max_str_digits": -1}


def format_rows(env: Provenance) -> list[tuple[str, str]]:
    """(label, text) rows for the report's Environment table: the only formatting of numbers."""
    commit = env["git_commit"]
    if commit is None:
        source = f"{env['asyncbench_version']} (not a git checkout)"
    else:
        dirty = {True: ", uncommitted changes", False: "", None: ", status unknown"}[env["git_dirty"]]
        source = f"{env['asyncbench_version']}, git {commit[:12]}{dirty}"
    plan = env["plan_path"] or "-"
    if env["plan_sha256"]:
        plan += f" (sha256 {env['plan_sha256']})"
    cpus = f"{env['logical_cpus']} logical"
    if env["physical_cpus"]:
        cpus += f", {env['physical_cpus']} physical"
    if env["cpu_governor"] is None:
        freq = "no cpufreq interface (governor unknown)"
    else:
        freq = f"governor {env['cpu_governor']}"
    if env["cpu_freq_current_hz"]:
        freq += f"; {_ghz(env['cpu_freq_current_hz'])}"
        if env["cpu_freq_min_hz"] or env["cpu_freq_max_hz"]:
            freq += f" (min {_ghz(env['cpu_freq_min_hz'])}, max {_ghz(env['cpu_freq_max_hz'])})"
    fs = env["data_fs_type"] or "unknown filesystem"
    if env["data_mountpoint"]:
        fs += f" on {env['data_mountpoint']}"
    if env["data_free_bytes"] is not None and env["data_total_bytes"] is not None:
        fs += f", {fmt.size(env['data_free_bytes'])} free of {fmt.size(env['data_total_bytes'])}"
    flags = [f"{k}={v}" for k, v in env["python_sys_flags"].items() if v != _DEFAULT_SYS_FLAGS.get(k, 0)]
    build = ", ".join(env["python_build_flags"]) or "-"
    python = (
        f"{env['python_implementation']} {env['python_version']} ({env['python_compiler']}); build {build}"
    )
    if flags:
        python += f"; sys.flags {' '.join(flags)}"
    return [
        ("Command", typed_command(env["argv"]) if env.get("argv") else env["command"]),  # results before it too
        ("Plan", plan),
        ("asyncbench", source),
        ("Host", env["hostname"]),
        ("Kernel", f"{env['os']} {env['kernel']} ({env['architecture']})"),
        ("CPU", f"{env['cpu_model']}, {cpus}"),
        ("CPU frequency", freq),
        ("Memory", fmt.size(env["memory_total_bytes"])),
        (
            "Load average (1/5/15 min)",
            f"start {_load(env['load_avg_start'])}, end {_load(env['load_avg_end'])}",
        ),
        ("Data directory", f"{env['data_dir']}: {fs}"),
        ("Python", python),
        ("Engine libraries", _versions(env["engine_versions"])),
        ("Libraries", _versions(env["library_versions"])),
    ]
