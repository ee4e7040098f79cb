"""An engine's data directory as the engine's own: it resets only what it can prove it made.

A reset used to empty ``DATA/profiles-N/<engine>/`` whatever it held, and followed a
symlinked directory to empty its target. Now each file-based engine describes its store
(:class:`StoreLayout`: the named stores it creates and the file names inside them) and
writes an ownership marker, ``.asyncbench-store`` (JSON: engine, stores), into the
directory when it creates the store. Then:

- :meth:`StoreDir.reset` removes the marker's stores and the engine's own files and
  nothing else. It first checks the whole directory, and refuses (deleting nothing) one
  that is a symlink or not a directory, holds an entry the layout does not recognise
  (a file of the user's, a symlink, a store of another engine), or holds anything at all
  without a marker. Deletion goes through directory descriptors opened without following
  symlinks, so a directory swapped for a symlink after the check is not followed.
- :meth:`StoreDir.delete` (``--clean-data`` after a run) removes the same, only after the
  same checks, and then the directory if it is empty.
- :meth:`StoreDir.require` (an open that keeps the data) insists on the marker and on
  every store it lists, so a deleted store is an error naming it, never an empty store
  silently created in its place.

Errors are :class:`StoreDirError` (a ``RuntimeError``): the runner reports them as the
engine's ``Failed: open: ...`` row and goes on with the other engines.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

__all__ = ["MARKER", "StoreDir", "StoreDirError", "StoreLayout", "StoreMissing"]

MARKER = ".asyncbench-store"
#: The marker while it is written (renamed into place; left behind only by a crash).
MARKER_TMP = MARKER + ".tmp"
FORMAT = 1
#: How many unrecognised entries an error names before "and N more".
_NAMED = 5


class StoreDirError(RuntimeError):
    """The engine's directory is not (only) its own store; nothing was deleted."""


class StoreMissing(StoreDirError):
    """A store the marker lists is gone; opening would silently start an empty one."""


@dataclass(frozen=True)
class StoreLayout:
    """What an engine writes in its directory.

    ``stores`` are the named stores (directories when ``stores_are_dirs``, else files)
    the marker lists; ``store_files`` matches every file name the engine's library may
    create inside a store directory; ``own_files`` matches the other names the engine
    writes at the top level (a clean-shutdown mark, SQLite's ``-wal``/``-shm``).
    """

    engine: str
    stores: tuple[str, ...]
    stores_are_dirs: bool
    store_files: re.Pattern[str] | None = None
    own_files: re.Pattern[str] | None = None

    def owns_top(self, name: str) -> bool:
        if name in (MARKER, MARKER_TMP) or name in self.stores:
            return True
        return bool(self.own_files and self.own_files.fullmatch(name))


