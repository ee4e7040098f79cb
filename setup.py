"""Build hook: the package layout and the workload's compiled kernels.

Layout: the repository keeps ``engines/`` and ``workloads/`` at its top level (one place
to read an adapter or the workload), but they install under the project's own name, as
``asyncbench.engines`` and ``asyncbench.workloads``, so nothing named ``engines`` or
``workloads`` lands in site-packages to collide with another project's
(``tests/test_packaging.py`` checks the wheel's file list).

Kernels (checksum folds, profile generator, .NET RNG; YCSB's digest, keys and records; and the LSM engine's block writer): ``optional=True``: without a
compiler the package still installs and runs on the pure Python fallbacks, only slower,
and says so: ``asyncbench.workloads.profile_store.kernels`` (the one import point) reports
``ACCELERATED = False`` with the reason, and its ``require()`` raises.
"""

import hashlib
from pathlib import Path

from setuptools import Extension, find_namespace_packages, setup

#: repository folder -> installed package
MAPPED = {"engines": "asyncbench.engines", "workloads": "asyncbench.workloads"}


ROOT = Path(__file__).parent

#: The LSM engine's C sources: one concept per file in one folder, built as one module.
LSM_SOURCES = "engines/lsm/csrc"


def folder_files(folder: str, suffix: str) -> list[str]:
    """The files of ``folder`` ending in ``suffix``, relative to the project, sorted."""
    return sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / folder).glob("*" + suffix))


def source_digest(source: str) -> list[tuple[str, str]]:
    """``SOURCE_SHA256``: the digest of the C source an extension is built from (a file, or
    a folder of ``.c`` and ``.h`` files), which the module exports and its loader checks
    (asyncbench/native_build.py: a build older than its source falls back with the reason
    instead of failing a run). ``native_build.source_sha256`` computes the same digest;
    tests/test_native_build.py checks that they agree."""
    path = ROOT / source
    if not path.is_dir():
        return [("SOURCE_SHA256", f'"{hashlib.sha256(path.read_bytes()).hexdigest()}"')]
    digest = hashlib.sha256()
    for name in sorted(p.name for p in path.iterdir() if p.suffix in (".c", ".h")):
        data = (path / name).read_bytes()
        digest.update(f"{name}\0{len(data)}\0".encode())
        digest.update(data)
    return [("SOURCE_SHA256", f'"{digest.hexdigest()}"')]


def packages() -> list[str]:
    found = find_namespace_packages(include=["asyncbench", "asyncbench.*"])
    for folder, target in MAPPED.items():
        found += [target + p[len(folder):] for p in find_namespace_packages(include=[folder, folder + ".*"])]
    # a folder of C sources is the package data of its parent, not a package of its own
    return [p for p in found if "__pycache__" not in p and not p.endswith(".csrc")]


setup(
    packages=packages(),
    package_dir={target: folder for folder, target in MAPPED.items()},
    ext_modules=[
        Extension(
            "asyncbench.workloads.profile_store._kernels",
            sources=["workloads/profile_store/_kernels.c"],
            define_macros=source_digest("workloads/profile_store/_kernels.c"),
            extra_compile_args=["-O3"],
            optional=True,
        ),
        # The YCSB operation's digest, key names and records (workloads/ycsb/kernels.py falls
        # back to pure Python without it).
        Extension(
            "asyncbench.workloads.ycsb._kernels",
            sources=["workloads/ycsb/_kernels.c"],
            define_macros=source_digest("workloads/ycsb/_kernels.c"),
            extra_compile_args=["-O3"],
            optional=True,
        ),
        # The LSM engine's flush/merge write loop, index and lookup (engines/lsm/native.py
        # falls back to pure Python without it); zlib for the blocks' crc32, as Python's
        # zlib module. Every .c of its folder is one translation unit of the one module
        # (csrc/module.c lists them); the headers are `depends`, so a changed header
        # rebuilds it and the sdist carries them. Hidden visibility: only PyInit__native
        # (PyMODINIT_FUNC) is exported, not the files' shared internal functions.
        Extension(
            "asyncbench.engines.lsm._native",
            sources=folder_files(LSM_SOURCES, ".c"),
            depends=folder_files(LSM_SOURCES, ".h"),
            define_macros=source_digest(LSM_SOURCES),
            libraries=["z"],
            extra_compile_args=["-O3", "-fvisibility=hidden"],
            optional=True,
        ),
    ],
)
