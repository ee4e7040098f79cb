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
    ("asyncbench.engines.lsm._native", ROOT / "engines" / "lsm" / "csrc"),
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


def test_a_folder_s_digest_covers_each_file_s_name_and_bytes(tmp_path: Path) -> None:
    """The LSM's module is built from a folder of C files: changing, adding or renaming any
    of them is another source; files that are not C sources do not count; a folder with
    none (nothing shipped) has no digest, and nothing to compare."""
    (tmp_path / "a.c").write_text("int a;\n")
    (tmp_path / "a.h").write_text("int a;\n")
    first = source_sha256(tmp_path)
    (tmp_path / "notes.txt").write_text("not a source")
    assert source_sha256(tmp_path) == first
    (tmp_path / "a.h").write_text("int a, b;\n")
    changed = source_sha256(tmp_path)
    assert changed != first
    (tmp_path / "a.h").rename(tmp_path / "b.h")
    assert source_sha256(tmp_path) not in (first, changed)
    (tmp_path / "c.c").write_text("")
    assert len({source_sha256(tmp_path), first, changed}) == 3
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(OSError):
        source_sha256(empty)
    assert stale_build(ModuleType("x._native"), empty) is None


def test_setup_py_and_the_loader_digest_a_folder_alike() -> None:
    """``setup.py`` cannot import the package it builds, so it computes the digest itself;
    both must give the same one (else every build would be called stale)."""
    import runpy
    from unittest import mock

    with mock.patch("setuptools.setup"):
        setup_py = runpy.run_path(str(ROOT / "setup.py"))
    folder = ROOT / "engines" / "lsm" / "csrc"
    assert setup_py["source_digest"]("engines/lsm/csrc") == [("SOURCE_SHA256", f'"{source_sha256(folder)}"')]
    lsm = [e for e in setup_py["setup"].call_args.kwargs["ext_modules"] if e.name.endswith("lsm._native")]
    (ext,) = lsm
    assert sorted(Path(s).name for s in ext.sources) == sorted(p.name for p in folder.glob("*.c"))
    assert sorted(Path(s).name for s in ext.depends) == sorted(p.name for p in folder.glob("*.h"))


@pytest.mark.parametrize(
    ("loader", "source"),
    [
        ("asyncbench.engines.lsm.native", ROOT / "engines" / "lsm" / "csrc"),
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
