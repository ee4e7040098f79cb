"""A filesystem that loses what a power cut loses: ``python -m asyncbench.fs.power_cut
BACKING MOUNT`` mounts BACKING at MOUNT (FUSE) and keeps every written-but-unsynced byte in
this process's memory, apart from BACKING; ``fsync`` and ``fdatasync`` of a file write its
pending bytes (and size) to the backing file and sync it there. SIGKILL of this process is
the power cut: the pending bytes are gone and BACKING holds exactly what was synced.

Why a filesystem and not a kill: a write that reached the operating system survives the
death of the process that made it (it is in the page cache), so a kill tests only an
engine's own buffering. A power cut also drops the page cache; this layer is that page
cache, made separate and discardable (the idea of Jepsen's LazyFS, in a few hundred lines).

The model, stated (docs/durability.md, and tests/test_power_cut.py checks each):

- File data (``write``, ``truncate``, ``O_TRUNC``, growth) is pending until that file's
  ``fsync``/``fdatasync``; reads see the pending bytes, as a page cache shows them.
- Names (create, rename, unlink, mkdir, rmdir, link, symlink) reach BACKING at once, as
  LazyFS does: a directory's fsync has nothing left to do. The cut therefore keeps every
  name, with the data its file last synced (a created, never-synced file is empty).
- ``O_DIRECT`` gets no promise of its own: its writes are pending like any other until a
  sync (a device's volatile cache can hold them too).

One thread (FUSE ``nothreads``): each call sees the others' effects in order.
"""

from __future__ import annotations

import errno
import os
import sys
from dataclasses import dataclass, field
from typing import Any

__all__ = ["PAGE", "Pending", "die_with_parent", "main", "power_cut_fs"]

PAGE = 4096


@dataclass
class Pending:
    """One file's unsynced state: whole pages as they read now, the size it has now, and the
    size it was cut to (the backing file's bytes beyond it read as zeros until a sync)."""

    path: str | None  # its current name (None: unlinked)
    pages: dict[int, bytes] = field(default_factory=dict)
    size: int | None = None  # None: the backing file's size
    cut: int | None = None  # the smallest size it was truncated to since its last sync


