"""The directories a run creates, made without following symlinks, and locked for the run.

``--output`` and ``--data`` are the user's to name (a symlink there is their choice and is
followed). Below them asyncbench creates ``profiles-N/`` and ``profiles-N/<engine>/``
itself, so those must be real directories: a symlink or a file in their place is an error
naming it, never something to write through.

:func:`lock_run` takes, before anything runs, an exclusive lock on every output run
directory (``OUTPUT/profiles-N-pP``; with ``--update-latest`` also ``OUTPUT``, which holds
``latest.*``) and every engine data directory of the run (``DATA/profiles-N/<engine>``,
through ``DATA/profiles-N/.<engine>.lock``, outside the engine's own directory). A second
run on any of them stops with an error naming the holder's pid, before it changes
anything.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from asyncbench.config import BenchConfig
from asyncbench.dirs.paths import output_run_dirs, store_root
from asyncbench.fs.locks import DirLock, acquire

__all__ = ["RunLocks", "lock_run", "make_real_dir"]

OUTPUT_LOCK = ".asyncbench.lock"


def make_real_dir(path: Path) -> None:
    """Create ``path`` (its parent must exist or be creatable); if it exists it must be a
    directory and not a symlink. OSError naming the path otherwise."""
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.mkdir(path)
        return
    except FileExistsError:
        pass
    st = os.lstat(path)
    if stat.S_ISLNK(st.st_mode):
        raise NotADirectoryError(
            f"{path} is a symlink; asyncbench creates this directory itself and does not write through symlinks"
        )
    if not stat.S_ISDIR(st.st_mode):
        raise NotADirectoryError(f"{path} exists and is not a directory")


class RunLocks:
    """The locks a run holds; ``data_fd`` gives an engine child the descriptor to inherit."""

    def __init__(self) -> None:
        self.held: list[DirLock] = []
        self._data: dict[Path, int] = {}

    def data_fd(self, engine_dir: Path) -> int | None:
        return self._data.get(Path(engine_dir))

    def release(self, remove_created: bool = False) -> None:
        """Let go of every lock; ``remove_created`` (a run that ended cleanly): delete the
        lock files this run created first (:meth:`~asyncbench.fs.locks.DirLock.remove`)."""
        for lock in reversed(self.held):
            if remove_created:
                lock.remove()
            else:
                lock.release()
        self.held.clear()
        self._data.clear()


def lock_run(cfg: BenchConfig, update_latest: bool = False) -> RunLocks:
    """Create the run's directories and lock them all; on any failure release what was
    taken and raise (:class:`~asyncbench.fs.locks.Locked` or OSError)."""
    locks = RunLocks()
    try:
        if update_latest:
            cfg.output.mkdir(parents=True, exist_ok=True)
            locks.held.append(acquire(cfg.output, cfg.output / OUTPUT_LOCK))
        for out in output_run_dirs(cfg):
            make_real_dir(out)
            locks.held.append(acquire(out, out / OUTPUT_LOCK))
        for n in cfg.profiles:
            data = store_root(cfg.data, n, cfg.workload_impl.unit)
            make_real_dir(data)
            for name in cfg.engines:
                lock = acquire(data / name, data / f".{name}.lock")
                locks.held.append(lock)
                locks._data[data / name] = lock.fd
    except BaseException:
        locks.release()
        raise
    return locks
