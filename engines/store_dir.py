"""An engine's data directory as the engine's own: it resets only what it can prove it made.

A reset used to empty ``DATA/profiles-N/<engine>/`` whatever it held, and followed a
symlinked directory to empty its target. Now each file-based engine describes its store
(:class:`StoreLayout`: the named stores it creates and the file names inside them) and
writes an ownership marker, ``.asyncbench-store`` (JSON: engine, stores), into the
directory when it creates the store. Then:

- :meth:`StoreDir.record_files` (called by the engine after a clean close) writes into
  the marker every file the engine's library left in its stores and every file the engine
  wrote beside them, by exact name with its inode, size and modification time. A reset
  deletes exactly those files (a name that matches but whose identity differs is not the
  file that was recorded), never a file merely because its name looks like one a library
  writes (``*.tmp``, ``LOG.old.N``, ``NNN.log``, ``store.db-journal``: a user's file can
  have any of these names). After an unclean stop the files written since the last record
  are unproven: the reset refuses and says so.
- :meth:`StoreDir.reset` removes the marker's stores and the recorded files and
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
- :meth:`StoreDir.open_existing` (what the engines call before such an open) also compares
  the store with the record of its last clean close: the size of every file and the CRC32
  of the small ones (all of them for SQLite, whose pages carry no checksum). Libraries
  read damage as a smaller valid store (RocksDB takes a MANIFEST cut in half for an empty
  database and deletes the .sst files it no longer lists), so a missing, new, resized or
  changed file is refused (:class:`StoreDamaged`) before the library touches it. The
  marker then says "in use" until the next clean close: after a crash the record is stale
  and the engine's own recovery decides.
- The marker also keeps the store's fingerprint (what built it: ``asyncbench.run.reuse.reuse``)
  across clean closes; a reset drops it.

Errors are :class:`StoreDirError` (a ``RuntimeError``): the runner reports them as the
engine's ``Failed: open: ...`` row and goes on with the other engines.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import re
import secrets
import stat
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import anyio.to_thread

from asyncbench.parse import load_json
from asyncbench.store import STORE_NAME

__all__ = ["MARKER", "MarkedStore", "StoreDamaged", "StoreDir", "StoreDirError", "StoreLayout", "StoreMissing"]

MARKER = ".asyncbench-store"
#: The marker while it is written: ``.asyncbench-store.<random>.tmp``, created exclusively
#: under a new random name each time and renamed into place (or removed) by the write that
#: created it. Any other file (a ``.asyncbench-store.tmp`` of the user's, one left behind
#: by a crash) is not provably this run's and is never deleted: the directory is refused.
MARKER_TMP_PREFIX = MARKER + "."
FORMAT = 1
#: A store's name as a marker may list it: one plain path component (a workload names its
#: stores; a marker naming ``..`` or a path is no marker asyncbench wrote).
_STORE_NAME = STORE_NAME
#: How many unrecognised entries an error names before "and N more".
_NAMED = 5
#: Files up to this size also get a CRC32 in the record of a clean close (manifests,
#: CURRENT, OPTIONS, the clean-shutdown mark: the small files whose damage an engine may
#: take for a valid, smaller store); larger ones (data) are checked by size, and their
#: content by the engine's own block checksums as it reads.
SUMMED_BYTES = 1 << 20


class StoreDirError(RuntimeError):
    """The engine's directory is not (only) its own store; nothing was deleted."""


class StoreMissing(StoreDirError):
    """A store the marker lists is gone; opening would silently start an empty one."""


class StoreDamaged(StoreDirError):
    """A file of a cleanly closed store is missing, new, resized or changed since that close."""


