"""The developer tools under benchmarks/ stay runnable and documented.

They are not unit-tested one by one (they measure; their figures belong on a quiet
machine), which is how several of them rotted unnoticed: imports of moved functions,
``sys.path`` hacks, a sibling module as a shared helper. This checks the cheap part that
catches that: each script starts (``--help``) from a directory other than the checkout,
imports no sibling and touches no ``sys.path``, and benchmarks/README.md lists it.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys

from conftest import ROOT

BENCH = ROOT / "benchmarks"
SCRIPTS = sorted(BENCH.glob("*.py"))
SIBLINGS = {p.stem for p in SCRIPTS}


def test_there_are_scripts() -> None:
    assert len(SCRIPTS) >= 5


def test_no_script_edits_sys_path_or_imports_a_sibling() -> None:
    for script in SCRIPTS:
        text = script.read_text()
        assert not re.search(r"sys\.path\.(insert|append)|sys\.path\s*=", text), f"{script.name} edits sys.path"
        imported = set(re.findall(r"^\s*(?:from|import)\s+(\w+)", text, flags=re.M))
        assert not imported & (SIBLINGS | {"_store"}), f"{script.name} imports {imported & SIBLINGS}"


def test_every_script_starts_from_any_directory(tmp_path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    procs = {
        s.name: subprocess.Popen(
            [sys.executable, str(s), "--help"], cwd=tmp_path, env=env,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        for s in SCRIPTS
    }  # fmt: skip
    for name, proc in procs.items():
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, f"{name} --help: exit {proc.returncode}\n{err[-2000:]}"
        assert "usage:" in out, name
    assert list(tmp_path.iterdir()) == []  # --help created nothing


def test_readme_lists_every_script_and_its_links_exist() -> None:
    readme = (BENCH / "README.md").read_text()
    for script in SCRIPTS:
        assert f"`{script.name}`" in readme, f"benchmarks/README.md does not list {script.name}"
    for target in re.findall(r"\]\(([^)#:]+)\)", readme):
        assert (BENCH / target).exists(), f"benchmarks/README.md links {target}, which does not exist"
