"""Exclusive locks on the directories a run writes, so two runs never share one.

Without them two runs on one ``--data`` reset each other's stores mid-phase and both
report "ok" with contaminated timings. A lock is ``fcntl.flock`` on a small file that
records the holder's pid (for the error message); the kernel drops it when the last
descriptor closes, so a killed run never leaves a stale lock. An isolated engine child
inherits its lock's descriptor (``fd``), so the lock holds for as long as the child runs,
even if the parent is killed first.

A run that ends cleanly removes the lock files it created (:meth:`DirLock.remove`), and
only those: while holding the lock, and only if the name still leads to the very file it
holds, whose record names that file's inode and this process. Another process may have the
file open at that moment and lock it right after; so every acquirer, once it holds a lock,
checks that the name still leads to the file it locked and otherwise starts over on a new
file: a removed lock file is never what two runs both believe they hold. An interrupted
run's lock files stay (harmless: the next run takes them over).

A lock file is written only if it is provably asyncbench's: a new one is created whole
(a random, exclusively created temporary name holding the lock record, locked, then
hard-linked to the lock's name, which fails if anything has that name), and an existing
one is used only if it is a regular file (not a symlink), has one link (a user's file
hard-linked at the lock's name has two), belongs to this user and holds exactly a lock
record (:data:`MAGIC`, a pid, and the lock file's own inode, which asyncbench writes into
the record before the file gets its name: a record a user typed or copied there, even
byte for byte, names another inode). Anything else at the lock's name is refused with
:class:`NotOurLock` (an OSError) and left exactly as it was: the lock names sit in
directories a user can write to, and a lock that truncates whatever it finds there
would destroy a user's file, even one outside ``--data`` reached through a hard link.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import re
import stat
import tempfile
from dataclasses import dataclass
from pathlib import Path

__all__ = ["MAGIC", "DirLock", "Locked", "NotOurLock", "acquire", "lock_record"]

#: The first line of every lock file asyncbench writes.
MAGIC = b"asyncbench lock"
_RECORD = re.compile(rb"asyncbench lock\npid ([0-9]{10})\nfile ([0-9]{20})\n")
#: A lock file larger than this is not a lock record (the record is under 60 bytes).
_MAX_RECORD = 64


class Locked(RuntimeError):
    """Another process holds the lock; the message names what is locked and its pid."""

    def __init__(self, what: Path, pid: int | None) -> None:
        holder = f"pid {pid}" if pid else "another process (pid not recorded yet)"
        super().__init__(f"{what} is in use by another asyncbench run: locked by {holder}")
        self.what, self.pid = what, pid


class NotOurLock(OSError):
    """Something at a lock file's name that asyncbench cannot prove it wrote; untouched."""

    def __init__(self, path: Path, reason: str) -> None:
        super().__init__(
            errno.EEXIST,
            f"{path} {reason}, so it is not a lock file asyncbench wrote; asyncbench leaves it alone "
            "(if it is a stale lock of an older asyncbench, delete it by hand)",
        )
        self.path = path


