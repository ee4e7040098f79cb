"""The bounds of a run's settings, shared by the plan reader (``asyncbench.config``) and the
result loader (``asyncbench.result``).

Those two sit side by side in the layers and may not import each other; a result file
that claims what no plan could ask for (parallelism 10**9) is damaged, so the loader
checks the same bounds the plan reader enforces, from here.
"""

from __future__ import annotations

__all__ = ["INT32_MAX", "INT32_MIN", "MAX_PARALLELISM", "MAX_PROFILES", "MAX_TIMEOUT_SECONDS"]

INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1
MAX_PARALLELISM = 1024
MAX_PROFILES = 1_000_000_000
#: A per-engine timeout beyond a year is a typo (and ``inf`` cannot be stored in JSON).
MAX_TIMEOUT_SECONDS = 366 * 24 * 3600.0
