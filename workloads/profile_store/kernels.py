"""The one import point of the workload's compiled kernels, or of their pure-Python fallbacks.

The compiled extension ``workloads.profile_store._kernels`` (``_kernels.c``, built by
``pip install -e .`` when a C compiler is present) speeds up what a run spends most of
its own time on; each function equals its pure-Python definition bit for bit:

========================  ======================================  ==========================
name                      pure-Python definition                  who calls it
========================  ======================================  ==========================
``fold_ints``             ``fold.py_fold_ints``                    insert and scan phases
``fold_profiles``         ``fold.py_fold_profiles``                read, lookup, query, update
``create_many``           ``profiles.py_create_many``             insert phase
``email_many``            ``profiles.py_email_many``              the plan's email streams
``created_at_many``       ``profiles.py_created_at_many``         drawing the plan
``NetRandom``             ``dotnet_random.PyNetRandom``           drawing the plan
========================  ======================================  ==========================

``create_many`` and ``created_at_many`` take the seed word (``profiles.seed_word(seed)``);
the compiled ``NetRandom`` has ``next`` and ``int64_list`` only, for bounds within ±2**62.

Without the extension everything still runs and every checksum is the same, only slower:
nothing is printed here, but :data:`ACCELERATED` is False, :data:`FALLBACK_REASON` says
why, :func:`status_line` words it for a console or report and :func:`require` raises.
Set ``ASYNCBENCH_NO_KERNELS=1`` to use the fallbacks even when the extension is built (any
value but empty or ``0``; ``asyncbench/native_build.py`` states the switches' one policy).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from types import ModuleType

from asyncbench.native_build import KERNELS_DISABLE_ENV, load_extension

DISABLE_ENV = KERNELS_DISABLE_ENV  # the name tests and docs use


_compiled, FALLBACK_REASON = load_extension("asyncbench.workloads.profile_store._kernels", Path(__file__).with_name("_kernels.c"))
#: True when the compiled kernels are in use.
ACCELERATED: bool = _compiled is not None

# The definitions the kernels must equal, and the constants they take: pure modules that
# never import this one (checksum.py and generate.py, which fold and generate through the
# kernels, sit above it).
from asyncbench.workloads.profile_store import fold, profiles  # noqa: E402
from asyncbench.workloads.profile_store.dotnet_random import PyNetRandom  # noqa: E402


def configure(module: ModuleType) -> None:
    """Hands the workload's constants (defined once, in profiles.py and fold.py) to a
    compiled kernels module; done at import, again by tests that change the constants."""
    module.configure(
        profiles.COUNTRIES,
        profiles.STATUSES,
        profiles.TOPICS,
        profiles.BASE_MS,
        profiles.LAST_LOGIN_SPAN_MS,
        profiles.GOLDEN,
        fold.PRIME,
    )


if _compiled is not None:
    configure(_compiled)
    # The C extension is untyped: each kernel has its pure-Python twin's signature (below).
    fold_ints: Callable[[int, Iterable[int]], int] = _compiled.fold_ints
    fold_profiles: Callable[[int, Iterable[object]], int] = _compiled.fold_profiles
    create_many: Callable[[int, int, int], list[profiles.Profile]] = _compiled.create_many
    email_many: Callable[[Iterable[int]], list[str]] = _compiled.email_many
    created_at_many: Callable[[Iterable[int], int], list[int]] = _compiled.created_at_many
    NetRandom = _compiled.NetRandom
else:
    fold_ints = fold.py_fold_ints
    fold_profiles = fold.py_fold_profiles
    create_many = profiles.py_create_many  # a seed word is its own seed word
    email_many = profiles.py_email_many
    created_at_many = profiles.py_created_at_many
    NetRandom = PyNetRandom


def status_line() -> str:
    """One line for a console or a report's Correctness/Environment section."""
    if ACCELERATED:
        return "compiled C kernels"
    return f"pure-Python fallback (slower: timings are not comparable): {FALLBACK_REASON}"


def require() -> None:
    """Raises RuntimeError unless the compiled kernels are in use (``--require-accelerator``)."""
    if not ACCELERATED:
        raise RuntimeError(
            f"compiled kernels not built: {FALLBACK_REASON}; reinstall with a C compiler: pip install -e ."
        )
