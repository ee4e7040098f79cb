"""A compiled extension built from an older source is named and not used (a stale
editable build made every LSM stabilization fail with ``TypeError: write_blocks(...)``
after a pull that changed ``_native.c``'s signature, until a reinstall)."""

from __future__ import annotations

import importlib
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from asyncbench.native_build import REBUILD, source_sha256, stale_build

ROOT = Path(__file__).resolve().parent.parent
EXTENSIONS = [
    ("asyncbench.engines.lsm._native", ROOT / "engines" / "lsm" / "_native.c"),
    ("asyncbench.workloads.profile_store._kernels", ROOT / "workloads" / "profile_store" / "_kernels.c"),
    ("asyncbench.workloads.ycsb._kernels", ROOT / "workloads" / "ycsb" / "_kernels.c"),
]


@pytest.mark.parametrize(("name", "source"), EXTENSIONS, ids=["lsm", "kernels", "ycsb"])
def test_each_built_extension_carries_its_sources_digest(name: str, source: Path) -> None:
    module = importlib.import_module(name)  # CI builds both (a compiler is there)
    assert source_sha256(source) == module.SOURCE_SHA256
    assert stale_build(module, source) is None


def test_a_build_from_another_source_is_named_with_the_fix(tmp_path: Path) -> None:
    source = tmp_path / "_native.c"
    source.write_text("int f(int a, int b);\n")
    old = ModuleType("asyncbench.engines.lsm._native")
    old.SOURCE_SHA256 = source_sha256(source)  # type: ignore[attr-defined]
    assert stale_build(old, source) is None
    source.write_text("int f(int a, int b, int c);\n")  # a pull changed the signature
    why = stale_build(old, source)
    assert why is not None and "asyncbench.engines.lsm._native" in why and "_native.c" in why
    assert why.endswith(REBUILD)
    undigested = ModuleType("x._kernels")
    assert "without a source digest" in (stale_build(undigested, source) or "")
    assert stale_build(undigested, tmp_path / "absent.c") is None  # a wheel: nothing to compare


@pytest.mark.parametrize(
    ("loader", "source"),
    [
        ("asyncbench.engines.lsm.native", ROOT / "engines" / "lsm" / "_native.c"),
        ("asyncbench.workloads.profile_store.kernels", ROOT / "workloads" / "profile_store" / "_kernels.c"),
        ("asyncbench.workloads.ycsb.kernels", ROOT / "workloads" / "ycsb" / "_kernels.c"),
    ],
    ids=["lsm", "kernels", "ycsb"],
)
def test_the_loaders_fall_back_from_a_stale_build_with_the_reason(loader: str, source: Path) -> None:
    """The real loaders, in a fresh interpreter whose source digest check sees a changed
    source (the digest function patched to disagree): not accelerated, the reason given."""
    code = (
        "import asyncbench.native_build as b\n"
        "b.source_sha256 = lambda path: 'changed'\n"
        f"import {loader} as m\n"
        "print(m.ACCELERATED, '|', m.FALLBACK_REASON)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    accelerated, why = (part.strip() for part in out.split("|", 1))
    assert accelerated == "False"
    assert source.name in why and REBUILD in why
