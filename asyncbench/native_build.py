"""Whether a compiled extension was built from the source next to it.

Why: an editable install (``pip install -e .``) builds each C extension once; after a
``git pull`` that changes its C source, the old build still imports, and a changed
function signature then fails deep inside a run (the LSM's merge: ``TypeError:
write_blocks(...)`` in a stabilization, the store lost for that run). ``setup.py`` builds
every extension with ``SOURCE_SHA256``, the digest of its C source, and the module
exports it; a loader compares it with the source it finds beside the package and falls
back to the pure-Python path with the reason when they differ, so a stale build is named
("rebuild it") instead of failing a run. Installed from a wheel there is no source beside
the module, and nothing to compare.
"""

from __future__ import annotations

import hashlib
import importlib
import os
from pathlib import Path
from types import ModuleType

__all__ = ["KERNELS_DISABLE_ENV", "REBUILD", "load_extension", "source_sha256", "stale_build"]

#: Set (to anything but ``0``) it keeps every workload on its pure-Python kernels.
KERNELS_DISABLE_ENV = "ASYNCBENCH_NO_KERNELS"

#: What a user does about a stale build.
REBUILD = "rebuild it: pip install -e ."


def source_sha256(source: Path) -> str:
    """The digest ``setup.py`` compiles into the extension built from ``source``: a C file,
    or a folder whose ``.c`` and ``.h`` files make one extension (the LSM's
    ``engines/lsm/csrc``: each file's name, length and bytes, in name order, so a renamed,
    added or removed file changes it too). OSError when there is no source to read (a
    folder without any: a wheel that ships none)."""
    if not source.is_dir():
        return hashlib.sha256(source.read_bytes()).hexdigest()
    names = sorted(p.name for p in source.iterdir() if p.suffix in (".c", ".h"))
    if not names:
        raise FileNotFoundError(f"no C sources in {source}")
    digest = hashlib.sha256()
    for name in names:
        data = (source / name).read_bytes()
        digest.update(f"{name}\0{len(data)}\0".encode())
        digest.update(data)
    return digest.hexdigest()


def stale_build(module: ModuleType, source: Path) -> str | None:
    """Why ``module`` was not built from ``source`` (None: it was, or there is no source
    to compare with)."""
    try:
        expected = source_sha256(source)
    except OSError:  # an installed wheel ships no C source
        return None
    built = getattr(module, "SOURCE_SHA256", None)
    if built == expected:
        return None
    was = "without a source digest" if built is None else "from another version of its source"
    return f"the compiled {module.__name__} was built {was} ({source.name} has changed since): {REBUILD}"


def load_extension(name: str, source: Path, disable_env: str = KERNELS_DISABLE_ENV) -> tuple[ModuleType | None, str | None]:
    """The compiled module ``name`` built from ``source``, or None with why not: disabled by
    ``disable_env``, not built (no compiler, another Python), or stale. One loader for every
    workload's kernels, so each falls back, and says why, the same way."""
    if os.environ.get(disable_env, "") not in ("", "0"):
        return None, f"disabled by {disable_env}={os.environ[disable_env]}"
    try:
        module = importlib.import_module(name)
    except ImportError as exc:  # not built (no compiler), or built for another Python
        return None, f"{type(exc).__name__}: {exc}"
    stale = stale_build(module, source)
    return (None, stale) if stale else (module, None)