@dataclass
class DirLock:
    """A held lock: ``what`` is the directory it guards, ``fd`` the open lock file."""

    what: Path
    path: Path
    fd: int
    created: bool = False  # this process created the lock file (so it may remove it)

    def release(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def remove(self) -> None:
        """Release the lock, first deleting its file if this process created it and the
        name still leads to the file it holds, holding this process's record (module
        docstring); anything else at the name is left alone."""
        if self.fd >= 0 and self.created:
            with contextlib.suppress(OSError):
                held, named = os.fstat(self.fd), os.lstat(self.path)
                same = (held.st_dev, held.st_ino) == (named.st_dev, named.st_ino) and stat.S_ISREG(named.st_mode)
                if same and _holder(self.fd, held.st_ino) == os.getpid():
                    os.unlink(self.path)
        self.release()


def lock_record(pid: int, ino: int) -> bytes:
    """The whole content of lock file ``ino`` (its inode) held by ``pid`` (fixed length:
    rewriting it in place never leaves a reader half of two records)."""
    return MAGIC + f"\npid {pid:010d}\nfile {ino:020d}\n".encode()


def acquire(what: Path, lock_file: Path) -> DirLock:
    """Lock ``what`` through ``lock_file``: created whole if missing, else used only if it
    is provably a lock file asyncbench wrote.

    Raises :class:`Locked` if another process holds it, :class:`NotOurLock` if something
    else has its name (nothing is written to it), OSError if it cannot be created.
    """
    for _ in range(_ATTEMPTS):
        try:
            return DirLock(what, lock_file, _create(what, lock_file), created=True)
        except FileExistsError:
            pass
        try:
            return DirLock(what, lock_file, _take_existing(what, lock_file))
        except (_Removed, FileNotFoundError):  # its holder removed it meanwhile: start over
            continue
    raise Locked(what, None)


#: Tries of :func:`acquire` when the lock file keeps being removed under it (each removal
#: is a run that ended; many in a row would be a pathological loop, reported as in use).
_ATTEMPTS = 20


class _Removed(Exception):
    """The lock file was removed (or replaced) between opening it and locking it."""


def _create(what: Path, lock_file: Path) -> int:
    """A new lock file, locked and holding its record before it has its name."""
    fd, tmp = tempfile.mkstemp(dir=lock_file.parent, prefix=f"{lock_file.name}.", suffix=".tmp")
    try:
        os.set_inheritable(fd, False)
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # nobody else can see it yet
        os.fchmod(fd, 0o644)
        os.write(fd, lock_record(os.getpid(), os.fstat(fd).st_ino))
        try:
            os.link(tmp, lock_file, follow_symlinks=False)
        except OSError as exc:
            if exc.errno not in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EMLINK):
                raise
            # no hard links here: take the name only if nothing has it (rename would replace)
            _create_in_place(lock_file)
            os.close(fd)
            fd = -1
            return _take_existing(what, lock_file)
    except BaseException:
        if fd >= 0:
            os.close(fd)
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    os.unlink(tmp)
    return fd


def _create_in_place(lock_file: Path) -> None:
    """Where hard links are unsupported: create the name exclusively and write the record."""
    fd = os.open(lock_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    try:
        os.write(fd, lock_record(os.getpid(), os.fstat(fd).st_ino))
    finally:
        os.close(fd)


def _take_existing(what: Path, lock_file: Path) -> int:
    """Lock an existing lock file after proving it is one asyncbench wrote."""
    st = os.lstat(lock_file)
    if stat.S_ISLNK(st.st_mode):
        raise NotOurLock(lock_file, "is a symlink")
    if not stat.S_ISREG(st.st_mode):
        raise NotOurLock(lock_file, "is not a regular file")
    fd = os.open(lock_file, os.O_RDWR | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    try:
        fst = os.fstat(fd)
        if (fst.st_dev, fst.st_ino) != (st.st_dev, st.st_ino) or not stat.S_ISREG(fst.st_mode):
            raise NotOurLock(lock_file, "was replaced while asyncbench looked at it")
        if fst.st_nlink != 1:
            raise NotOurLock(lock_file, f"has {fst.st_nlink} hard links")
        if fst.st_uid != os.geteuid():
            raise NotOurLock(lock_file, f"belongs to uid {fst.st_uid}, not to this user")
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            pid = _holder(fd, fst.st_ino)
            if pid is None:
                raise NotOurLock(
                    lock_file, "is locked by another process and holds no asyncbench lock record"
                ) from None
            raise Locked(what, pid) from None
        try:  # its holder may have removed it between our open and our lock
            named = os.lstat(lock_file)
        except FileNotFoundError:
            raise _Removed() from None
        if (named.st_dev, named.st_ino) != (fst.st_dev, fst.st_ino):
            raise _Removed()
        if _holder(fd, fst.st_ino) is None:
            raise NotOurLock(lock_file, "does not hold an asyncbench lock record naming this file's inode")
        record = lock_record(os.getpid(), fst.st_ino)
        os.pwrite(fd, record, 0)
        os.ftruncate(fd, len(record))
    except BaseException:
        os.close(fd)
        raise
    return fd


def _holder(fd: int, ino: int) -> int | None:
    """The pid in the file's lock record, or None if it holds no lock record written for
    this very file (inode ``ino``)."""
    with contextlib.suppress(OSError):
        match = _RECORD.fullmatch(os.pread(fd, _MAX_RECORD + 1, 0))
        if match and int(match.group(2)) == ino:
            return int(match.group(1))
    return None
