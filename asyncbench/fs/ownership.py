"""What a run may write, and the one way it writes: whole files, never over someone else's.

The rule: asyncbench replaces a file only if it can prove the file is its own: a regular
file with one link, owned by this user, recorded in its directory's ledger
(:mod:`asyncbench.fs.ledger`) exactly as asyncbench last wrote it (same inode, size,
modification time and contents), and either created by this process or one of its outputs
by marker (the report's first line, an SVG chart's title, a result's keys). A user's
annotated copy of an output carries the marker but not the identity; a hard link to a
user's file has two links. It never writes through a symlink and never replaces a file it
cannot prove is its own; such a write raises :class:`NotOwned` and the file stays as it
was. Every file it places is recorded in the ledger.

:func:`write_atomic` writes to a fresh, randomly named temporary file beside the target
(created exclusively, never through a symlink), then puts it in place: with ``link`` when
the target must not exist yet (so a file created meanwhile is never replaced), with
``rename`` when replacing a file this process created or proved its own. A reader sees
the old file or the new one, never half of one.

The check and the rename are not one step: a user's save may land between them. So right
before the rename the file at the target is kept under a second name (a hard link) and
compared with the one checked (inode, size, modification time): another file, or the same
one written since, is left in place (:class:`NotOwned`); and if it is written into during
the rename, it is put back. What remains: a new file renamed over the target between that
link and the rename (two system calls apart) is replaced.

:func:`write_set` does the same for files that belong together (a report and its
charts): every target is checked, then every new file written beside its target, and
only then are they put in place, so a refusal or a failure (a full disk, a signal)
leaves the old set as it was.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import secrets
import stat
import tempfile
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path

import orjson

from asyncbench.fs import ledger

__all__ = [
    "LOG_EVENTS",
    "HTML_REPORT_MARKER",
    "REPORT_MARKER",
    "NotOwned",
    "ownership_problem",
    "is_own_log",
    "is_own_log_head",
    "log_first_record",
    "is_own_html_report",
    "is_own_report",
    "is_own_result",
    "is_own_svg",
    "is_own_traceback",
    "TRACEBACK_MARKER",
    "write_atomic",
    "write_set",
]

#: The first line of every Markdown report (an HTML comment: invisible when rendered).
REPORT_MARKER = "<!-- asyncbench report: `python -m asyncbench report RESULT.json` rewrites this file -->"
#: The second line of every HTML report (after ``<!DOCTYPE html>``, which a browser wants first).
HTML_REPORT_MARKER = "<!-- asyncbench HTML report: `python -m asyncbench report RESULT.json` rewrites this file -->"
#: The first line of every ``.traceback`` file (the failed engines' tracebacks beside a report).
TRACEBACK_MARKER = "# asyncbench tracebacks: `python -m asyncbench report RESULT.json` rewrites this file"
#: The events the JSON-lines log starts a run with; a log's first line is one of them.
LOG_EVENTS = frozenset(
    {"run_start", "engine_start", "phase_start", "batch", "phase_end", "engine_end", "run_end"}
)
#: The format named by a log's identifying first record (see :func:`log_first_record`).
LOG_FORMAT = "asyncbench-log/1"

#: A result larger than this is not read to prove it is ours (a real one is a few MB).
MAX_RESULT_BYTES = 256 * 1024 * 1024

#: Absolute paths of the files this process created (so may replace) in this run.
_created: set[str] = set()

Proof = Callable[[Path], bool]


class NotOwned(OSError):
    """A path asyncbench will not write: it exists and is not provably its own output,
    or it is a symlink or not a regular file."""

    def __init__(self, path: Path, reason: str) -> None:
        super().__init__(errno.EEXIST, f"{path} {reason}; asyncbench did not write it and leaves it alone")
        self.path = path


def write_atomic(path: Path, data: bytes, own: Proof | None = None) -> None:
    """Put ``data`` at ``path`` as a whole file.

    ``path`` must not exist, or be a file this process created, or (with ``own``) a
    regular file ``own`` proves is asyncbench's; anything else raises :class:`NotOwned`.
    """
    key = os.path.abspath(path)
    _check_ledger(path.parent)  # where it will be recorded: before anything is written
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        st = None
    replace = st is not None
    if st is not None:
        _check_replaceable(path, st, own, created=key in _created)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.fchmod(fd, 0o644)
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            written = os.fstat(fh.fileno())
        if replace:
            assert st is not None
            backup = _hold(path, st)
            os.replace(tmp, path)
            _release(backup, path, st)
        else:
            _create_from(tmp, path, own)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    _created.add(key)
    ledger.record([(path, written, data)])


def write_set(files: Sequence[tuple[Path, bytes, Proof | None]]) -> None:
    """Put every ``(path, data, own)`` in place, all of them or none.

    Each target follows :func:`write_atomic`'s rule; all are checked before anything is
    written (one foreign file: :class:`NotOwned`, nothing written). Then each file is
    written to a temporary file beside its target; only when all are written are they
    put in place, the replaced ones kept under a temporary hard link until the last is
    in place, so that a failure while swapping puts every old file back. Only a process
    killed in the middle of the swap (a few renames) can leave a mixed set.
    """
    replace: list[os.stat_result | None] = []  # per file, what was checked (None: nothing there)
    for directory in {path.parent for path, _, _ in files}:
        _check_ledger(directory)  # where they will be recorded: before anything is written
    for path, _, own in files:
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            replace.append(None)
            continue
        _check_replaceable(path, st, own, created=os.path.abspath(path) in _created)
        replace.append(st)
    temps: list[str] = []
    written: list[os.stat_result] = []
    backups: list[tuple[str, Path]] = []  # (backup, target) of the files replaced so far
    placed: list[Path] = []  # the files created so far
    try:
        for path, data, _ in files:
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
            temps.append(tmp)
            os.fchmod(fd, 0o644)
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
                fh.flush()
                written.append(os.fstat(fh.fileno()))
        held: list[tuple[str, Path, os.stat_result]] = []
        for (path, _, own), tmp, checked in zip(files, temps, replace, strict=True):
            if checked is not None:
                try:
                    backup = _hold(path, checked)
                except FileNotFoundError:  # one of ours, removed since: nothing to keep
                    os.replace(tmp, path)
                    placed.append(path)
                    continue
                if backup is None:
                    os.replace(tmp, path)  # no hard links here: swapped with no way back
                    continue
                backups.append((backup, path))
                held.append((backup, path, checked))
                os.replace(tmp, path)
            else:
                _create_from(tmp, path, own)
                placed.append(path)
        for backup, path, checked in held:  # a file written in place while being swapped
            if _changed(checked, os.lstat(backup)):
                raise NotOwned(path, _CHANGED)  # every old file goes back, that one included
    except BaseException:
        for backup, path in reversed(backups):  # the old files go back where they were
            with contextlib.suppress(OSError):
                os.replace(backup, path)
            with contextlib.suppress(OSError):  # rename onto the same file (not swapped yet) keeps both names
                os.unlink(backup)
        for path in placed:
            with contextlib.suppress(OSError):
                os.unlink(path)
        for tmp in temps:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
        raise
    for backup, _ in backups:
        with contextlib.suppress(OSError):
            os.unlink(backup)
    for path, _, _ in files:
        _created.add(os.path.abspath(path))
    ledger.record([(path, st, data) for (path, data, _), st in zip(files, written, strict=True)])


_CHANGED = "changed after asyncbench checked it (a save landed while it was writing)"


def _changed(checked: os.stat_result, now: os.stat_result) -> bool:
    """Whether ``now`` is another file than ``checked``, or the same one written since."""
    return (checked.st_dev, checked.st_ino, checked.st_size, checked.st_mtime_ns) != (
        now.st_dev,
        now.st_ino,
        now.st_size,
        now.st_mtime_ns,
    )


def _hold(path: Path, checked: os.stat_result) -> str | None:
    """Keep the file now at ``path`` under a second, temporary name, right before it is
    replaced, and prove it is still the file that was checked (``checked``): a user's save
    that landed between the check and now (a new file renamed over it, or a write into it)
    raises :class:`NotOwned` and stays in place. Returns the temporary name, for
    :func:`_release`; None where hard links are unsupported (then only a stat right before
    the rename guards it). FileNotFoundError: nothing is there any more.

    The window left: a save landing between this link and the rename that follows (one
    system call apart) is replaced. Linux has no rename-if-unchanged; that window is
    microseconds, where the check, the rendering and the writing used to lie between."""
    backup = str(path.parent / f".{path.name}.{secrets.token_hex(6)}.old")
    try:
        os.link(path, backup, follow_symlinks=False)
    except OSError as exc:
        if exc.errno not in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EMLINK):
            raise
        if _changed(checked, os.lstat(path)):
            raise NotOwned(path, _CHANGED) from None
        return None
    if _changed(checked, os.lstat(backup)):
        with contextlib.suppress(OSError):
            os.unlink(backup)
        raise NotOwned(path, _CHANGED)
    return backup


def _release(backup: str | None, path: Path, checked: os.stat_result) -> None:
    """After the rename: drop the old file's temporary name, or, if it was written into
    between :func:`_hold` and the rename, put it back at ``path`` and raise NotOwned."""
    if backup is None:
        return
    if _changed(checked, os.lstat(backup)):
        os.replace(backup, path)
        raise NotOwned(path, _CHANGED)
    os.unlink(backup)


def _create_from(tmp: str, path: Path, own: Proof | None) -> None:
    """Give ``tmp`` the name ``path`` only if nothing has that name (hard link, then drop
    the temporary name); where hard links are unsupported, fall back to rename."""
    try:
        os.link(tmp, path, follow_symlinks=False)
    except FileExistsError:
        st = os.lstat(path)  # created since we looked: the same rule applies
        _check_replaceable(path, st, own, created=False)
        os.replace(tmp, path)
        return
    except OSError as exc:
        if exc.errno not in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EMLINK):
            raise
        os.replace(tmp, path)
        return
    os.unlink(tmp)


def _check_ledger(directory: Path) -> None:
    """NotOwned if ``directory``'s ledger name holds a file asyncbench did not write."""
    try:
        ledger.check_directory(directory)
    except ledger.LedgerError:
        raise NotOwned(directory / ledger.LEDGER, "is not a ledger asyncbench wrote") from None