@dataclass(frozen=True)
class StoreLayout:
    """What an engine writes in its directory.

    ``stores`` are the named stores (directories when ``stores_are_dirs``, else files)
    the marker lists: for a key/value engine, the stores the run's workload declares
    (``Workload.kv_stores``, given to the engine as ``EngineConfig.stores``; a class-level
    layout with none still recognises, resets and deletes what a marker lists); ``store_files`` matches every file name the engine's library may
    create inside a store directory; ``own_files`` matches the other names the engine
    writes at the top level (a clean-shutdown mark, SQLite's ``-wal``/``-shm``).
    """

    engine: str
    stores: tuple[str, ...]
    stores_are_dirs: bool
    store_files: re.Pattern[str] | None = None
    own_files: re.Pattern[str] | None = None
    #: CRC32 every file at a clean close, not only those up to SUMMED_BYTES: for a
    #: library whose data pages carry no checksum of their own (SQLite), so a flipped
    #: byte in a value is found at the next open instead of read back as data.
    sum_all: bool = False
    #: Own files the library deletes by itself (SQLite's -wal and -shm, when the last
    #: connection closes, which may be another process's after the engine's clean close):
    #: compared when present, never missed when gone.
    transient_files: re.Pattern[str] | None = None
    #: Whether the transient files present in a directory hold nothing the library would
    #: apply to the store at its next open (SQLite: a WAL with no frame, or only frames
    #: whose pages equal the database's, as a read-only ``sqlite3`` leaves it beside a
    #: clean store): such files are not damage, whatever the record says of them.
    idle_transients: Callable[[Path], bool] | None = None

    def for_stores(self, stores: tuple[str, ...]) -> StoreLayout:
        """This layout holding ``stores`` (a key/value engine's, from the run's workload:
        ``EngineConfig.stores``); ValueError when there are none or a name is no plain name."""
        if not stores:
            raise ValueError(
                f"the {self.engine} engine was given no key/value stores to open (EngineConfig.stores: "
                "the run's workload declares them as kv_stores)"
            )
        bad = [s for s in stores if not _STORE_NAME.fullmatch(s) or s.startswith(MARKER) or self.owns_top(s)]
        if bad or len(set(stores)) != len(stores):
            raise ValueError(f"the {self.engine} engine cannot keep stores named {list(stores)} (plain, distinct names)")
        return dataclasses.replace(self, stores=tuple(stores))

    @property
    def summed_bytes(self) -> int | None:
        return None if self.sum_all else SUMMED_BYTES

    def owns_top(self, name: str) -> bool:
        if name == MARKER or name in self.stores:
            return True
        return bool(self.own_files and self.own_files.fullmatch(name))

    def library_file(self, name: str) -> bool:
        """A name the engine's library writes inside a store directory (recorded at close)."""
        return bool(self.store_files and self.store_files.fullmatch(name))


