"""The power-cut filesystem on its own (asyncbench/fs/power_cut.py, issue 57): after the cut
(SIGKILL of the FUSE process, then the mount dropped), the backing directory holds exactly
what was synced: ``fsync`` and ``fdatasync`` keep a file's bytes and size, an unsynced write
or truncation is gone, names persist at once (so a rename or a new file is kept, with the
data its file last synced), a directory sync is accepted, and ``O_DIRECT`` promises
nothing without a sync. Reads before the cut see every write, as a page cache shows them."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

if os.environ.get("CI"):  # CI installs fuse3 and mfusepy (.ci/run): there it must not skip
    import mfusepy  # noqa: F401

    assert Path("/dev/fuse").exists() and shutil.which("fusermount3"), "CI: /dev/fuse or fusermount3 (fuse3) missing"
pytest.importorskip("mfusepy")
if not (Path("/dev/fuse").exists() and shutil.which("fusermount3")):
    pytest.skip("needs /dev/fuse and fusermount3 (Debian: fuse3)", allow_module_level=True)


@dataclass
class Mounted:
    backing: Path
    mount: Path
    proc: subprocess.Popen[bytes]

    def cut(self) -> None:
        """The power cut: the layer's process killed, the dead mount dropped."""
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()
        subprocess.run(["fusermount3", "-u", "-z", str(self.mount)], check=True)


@pytest.fixture
def fs(tmp_path: Path) -> Iterator[Mounted]:
    backing, mount = tmp_path / "backing", tmp_path / "mount"
    backing.mkdir()
    mount.mkdir()
    proc = subprocess.Popen([sys.executable, "-m", "asyncbench.fs.power_cut", str(backing), str(mount)],
                            stderr=subprocess.PIPE)  # fmt: skip
    deadline = time.monotonic() + 30
    while not os.path.ismount(mount):
        assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
        assert time.monotonic() < deadline, "the power-cut filesystem did not mount"
        time.sleep(0.05)
    m = Mounted(backing, mount, proc)
    yield m
    if proc.poll() is None:
        m.cut()


def write(path: Path, data: bytes, sync: str | None = None, flags: int = 0, offset: int | None = None) -> None:
    fd = os.open(path, os.O_CREAT | os.O_WRONLY | flags, 0o644)
    try:
        if offset is None:
            os.write(fd, data)
        else:
            os.pwrite(fd, data, offset)
        if sync == "fsync":
            os.fsync(fd)
        elif sync == "fdatasync":
            os.fdatasync(fd)
    finally:
        os.close(fd)


@pytest.mark.parametrize("sync", ["fsync", "fdatasync"])
def test_a_sync_keeps_the_bytes_before_it_and_the_cut_drops_those_after(fs: Mounted, sync: str) -> None:
    a = fs.mount / "a"
    write(a, b"synced " * 1000, sync)  # several pages
    write(a, b"+tail", flags=os.O_APPEND)
    write(a, b"XX", offset=10)  # an unsynced change inside the synced bytes
    write(fs.mount / "never", b"never synced")
    assert a.read_bytes() == (b"synced " * 1000)[:10] + b"XX" + (b"synced " * 1000)[12:] + b"+tail"
    fs.cut()
    assert (fs.backing / "a").read_bytes() == b"synced " * 1000
    assert (fs.backing / "never").read_bytes() == b""  # its name was kept, its data never synced


def test_an_appending_log_keeps_each_synced_frame(fs: Mounted) -> None:
    log = fs.mount / "wal"
    fd = os.open(log, os.O_CREAT | os.O_WRONLY | os.O_APPEND, 0o644)
    for i in range(5):
        os.write(fd, b"frame%d;" % i)
        if i == 2:
            os.fdatasync(fd)
    os.close(fd)
    assert log.read_bytes() == b"frame0;frame1;frame2;frame3;frame4;"
    fs.cut()
    assert (fs.backing / "wal").read_bytes() == b"frame0;frame1;frame2;"


def test_a_rename_persists_at_once_with_the_data_its_file_synced(fs: Mounted) -> None:
    """The atomic-replace pattern: a temporary file synced, then renamed over the old one."""
    write(fs.mount / "manifest", b"old", "fsync")
    write(fs.mount / "manifest.tmp", b"new", "fsync")
    os.rename(fs.mount / "manifest.tmp", fs.mount / "manifest")
    write(fs.mount / "other.tmp", b"unsynced")  # renamed without a sync: the name survives, not the data
    os.rename(fs.mount / "other.tmp", fs.mount / "other")
    fs.cut()
    assert sorted(p.name for p in fs.backing.iterdir()) == ["manifest", "other"]
    assert (fs.backing / "manifest").read_bytes() == b"new"
    assert (fs.backing / "other").read_bytes() == b""


