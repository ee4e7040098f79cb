"""The package's layers hold: every import-linter contract in pyproject.toml is kept and no
module imports itself back through a chain (``scripts/lint-layers``, which CI runs here)."""

from __future__ import annotations

import importlib.machinery
import importlib.util
import subprocess
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parent.parent


def test_layer_contracts_are_kept_and_there_is_no_import_cycle() -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "lint-layers")], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert "Contracts: 5 kept, 0 broken." in done.stdout
    assert "run's sub-packages in layers KEPT" in done.stdout
    assert "the framework reaches workloads only through the registry KEPT" in done.stdout
    assert "engines import no workload KEPT" in done.stdout
    assert "import cycles: 0 among" in done.stdout


def _script(name: str) -> ModuleType:
    """One of scripts/ (files without a .py suffix) loaded as a module."""
    loader = importlib.machinery.SourceFileLoader(name.replace("-", "_"), str(ROOT / "scripts" / name))
    spec = importlib.util.spec_from_loader(loader.name, loader)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


def _repository_modules() -> int:
    return sum(
        1
        for folder in ("asyncbench", "engines", "workloads")
        for p in (ROOT / folder).rglob("*.py")
        if "__pycache__" not in p.parts
    )


def test_lint_layers_reads_the_installed_layout_without_a_staged_copy() -> None:
    """The graph holds engines/ and workloads/ under their installed names (grimp alone
    would list asyncbench/'s folder only), read where they are."""
    graph = _script("lint-layers").installed_graph()
    assert len(graph.modules) == _repository_modules()
    assert "asyncbench.tools.floor_engines" in graph.find_modules_that_directly_import("asyncbench.engines.sqlite")
    assert "asyncbench.engines.rocksdb" in graph.find_modules_that_directly_import("asyncbench.engine")


def test_typecheck_names_every_repository_file_by_its_installed_module() -> None:
    sources = {s.module: s.path for s in _script("typecheck").sources()}
    assert len(sources) == _repository_modules()
    assert sources["asyncbench.engines.rocksdb"] == str(Path("engines") / "rocksdb.py")
    assert sources["asyncbench.workloads.profile_store"] == str(Path("workloads/profile_store/__init__.py"))
    assert sources["asyncbench.fs.ledger"] == str(Path("asyncbench/fs/ledger.py"))
