"""What asyncbench wrote, by identity: the proof that a file it replaces or appends to is its own.

A marker inside a file (a report's first line, a chart's title, a log's first record) proves
only that asyncbench wrote *some* file with that content: a user's annotated copy of a
report or a log, or a hard link to their notes, carries the marker too, and replacing or
appending to it destroys their work. So every directory asyncbench writes files in keeps a
ledger, ``.asyncbench-owned`` (JSON), naming each file it placed there with the file's
identity after its last write: inode, size, modification time (ns) and, when the content
is at hand, its SHA-256. A file is asyncbench's own only if it is a regular file with one
link, owned by this user, and matches its record: a copy has another inode, an edit
another size, time or hash, a hard link two links.

A file that is open for appending (a run's log) is recorded as open by the run's pid, and
its identity only when the run closes it: an engine process of that run (its child) may
append meanwhile, and after a run that did not close it (a crash, SIGKILL) what was written
since is unproven, so the file is refused like any other.

The ledger is updated under an ``flock`` on its directory (two runs, or a run and the
``report`` command, may write one directory) and written whole (a temporary name, then
rename). A ``.asyncbench-owned`` that is not a ledger (other content, a symlink, a hard
link, another user's) is never replaced: nothing in that directory can then be proven.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import os
import secrets
import stat
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import orjson

from asyncbench.parse import load_json

__all__ = ["LEDGER", "LedgerError", "check_directory", "entry_problem", "record", "record_open"]

#: The ledger's name in each directory asyncbench writes files in.
LEDGER = ".asyncbench-owned"
FORMAT = "asyncbench-owned/1"
#: A ledger larger than this is not one (an entry is under 200 bytes: this is some
#: 300_000 files, a run writes about a dozen per directory).
MAX_LEDGER_BYTES = 64 * 1024 * 1024


class LedgerError(OSError):
    """The directory's ``.asyncbench-owned`` is not a ledger asyncbench wrote; untouched."""


def record(files: Sequence[tuple[Path, os.stat_result, bytes | None]]) -> None:
    """Record each ``(path, stat after the write, content or None)`` as asyncbench's own,
    in the ledger of its directory (the content gives a SHA-256 to compare later)."""
    by_dir: dict[Path, dict[str, dict[str, Any]]] = {}
    for path, st, data in files:
        entry: dict[str, Any] = {"ino": st.st_ino, "size": st.st_size, "mtime_ns": st.st_mtime_ns}
        if data is not None:
            entry["sha256"] = hashlib.sha256(data).hexdigest()
        by_dir.setdefault(path.parent, {})[path.name] = entry
    for directory, entries in by_dir.items():
        with _locked(directory) as dfd:
            ledger = _load(directory, dfd)
            ledger.update(entries)
            _store(directory, dfd, ledger)


def check_directory(directory: Path) -> None:
    """LedgerError if ``directory``'s ledger name holds anything but a ledger asyncbench
    wrote: no file could be recorded there, so none is written (checked before writing)."""
    try:
        with _locked(directory) as dfd:
            _load(directory, dfd)
    except FileNotFoundError:  # no directory yet: it will be created, with no ledger in it
        return


def record_open(path: Path, st: os.stat_result) -> None:
    """Record ``path`` (inode ``st``) as open for appending by this process: proven to this
    process's children (:func:`entry_problem` with ``joining``) until :func:`record` closes it."""
    with _locked(path.parent) as dfd:
        ledger = _load(path.parent, dfd)
        ledger[path.name] = {"ino": st.st_ino, "open_by": os.getpid()}
        _store(path.parent, dfd, ledger)


