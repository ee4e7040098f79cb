"""A power crash's filesystem, runner side: the engine's store directory mounted through the
power-cut layer (:mod:`asyncbench.fs.power_cut`) for the crashed phase's worker, and the cut.

The worker opens the store at the mount and writes through it; every byte it did not sync
stays in the layer's process. Leaving the context is the power cut: that process is
SIGKILLed (after the worker's own kill), so the store directory keeps exactly what was
synced, and the dead mount is dropped. The cut happens on every way out, an error included:
a run never leaves a mount behind.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path

import anyio

__all__ = ["missing", "power_cut_mount"]

#: How long the layer may take to mount.
MOUNT_SECONDS = 30.0


def missing() -> str | None:
    """What this machine lacks for a power crash, or None."""
    if importlib.util.find_spec("mfusepy") is None:
        return "the Python package mfusepy (pip install 'asyncbench[power]')"
    if not Path("/dev/fuse").exists():
        return "/dev/fuse (FUSE in the kernel)"
    if shutil.which("fusermount3") is None:
        return "fusermount3 (Debian: apt-get install fuse3)"
    return None


@contextlib.asynccontextmanager
async def power_cut_mount(backing: Path) -> AsyncIterator[Path]:
    """``backing`` mounted through the power-cut layer; the mount point, cut at the exit."""
    lack = missing()
    if lack is not None:
        raise RuntimeError(f"a power crash needs {lack}")
    tmp = Path(tempfile.mkdtemp(prefix="asyncbench-power-"))
    mount, log = tmp / "mount", tmp / "layer.log"
    mount.mkdir()
    try:
        with open(log, "wb") as err:
            cmd = [sys.executable, "-P", "-m", "asyncbench.fs.power_cut", str(backing), str(mount)]
            proc = await anyio.open_process(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err)
        try:
            with anyio.fail_after(MOUNT_SECONDS):
                while not os.path.ismount(mount):
                    if proc.returncode is not None:
                        raise RuntimeError(f"the power-cut filesystem did not mount: {_tail(log)}")
                    await anyio.sleep(0.05)
            yield mount
        finally:  # the cut: pending writes die with the layer's process
            with anyio.CancelScope(shield=True):
                if proc.returncode is None:
                    proc.kill()
                await proc.wait()
                await anyio.run_process(["fusermount3", "-u", "-z", str(mount)], check=False)
    finally:  # never a recursive delete: were the mount still there, it would reach the store
        with contextlib.suppress(OSError):
            log.unlink(missing_ok=True)
            mount.rmdir()
            tmp.rmdir()


def _tail(log: Path) -> str:
    lines = log.read_text(errors="replace").strip().splitlines()
    return lines[-1] if lines else "no error output"
