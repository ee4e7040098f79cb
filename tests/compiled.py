"""How a test needs compiled code: one policy for the LSM's C code and the workloads' kernels.

The policy (``asyncbench/native_build.py`` states it for the program, docs/development.md
for people): a test that needs compiled code in use runs when it is; is skipped when the
code's fallback switch (``ASYNCBENCH_LSM_PURE``, ``ASYNCBENCH_NO_KERNELS``) is on, since
the fallback was asked for; and fails otherwise (not built, built for another Python,
stale), naming why and the fix, since a suite that skipped those tests would pass with the
C code untested.
"""

from __future__ import annotations

import pytest

from asyncbench.native_build import REBUILD, disabled_by


def require(what: str, reason: str | None, switch: str) -> None:
    """Let the test run if ``what`` is in use (``reason`` None, its loader's
    ``FALLBACK_REASON``); else skip it when ``switch`` is on, or fail it."""
    if reason is None:
        return
    if disabled_by(switch) is not None:
        pytest.skip(f"{what}: {reason}")
    hint = "" if REBUILD in reason else f"; {REBUILD} (with a C compiler)"
    pytest.fail(f"{what} is not in use: {reason}{hint}", pytrace=False)


def require_lsm() -> None:
    """:func:`require` for the LSM engine's compiled code (``engines/lsm/native.py``)."""
    from asyncbench.engines.lsm import native

    require("the LSM's compiled code", native.FALLBACK_REASON, native.PURE_ENV)