def _check_replaceable(path: Path, st: os.stat_result, own: Proof | None, created: bool) -> None:
    problem = ownership_problem(path, st, own, created)
    if problem is not None:
        raise NotOwned(path, problem)


def ownership_problem(path: Path, st: os.stat_result, own: Proof | None, created: bool = False) -> str | None:
    """Why asyncbench may not replace ``path`` (whose lstat is ``st``), or None: it must be
    a regular file, created by this process or proven by ``own`` (its marker), and recorded
    in its directory's ledger exactly as it is now (one link, this user's, same inode, size,
    time and contents)."""
    if stat.S_ISLNK(st.st_mode):
        return "is a symlink"
    if not stat.S_ISREG(st.st_mode):
        return "is not a regular file"
    if not created and (own is None or not own(path)):
        return "exists and is not an output of this run"
    return ledger.entry_problem(path, st)


# --- proofs: an existing file is asyncbench's own output -------------------------------


def _head(path: Path, size: int) -> bytes | None:
    """The first ``size`` bytes of a regular file, read without following a symlink."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        return os.read(fd, size)
    except OSError:
        return None
    finally:
        os.close(fd)


def is_own_report(path: Path) -> bool:
    """A Markdown report asyncbench wrote: named ``*.md``, first line the report marker."""
    head = _head(path, len(REPORT_MARKER) + 1)
    return (
        path.suffix == ".md"
        and head is not None
        and head.decode("utf-8", "replace").startswith(REPORT_MARKER)
    )


def is_own_html_report(path: Path) -> bool:
    """An HTML report asyncbench wrote: named ``*.html``, ``<!DOCTYPE html>`` then the marker."""
    head = f"<!DOCTYPE html>\n{HTML_REPORT_MARKER}"
    found = _head(path, len(head.encode()) + 1)
    return path.suffix == ".html" and found is not None and found.decode("utf-8", "replace").startswith(head)


def is_own_traceback(path: Path) -> bool:
    """A failed engines' traceback file asyncbench wrote: named ``*.traceback``, first line its marker."""
    head = _head(path, len(TRACEBACK_MARKER) + 1)
    return (
        path.suffix == ".traceback"
        and head is not None
        and head.decode("utf-8", "replace").startswith(TRACEBACK_MARKER)
    )


