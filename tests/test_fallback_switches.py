"""The two fallback switches, ``ASYNCBENCH_NO_KERNELS`` (the workloads' kernels) and
``ASYNCBENCH_LSM_PURE`` (the LSM engine's C code), follow one policy
(``asyncbench/native_build.py``, docs/development.md):

- both read alike: on when set to anything but empty or ``0``; the loader then falls
  back saying ``disabled by NAME=value``;
- a test that needs the compiled code is skipped when its switch is on (the fallback was
  asked for) and fails when the code is missing or stale (``tests/compiled.py``; in its
  setup where a fixture asks): a suite that skipped them would pass with the C code
  untested.

They used to be opposite: ``ASYNCBENCH_LSM_PURE=0`` turned the LSM's C code off; a missing
LSM build skipped its tests, while a missing kernels build failed theirs; and the YCSB
kernels' test failed under ``ASYNCBENCH_NO_KERNELS=1`` where the LSM's were skipped under
``ASYNCBENCH_LSM_PURE=1``. Each check runs in a fresh interpreter (the loaders decide at
import).
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from conftest import ROOT

LSM = ("asyncbench.engines.lsm.native", "asyncbench.engines.lsm._native", "ASYNCBENCH_LSM_PURE")
KERNELS = (
    "asyncbench.workloads.profile_store.kernels",
    "asyncbench.workloads.profile_store._kernels",
    "ASYNCBENCH_NO_KERNELS",
)
YCSB = ("asyncbench.workloads.ycsb.kernels", "asyncbench.workloads.ycsb._kernels", "ASYNCBENCH_NO_KERNELS")
LOADERS = [LSM, KERNELS, YCSB]
IDS = ["lsm", "kernels", "ycsb"]

#: Makes the import of one compiled module fail in this interpreter, as a build without a
#: compiler does; then runs the code after it.
NOT_BUILT = """
import importlib.abc, sys
class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == {module!r}:
            raise ImportError("simulated: the C extension was not built")
        return None
sys.meta_path.insert(0, Block())
"""
#: Makes every build look older than its source (its digest check fails), as after a pull
#: that changed the C code without a rebuild.
STALE = """
import asyncbench.native_build as b
b.source_sha256 = lambda path: "changed"
"""


def python(code: str, switches: dict[str, str], prefix: str = "") -> subprocess.CompletedProcess[str]:
    """``code`` after ``prefix`` in a fresh interpreter from the checkout, with exactly
    ``switches`` of the two set (the rest of the environment as this one's)."""
    env = {k: v for k, v in os.environ.items() if k not in ("ASYNCBENCH_NO_KERNELS", "ASYNCBENCH_LSM_PURE")}
    return subprocess.run(
        [sys.executable, "-c", prefix + code],
        cwd=ROOT,
        env={**env, **switches},
        capture_output=True,
        text=True,
        timeout=300,
    )


def loaded(loader: str, switches: dict[str, str]) -> tuple[bool, str | None]:
    done = python(f"import {loader} as m\nprint(repr((m.ACCELERATED, m.FALLBACK_REASON)))", switches)
    assert done.returncode == 0, done.stderr[-2000:]
    accelerated, reason = eval(done.stdout.strip().splitlines()[-1])  # a repr of (bool, str | None)
    return accelerated, reason


@pytest.mark.parametrize(("loader", "module", "switch"), LOADERS, ids=IDS)
@pytest.mark.parametrize("off", ["", "0"])
def test_a_switch_that_is_empty_or_0_is_off(loader: str, module: str, switch: str, off: str) -> None:
    assert loaded(loader, {switch: off}) == (True, None)


@pytest.mark.parametrize(("loader", "module", "switch"), LOADERS, ids=IDS)
@pytest.mark.parametrize("on", ["1", "yes"])
def test_a_switch_that_is_on_falls_back_saying_so_in_the_same_words(
    loader: str, module: str, switch: str, on: str
) -> None:
    assert loaded(loader, {switch: on}) == (False, f"disabled by {switch}={on}")


def pytest_outcome(test: str, switches: dict[str, str], prefix: str = "") -> tuple[int, str]:
    """Pytest's exit code for ``test`` run in a fresh interpreter (0: passed or skipped, 1:
    failed, in the test or in its setup) and its output (outcome line, reasons)."""
    code = (
        "import pytest, sys\n"
        f"sys.exit(pytest.main(['-q', '-rsf', '-p', 'no:cacheprovider', '-o', 'addopts=', {test!r}]))\n"
    )
    done = python(code, switches, prefix)
    return done.returncode, done.stdout


#: a test of each kind: the LSM's compiled writer, the profile store's and YCSB's kernels in use
NEEDS_LSM = "tests/test_lsm_native.py::test_bad_sources_are_refused"
NEEDS_YCSB = "tests/test_ycsb_kernels.py::test_the_compiled_kernels_are_in_use"
NEEDS_KERNELS = "tests/test_kernels.py::test_compiled_kernels_are_built"


@pytest.mark.parametrize(
    ("test", "prefix"),
    [
        (NEEDS_LSM, NOT_BUILT.format(module=LSM[1])),
        (NEEDS_LSM, STALE),
        (NEEDS_YCSB, STALE),
        (NEEDS_KERNELS, STALE),
    ],
    ids=["lsm-not-built", "lsm-stale", "ycsb-stale", "kernels-stale"],
)
def test_a_missing_or_stale_build_fails_the_tests_that_need_it_naming_the_fix(test: str, prefix: str) -> None:
    code, out = pytest_outcome(test, {}, prefix)
    assert code == 1 and ("1 failed" in out or "1 error" in out), out[-3000:]
    why = "simulated: the C extension was not built" if "Block" in prefix else "has changed since"
    assert why in out and "pip install -e ." in out, out[-3000:]


@pytest.mark.parametrize(
    ("test", "switch"),
    [(NEEDS_LSM, "ASYNCBENCH_LSM_PURE"), (NEEDS_YCSB, "ASYNCBENCH_NO_KERNELS")],
    ids=["lsm", "ycsb"],
)
def test_a_switch_that_is_on_skips_the_tests_that_need_the_compiled_code(test: str, switch: str) -> None:
    code, out = pytest_outcome(test, {switch: "1"})
    assert code == 0 and "1 skipped" in out and f"disabled by {switch}=1" in out, out[-3000:]


@pytest.mark.parametrize("test", [NEEDS_LSM, NEEDS_YCSB, NEEDS_KERNELS], ids=IDS)
def test_with_both_switches_off_the_tests_that_need_the_compiled_code_run(test: str) -> None:
    code, out = pytest_outcome(test, {})
    assert code == 0 and "1 passed" in out, out[-3000:]
