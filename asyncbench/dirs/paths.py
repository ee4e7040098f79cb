"""Every path a run will write, checked before anything runs or is created (exit 2).

A run writes under ``--output`` (``profiles-N-pP/`` with its results, the default log,
``latest.*``), under ``--data`` (``profiles-N/<engine>/``, the engines' stores; YCSB's are
``records-N-pP/`` and ``records-N/<engine>/``) and to
``--log-file``. Finding out at the end that one of them cannot be written loses the whole
benchmark; finding out that one of them is the plan, a result or a store corrupts it. So:

- ``--output`` and ``--data`` must be directories or creatable as directories, writable
  (probed by creating a file: permission bits lie for root and read-only mounts);
- the ``profiles-N`` directories asyncbench creates below them must be real directories
  if they exist (not files, not symlinks): nothing is written through a symlink below the
  directories the user named;
- neither the output nor the log may lie inside an engine's data directory, which the
  engine resets;
- the log must be a new file or a log asyncbench started (its first line is the identifying
  record it starts logs with: never the plan, a result, an empty file or anything else) and
  left as it was (recorded in its directory's ledger, :mod:`asyncbench.fs.ledger`: not a
  user's copy, edit or hard link), a regular file, not a symlink, in a writable directory,
  and not inside any engine store directory (one holding a store marker, of this run or
  another);
- with ``--update-latest``, an existing ``latest.md`` / ``latest-*.svg`` / ``latest.json``
  must be asyncbench's own (its marker, and its ledger record);
- an isolated run needs a writable temporary directory for its engine children;
- every path must be valid UTF-8: results and logs record paths as JSON text.

Engine directories themselves (``DATA/profiles-N/<engine>``) are the engine's to judge
when it opens them: it refuses one that is not its own store (a ``Failed: open`` row).
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import stat
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path

from asyncbench.config import BenchConfig, ConfigError
from asyncbench.engines.store_dir import MARKER as STORE_MARKER
from asyncbench.fs.ledger import LedgerError, check_directory, entry_problem
from asyncbench.fs.ownership import Proof, is_own_log, ownership_problem
from asyncbench.parse import check_printable

__all__ = ["check_run_paths", "engine_dirs", "output_run_dirs", "result_dir", "store_root"]


def result_dir(output: Path, profiles: int, parallelism: int, unit: str) -> Path:
    """``OUTPUT/profiles-N-pP``: one folder per (profiles, parallelism) level, named as the
    reference names its output folders; named by what the workload counts
    (``unit``, the workload's: ``records-N-pP`` for YCSB, whose size is a record count)."""
    return output / f"{unit}-{profiles}-p{parallelism}"


def store_root(data: Path, profiles: int, unit: str) -> Path:
    """``DATA/profiles-N``: the folder of one size's engine stores (``DATA/profiles-N/<engine>``),
    named by what the workload counts as :func:`result_dir` is (``records-N`` for YCSB, whose
    store holds records). The profile store's keeps its name, so its kept stores are still
    found, reused and proven its own. Every path to a store is built here."""
    return data / f"{unit}-{profiles}"


def output_run_dirs(cfg: BenchConfig) -> list[Path]:
    """``OUTPUT/profiles-N-pP`` of every (profiles, parallelism) level of the run."""
    return [result_dir(cfg.output, level.profiles, level.parallelism, cfg.workload_impl.unit) for level in cfg.levels()]


def engine_dirs(cfg: BenchConfig) -> list[Path]:
    """``DATA/profiles-N/<engine>`` of every profile count and engine of the run."""
    return [store_root(cfg.data, n, cfg.workload_impl.unit) / name for n in cfg.profiles for name in cfg.engines]


def check_run_paths(
    cfg: BenchConfig,
    log_file: str | None,
    latest: Sequence[tuple[Path, Callable[[Path], bool], str]] = (),
    where: str = "command line",
) -> None:
    """Raise :class:`ConfigError` (exit 2) for the first path the run could not or must
    not write; creates nothing."""
    _utf8(where, "plan", cfg.source)
    for key, base in (("output", cfg.output), ("data", cfg.data)):
        _utf8(where, key, base)
        _writable_tree(where, key, base)
    for run_dir in output_run_dirs(cfg):
        _own_subdir(where, "output", run_dir)
        _ledger(where, "output", run_dir)
    _ledger(where, "output", cfg.output)  # the default log's, and latest.*'s
    for n in cfg.profiles:
        _own_subdir(where, "data", store_root(cfg.data, n, cfg.workload_impl.unit))
    stores = [_real(d) for d in engine_dirs(cfg)]
    _outside_stores(where, "output", cfg.output, stores)
    if log_file is not None:
        _check_log(where, Path(log_file), cfg, stores)
    for path, own, kind in latest:
        _replaceable(where, "--update-latest", path, own, kind)
    if cfg.isolate:
        _temp_dir(where)


# --- the checks -------------------------------------------------------------------------


def _utf8(where: str, key: str, path: str | Path) -> None:
    if "\x00" in str(path):  # os.lstat would raise ValueError: a traceback, not a message
        raise ConfigError(where, key, f"{str(path)!r} contains a NUL character, which no path can hold")
    try:
        str(path).encode("utf-8")
    except UnicodeEncodeError:
        raise ConfigError(
            where,
            key,
            f"{str(path)!r} contains bytes that are not UTF-8; results and logs record paths "
            "as text, so use a UTF-8 name",
        ) from None


def _existing_prefix(path: Path) -> Path:
    """The longest leading part of ``path`` that exists (a dangling symlink counts)."""
    probe = path
    while not os.path.lexists(probe) and probe.parent != probe:
        probe = probe.parent
    return probe


#: File systems that hold no files of their own: the kernel's views (processes, devices,
#: control groups, tracing). A store or a result written there is lost or fails oddly, and
#: root may even be able to create a file in some of them, so the probe below cannot tell.
PSEUDO_FS = frozenset({
    "proc", "sysfs", "devtmpfs", "devpts", "cgroup", "cgroup2", "debugfs", "tracefs",
    "securityfs", "pstore", "bpf", "configfs", "fusectl", "mqueue", "hugetlbfs",
    "binfmt_misc", "efivarfs", "autofs", "rpc_pipefs", "nsfs", "selinuxfs",
})  # fmt: skip
#: Trees that are the kernel's whatever is mounted inside them (/sys/fs/cgroup is a tmpfs).
PSEUDO_TREES = (Path("/proc"), Path("/sys"))
MOUNTS = Path("/proc/self/mounts")


def _mount_of(path: Path) -> tuple[Path, str] | None:
    """The mount point holding ``path`` (a real path) and its file system type, from the
    kernel's mount table; None when the table cannot be read (not Linux)."""
    try:
        lines = MOUNTS.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return None
    best: tuple[Path, str] | None = None
    for line in lines:
        fields = line.split()
        if len(fields) < 3:
            continue
        # the table writes a space, tab, newline and backslash in a mount point as \ooo
        point = Path(re.sub(r"\\([0-7]{3})", lambda m: chr(int(m[1], 8)), fields[1]))
        if (path == point or path.is_relative_to(point)) and (best is None or len(point.parts) >= len(best[0].parts)):
            best = (point, fields[2])
    return best


def _not_pseudo(where: str, key: str, path: Path, probe: Path) -> None:
    """``probe`` (the existing part of ``path``) is not on a kernel pseudo file system."""
    real = _real(probe)
    mount = _mount_of(real)
    if mount is not None and mount[1] in PSEUDO_FS:
        fs = f"{mount[1]} at {mount[0]}"
    elif any(real == tree or real.is_relative_to(tree) for tree in PSEUDO_TREES):
        fs = f"the kernel's {next(t for t in PSEUDO_TREES if real == t or real.is_relative_to(t))} tree"
    else:
        return
    raise ConfigError(
        where, key, f"{path} is on a pseudo file system ({fs}), not storage; name a directory on a disk"
    )


def _writable_tree(where: str, key: str, path: Path) -> None:
    """``path`` is a directory or can be created as one, on storage (not a pseudo file
    system), and files can be created there."""
    probe = _existing_prefix(path)
    if not probe.is_dir():  # follows a symlink the user named: their choice
        what = "is a file" if probe.is_file() else "is not a directory"
        raise ConfigError(where, key, f"{path} is not a directory ({probe} {what})")
    _not_pseudo(where, key, path, probe)
    try:  # a real probe: os.access says yes to root even on a read-only file system
        with tempfile.TemporaryFile(dir=probe):
            pass
    except OSError as exc:
        raise ConfigError(where, key, f"{path} is not writable ({probe}: {exc.strerror})") from None


def _own_subdir(where: str, key: str, path: Path) -> None:
    """A directory asyncbench creates itself: absent, or a real directory."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    except OSError as exc:
        raise ConfigError(where, key, f"{path} cannot be used: {exc.strerror}") from None
    if stat.S_ISLNK(st.st_mode):
        raise ConfigError(
            where,
            key,
            f"{path} is a symlink; asyncbench creates this directory itself and does not write through symlinks",
        )
    if not stat.S_ISDIR(st.st_mode):
        raise ConfigError(where, key, f"{path} exists and is not a directory; move it away")


def _real(path: Path) -> Path:
    return Path(os.path.realpath(path))


def _inside(path: Path, stores: list[Path]) -> Path | None:
    real = _real(path)
    return next((s for s in stores if real == s or real.is_relative_to(s)), None)


def _outside_stores(where: str, key: str, path: Path, stores: list[Path]) -> None:
    store = _inside(path, stores)
    if store is not None:
        raise ConfigError(
            where, key, f"{path} is inside the engine data directory {store}, which the engine resets"
        )


def _check_log(where: str, log: Path, cfg: BenchConfig, stores: list[Path]) -> None:
    key = "--log-file"
    _utf8(where, key, log)
    problem = check_printable(str(log))  # as --output and --data (config.PathValue)
    if problem is not None:
        raise ConfigError(where, key, f"{str(log)!r}: {problem}")
    try:
        st: os.stat_result | None = os.lstat(log)
    except FileNotFoundError:
        st = None
    except OSError as exc:  # e.g. a path through a regular file: ENOTDIR
        parent = _existing_prefix(log.parent)
        if not parent.is_dir():
            raise ConfigError(where, key, f"{log.parent} is not a directory ({parent} is a file)") from None
        raise ConfigError(where, key, f"{log} cannot be used: {exc.strerror}") from None
    if st is not None:
        if stat.S_ISLNK(st.st_mode):
            raise ConfigError(where, key, f"{log} is a symlink; asyncbench does not write through symlinks")
        if stat.S_ISDIR(st.st_mode):
            raise ConfigError(where, key, f"{log} is a directory")
        if not stat.S_ISREG(st.st_mode):
            raise ConfigError(where, key, f"{log} is not a regular file")
        with contextlib.suppress(OSError):
            if os.path.samefile(log, cfg.source):
                raise ConfigError(where, key, f"{log} is the plan file")
        _outside_any_store(where, key, log)
        if not is_own_log(log):
            raise ConfigError(
                where,
                key,
                f"{log} exists and is not an asyncbench log (it does not start with the record asyncbench "
                "starts its logs with); asyncbench appends only to logs it started",
            )
        problem = entry_problem(log, st)
        if problem is not None:
            raise ConfigError(
                where, key, f"{log} {problem}; asyncbench appends only to logs it started, as it left them"
            )
    parent = _existing_prefix(log.parent)
    if not parent.is_dir():
        raise ConfigError(where, key, f"{log.parent} is not a directory ({parent} is a file)")
    _outside_stores(where, key, log, stores)
    _outside_any_store(where, key, log)
    if parent != log.parent and os.path.abspath(log.parent) != os.path.abspath(cfg.output):
        # a typo in a directory name, most likely: only the output directory is created for it
        raise ConfigError(
            where, key, f"{log.parent} does not exist; a log goes in an existing directory or in --output"
        )
    _writable_tree(where, key, log.parent)
    _ledger(where, key, log.parent)


def _outside_any_store(where: str, key: str, log: Path) -> None:
    """Not inside any engine store directory asyncbench made (one with a store marker),
    whatever run it belongs to: a store's files (a WAL, a LOCK) are never a log."""
    probe = _real(_existing_prefix(log.parent))
    for directory in (probe, *probe.parents):
        if os.path.lexists(directory / STORE_MARKER):
            raise ConfigError(
                where,
                key,
                f"{log} is inside the engine store directory {directory}; a log is never written there",
            )


def _ledger(where: str, key: str, directory: Path) -> None:
    """The directory's ledger (``.asyncbench-owned``), if any, is one asyncbench wrote: the
    files written there are recorded in it (:mod:`asyncbench.fs.ledger`)."""
    try:
        check_directory(directory)
    except LedgerError as exc:
        raise ConfigError(where, key, str(exc)) from None
    except OSError:  # not a directory (yet): the other checks say what is wrong
        return


def _replaceable(where: str, key: str, path: Path, proof: Proof, what: str) -> None:
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    if stat.S_ISLNK(st.st_mode) or not proof(path):
        raise ConfigError(
            where, key, f"{path} exists and is not an asyncbench {what}; it would be overwritten"
        )
    problem = ownership_problem(path, st, proof)
    if problem is not None:
        raise ConfigError(
            where, key, f"{path} {problem}; asyncbench replaces only the {what} it wrote, as it left it"
        )


def _temp_dir(where: str) -> None:
    try:
        probe = tempfile.mkdtemp(prefix="asyncbench-probe-")
    except OSError as exc:
        raise ConfigError(
            where,
            "temporary directory",
            f"an isolated run needs a writable temporary directory for its engine processes "
            f"({exc}); set TMPDIR or run with --no-isolate",
        ) from None
    shutil.rmtree(probe, ignore_errors=True)