def is_own_svg(title: str, *former: str) -> Proof:
    """A chart asyncbench drew: named ``*.svg``, an SVG whose metadata title is ``title``
    (or one of the ``former`` titles the same chart had in earlier versions)."""
    from xml.sax.saxutils import escape

    marks = [f"<dc:title>{escape(t)}</dc:title>".encode() for t in (title, *former)]

    def proof(path: Path) -> bool:
        head = _head(path, 4096)
        return (
            path.suffix == ".svg"
            and head is not None
            and head.startswith(b"<?xml")
            and any(mark in head for mark in marks)
        )

    return proof


def is_own_result(path: Path) -> bool:
    """A result asyncbench wrote (``latest.json``): named ``*.json``, a JSON object with the
    result model's identifying keys (``schema``, ``started_utc``, ``engines``, ``phases``)."""
    if path.suffix != ".json":
        return False
    head = _head(path, MAX_RESULT_BYTES)
    if head is None or len(head) >= MAX_RESULT_BYTES:
        return False
    try:
        doc = orjson.loads(head)
    except orjson.JSONDecodeError:
        return False
    return isinstance(doc, dict) and {"schema", "started_utc", "engines", "phases"} <= doc.keys()


def log_first_record() -> bytes:
    """The line asyncbench starts every log with: a ``log_start`` event naming the format,
    a random id and a check over them, so appending later can verify that this tool started
    the file (an empty file, another program's log or a line that merely looks like one of
    our events is not)."""
    ident = secrets.token_hex(16)
    stamp = datetime.now(UTC).isoformat(timespec="microseconds")
    doc = {
        "event": "log_start",
        "format": LOG_FORMAT,
        "id": ident,
        "timestamp": stamp,
        "check": _log_check(ident, stamp),
    }
    return orjson.dumps(doc) + b"\n"


def _log_check(ident: str, stamp: str) -> str:
    return hashlib.sha256(f"{LOG_FORMAT} {ident} {stamp}".encode()).hexdigest()[:16]


def is_own_log_head(head: bytes) -> bool:
    """Whether ``head`` (a file's first bytes) starts with a first record asyncbench wrote."""
    first, newline, _ = head.partition(b"\n")
    if not newline:
        return False
    try:
        doc = orjson.loads(first)
    except orjson.JSONDecodeError:
        return False
    if not isinstance(doc, dict) or doc.get("event") != "log_start" or doc.get("format") != LOG_FORMAT:
        return False
    ident, stamp = doc.get("id"), doc.get("timestamp")
    return isinstance(ident, str) and isinstance(stamp, str) and doc.get("check") == _log_check(ident, stamp)


def is_own_log(path: Path) -> bool:
    """A JSON-lines log asyncbench started: its first line is the record of
    :func:`log_first_record` (an empty file is not one)."""
    head = _head(path, 4096)
    return head is not None and is_own_log_head(head)