class StoreDir:
    """``directory`` holding the store described by ``layout``."""

    def __init__(self, directory: Path, layout: StoreLayout) -> None:
        self.directory = Path(directory)
        self.layout = layout
        self.marker = self.directory / MARKER
        #: The files recorded at the last clean close (None: no record); set by _read_marker.
        self._recorded: dict[str, list[int]] | None = None
        #: Size and CRC32 (-1: not summed) of every file at the last clean close, stores included.
        self._contents: dict[str, list[int]] | None = None
        #: What built the store (``write_fingerprint``), kept across closes; None: unknown.
        self._fingerprint: dict[str, Any] | None = None
        #: Opened keeping its data since the last clean close (the record may be stale).
        self._in_use = False
        #: The stores the marker lists (None: not read yet, or a new store: the layout's).
        self._listed: list[str] | None = None

    def _is_store(self, name: str) -> bool:
        """A named store that is the engine's here: the layout's (what this run's workload
        keeps) or one the marker lists (an earlier run's, maybe another workload's: the
        marker proves it ours, so a reset removes it)."""
        return name in self.layout.stores or (self._listed is not None and name in self._listed)

    def _owns_top(self, name: str) -> bool:
        return self._is_store(name) or self.layout.owns_top(name)

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
            if names:
                self._check_marker(names)
                self._delete(names, self._check_entries(names))
        self._listed = list(self.layout.stores)
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
        self._delete(names, self._check_entries(names))
        with contextlib.suppress(OSError):  # something appeared meanwhile: not ours, so it stays
            os.rmdir(d)

    # --- after a clean close ---------------------------------------------------------------
    def record_files(self) -> None:
        """Record in the marker, by exact name and identity, every file the engine's library
        left in its stores and every own file beside them, so the next reset or delete
        removes exactly these; and the size (and CRC32 of the small ones) of every file,
        stores included, so an open that keeps the data can tell a damaged store
        (:meth:`open_existing`). Call only after a clean close of a store this engine opened."""
        if self._read_marker() is None:
            return
        files: dict[str, list[int]] = {}
        contents: dict[str, list[int]] = {}
        for rel, st in self._present():
            if not self._is_store(rel):
                files[rel] = _identity(st)
            contents[rel] = [st.st_size, _crc(self.directory / rel, st.st_size, self.layout.summed_bytes)]
        self._write_marker(files, contents=contents, fingerprint=self._fingerprint)

    def _present(self) -> Iterator[tuple[str, os.stat_result]]:
        """(relative path, lstat) of every regular file the engine's library or the engine
        wrote: library files inside store directories, store files, own files beside them."""
        for name in sorted(os.listdir(self.directory)):
            if name == MARKER:
                continue
            path = self.directory / name
            st = os.lstat(path)
            if self._is_store(name) and self.layout.stores_are_dirs and stat.S_ISDIR(st.st_mode):
                for inner in sorted(os.listdir(path)):
                    ist = os.lstat(path / inner)
                    if stat.S_ISREG(ist.st_mode) and self.layout.library_file(inner):
                        yield f"{name}/{inner}", ist
            elif self._owns_top(name) and stat.S_ISREG(st.st_mode):
                yield name, st

    # --- the store's fingerprint (what built it), for a run that reuses it ------------------
    def write_fingerprint(self, fingerprint: dict[str, Any]) -> None:
        """Keep ``fingerprint`` (JSON) in the marker of a cleanly closed store; every later
        record keeps it, a reset drops it."""
        if self._read_marker() is None or self._contents is None or self._in_use:
            raise StoreDirError(f"{self.directory}: the store was not closed cleanly; no fingerprint written")
        self._write_marker(self._recorded, contents=self._contents, fingerprint=dict(fingerprint))

    def fingerprint(self) -> dict[str, Any]:
        """The fingerprint of a marked store closed cleanly since it was last opened;
        StoreDirError saying why there is none (no marker, never fingerprinted, not closed)."""
        self._check_is_real_dir()
        if self._read_marker() is None:
            raise StoreDirError(
                f"{self.directory} holds no {self.layout.engine} store of asyncbench (no {MARKER} marker) to reuse"
            )
        if self._fingerprint is None:
            raise StoreDirError(
                f"{self.marker} has no fingerprint: the store was not built by a run that finished every "
                "phase with --keep-data, so what it holds is unknown; rebuild it"
            )
        if self._in_use or self._contents is None:
            raise StoreDirError(
                f"{self.directory}: the {self.layout.engine} store was not closed cleanly after it was last "
                "opened; it cannot be reused as it is (rebuild it)"
            )
        return dict(self._fingerprint)

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
        if self.layout.stores and sorted(listed) != sorted(self.layout.stores):
            raise StoreDirError(
                f"{self.directory} holds the {self.layout.engine} stores {sorted(listed)}, not the stores "
                f"{sorted(self.layout.stores)} this run's workload keeps; open it with a reset to rebuild it"
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

    def open_existing(self) -> None:
        """Before an engine opens its store keeping the data: :meth:`require`, then, if the
        store was closed cleanly since it was last opened, every file exactly as that close
        recorded it (none missing, none new, same sizes, same CRC32 of the small files):
        StoreDamaged names the first files that differ. Engine libraries take a truncated
        manifest for a smaller store and delete the data it no longer lists (RocksDB), or
        an empty database file for a new one (SQLite), so this is checked before they
        open. The marker then says the store is in use until the next clean close: after
        a crash the record is stale and the engine's own recovery decides."""
        self.require()
        if self._contents is not None and not self._in_use:
            problems = self._compare(self._contents)
            if problems:
                raise StoreDamaged(
                    f"{self.directory}: the {self.layout.engine} store changed since its last clean close: "
                    f"{_first(problems)}; it is refused as damaged and left as it is"
                )
        self._write_marker(self._recorded, contents=self._contents, fingerprint=self._fingerprint, in_use=True)

    def _compare(self, contents: dict[str, list[int]]) -> list[str]:
        present = dict(self._present())
        transient = self.layout.transient_files
        idle = self.layout.idle_transients
        if transient and idle and any(transient.fullmatch(rel) for rel in present) and idle(self.directory):
            # left by a reader that was not the last to close: nothing the library would apply
            present = {rel: st for rel, st in present.items() if not transient.fullmatch(rel)}
        problems = [
            f"{self.directory / rel} is missing"
            for rel in contents
            if rel not in present and not (transient and transient.fullmatch(rel))
        ]
        for rel, st in present.items():
            want = contents.get(rel)
            if want is None:
                problems.append(f"{self.directory / rel} was not there")
            elif st.st_size != want[0]:
                problems.append(f"{self.directory / rel} is {st.st_size:_d} bytes, was {want[0]:_d}")
            elif want[1] != -1 and _crc(self.directory / rel, st.st_size, self.layout.summed_bytes) != want[1]:
                problems.append(f"{self.directory / rel} has other contents (CRC32)")
        return problems

    # --- checks ------------------------------------------------------------------------
    def _check_is_real_dir(self) -> None:
        d = self.directory
        try:
            st = os.lstat(d)
        except FileNotFoundError:
            raise StoreMissing(
                f"{d} does not exist: there is no {self.layout.engine} store to open"
            ) from None
        if stat.S_ISLNK(st.st_mode):
            raise StoreDirError(
                f"{d} is a symlink; asyncbench neither follows nor empties it. "
                "Point --data at a real directory (or remove the link)"
            )
        if not stat.S_ISDIR(st.st_mode):
            raise StoreDirError(
                f"{d} is not a directory; asyncbench leaves it alone. Move it away or use another --data"
            )

    def _read_marker(self) -> list[str] | None:
        """The stores the marker lists; None without a marker; StoreDirError if it is not ours."""
        try:
            fd = os.open(self.marker, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise StoreDirError(
                f"{self.marker} cannot be read ({exc.strerror}); not an asyncbench marker"
            ) from None
        try:
            mst = os.fstat(fd)
            if not stat.S_ISREG(mst.st_mode):
                raise StoreDirError(f"{self.marker} is not a regular file; not an asyncbench marker")
            if mst.st_nlink != 1:  # a name of a user's file: never replaced or deleted
                raise StoreDirError(
                    f"{self.marker} has {mst.st_nlink} hard links; not an asyncbench marker, the directory is left alone"
                )
            raw = os.read(fd, 64 * 1024)
        finally:
            os.close(fd)
        try:
            doc = load_json(raw)  # a key twice is no marker asyncbench wrote (the last would win)
        except ValueError:
            doc = None
        if (
            not isinstance(doc, dict)
            or doc.get("format") != FORMAT
            or not isinstance(doc.get("stores"), list)
        ):
            raise StoreDirError(
                f"{self.marker} is not an asyncbench store marker; the directory is left alone"
            )
        if doc.get("engine") != self.layout.engine:
            raise StoreDirError(
                f"{self.directory} holds a store of engine {doc.get('engine')!r}, not {self.layout.engine!r}; "
                "asyncbench leaves it alone"
            )
        stores = [s for s in doc["stores"] if isinstance(s, str)]
        own = self.layout.own_files
        unsafe = [s for s in stores if not _STORE_NAME.fullmatch(s) or s.startswith(MARKER) or (own and own.fullmatch(s))]
        if unsafe or len(stores) != len(doc["stores"]):
            raise StoreDirError(f"{self.marker} lists stores this engine does not make: {unsafe}")
        self._listed = stores
        files = doc.get("files")
        self._recorded = (
            {k: v for k, v in files.items() if isinstance(k, str) and isinstance(v, list)}
            if isinstance(files, dict)
            else None
        )
        contents = doc.get("contents")
        self._contents = (
            {
                k: v
                for k, v in contents.items()
                if isinstance(k, str) and isinstance(v, list) and len(v) == 2 and all(type(x) is int for x in v)
            }
            if isinstance(contents, dict)
            else None
        )
        if isinstance(contents, dict) and self._contents is not None and len(self._contents) != len(contents):
            raise StoreDirError(f"{self.marker} holds a damaged record of the store's files")
        fingerprint = doc.get("fingerprint")
        self._fingerprint = fingerprint if isinstance(fingerprint, dict) else None
        self._in_use = doc.get("in_use") is True
        return stores

    def _check_marker(self, names: list[str]) -> None:
        if self._read_marker() is None:
            raise StoreDirError(
                f"{self.directory} is not empty and has no {MARKER} marker, so asyncbench did not create "
                f"what is in it ({_first(names)}); it resets only its own stores. Move the files away or use "
                "another --data (a store from an asyncbench without markers: delete the directory yourself)"
            )

    def _check_entries(self, names: list[str]) -> list[str]:
        """The recorded files to delete (relative paths); StoreDirError naming every entry
        that is neither a marker's store nor a recorded file."""
        ours: list[str] = []
        foreign = [str(p) for p in self._foreign(names, ours)]
        if foreign:
            unrecorded = self._recorded is None
            why = (
                " (the store was not closed cleanly, so no record of its files exists and a name alone "
                "proves nothing: if these are the engine's, delete the directory yourself)"
                if unrecorded
                else ""
            )
            raise StoreDirError(
                f"{self.directory} holds entries asyncbench did not write: {_first(foreign)}{why}; it resets "
                "only its own stores and left everything as it was. Move them away or use another --data"
            )
        return ours

    def _foreign(self, names: list[str], ours: list[str]) -> Iterator[str]:
        """Relative paths of every entry that is neither a store the marker names nor a file
        recorded at the last clean close with the same identity (symlinks never are);
        ``ours`` collects the recorded files."""
        layout, recorded = self.layout, self._recorded or {}
        idle: list[bool] = []  # whether the transient files are idle, asked once if needed

        def check(rel: str, st: os.stat_result) -> bool:
            # one link only: a second name (a user's hard link to keep it) is never unlinked
            if stat.S_ISREG(st.st_mode) and st.st_nlink == 1 and recorded.get(rel) == _identity(st):
                ours.append(rel)
                return True
            return idle_transient(rel, st)

        def idle_transient(rel: str, st: os.stat_result) -> bool:
            """A transient file (SQLite's -wal/-shm) that a reader left beside a cleanly
            closed store, holding nothing the library would apply: the library's state of
            the engine's own database, so the engine's to delete with it."""
            pattern, is_idle = layout.transient_files, layout.idle_transients
            if not (pattern and is_idle and pattern.fullmatch(rel) and stat.S_ISREG(st.st_mode)):
                return False
            if self._recorded is None or self._in_use:  # no clean close to compare with
                return False
            if not idle:
                idle.append(is_idle(self.directory))
            if idle[0]:
                ours.append(rel)
            return idle[0]

        for name in names:
            st = os.lstat(self.directory / name)
            if name == MARKER and stat.S_ISREG(st.st_mode):
                continue
            if not self._owns_top(name) or stat.S_ISLNK(st.st_mode):
                yield name
            elif self._is_store(name) and layout.stores_are_dirs:
                if not stat.S_ISDIR(st.st_mode):
                    yield name
                    continue
                for inner in sorted(os.listdir(self.directory / name)):
                    if not check(f"{name}/{inner}", os.lstat(self.directory / name / inner)):
                        yield f"{name}/{inner}"
            elif self._is_store(name):  # a store that is a file: named exactly by the marker
                if not stat.S_ISREG(st.st_mode) or st.st_nlink != 1:
                    yield name
            elif not check(name, st):
                yield name

    # --- changes -----------------------------------------------------------------------
    def _delete(self, names: list[str], files: list[str]) -> None:
        """Remove the checked entries, by exact name: the recorded ``files``, then the
        stores (a store directory only once empty: anything that appeared in it meanwhile
        makes the rmdir fail and stays), through descriptors that never follow a symlink."""
        flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
        top = os.open(self.directory, flags)
        try:
            inner: dict[str, list[str]] = {}
            for rel in files:
                store, _, name = rel.rpartition("/")
                if store:
                    inner.setdefault(store, []).append(name)
                else:
                    os.unlink(name, dir_fd=top)
            for name in names:
                if self._is_store(name) and self.layout.stores_are_dirs:
                    sub = os.open(name, flags, dir_fd=top)
                    try:
                        for file in inner.get(name, []):
                            os.unlink(file, dir_fd=sub)
                    finally:
                        os.close(sub)
                    os.rmdir(name, dir_fd=top)
                elif self._is_store(name):
                    os.unlink(name, dir_fd=top)
            os.unlink(MARKER, dir_fd=top)  # last: until the stores are gone it proves they are ours
            os.fsync(top)
        finally:
            os.close(top)

    def _write_marker(
        self,
        files: dict[str, list[int]] | None = None,
        contents: dict[str, list[int]] | None = None,
        fingerprint: dict[str, Any] | None = None,
        in_use: bool = False,
    ) -> None:
        stores = self._listed if self._listed is not None else list(self.layout.stores)
        doc: dict[str, Any] = {"format": FORMAT, "engine": self.layout.engine, "stores": stores}
        if files is not None:
            doc["files"] = files
        if contents is not None:
            doc["contents"] = contents
        if fingerprint is not None:
            doc["fingerprint"] = fingerprint
        if in_use:
            doc["in_use"] = True
        self._recorded, self._contents, self._fingerprint, self._in_use = files, contents, fingerprint, in_use
        # a new name, created exclusively: this write created it, so only this write
        # renames or removes it (an existing file of that name is never touched)
        tmp = self.directory / f"{MARKER_TMP_PREFIX}{secrets.token_hex(8)}.tmp"
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        fd = os.open(tmp, flags, 0o644)
        try:
            try:
                os.write(fd, json.dumps(doc).encode() + b"\n")
                os.fsync(fd)
            finally:
                os.close(fd)
            os.replace(tmp, self.marker)
        except BaseException:
            with contextlib.suppress(OSError):  # a failed write leaves no half marker behind
                os.unlink(tmp)
            raise
        dfd = os.open(self.directory, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)


def _identity(st: os.stat_result) -> list[int]:
    """What tells a recorded file from another file given its name later: inode, size and
    modification time (an inode number alone is reused once the file is deleted)."""
    return [st.st_ino, st.st_size, st.st_mtime_ns]


def _crc(path: Path, size: int, limit: int | None) -> int:
    """CRC32 of a file up to ``limit`` bytes (None: any size), read without following a
    symlink; -1 above."""
    if limit is not None and size > limit:
        return -1
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        crc = 0
        while chunk := os.read(fd, 1 << 20):
            crc = zlib.crc32(chunk, crc)
        return crc
    finally:
        os.close(fd)


def _first(names: list[str]) -> str:
    shown = ", ".join(names[:_NAMED])
    return shown + (f" and {len(names) - _NAMED} more" if len(names) > _NAMED else "")


class MarkedStore:
    """Mixin of an engine whose store is a :class:`StoreDir` (``store_layout`` in
    ``data_dir``): the store's fingerprint lives in its marker (see ``asyncbench.run.reuse.reuse``)."""

    store_layout: ClassVar[StoreLayout]
    data_dir: Path

    async def read_fingerprint(self) -> dict[str, Any]:
        return await anyio.to_thread.run_sync(StoreDir(self.data_dir, self.store_layout).fingerprint)

    async def write_fingerprint(self, fingerprint: dict[str, Any]) -> bool:
        await anyio.to_thread.run_sync(StoreDir(self.data_dir, self.store_layout).write_fingerprint, fingerprint)
        return True