def power_cut_fs() -> type:
    """The FUSE operations class (mfusepy, an optional dependency, imported only where the
    layer runs)."""
    import mfusepy  # type: ignore[import-untyped,import-not-found,unused-ignore]

    class PowerCutFs(mfusepy.Operations):  # type: ignore[misc]
        """See the module docstring."""

        use_ns = True

        def __init__(self, backing: str) -> None:
            self.root = os.path.realpath(backing)
            self.files: dict[str, Pending] = {}  # name -> pending state, for files with any
            self.handles: dict[int, tuple[Pending, int, bool]] = {}  # fh -> (state, backing fd, append)
            self.next_fh = 1

        # --- names: straight to BACKING ---------------------------------------------------
        def _real(self, path: str) -> str:
            return self.root + path

        def _state(self, path: str) -> Pending:
            return self.files.setdefault(path, Pending(path))

        def getattr(self, path: str, fh: int | None = None) -> dict[str, Any]:
            st = os.lstat(self._real(path))
            keys = ("st_atime", "st_ctime", "st_gid", "st_mode", "st_mtime", "st_nlink", "st_size", "st_uid", "st_ino")
            attrs = {k: getattr(st, k) for k in keys}
            for k in ("st_atime", "st_ctime", "st_mtime"):
                attrs[k] = getattr(st, k + "_ns")
            state = self.files.get(path)
            if state is not None and state.size is not None:
                attrs["st_size"] = state.size
            return attrs

        def readdir(self, path: str, fh: int) -> list[str]:
            return [".", "..", *os.listdir(self._real(path))]

        def access(self, path: str, amode: int) -> int:
            if not os.access(self._real(path), amode):
                raise OSError(errno.EACCES, "")
            return 0

        def mkdir(self, path: str, mode: int) -> int:
            os.mkdir(self._real(path), mode)
            return 0

        def rmdir(self, path: str) -> int:
            os.rmdir(self._real(path))
            return 0

        def unlink(self, path: str) -> int:
            os.unlink(self._real(path))
            state = self.files.pop(path, None)
            if state is not None:
                state.path = None
            return 0

        def rename(self, old: str, new: str) -> int:
            os.rename(self._real(old), self._real(new))
            gone = self.files.pop(new, None)
            if gone is not None:
                gone.path = None
            state = self.files.pop(old, None)
            if state is not None:
                state.path = new
                self.files[new] = state
            return 0

        def link(self, target: str, source: str) -> int:
            os.link(self._real(source), self._real(target))
            return 0

        def symlink(self, target: str, source: str) -> int:
            os.symlink(source, self._real(target))
            return 0

        def readlink(self, path: str) -> str:
            return os.readlink(self._real(path))

        def chmod(self, path: str, mode: int) -> int:
            os.chmod(self._real(path), mode)
            return 0

        def chown(self, path: str, uid: int, gid: int) -> int:
            os.chown(self._real(path), uid, gid)
            return 0

        def utimens(self, path: str, times: tuple[int, int] | None = None) -> int:
            os.utime(self._real(path), ns=times) if times else os.utime(self._real(path))
            return 0

        def statfs(self, path: str) -> dict[str, int]:
            sv = os.statvfs(self._real(path))
            keys = ("f_bavail", "f_bfree", "f_blocks", "f_bsize", "f_favail", "f_ffree", "f_files", "f_flag",
                    "f_frsize", "f_namemax")  # fmt: skip
            return {k: getattr(sv, k) for k in keys}

        def fsyncdir(self, path: str, _datasync: int, fh: int) -> int:
            return 0  # names reached BACKING when they were made

        # --- data: pending until fsync ----------------------------------------------------
        def _handle(self, path: str, flags: int) -> int:
            fd = os.open(self._real(path), os.O_RDWR if os.access(self._real(path), os.W_OK) else os.O_RDONLY)
            state = self._state(path)
            if flags & os.O_TRUNC:
                self._truncate(state, fd, 0)
            fh, self.next_fh = self.next_fh, self.next_fh + 1
            self.handles[fh] = (state, fd, bool(flags & os.O_APPEND))
            return fh

        def open(self, path: str, flags: int) -> int:
            return self._handle(path, flags)

        def create(self, path: str, mode: int, flags: int = 0) -> int:
            os.close(os.open(self._real(path), os.O_CREAT | os.O_WRONLY, mode))  # the name, at once
            return self._handle(path, flags)

        def release(self, path: str, fh: int) -> int:
            _, fd, _ = self.handles.pop(fh)
            os.close(fd)
            return 0

        def flush(self, path: str, fh: int) -> int:
            return 0  # a close syncs nothing

        def _size(self, state: Pending, fd: int) -> int:
            return state.size if state.size is not None else os.fstat(fd).st_size

        def _page(self, state: Pending, fd: int, index: int) -> bytes:
            """Page ``index`` as it reads now, PAGE bytes (zeros past the end)."""
            if index in state.pages:
                return state.pages[index]
            start = index * PAGE
            base = os.pread(fd, PAGE, start)
            if state.cut is not None:  # bytes past a truncation read as zeros
                base = base[: max(0, state.cut - start)]
            size = self._size(state, fd)
            base = base[: max(0, size - start)]
            return base + bytes(PAGE - len(base))

        def read(self, path: str, size: int, offset: int, fh: int) -> bytes:
            state, fd, _ = self.handles[fh]
            end = min(offset + size, self._size(state, fd))
            out = bytearray()
            pos = offset
            while pos < end:
                index, within = divmod(pos, PAGE)
                take = min(PAGE - within, end - pos)
                out += self._page(state, fd, index)[within : within + take]
                pos += take
            return bytes(out)

        def write(self, path: str, data: bytes, offset: int, fh: int) -> int:
            state, fd, append = self.handles[fh]
            if append:
                offset = self._size(state, fd)
            pos, view = offset, memoryview(data)
            while view:
                index, within = divmod(pos, PAGE)
                take = min(PAGE - within, len(view))
                page = bytearray(self._page(state, fd, index))
                page[within : within + take] = view[:take]
                state.pages[index] = bytes(page)
                pos += take
                view = view[take:]
            state.size = max(self._size(state, fd), offset + len(data))
            return len(data)

        def _truncate(self, state: Pending, fd: int, length: int) -> None:
            size = self._size(state, fd)
            if length < size:
                keep = -(-length // PAGE)  # pages that still hold bytes
                state.pages = {i: p for i, p in state.pages.items() if i < keep}
                index, within = divmod(length, PAGE)
                if within:
                    page = self._page(state, fd, index)
                    state.pages[index] = page[:within] + bytes(PAGE - within)
                state.cut = length if state.cut is None else min(state.cut, length)
            state.size = length

        def truncate(self, path: str, length: int, fh: int | None = None) -> int:
            if fh is not None and fh in self.handles:
                state, fd, _ = self.handles[fh]
                self._truncate(state, fd, length)
                return 0
            fd = os.open(self._real(path), os.O_RDONLY)
            try:
                self._truncate(self._state(path), fd, length)
            finally:
                os.close(fd)
            return 0

        def fallocate(self, path: str, mode: int, offset: int, size: int, fh: int) -> int:
            raise OSError(errno.EOPNOTSUPP, "")  # callers fall back to writing

        def fsync(self, path: str, _datasync: int, fh: int) -> int:
            """The file's pending bytes and size to BACKING, synced (fsync and fdatasync alike:
            the size is the data a later read needs)."""
            state, _, _ = self.handles[fh]
            if state.path is None:
                return 0  # unlinked: nothing of it survives anyway
            fd = os.open(self._real(state.path), os.O_RDWR)
            try:
                if state.cut is not None:
                    os.ftruncate(fd, state.cut)
                for index, page in sorted(state.pages.items()):
                    os.pwrite(fd, page, index * PAGE)
                if state.size is not None:
                    os.ftruncate(fd, state.size)
                os.fsync(fd)
            finally:
                os.close(fd)
            state.pages, state.size, state.cut = {}, None, None
            return 0

    return PowerCutFs


def die_with_parent() -> None:
    """Linux: SIGKILL to this process when its parent dies (``prctl(PR_SET_PDEATHSIG)``), so
    a runner killed outright leaves no worker writing and no layer holding pending bytes."""
    if sys.platform.startswith("linux"):
        import ctypes
        import signal

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # 1: PR_SET_PDEATHSIG


def main(argv: list[str] | None = None) -> int:
    die_with_parent()
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 2:
        print("usage: python -m asyncbench.fs.power_cut BACKING MOUNT", file=sys.stderr)
        return 2
    import mfusepy  # type: ignore[import-untyped,import-not-found,unused-ignore]

    backing, mount = args
    mfusepy.FUSE(power_cut_fs()(backing), mount, foreground=True, nothreads=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