class StoreDir:
    """``directory`` holding the store described by ``layout``."""

    def __init__(self, directory: Path, layout: StoreLayout) -> None:
        self.directory = Path(directory)
        self.layout = layout
        self.marker = self.directory / MARKER

    # --- open with reset ----------------------------------------------------------------
    def reset(self) -> None:
        """Remove the engine's previous store (only it) and mark the directory as the
        engine's, before any store is created; StoreDirError if it holds anything else."""
        d = self.directory
        if not os.path.lexists(d):
            d.mkdir(parents=True)
        else:
            self._check_is_real_dir()
            names = sorted(os.listdir(d))
            if names == [MARKER_TMP]:  # a crash while the first marker was written
                os.unlink(d / MARKER_TMP)
                names = []
            if names:
                self._check_marker(names)
                self._check_entries(names)
                self._delete(names)
        self._write_marker()

    # --- clean-up after a run -------------------------------------------------------------
    def delete(self) -> None:
        """Remove the engine's store (``--clean-data``, after close), marker last, then the
        directory if that left it empty. Only a marked store holding nothing foreign is
        deleted; anything else raises StoreDirError and stays as it was."""
        d = self.directory
        if not os.path.lexists(d):
            return
        self._check_is_real_dir()
        names = sorted(os.listdir(d))
        if not names:
            os.rmdir(d)
            return
        self._check_marker(names)
        self._check_entries(names)
        self._delete(names)
        with contextlib.suppress(OSError):  # something appeared meanwhile: not ours, so it stays
            os.rmdir(d)

    # --- open keeping the data ----------------------------------------------------------
    def require(self) -> None:
        """The directory must hold this engine's marked store with every listed store."""
        self._check_is_real_dir()
        listed = self._read_marker()
        if listed is None:
            raise StoreDirError(
                f"{self.directory} holds no {self.layout.engine} store of asyncbench (no {MARKER} marker); "
                "open it with a reset to create one"
            )
        for name in listed:
            try:
                st = os.lstat(self.directory / name)
            except FileNotFoundError:
                raise StoreMissing(
                    f"{self.directory}: the {self.layout.engine} store {name!r} listed in {MARKER} is missing; "
                    "it was deleted or moved, and opening would start it empty"
                ) from None
            want_dir = self.layout.stores_are_dirs
            if stat.S_ISLNK(st.st_mode) or (stat.S_ISDIR(st.st_mode) != want_dir):
                kind = "directory" if want_dir else "regular file"
                raise StoreDirError(f"{self.directory / name} is not a {kind}; asyncbench did not make it")

    # --- checks ------------------------------------------------------------------------
    def _check_is_real_dir(self) -> None:
        d = self.directory
        try:
            st = os.lstat(d)
        except FileNotFoundError:
            raise StoreMissing(f"{d} does not exist: there is no {self.layout.engine} store to open") from None
        if stat.S_ISLNK(st.st_mode):
            raise StoreDirError(
                f"{d} is a symlink; asyncbench neither follows nor empties it. "
                "Point --data at a real directory (or remove the link)"
            )
        if not stat.S_ISDIR(st.st_mode):
            raise StoreDirError(f"{d} is not a directory; asyncbench leaves it alone. Move it away or use another --data")

    def _read_marker(self) -> list[str] | None:
        """The stores the marker lists; None without a marker; StoreDirError if it is not ours."""
        try:
            fd = os.open(self.marker, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise StoreDirError(f"{self.marker} cannot be read ({exc.strerror}); not an asyncbench marker") from None
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise StoreDirError(f"{self.marker} is not a regular file; not an asyncbench marker")
            raw = os.read(fd, 64 * 1024)
        finally:
            os.close(fd)
        try:
            doc = json.loads(raw)
        except ValueError:
            doc = None
        if not isinstance(doc, dict) or doc.get("format") != FORMAT or not isinstance(doc.get("stores"), list):
            raise StoreDirError(f"{self.marker} is not an asyncbench store marker; the directory is left alone")
        if doc.get("engine") != self.layout.engine:
            raise StoreDirError(
                f"{self.directory} holds a store of engine {doc.get('engine')!r}, not {self.layout.engine!r}; "
                "asyncbench leaves it alone"
            )
        stores = [s for s in doc["stores"] if isinstance(s, str)]
        unknown = [s for s in stores if s not in self.layout.stores]
        if unknown or len(stores) != len(doc["stores"]):
            raise StoreDirError(f"{self.marker} lists stores this engine does not make: {unknown}")
        return stores

    def _check_marker(self, names: list[str]) -> None:
        if self._read_marker() is None:
            raise StoreDirError(
                f"{self.directory} is not empty and has no {MARKER} marker, so asyncbench did not create "
                f"what is in it ({_first(names)}); it resets only its own stores. Move the files away or use "
                "another --data (a store from an asyncbench without markers: delete the directory yourself)"
            )

    def _check_entries(self, names: list[str]) -> None:
        foreign = [str(p) for p in self._foreign(names)]
        if foreign:
            raise StoreDirError(
                f"{self.directory} holds entries asyncbench did not write: {_first(foreign)}; it resets only "
                "its own stores and left everything as it was. Move them away or use another --data"
            )

    def _foreign(self, names: list[str]) -> Iterator[str]:
        """Relative paths of every entry the layout does not recognise (symlinks never are)."""
        layout = self.layout
        for name in names:
            st = os.lstat(self.directory / name)
            if not layout.owns_top(name) or stat.S_ISLNK(st.st_mode):
                yield name
                continue
            if name in layout.stores and layout.stores_are_dirs:
                if not stat.S_ISDIR(st.st_mode):
                    yield name
                    continue
                for inner in sorted(os.listdir(self.directory / name)):
                    ist = os.lstat(self.directory / name / inner)
                    ok = stat.S_ISREG(ist.st_mode) and layout.store_files is not None
                    if not ok or not layout.store_files.fullmatch(inner):  # type: ignore[union-attr]
                        yield f"{name}/{inner}"
            elif not stat.S_ISREG(st.st_mode):
                yield name

    # --- changes -----------------------------------------------------------------------
    def _delete(self, names: list[str]) -> None:
        """Remove the checked entries through descriptors that never follow a symlink."""
        flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
        top = os.open(self.directory, flags)
        try:
            for name in names:
                if name in self.layout.stores and self.layout.stores_are_dirs:
                    sub = os.open(name, flags, dir_fd=top)
                    try:
                        for inner in os.listdir(sub):
                            os.unlink(inner, dir_fd=sub)
                    finally:
                        os.close(sub)
                    os.rmdir(name, dir_fd=top)
                elif name != MARKER:
                    os.unlink(name, dir_fd=top)
            os.unlink(MARKER, dir_fd=top)  # last: until the stores are gone it proves they are ours
            os.fsync(top)
        finally:
            os.close(top)

    def _write_marker(self) -> None:
        doc = {"format": FORMAT, "engine": self.layout.engine, "stores": list(self.layout.stores)}
        tmp = self.directory / MARKER_TMP
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
        try:
            os.write(fd, json.dumps(doc).encode() + b"\n")
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, self.marker)
        dfd = os.open(self.directory, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)


def _first(names: list[str]) -> str:
    shown = ", ".join(names[:_NAMED])
    return shown + (f" and {len(names) - _NAMED} more" if len(names) > _NAMED else "")