def test_a_directory_sync_is_accepted_and_names_need_none(fs: Mounted) -> None:
    (fs.mount / "d").mkdir()
    write(fs.mount / "d" / "f", b"data", "fsync")
    dfd = os.open(fs.mount / "d", os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(dfd)
    finally:
        os.close(dfd)
    write(fs.mount / "d" / "g", b"x", "fsync")  # no directory sync after it
    os.unlink(fs.mount / "d" / "f")
    fs.cut()
    assert [p.name for p in (fs.backing / "d").iterdir()] == ["g"]
    assert (fs.backing / "d" / "g").read_bytes() == b"x"


def test_a_truncation_is_pending_until_a_sync(fs: Mounted) -> None:
    f, g = fs.mount / "f", fs.mount / "g"
    write(f, bytes(range(256)) * 40, "fsync")
    write(g, bytes(range(256)) * 40, "fsync")
    os.truncate(f, 100)  # never synced
    fd = os.open(g, os.O_RDWR)
    os.ftruncate(fd, 100)
    os.pwrite(fd, b"\x01", 5000)  # grown again past the cut: the bytes between read as zeros
    assert os.pread(fd, 10, 4000) == bytes(10)
    os.fsync(fd)
    os.close(fd)
    assert f.stat().st_size == 100
    fs.cut()
    assert (fs.backing / "f").read_bytes() == bytes(range(256)) * 40
    assert (fs.backing / "g").read_bytes() == bytes(range(100)) + bytes(4900) + b"\x01"


def test_o_direct_writes_promise_nothing_without_a_sync(fs: Mounted) -> None:
    """An O_DIRECT write skips the page cache, not the device's cache: without a sync it
    is not promised. Where the mount refuses O_DIRECT (EINVAL), there is nothing to keep."""
    block = b"d" * 4096
    try:
        fd = os.open(fs.mount / "direct", os.O_CREAT | os.O_WRONLY | os.O_DIRECT, 0o644)
    except OSError as exc:
        assert exc.errno == 22  # EINVAL: the kernel's FUSE without direct I/O support
        return
    import mmap

    buf = mmap.mmap(-1, 4096)  # O_DIRECT wants an aligned buffer
    buf.write(block)
    os.write(fd, buf)
    os.close(fd)
    assert (fs.mount / "direct").read_bytes() == block  # seen before the cut
    fd = os.open(fs.mount / "synced-direct", os.O_CREAT | os.O_WRONLY | os.O_DIRECT, 0o644)
    os.write(fd, buf)
    os.fsync(fd)
    os.close(fd)
    fs.cut()
    assert (fs.backing / "direct").read_bytes() == b""
    assert (fs.backing / "synced-direct").read_bytes() == block


def _alive(pid: int) -> bool:
    """Running (a zombie left for a parent that never reaps it is not)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state != "Z"


def test_the_layer_dies_with_its_parent(tmp_path: Path) -> None:
    """A runner killed outright leaves no layer holding pending bytes (PR_SET_PDEATHSIG)."""
    backing, mount = tmp_path / "backing", tmp_path / "mount"
    backing.mkdir()
    mount.mkdir()
    starter = ("import subprocess, sys, time; p = subprocess.Popen([sys.executable, '-m', 'asyncbench.fs.power_cut', "
               f"{str(backing)!r}, {str(mount)!r}]); print(p.pid, flush=True); time.sleep(120)")  # fmt: skip
    parent = subprocess.Popen([sys.executable, "-c", starter], stdout=subprocess.PIPE, text=True)
    assert parent.stdout is not None
    pid = int(parent.stdout.readline())
    try:
        deadline = time.monotonic() + 30
        while not os.path.ismount(mount):
            assert time.monotonic() < deadline, "the power-cut filesystem did not mount"
            time.sleep(0.05)
        parent.kill()
        parent.wait()
        deadline = time.monotonic() + 10
        while _alive(pid):
            assert time.monotonic() < deadline, "the layer outlived its parent"
            time.sleep(0.05)
    finally:
        if _alive(pid):
            os.kill(pid, signal.SIGKILL)
        subprocess.run(["fusermount3", "-u", "-z", str(mount)], check=False)
