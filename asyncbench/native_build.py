"""Whether a compiled extension was built from the source next to it.

Why: an editable install (``pip install -e .``) builds each C extension once; after a
``git pull`` that changes its C source, the old build still imports, and a changed
function signature then fails deep inside a run (the LSM's merge: ``TypeError:
write_blocks(...)`` in a stabilization, the store lost for that run). ``setup.py`` builds
every extension with ``SOURCE_SHA256``, the digest of its C source, and the module
exports it; a loader compares it with the source it finds beside the package and falls
back to the pure-Python path with the reason when they differ, so a stale build is named
("rebuild it") instead of failing a run. Installed from a wheel the source ships beside
the module too (package data); where none does, there is nothing to compare.

Fallback switches, one policy. Each compiled extension has a pure-Python twin and one
environment variable that selects the twin on purpose: ``ASYNCBENCH_NO_KERNELS`` (the
workloads' kernels) and ``ASYNCBENCH_LSM_PURE`` (the LSM engine's C code, in
``engines/lsm/native.py``). Every switch is read by :func:`disabled_by`: on when set to
anything but empty or ``0``. Whatever keeps the compiled code out (a switch, no build, a
stale build), :func:`load_extension` hands back the reason and the program runs on the
twins, slower, with the same checksums. The test suite tells the causes apart
(``tests/compiled.py``): a test that needs the compiled code in use is skipped when its
switch is on (the fallback was asked for) and fails when the code is missing or stale,
naming why and the fix, so a suite cannot pass with the C code untested. Property tests
that import an extension module themselves compare it with its twin whatever the switch.
"""

from __future__ import annotations

import hashlib
import importlib
import os
from pathlib import Path
from types import ModuleType

__all__ = ["KERNELS_DISABLE_ENV", "REBUILD", "disabled_by", "load_extension", "source_sha256", "stale_build"]

#: On (see :func:`disabled_by`), it keeps every workload on its pure-Python kernels.
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


def disabled_by(switch: str) -> str | None:
    """Why the fallback switch ``switch`` keeps compiled code off (``disabled by
    NAME=value``), or None when it is off: unset, empty or ``0``. The one reading of every
    switch (the module's docstring states the policy)."""
    value = os.environ.get(switch, "")
    return None if value in ("", "0") else f"disabled by {switch}={value}"


def load_extension(name: str, source: Path, disable_env: str = KERNELS_DISABLE_ENV) -> tuple[ModuleType | None, str | None]:
    """The compiled module ``name`` built from ``source`` (a C file or a folder of them), or
    None with why not: disabled by ``disable_env``, not built (no compiler, another Python),
    or stale. One loader for every extension (the workloads' kernels, the LSM's C code), so
    each falls back, and says why, the same way."""
    disabled = disabled_by(disable_env)
    if disabled is not None:
        return None, disabled
    try:
        module = importlib.import_module(name)
    except ImportError as exc:  # not built (no compiler), or built for another Python
        return None, f"{type(exc).__name__}: {exc}"
    stale = stale_build(module, source)
    return (None, stale) if stale else (module, None)
