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


def source_digest(source: str) -> list[tuple[str, str]]:
    """``SOURCE_SHA256``: the digest of the C source an extension is built from, which the
    module exports and its loader checks (asyncbench/native_build.py: a build older than
    its source falls back with the reason instead of failing a run)."""
    digest = hashlib.sha256((Path(__file__).parent / source).read_bytes()).hexdigest()
    return [("SOURCE_SHA256", f'"{digest}"')]


def packages() -> list[str]:
    found = find_namespace_packages(include=["asyncbench", "asyncbench.*"])
    for folder, target in MAPPED.items():
        found += [target + p[len(folder):] for p in find_namespace_packages(include=[folder, folder + ".*"])]
    return [p for p in found if "__pycache__" not in p]


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
        # The LSM engine's flush/merge write loop (engines/lsm/native.py falls back to
        # pure Python without it); zlib for the blocks' crc32, as Python's zlib module.
        Extension(
            "asyncbench.engines.lsm._native",
            sources=["engines/lsm/_native.c"],
            define_macros=source_digest("engines/lsm/_native.c"),
            libraries=["z"],
            extra_compile_args=["-O3"],
            optional=True,
        ),
    ],
)
