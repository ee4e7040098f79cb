"""What ``pip install .`` puts into site-packages: the project's own package and nothing else.

The repository keeps ``engines/`` and ``workloads/`` at its top level; a wheel must carry
them as ``asyncbench/engines`` and ``asyncbench/workloads`` (a top-level ``engines`` or
``workloads`` would collide with any other project's package of that name), with the
data files the workload reads at run time.
"""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> zipfile.ZipFile:
    """A wheel built from a copy of the tracked files (a build writes build/ and egg-info
    beside its sources: never into the checkout)."""
    src = tmp_path_factory.mktemp("src")
    tracked = subprocess.run(
        ["git", "-C", str(ROOT), "ls-files", "-z"], capture_output=True, check=True
    ).stdout.decode().split("\0")
    for name in filter(None, tracked):
        if not (ROOT / name).is_file():
            continue
        dest = src / name
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_bytes((ROOT / name).read_bytes())
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w", str(out), str(src)],
        check=True,
        capture_output=True,
    )
    (path,) = out.glob("asyncbench-*.whl")
    return zipfile.ZipFile(path)


def test_the_wheel_installs_no_top_level_package_but_asyncbench(wheel: zipfile.ZipFile) -> None:
    tops = {name.split("/", 1)[0] for name in wheel.namelist()}
    assert {t for t in tops if not t.endswith(".dist-info")} == {"asyncbench"}, sorted(tops)


def test_the_wheel_carries_engines_workloads_and_their_data(wheel: zipfile.ZipFile) -> None:
    names = set(wheel.namelist())
    for module in (
        "asyncbench/engines/__init__.py",
        "asyncbench/engines/lsm/tree.py",
        "asyncbench/engines/rocksdb.py",
        "asyncbench/workloads/profile_store/phases.py",
        "asyncbench/workloads/profile_store/published_reference.json",
        "asyncbench/workloads/common/distributions.py",
        "asyncbench/cli/main.py",
        "asyncbench/run/runner.py",
    ):
        assert module in names, module
    assert not any(n.startswith(("engines/", "workloads/", "examples/", "tests/")) for n in names)


def test_nothing_imports_the_checkout_s_top_level_folders() -> None:
    """Run from the checkout (its root on sys.path, as ``python -m`` puts it), a run must
    use the installed ``asyncbench.engines``/``asyncbench.workloads``, never the folders as
    packages of their own: two copies of a module would mean two registries."""
    code = (
        "import sys\n"
        "from asyncbench.cli.main import main\n"
        "code = main(['benchmarks/reference.toml', '--engine', 'memory', '--no-isolate', '--no-progress',\n"
        "             '--output', sys.argv[1], '--data', sys.argv[2]])\n"
        "leaked = sorted(m for m in sys.modules if m.split('.')[0] in ('engines', 'workloads', 'examples'))\n"
        "print(code, leaked)\n"
    )
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        done = subprocess.run(
            [sys.executable, "-c", code, f"{tmp}/out", f"{tmp}/data"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=300,
        )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().splitlines()[-1] == "0 []", done.stdout[-2000:]


def test_the_wheel_marks_the_package_typed(wheel: zipfile.ZipFile) -> None:
    """PEP 561: a plug-in's mypy reads our annotations (Engine, ProfileStore, ...) only when
    the installed package carries ``py.typed``; it covers asyncbench.engines/.workloads too."""
    assert "asyncbench/py.typed" in wheel.namelist()


def test_the_wheel_carries_the_lsm_engine_s_c_sources_and_their_module(wheel: zipfile.ZipFile) -> None:
    """The LSM's C module is built from a folder of files (``engines/lsm/csrc``): every one
    of them ships beside the module, as each kernel's source does, so an installed build
    is checked against the sources it was built from (asyncbench/native_build.py)."""
    names = set(wheel.namelist())
    sources = sorted(p.name for p in (ROOT / "engines" / "lsm" / "csrc").iterdir() if p.suffix in (".c", ".h"))
    assert len(sources) > 2 and "module.c" in sources
    assert [s for s in sources if f"asyncbench/engines/lsm/csrc/{s}" not in names] == []
    assert any(n.startswith("asyncbench/engines/lsm/_native.") and n.endswith(".so") for n in names), sorted(names)