def entry_problem(path: Path, st: os.stat_result, joining: bool = False) -> str | None:
    """Why ``path`` (whose lstat is ``st``) cannot be proven asyncbench's own, or None.

    ``joining``: the caller is an engine process of the run that holds the file open (its
    parent), which may append to it while that run has it open.
    """
    if not stat.S_ISREG(st.st_mode):
        return "is not a regular file"
    if st.st_nlink != 1:
        return f"has {st.st_nlink} hard links (another name shares its contents)"
    if st.st_uid != os.geteuid():
        return f"belongs to uid {st.st_uid}, not to this user"
    try:
        with _locked(path.parent) as dfd:
            entry = _load(path.parent, dfd).get(path.name)
    except OSError as exc:
        return f"cannot be proven asyncbench's: {exc}"
    ledger = path.parent / LEDGER
    if not isinstance(entry, dict):
        return f"is not recorded in {ledger} as a file asyncbench wrote"
    if entry.get("ino") != st.st_ino:
        return f"is not the file asyncbench wrote there ({ledger} records another inode: a copy or a replacement)"
    holder = entry.get("open_by")
    if holder is not None:
        if joining and holder == os.getppid():
            return None
        if _alive(holder):
            return f"is being written by another asyncbench run (pid {holder})"
        return (
            f"was left open by an asyncbench run that did not finish (pid {holder}), "
            "so what was written to it since is unproven"
        )
    if entry.get("size") != st.st_size or entry.get("mtime_ns") != st.st_mtime_ns:
        return "changed since asyncbench last wrote it (its size or modification time differs)"
    digest = entry.get("sha256")
    if digest is not None and _sha256(path) != digest:
        return "changed since asyncbench last wrote it (its contents differ)"
    return None


# --- the ledger file ------------------------------------------------------------------------


@contextlib.contextmanager
def _locked(directory: Path) -> Iterator[int]:
    """A descriptor of ``directory`` holding an exclusive flock (where the file system has
    none, unlocked: the ledger is still written whole)."""
    dfd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        with contextlib.suppress(OSError):
            fcntl.flock(dfd, fcntl.LOCK_EX)
        yield dfd
    finally:
        os.close(dfd)


def _load(directory: Path, dfd: int) -> dict[str, Any]:
    """The ledger's entries (empty without a ledger); LedgerError if the name holds
    anything but a ledger this user wrote."""
    path = directory / LEDGER
    try:
        fd = os.open(LEDGER, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=dfd)
    except FileNotFoundError:
        return {}
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise LedgerError(errno.EEXIST, f"{path} is a symlink, not asyncbench's ledger") from None
        raise
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_nlink != 1 or st.st_uid != os.geteuid():
            raise LedgerError(
                errno.EEXIST, f"{path} is not a ledger asyncbench wrote (not a regular file of this user with one link)"
            )
        raw = _read_all(fd, MAX_LEDGER_BYTES + 1)
    finally:
        os.close(fd)
    if len(raw) > MAX_LEDGER_BYTES:
        raise LedgerError(errno.EFBIG, f"{path} is larger than any ledger asyncbench writes; asyncbench leaves it alone")
    try:
        doc = load_json(raw)  # a key twice is no ledger asyncbench wrote (it would pick one silently)
    except ValueError:
        doc = None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT or not isinstance(doc.get("files"), dict):
        raise LedgerError(errno.EEXIST, f"{path} is not a ledger asyncbench wrote; asyncbench leaves it alone")
    return dict(doc["files"])


def _store(directory: Path, dfd: int, files: dict[str, Any]) -> None:
    """Write the ledger whole, keeping only the entries whose file still exists."""
    kept = {name: entry for name, entry in files.items() if _exists(name, dfd)}
    data = orjson.dumps({"format": FORMAT, "files": kept}, option=orjson.OPT_SORT_KEYS) + b"\n"
    tmp = f"{LEDGER}.{secrets.token_hex(8)}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644, dir_fd=dfd)
    try:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
        finally:
            os.close(fd)
        os.replace(tmp, LEDGER, src_dir_fd=dfd, dst_dir_fd=dfd)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp, dir_fd=dfd)
        raise


def _read_all(fd: int, limit: int) -> bytes:
    """Up to ``limit`` bytes (one read may return fewer than asked)."""
    chunks: list[bytes] = []
    size = 0
    while size < limit and (chunk := os.read(fd, min(1 << 20, limit - size))):
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks)


def _exists(name: str, dfd: int) -> bool:
    try:
        os.lstat(name, dir_fd=dfd)
    except OSError:
        return False
    return True


def _sha256(path: Path) -> str | None:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        digest = hashlib.sha256()
        while chunk := os.read(fd, 1 << 20):
            digest.update(chunk)
        return digest.hexdigest()
    finally:
        os.close(fd)


def _alive(pid: object) -> bool:
    if not isinstance(pid, int) or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
